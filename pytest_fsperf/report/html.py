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
td:first-child,td:nth-child(2),th{text-align:left}.bad{color:#b00;font-weight:bold}
.unsure{color:#a60;font-weight:bold}.good{color:#070}
.summary{border-left:6px solid #070;padding:.2em 1em;background:#f4faf4}
.summary.bad{border-color:#b00;background:#fdf3f3}.summary.unsure{border-color:#a60;background:#fdf8ef}
.summary li{margin:.2em 0}.wide{overflow-x:auto;max-width:100%}.facts td{text-align:left;word-break:break-all}
svg{max-width:100%;height:auto}svg text{font:12px system-ui,sans-serif}h2{margin-top:1.6em}
@media (max-width:700px){body{margin:.6em;font-size:13px}td,th{padding:2px 4px}}
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
    parts = [f'<svg class="chart" width="{W}" height="{height}" viewBox="0 0 {W} {height}" '
             f'role="img" aria-label="{_esc(title)}">',
             f'<text x="0" y="14" font-weight="bold">{_esc(title)}</text>']
    for i, bar in enumerate(chart.bars):
        colour = FIGURE_COLOURS.get(chart.metric.key, COLOURS[bar.side])
        y = 24 + i * (BAR_H + GAP)
        width = max(1.0, (W - LABEL_W - 90) * bar.value / top)
        shown = bar.label if len(bar.label) <= 40 else bar.label[:39] + "\u2026"
        parts.append(f'<text x="0" y="{y + 12}">{_esc(shown)}</text>')
        parts.append(f'<rect class="mark" x="{LABEL_W}" y="{y}" width="{width:.1f}" height="{BAR_H}" '
                     f'fill="{colour}"><title>{_esc(bar.label)}: {_esc(show(bar.value))}</title></rect>')
        parts.append(f'<text x="{LABEL_W + width + 6:.1f}" y="{y + 12}">{_esc(show(bar.value))}</text>')
    parts.append("</svg>")
    return "".join(parts)


OUTCOMES = {"FAIL": "bad", "REGRESSION": "bad", "regression": "bad", "B worse": "bad",
            "INCONCLUSIVE": "unsure", "INCOMPARABLE": "unsure", "MACHINE CHANGED": "unsure",
            "inconclusive": "unsure", "incomparable": "unsure", "machine changed": "unsure",
            "pass": "good", "same": "good", "not worse": "good", "B better": "good",
            "improvement": "good", "partial": "unsure"}


def _cell(text: str) -> str:
    kind = OUTCOMES.get(text)
    return f'<td class="{kind}">{_esc(text)}</td>' if kind else f"<td>{_esc(text)}</td>"


def _table(t: Table) -> str:
    head = "".join(f"<th>{_esc(h)}</th>" for h in t.header)
    rows = "".join(f"<tr>{''.join(_cell(c) for c in cells)}</tr>" for cells in t.rows)
    return f'<div class="wide"><table><tr>{head}</tr>{rows}</table></div>'


def _section(s: Section) -> str:
    lines = "<br>".join(_esc(line) for line in s.lines)
    return (f"<h2>{_esc(s.title)}</h2>" + (f"<p>{lines}</p>" if lines else "")
            + (_table(s.table) if s.table else "") + bar_chart(s.chart))


def document(view: View) -> str:
    bw, cpu, mem = view.charts or (None, None, None)
    facts = "".join(f"<tr><th>{_esc(what)}</th><td>{_esc(value)}</td></tr>"
                    for what, value in view.header)
    decision = view.summary[0].split(":", 1)[0] if view.summary else "PASS"
    summary = "".join(f"<li>{_esc(line)}</li>" for line in view.summary[1:])
    tone = {"PASS": "good", "FAIL": "bad"}.get(decision, "unsure")
    body = ['<h1>pytest-fsperf</h1>',
            f'<section class="summary {tone}">'
            f"<p><b>{_esc(view.summary[0] if view.summary else 'no workloads')}</b></p>"
            + (f"<ul>{summary}</ul>" if summary else "") + "</section>",
            f'<h2>What was measured</h2><div class="wide"><table class="facts">{facts}</table></div>',
            "<h2>Workloads</h2>" + _table(view.results),
            "<ul>" + "".join(f"<li>{_esc(n)}</li>" for n in view.notes) + "</ul>",
            "<h2>Bandwidth</h2>" + bar_chart(bw)]
    if (cpu and cpu.bars) or (mem and mem.bars):
        body.append("<h2>FUSE daemon</h2>" + bar_chart(cpu) + bar_chart(mem))
    body += [_section(s) for s in view.sections]
    return ("<!doctype html><html><head><meta charset=\"utf-8\">"
            "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
            "<title>pytest-fsperf</title>"
            f"<style>{STYLE}</style></head><body>{''.join(body)}"
            f"<script>{SCRIPT}</script></body></html>\n")
