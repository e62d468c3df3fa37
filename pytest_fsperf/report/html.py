"""A self-contained HTML report: tables and inline SVG charts, no network, no scripts needed
to read it. Charts: bandwidth per round, daemon CPU and peak memory per workload, A vs B,
this run vs a saved one. A small script marks each chart with how many marks the browser
laid out (data-drawn), so a test can tell the charts were drawn."""

from __future__ import annotations

import html
from typing import Any

from .. import units
from ..result import countable_cpu
from ..stats import median
from . import terminal

W, BAR_H, GAP, LABEL_W = 720, 16, 6, 260

STYLE = """
body{font:14px system-ui,sans-serif;margin:2em;color:#222}
table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #ccc;padding:3px 8px;text-align:right}
td:first-child,td:nth-child(2),th{text-align:left}.FAIL,.REGRESSION{color:#b00;font-weight:bold}
.INCONCLUSIVE,.INCOMPARABLE{color:#a60;font-weight:bold}.pass{color:#070}
svg text{font:12px system-ui,sans-serif}h2{margin-top:1.6em}
"""
SCRIPT = """
for (const svg of document.querySelectorAll('svg.chart')) {
  let n = 0;
  for (const r of svg.querySelectorAll('rect.mark')) {
    const b = r.getBBox();
    if (b.width > 0 && b.height > 0) n++;
  }
  svg.setAttribute('data-drawn', String(n));
}
"""


def _esc(text: object) -> str:
    return html.escape(str(text))


def bar_chart(title: str, bars: list[tuple[str, float, str]], show: Any) -> str:
    """Horizontal bars: (label, value, colour)."""
    if not bars:
        return ""
    top = max(v for _l, v, _c in bars) or 1.0
    height = len(bars) * (BAR_H + GAP) + 24
    parts = [f'<svg class="chart" width="{W}" height="{height}" role="img" aria-label="{_esc(title)}">',
             f'<text x="0" y="14" font-weight="bold">{_esc(title)}</text>']
    for i, (label, value, colour) in enumerate(bars):
        y = 24 + i * (BAR_H + GAP)
        width = max(1.0, (W - LABEL_W - 90) * value / top)
        parts.append(f'<text x="0" y="{y + 12}">{_esc(label[:40])}</text>')
        parts.append(f'<rect class="mark" x="{LABEL_W}" y="{y}" width="{width:.1f}" height="{BAR_H}" '
                     f'fill="{colour}"><title>{_esc(label)}: {_esc(show(value))}</title></rect>')
        parts.append(f'<text x="{LABEL_W + width + 6:.1f}" y="{y + 12}">{_esc(show(value))}</text>')
    parts.append("</svg>")
    return "".join(parts)


def _results_table(results: list[dict[str, Any]]) -> str:
    head = "".join(f"<th>{_esc(h)}</th>" for h in terminal.HEADER)
    rows = []
    for r in results:
        cells = terminal.row(r)
        verdict = cells[-1]
        tds = "".join(f"<td>{_esc(c)}</td>" for c in cells[:-1])
        rows.append(f'<tr>{tds}<td class="{_esc(verdict)}">{_esc(verdict)}</td></tr>')
    return f"<table><tr>{head}</tr>{''.join(rows)}</table>"


def _label(r: dict[str, Any]) -> str:
    return f"{terminal.short_test(r)} {r['name']}"


def document(env: dict[str, Any], results: list[dict[str, Any]], comparisons: list[dict[str, Any]],
             gated: bool) -> str:
    m = env.get("machine", {})
    body = [f"<h1>pytest-fsperf</h1><p>{_esc(m.get('cpus'))} CPUs ({_esc(m.get('cpu_model'))}), "
            f"kernel {_esc(env.get('kernel'))}, fio {_esc(env.get('fio') or '-')}, "
            f"scale {_esc(env.get('scale'))}</p>",
            _results_table(results),
            "<ul>" + "".join(f"<li>{_esc(n)}</li>" for n in terminal.footnotes(results)) + "</ul>"]
    per_round = [(f"{_label(r)} #{i + 1}", rnd["bw"], "#3a7bd5") for r in results
                 for i, rnd in enumerate(r.get("rounds") or []) if rnd.get("bw")]
    single = [(_label(r), r["total"]["bw_bytes"], "#3a7bd5") for r in results
              if not r.get("rounds") and r["total"].get("io_bytes")]
    body.append("<h2>Bandwidth</h2>" + bar_chart("bandwidth per workload and round", per_round + single,
                                                  units.format_rate))
    cpu = [(_label(r), shown, "#e07b39") for r in results if r.get("daemon") and
           (shown := countable_cpu(r["daemon"]["wall_seconds"], r["daemon"]["cpu_percent"])) is not None]
    mem = [(_label(r), r["daemon"]["peak_rss_bytes"], "#8e44ad") for r in results if r.get("daemon")]
    if cpu or mem:
        body.append("<h2>FUSE daemon</h2>" + bar_chart("daemon CPU (100% = one core)", cpu,
                                                        units.format_percent)
                    + bar_chart("daemon peak memory", mem, units.format_mb))
    for c in comparisons:
        bw = c["metrics"].get("bw")
        if bw:
            bars = [(f"A #{i + 1}", v, "#3a7bd5") for i, v in enumerate(bw["a"]) if v] + [
                (f"B #{i + 1}", v, "#d53a3a") for i, v in enumerate(bw["b"]) if v]
            body.append(f"<h2>A/B: {_esc(c['name'])} on {_esc(c['backend'])}</h2>"
                        f"<p>A: {_esc(' '.join(c['a_options']) or '(defaults)')}<br>"
                        f"B: {_esc(' '.join(c['b_options']) or '(defaults)')}<br>"
                        f"B/A {bw['ratio']:.3f}, {_esc(bw.get('outcome', '-'))}</p>"
                        + bar_chart("bandwidth, A against B, per round", bars, units.format_rate))
    earlier = [(r, r["run_comparison"]) for r in results if r.get("run_comparison")]
    if earlier:
        bars = []
        for r, c in earlier:
            if c["ratio"] is not None:
                bars.append((f"{_label(r)} saved", median(c["old"]), "#999999"))
                bars.append((f"{_label(r)} now ({c['outcome']})", median(c["new"]), "#3a7bd5"))
        body.append(f"<h2>Against saved run {_esc(earlier[0][1]['run'])}</h2>"
                    + bar_chart("median, saved against now", bars, units.format_rate))
    checks = terminal.baseline_checks(results, gated)
    if checks:
        body.append("<h2>Baselines</h2><pre>" + _esc("\n".join(checks)) + "</pre>")
    return ("<!doctype html><html><head><meta charset=\"utf-8\"><title>pytest-fsperf</title>"
            f"<style>{STYLE}</style></head><body>{''.join(body)}"
            f"<script>{SCRIPT}</script></body></html>\n")

