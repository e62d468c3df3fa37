"""The terminal summary: the view's tables as aligned text, one row per measured workload."""

from __future__ import annotations

import textwrap
from collections.abc import Iterable, Sequence

from pytest_fsperf.report.model import Section, Table, View


def align(rows: Sequence[tuple[str, ...]], right: Iterable[int] = (), indent: str = "") -> list[str]:
    """Columns padded to their widest cell; `right` ones right-aligned."""
    right = set(right)
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return [(indent + "  ".join(c.rjust(w) if i in right else c.ljust(w)
                                for i, (c, w) in enumerate(zip(cells, widths, strict=True)))).rstrip()
            for cells in rows]


def table(t: Table, indent: str = "", width: int | None = None) -> list[str]:
    """Aligned columns; in a terminal narrower than they are, each row stacked: its first two
    cells as a heading, the others as `column value` pairs wrapped to the width."""
    lines = align([t.header, *t.rows], t.right, indent)
    if width is None or max(map(len, lines), default=0) <= width or len(t.header) < 3:
        return lines
    out: list[str] = []
    for cells in t.rows:
        out.append(f"{indent}{cells[0]}  {cells[1]}".rstrip())
        pairs = "; ".join(f"{h} {c}" for h, c in zip(t.header[2:], cells[2:], strict=True)
                          if c and c != "-")
        out += textwrap.wrap(pairs, width, initial_indent=indent + "    ",
                             subsequent_indent=indent + "    ", break_on_hyphens=False)
    return out


def section(s: Section, width: int | None = None) -> list[str]:
    return [s.title, *(f"  {line}" for line in s.lines),
            *(table(s.table, "  ", width) if s.table else [])]


def facts(view: View) -> list[str]:
    return align(tuple((f"{what}:", value) for what, value in view.header))


def render(view: View, width: int | None = None) -> list[str]:
    """width: the terminal's columns; a table wider than it is stacked (None: never)."""
    lines = facts(view) if view.header else []
    lines += [*table(view.results, "", width), *view.notes] if view.results.rows else []
    for s in view.sections:
        lines += section(s, width)
    if view.summary:
        lines += [f"fsperf decision: {view.summary[0]}"]
    return lines
