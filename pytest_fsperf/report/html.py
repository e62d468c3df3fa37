"""A self-contained HTML report: tables and inline SVG charts, no network, no scripts needed
to read it. Charts: bandwidth per round, daemon CPU and peak memory per workload, A vs B,
this run vs a saved one. A small script marks each chart with how many marks the browser
laid out (data-drawn), so a test can tell the charts were drawn."""

from __future__ import annotations

import html

from pytest_fsperf.figures import Fig
from pytest_fsperf.report.flame import svg as flame_graph
from pytest_fsperf.report.model import Chart, Section, Table, TimeChart, View

W, BAR_H, GAP, LABEL_W = 720, 16, 6, 260
LIMIT_H = 12  # a threshold's label, above its bar
CHAR_W = 7  # px per character of a 12 px label, for the room it needs

STYLE = """
body{font:14px system-ui,sans-serif;margin:2em;color:#222}
table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #ccc;padding:3px 8px;text-align:right}
td:first-child,td:nth-child(2),th{text-align:left}.bad{color:#b00;font-weight:bold}
.unsure{color:#a60;font-weight:bold}.good{color:#070}
.summary{border-left:6px solid #070;padding:.2em 1em;background:#f4faf4}
.summary.bad{border-color:#b00;background:#fdf3f3}.summary.unsure{border-color:#a60;background:#fdf8ef}
.summary li{margin:.2em 0}.wide{overflow-x:auto;max-width:100%}.facts td{text-align:left;word-break:break-all}
table.results td:nth-child(n+3):not(.long){white-space:nowrap}
td.long{white-space:normal;min-width:7em;max-width:16em}
table.results td:last-child,table.results th:last-child{position:sticky;right:0;background:#fff;
box-shadow:-3px 0 3px -2px #bbb}
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
FIGURE_COLOURS: dict[str, str] = {Fig.DAEMON_CPU: "#e07b39", Fig.DAEMON_RSS: "#8e44ad"}


FAILING = "#8b0000"  # a bar whose workload failed its test: dark red, outlined


def bar_chart(chart: Chart | None) -> str:
    """Horizontal bars; a bar's threshold is a black tick across it (its <title> says which),
    and a bar whose workload failed is dark red and outlined. Labels get the room they need."""
    if chart is None or not chart.bars:
        return ""
    title, show = chart.title, chart.metric.show
    top = max([b.value for b in chart.bars] + [b.limit or 0.0 for b in chart.bars]) or 1.0
    label_w = min(420, max(120, 7 * max(len(b.label) for b in chart.bars) + 10))
    width_all = label_w + 470
    limits = any(b.limit is not None for b in chart.bars)
    row_h = BAR_H + GAP + (LIMIT_H if limits else 0)  # room above each bar for its limit's label
    height = len(chart.bars) * row_h + 24
    parts = [f'<svg class="chart" width="{width_all}" height="{height}" '
             f'viewBox="0 0 {width_all} {height}" role="img" aria-label="{_esc(title)}">',
             f'<text x="0" y="14" font-weight="bold">{_esc(title)}</text>']
    span = width_all - label_w - 90
    said = ""  # a threshold's label is drawn once, over the first bar it applies to
    for i, bar in enumerate(chart.bars):
        colour = FAILING if bar.failing else FIGURE_COLOURS.get(chart.metric.key, COLOURS[bar.side])
        y = 24 + i * row_h + (LIMIT_H if limits else 0)
        width = max(1.0, span * bar.value / top)
        shown = bar.label if len(bar.label) <= 58 else bar.label[:57] + "\u2026"
        outline = ' stroke="#000" stroke-width="1.5"' if bar.failing else ""
        parts.append(f'<text x="0" y="{y + 12}">{_esc(shown)}<title>{_esc(bar.label)}</title></text>')
        parts.append(f'<rect class="mark{" failing" if bar.failing else ""}" x="{label_w}" y="{y}" '
                     f'width="{width:.1f}" height="{BAR_H}" fill="{colour}"{outline}>'
                     f'<title>{_esc(bar.label)}: {_esc(show(bar.value))}'
                     f'{" (failed)" if bar.failing else ""}</title></rect>')
        parts.append(f'<text x="{label_w + width + 6:.1f}" y="{y + 12}">{_esc(show(bar.value))}</text>')
        if bar.limit is not None:
            x = label_w + span * bar.limit / top
            parts.append(f'<line class="limit" x1="{x:.1f}" y1="{y - 2}" x2="{x:.1f}" '
                         f'y2="{y + BAR_H + 2}" stroke="#000" stroke-width="2">'
                         f'<title>{_esc(bar.limit_text)}</title></line>')
            if bar.limit_text != said:
                parts.append(f'<text class="limit-label" x="{x:.1f}" y="{y - 4}" font-size="10" '
                             f'text-anchor="{"end" if x > label_w + span / 2 else "start"}">'
                             f'{_esc(bar.limit_text)}</text>')
                said = bar.limit_text
    parts.append("</svg>")
    return "".join(parts)


def plain(value: float) -> str:
    """An axis label in plain digits: 2,000 not 2e+03."""
    if value >= 100:
        return f"{value:,.0f}"
    return f"{value:.3g}" if value >= 0.01 else f"{value:.2g}"


TH, TPAD = 150, 48  # one panel's height; the left margin for the axis labels
TRACE_COLOURS = {"": "#3a7bd5", "A": "#3a7bd5", "B": "#d53a3a"}


def _ticks(top: float) -> list[str]:
    """The y axis labels of a panel: 0, 1/4 ... the top, in plain digits."""
    return [plain(top * k / 4) for k in range(5)]


def _panel(traces: list[tuple[str, list[tuple[float, float]]]], top: float, y0: int, t_end: float,
           label: str, dashed: bool = False, pad: int = TPAD) -> list[str]:
    """One panel: each trace a polyline of (s, value) on the shared time axis; `pad` px on
    the left for the axis labels."""
    parts = [f'<text x="{pad}" y="{y0 + 12}">{_esc(label)}</text>',
             f'<line x1="{pad}" y1="{y0 + TH}" x2="{W}" y2="{y0 + TH}" stroke="#999"/>']
    for k, text in enumerate(_ticks(top)):  # with faint grid lines
        y = y0 + TH - (TH - 20) * k / 4
        parts.append(f'<text class="tick" x="{pad - 4}" y="{y + 4:.1f}" '
                     f'text-anchor="end">{text}</text>')
        if k:
            parts.append(f'<line x1="{pad}" y1="{y:.1f}" x2="{W}" y2="{y:.1f}" stroke="#eee"/>')
    for name, points in traces:
        if not points:
            continue
        xy = " ".join(f"{pad + (W - pad - 10) * t / t_end:.1f},{y0 + TH - (TH - 20) * v / top:.1f}"
                      for t, v in points)
        dash = ' stroke-dasharray="5 3"' if dashed else ""
        parts.append(f'<polyline class="trace" points="{xy}" fill="none" stroke-width="2" '
                     f'stroke="{TRACE_COLOURS.get(name, "#3a7bd5")}"{dash}>'
                     f"<title>{_esc(name or 'run')}: {_esc(label)}</title></polyline>")
        for t, v in points:  # a mark per interval, for a test to count what the browser drew
            x, y = pad + (W - pad - 10) * t / t_end, y0 + TH - (TH - 20) * v / top
            parts.append(f'<rect class="mark" x="{x - 1.5:.1f}" y="{y - 1.5:.1f}" width="3" '
                         f'height="3" fill="{TRACE_COLOURS.get(name, "#3a7bd5")}"/>')
    return parts


def time_chart(chart: TimeChart) -> str:
    """Bandwidth per second above, the daemon's RSS below (where a daemon was measured), on
    one time axis; A and B in their colours. The left margin fits the longest axis label."""
    t_end = max((tr.t[-1] for tr in chart.traces if tr.t), default=1.0) or 1.0
    bw = [(tr.name, list(zip(tr.t, tr.bw, strict=True))) for tr in chart.traces]
    rss = [(tr.name, [(t, v) for t, v in zip(tr.t, tr.rss, strict=True) if v is not None])
           for tr in chart.traces]
    top_bw = max((v for _n, pts in bw for _t, v in pts), default=0.0) or 1.0
    top_rss = max((v for _n, pts in rss for _t, v in pts), default=0.0) or 1.0
    lat = [(tr.name, list(tr.clat)) for tr in chart.traces if tr.clat]
    total = all(tr.latency_kind == "lat" for tr in chart.traces if tr.clat)
    fuse = [(tr.name, list(zip(tr.t, tr.fuse, strict=False))) for tr in chart.traces if tr.fuse]
    has_rss = any(pts for _n, pts in rss)
    top_lat = max((v for _n, pts in lat for _t, v in pts), default=0.0) or 1.0
    top_fuse = max((v for _n, pts in fuse for _t, v in pts), default=0.0) or 1.0
    panels = [(bw, top_bw, "MB/s", False)]
    if has_rss:
        panels.append((rss, top_rss, "daemon RSS, MB", True))
    if lat:
        panels.append((lat, top_lat, f"fio mean {'total' if total else 'completion'} latency, ms "
                                     "(fio's clock)", False))
    if fuse:
        panels.append((fuse, top_fuse, "FUSE requests/s, all opcodes (kernel tracepoints)", False))
    pad = max(TPAD, CHAR_W * max(len(text) for _p, top, _l, _d in panels for text in _ticks(top)) + 8)
    height = len(panels) * (TH + 16) + 40
    names = ", ".join(f"{tr.name} {'blue' if tr.name == 'A' else 'red'}" for tr in chart.traces
                      if tr.name)
    parts = [f'<svg class="chart timeline" width="{W}" height="{height}" '
             f'viewBox="0 0 {W} {height}" role="img" aria-label="{_esc(chart.title)}">',
             f'<text x="0" y="14" font-weight="bold">{_esc(chart.title)}'
             f'{_esc(" (" + names + ")") if names else ""}</text>']
    for i, (traces, top, label, dashed) in enumerate(panels):
        parts += _panel(traces, top, 20 + i * (TH + 16), t_end, label, dashed, pad)
    parts.append(f'<text x="{W - 10}" y="{height - 4}" text-anchor="end">{t_end:.0f} s</text>'
                 f'<text x="{pad}" y="{height - 4}">0 s</text></svg>')
    return "".join(parts)


OUTCOMES = {"FAIL": "bad", "REGRESSION": "bad", "regression": "bad", "B worse": "bad",
            "CHANGED": "bad", "changed": "bad",
            "INCONCLUSIVE": "unsure", "INCOMPARABLE": "unsure", "MACHINE CHANGED": "unsure",
            "inconclusive": "unsure", "incomparable": "unsure", "machine changed": "unsure",
            "pass": "good", "same": "good", "not worse": "good", "B better": "good",
            "improvement": "good", "partial": "unsure"}


LONG = 18  # characters: a cell longer wraps (a table fits a 1,400 px window)


def _cell(text: str) -> str:
    kind = OUTCOMES.get(text) or ("long" if len(text) > LONG else "")
    return f'<td class="{kind}">{_esc(text)}</td>' if kind else f"<td>{_esc(text)}</td>"


def _table(t: Table, cls: str = "") -> str:
    head = "".join(f"<th>{_esc(h)}</th>" for h in t.header)
    rows = "".join(f"<tr>{''.join(_cell(c) for c in cells)}</tr>" for cells in t.rows)
    shown = f' class="{cls}"' if cls else ""
    return f'<div class="wide"><table{shown}><tr>{head}</tr>{rows}</table></div>'


def _section(s: Section) -> str:
    """A short heading (what it is); the rest of the title (how it was run) is its first line."""
    head, sep, how = s.title.partition(": ")
    heading, first = (head, (how,)) if sep and len(head) >= 8 else (s.title, ())
    lines = "<br>".join(_esc(line) for line in (*first, *s.lines))
    return (f"<h2>{_esc(heading)}</h2>" + (f"<p>{lines}</p>" if lines else "")
            + (_table(s.table) if s.table else "") + bar_chart(s.chart)
            + (flame_graph(s.profiles["A"], s.profiles["B"], "the daemon's profile: B's shape, "
                           "coloured by the change from A (red: more of its samples, blue: fewer)")
               if s.profiles else ""))


def document(view: View) -> str:
    bw, cpu, mem = view.charts or (None, None, None)
    facts = "".join(f"<tr><th>{_esc(what)}</th><td>{_esc(value)}</td></tr>"
                    for what, value in view.header)
    summary = "".join(f"<li>{_esc(line)}</li>" for line in view.summary[1:])
    tone = view.decision.tone
    body = ['<h1>pytest-fsperf</h1>',
            f'<section class="summary {tone}">'
            f"<p><b>{_esc(view.summary[0] if view.summary else 'no workloads')}</b></p>"
            + (f"<ul>{summary}</ul>" if summary else "") + "</section>",
            f'<h2>What was measured</h2><div class="wide"><table class="facts">{facts}</table></div>',
            "<h2>Workloads</h2>" + _table(view.results, "results"),
            "<h2>Bandwidth</h2>" + bar_chart(bw)]
    if (cpu and cpu.bars) or (mem and mem.bars):
        body.append("<h2>FUSE daemon</h2>" + bar_chart(cpu) + bar_chart(mem))
    if view.timelines:
        body.append("<h2>Over time</h2><p>Each workload of a few seconds or more, second by "
                    "second: what it moved, and the FUSE daemon's resident memory.</p>"
                    + "".join(time_chart(c) for c in view.timelines))
    body += [_section(s) for s in view.sections]
    if view.notes:  # after the figures, not above them
        body.append("<h2>Notes</h2><ul>" + "".join(f"<li>{_esc(n)}</li>" for n in view.notes)
                    + "</ul>")
    return ("<!doctype html><html><head><meta charset=\"utf-8\">"
            "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
            "<title>pytest-fsperf</title>"
            f"<style>{STYLE}</style></head><body>{''.join(body)}"
            f"<script>{SCRIPT}</script></body></html>\n")
