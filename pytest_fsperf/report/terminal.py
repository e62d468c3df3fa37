"""The terminal summary: the view's tables as aligned text, one row per measured workload."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from pytest_fsperf.report.model import Section, Table, View


def align(rows: Sequence[tuple[str, ...]], right: Iterable[int] = (), indent: str = "") -> list[str]:
    """Columns padded to their widest cell; `right` ones right-aligned."""
    right = set(right)
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return [(indent + "  ".join(c.rjust(w) if i in right else c.ljust(w)
                                for i, (c, w) in enumerate(zip(cells, widths, strict=True)))).rstrip()
            for cells in rows]


def table(t: Table, indent: str = "") -> list[str]:
    return align([t.header, *t.rows], t.right, indent)


def section(s: Section) -> list[str]:
    return [s.title, *(f"  {line}" for line in s.lines), *(table(s.table, "  ") if s.table else [])]


def facts(view: View) -> list[str]:
    return align(tuple((f"{what}:", value) for what, value in view.header))


def render(view: View) -> list[str]:
    lines = facts(view) if view.header else []
    lines += [*table(view.results), *view.notes] if view.results.rows else []
    for s in view.sections:
        lines += section(s)
    if view.summary:
        lines += [f"fsperf decision: {view.summary[0]}"]
    return lines
