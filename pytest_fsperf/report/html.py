"""A self-contained HTML report: tables and inline SVG charts, no network, no scripts needed
to read it. Charts: bandwidth per round, daemon CPU and peak memory per workload, A vs B,
this run vs a saved one. A small script marks each chart with how many marks the browser
laid out (data-drawn), so a test can tell the charts were drawn."""

from __future__ import annotations

import html

from .view import Chart, Section, Table, View

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


COLOURS = {"now": "#3a7bd5", "a": "#3a7bd5", "b": "#d53a3a", "saved": "#999999"}
FIGURE_COLOURS = {"daemon_cpu": "#e07b39", "daemon_rss": "#8e44ad"}


def bar_chart(chart: Chart | None) -> str:
    if chart is None or not chart.bars:
        return ""
    title, show = chart.title, chart.metric.show
    top = max(b.value for b in chart.bars) or 1.0
    height = len(chart.bars) * (BAR_H + GAP) + 24
    parts = [f'<svg class="chart" width="{W}" height="{height}" role="img" aria-label="{_esc(title)}">',
             f'<text x="0" y="14" font-weight="bold">{_esc(title)}</text>']
    for i, bar in enumerate(chart.bars):
        colour = FIGURE_COLOURS.get(chart.metric.key, COLOURS[bar.side])
        y = 24 + i * (BAR_H + GAP)
        width = max(1.0, (W - LABEL_W - 90) * bar.value / top)
        parts.append(f'<text x="0" y="{y + 12}">{_esc(bar.label[:40])}</text>')
        parts.append(f'<rect class="mark" x="{LABEL_W}" y="{y}" width="{width:.1f}" height="{BAR_H}" '
                     f'fill="{colour}"><title>{_esc(bar.label)}: {_esc(show(bar.value))}</title></rect>')
        parts.append(f'<text x="{LABEL_W + width + 6:.1f}" y="{y + 12}">{_esc(show(bar.value))}</text>')
    parts.append("</svg>")
    return "".join(parts)


def _table(t: Table, verdict_column: bool = False) -> str:
    head = "".join(f"<th>{_esc(h)}</th>" for h in t.header)
    rows = []
    for cells in t.rows:
        tds = "".join(f"<td>{_esc(c)}</td>" for c in (cells[:-1] if verdict_column else cells))
        if verdict_column:
            tds += f'<td class="{_esc(cells[-1])}">{_esc(cells[-1])}</td>'
        rows.append(f"<tr>{tds}</tr>")
    return f"<table><tr>{head}</tr>{''.join(rows)}</table>"


def _section(s: Section) -> str:
    lines = "<br>".join(_esc(line) for line in s.lines)
    return (f"<h2>{_esc(s.title)}</h2>" + (f"<p>{lines}</p>" if lines else "")
            + (_table(s.table) if s.table else "") + bar_chart(s.chart))


def document(view: View) -> str:
    bw, cpu, mem = view.charts or (None, None, None)
    facts = "".join(f"<tr><th>{_esc(what)}</th><td>{_esc(value)}</td></tr>"
                    for what, value in view.header)
    body = [f'<h1>pytest-fsperf</h1><table class="facts">{facts}</table>',
            _table(view.results, verdict_column=True),
            "<ul>" + "".join(f"<li>{_esc(n)}</li>" for n in view.notes) + "</ul>",
            "<h2>Bandwidth</h2>" + bar_chart(bw)]
    if (cpu and cpu.bars) or (mem and mem.bars):
        body.append("<h2>FUSE daemon</h2>" + bar_chart(cpu) + bar_chart(mem))
    body += [_section(s) for s in view.sections]
    return ("<!doctype html><html><head><meta charset=\"utf-8\"><title>pytest-fsperf</title>"
            f"<style>{STYLE}</style></head><body>{''.join(body)}"
            f"<script>{SCRIPT}</script></body></html>\n")
