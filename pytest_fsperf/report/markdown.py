"""A Markdown summary for CI job summaries (e.g. $GITHUB_STEP_SUMMARY), from the results."""

from __future__ import annotations

import html
import re
from collections.abc import Sequence
from typing import Any

from pytest_fsperf.report import terminal
from pytest_fsperf.report.cells import figures
from pytest_fsperf.report.model import View
from pytest_fsperf.result.document import ResultRow


def _text(text: object) -> str:
    """Literal text in Markdown: HTML (a test id may hold some) and pipes escaped."""
    return html.escape(str(text), quote=False).replace("|", "\\|")


def _table(header: tuple[str, ...], rows: list[tuple[str, ...]]) -> list[str]:
    def line(cells: tuple[str, ...]) -> str:
        return "| " + " | ".join(_text(c) for c in cells) + " |"

    return [line(header), "|" + "|".join("---" for _ in header) + "|", *(line(r) for r in rows)]


def _block(lines: list[str]) -> list[str]:
    """A code block, fenced with more backticks than any run inside it."""
    longest = max((len(run) for line in lines for run in re.findall(r"`+", line)), default=0)
    fence = "`" * max(3, longest + 1)
    return [fence, *lines, fence] if lines else []


def document(view: View) -> str:
    out = ["## pytest-fsperf", "", *(f"- **{what}**: {_text(value)}" for what, value in view.header), "",
           *(f"**{_text(line)}**" if i == 0 else f"- {_text(line)}" for i, line in enumerate(view.summary)),
           ""]
    if view.results.rows:
        out += [*_table(view.results.header, list(view.results.rows)), ""]
        out += [f"- {_text(n)}" for n in view.notes] + [""]
    for s in view.sections:
        out += [*_block(terminal.section(s)), ""]
    return "\n".join(out).rstrip() + "\n"


def benchmark_action(given: Sequence[ResultRow]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """github-action-benchmark's custom format: [{name, unit, value}], split into figures
    where bigger is better and figures where smaller is better (by the metric registry)."""
    bigger: list[dict[str, Any]] = []
    smaller: list[dict[str, Any]] = []
    for r in given:
        if not r.judged:
            continue
        for f in figures(r):
            m = f.metric
            into = bigger if m.bigger_is_better else smaller
            into.append({"name": f"{r.test}::{r.name} {m.series}", "unit": m.unit,
                         "value": f.value / m.scale})
    return bigger, smaller
