"""The trend page of `fsperf history --html`: per series a chart over runs (each run's median
and its slowest-to-fastest rounds), change points marked with their size, the machine canary
under it, the newest run highlighted; a table of every change point, worst first. One
self-contained file, like the report."""

from __future__ import annotations

import itertools
import time
from collections.abc import Sequence

from pytest_fsperf.judge.history import Analysis, Cause, Series
from pytest_fsperf.report.html import STYLE, _esc

W, H, PAD, CANARY_H = 760, 220, 46, 70
EXTRA = """
.cp{stroke:#b00;stroke-width:1.5;stroke-dasharray:4 3}.cp.machine{stroke:#888}
.level{stroke:#555;stroke-width:1.2}.newest{fill:#d53a3a}.run{fill:#3a7bd5}
.band{stroke:#3a7bd5;stroke-width:1;opacity:.5}.canary{fill:none;stroke:#888;stroke-width:1.2}
"""


def _scale(values: Sequence[float], top: int, height: int) -> tuple[float, float, int, int]:
    lo, hi = min(values), max(values)
    if hi == lo:
        lo, hi = lo * 0.95, hi * 1.05 or 1.0
    pad = (hi - lo) * 0.08
    return lo - pad, hi + pad, top, height


def _x(i: int, n: int) -> float:
    return PAD + (W - 2 * PAD) * (i / max(n - 1, 1))


def _y(v: float, frame: tuple[float, float, int, int]) -> float:
    lo, hi, top, height = frame
    return top + height - (v - lo) / (hi - lo) * height


def chart(a: Analysis) -> str:
    s = a.series
    n = len(s.points)
    lows = [p.low for p in s.points] + [p.high for p in s.points]
    frame = _scale(lows, 14, H - 40)
    out = [f'<svg class="trend" width="{W}" height="{H + CANARY_H}" viewBox="0 0 {W} '
           f'{H + CANARY_H}" role="img" aria-label="{_esc(s.key)} {_esc(s.label)} over {n} runs">']
    lo, hi, _t, _h = frame
    for v in (lo, (lo + hi) / 2, hi):
        y = _y(v, frame)
        out.append(f'<text x="2" y="{y + 4:.1f}">{_esc(s.shown(v))}</text>')
    # the levels between change points (Otava's means)
    cuts = [0, *(c.index for c in a.changes), n]
    means = [a.changes[0].before] if a.changes else [sum(s.values()) / n]
    means += [c.after for c in a.changes]
    for (start, stop), mean in zip(itertools.pairwise(cuts), means, strict=False):
        y = _y(mean, frame)
        out.append(f'<line class="level" x1="{_x(start, n) - 4:.1f}" x2="{_x(stop - 1, n) + 4:.1f}" '
                   f'y1="{y:.1f}" y2="{y:.1f}"/>')
    for i, p in enumerate(s.points):
        x = _x(i, n)
        out.append(f'<line class="band" x1="{x:.1f}" x2="{x:.1f}" y1="{_y(p.low, frame):.1f}" '
                   f'y2="{_y(p.high, frame):.1f}"/>')
        cls = "newest" if i == n - 1 else "run"
        build = f", build {p.build}" if p.build else ""
        out.append(f'<circle class="{cls}" cx="{x:.1f}" cy="{_y(p.value, frame):.1f}" r="3.5">'
                   f'<title>{_esc(p.run)}{_esc(build)}: {_esc(s.shown(p.value))}</title></circle>')
    for c in a.changes:
        x = (_x(c.index - 1, n) + _x(c.index, n)) / 2
        cls = "cp machine" if c.cause == Cause.MACHINE else "cp"
        out.append(f'<line class="{cls}" x1="{x:.1f}" x2="{x:.1f}" y1="10" y2="{H - 24}"/>'
                   f'<text x="{x + 3:.1f}" y="12">{c.change:+.1%}'
                   f'{" (machine)" if c.cause == Cause.MACHINE else ""}</text>')
    out.append(f'<text x="{PAD}" y="{H - 6}">run 1</text><text x="{W - PAD - 60}" '
               f'y="{H - 6}">run {n} (newest)</text>')
    canary = s.canary()
    if canary:
        cframe = _scale(canary, H + 6, CANARY_H - 20)
        pts = " ".join(f"{_x(i, n):.1f},{_y(v, cframe):.1f}" for i, v in enumerate(canary))
        out.append(f'<polyline class="canary" points="{pts}"/><text x="2" y="{H + 14}">'
                   'machine canary</text>')
        for m in a.machine:
            x = (_x(m.index - 1, n) + _x(m.index, n)) / 2
            out.append(f'<line class="cp machine" x1="{x:.1f}" x2="{x:.1f}" y1="{H + 4}" '
                       f'y2="{H + CANARY_H - 12}"/>')
    out.append("</svg>")
    return "".join(out)


def _changes_table(analyses: Sequence[Analysis]) -> str:
    rows = sorted((c for a in analyses for c in a.changes),
                  key=lambda c: (not c.worse, c.cause == Cause.MACHINE, -abs(c.change)))
    if not rows:
        return "<p>No change point in any series.</p>"
    head = ("workload", "figure", "change", "from run", "build", "mean before", "mean after",
            "p-value", "cause")
    body = []
    for c in rows:
        s, p = c.series, c.first
        cls = "bad" if c.worse and c.cause != Cause.MACHINE else "good" if not c.worse else ""
        cells = (s.key, s.label, f"{c.change:+.1%}", p.run, p.build or "-", s.shown(c.before),
                 s.shown(c.after), f"{c.pvalue:.2g}", c.cause.value)
        body.append("<tr>" + "".join(
            f'<td class="{cls}">{_esc(v)}</td>' if i == 2 else f"<td>{_esc(v)}</td>"
            for i, v in enumerate(cells)) + "</tr>")
    return ("<table><tr>" + "".join(f"<th>{h}</th>" for h in head) + "</tr>" + "".join(body)
            + "</table>")


def _fingerprint(s: Series) -> str:
    return "; ".join(f"{k} {v.strip(chr(34))}" for k, v in s.fingerprint if k != "workload")


def page(analyses: Sequence[Analysis], notes: Sequence[str], title: str = "fsperf history") -> str:
    body = [f"<h1>{_esc(title)}</h1><p>{len(analyses)} series; made "
            f"{_esc(time.strftime('%Y-%m-%d %H:%M:%S UTC', time.gmtime()))}. Each dot is a "
            "run's median, its line the slowest to fastest round; dashed red: a change point "
            "of the filesystem (grey: the machine's), with its size; the newest run in red.</p>"]
    body.append("<h2>Change points, worst first</h2>" + _changes_table(analyses))
    if notes:
        body.append("<ul>" + "".join(f"<li>{_esc(n)}</li>" for n in notes) + "</ul>")
    for a in analyses:
        s = a.series
        body.append(f"<h2>{_esc(s.key)}: {_esc(s.label)}</h2><p>{len(s.points)} runs; "
                    f"{_esc(_fingerprint(s))}</p>{chart(a)}")
        if a.note:
            body.append(f"<p>{_esc(a.note)}</p>")
    return (f"<!doctype html><html><head><meta charset='utf-8'><title>{_esc(title)}</title>"
            f"<meta name='viewport' content='width=device-width,initial-scale=1'>"
            f"<style>{STYLE}{EXTRA}</style></head><body>{''.join(body)}</body></html>")
