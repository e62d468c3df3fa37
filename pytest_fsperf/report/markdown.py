"""A Markdown summary for CI job summaries (e.g. $GITHUB_STEP_SUMMARY), from the results."""

from __future__ import annotations

import html
import re
from typing import Any

from ..result import countable_cpu
from ..vocab import METRICS, Outcome
from . import terminal


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


def document(env: dict[str, Any], results: list[dict[str, Any]], comparisons: list[dict[str, Any]],
             gated: bool) -> str:
    m = env.get("machine", {})
    mount = env.get("mount") or {}
    out = ["## pytest-fsperf", "",
           _text(f"{m.get('cpus')} CPUs ({m.get('cpu_model')}), kernel {env.get('kernel')}, "
                 f"fio {env.get('fio') or '-'}, scale {env.get('scale')}"
                 + (f", {mount.get('fstype')} at {mount.get('mount_point')}" if mount else "")), ""]
    verdicts = [Outcome.of(r.get("verdict")) for r in results]
    failing = sum(v.failing for v in verdicts)
    unsure = sum(v.unsure for v in verdicts)
    out += [f"**{len(results)} workloads**, {failing} failing, {unsure} inconclusive", ""]
    if results:
        out += [*_table(terminal.HEADER, [terminal.row(r) for r in results]), ""]
        out += [f"- {_text(n)}" for n in terminal.footnotes(results)] + [""]
    for c in comparisons:
        out += [*_block(terminal.comparison(c)), ""]
    out += _block(terminal.baseline_checks(results, gated))
    out += _block(terminal.run_comparisons(results))
    return "\n".join(out).rstrip() + "\n"


def benchmark_action(results: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """github-action-benchmark's custom format: [{name, unit, value}], split into figures
    where bigger is better and figures where smaller is better (by the metric registry)."""
    bigger: list[dict[str, Any]] = []
    smaller: list[dict[str, Any]] = []
    for r in results:
        if not r.get("judged", True):
            continue
        for metric, label, unit, value in _action_figures(r):
            into = bigger if METRICS[metric].bigger_is_better else smaller
            into.append({"name": f"{r['test']}::{r['name']} {label}", "unit": unit, "value": value})
    return bigger, smaller


def _action_figures(r: dict[str, Any]) -> list[tuple[str, str, str, float]]:
    """(metric, label, unit, value) of one result row, in the units the files use."""
    total, d = r["total"], r.get("daemon")
    figures = []
    if total.get("io_bytes"):
        figures.append(("bw", "bandwidth", "MB/s", total["bw_bytes"] / 1e6))
    if total.get("ops_per_second") is not None:
        figures.append(("ops", "ops", "ops/s", total["ops_per_second"]))
    if total.get("lat_p99_ns") is not None:
        figures.append(("lat_p99", "p99 latency", "ms", total["lat_p99_ns"] / 1e6))
    if d:
        figures.append(("daemon_rss", "daemon peak memory", "MB", d["peak_rss_bytes"] / 1e6))
        cpu = countable_cpu(d["wall_seconds"], d["cpu_percent"])
        if cpu is not None:
            figures.append(("daemon_cpu", "daemon CPU", "%", cpu))
    return figures
