"""Charts of the figures and timelines of the figures over a workload's window."""

from __future__ import annotations

from collections.abc import Mapping

from pytest_fsperf import units
from pytest_fsperf.figures import METRICS, Fig
from pytest_fsperf.report.cells import figures
from pytest_fsperf.report.model import (
    Bar,
    Chart,
    Row,
    TimeChart,
    Trace,
    label,
    short_test,
)
from pytest_fsperf.result.comparison import Comparison


def _bar(r: Row, text: str, value: float, metric: str, side: str = "now") -> Bar:
    """A bar of a workload's figure, with the test's threshold on it and whether it failed."""
    limit = r.limits.get(metric)
    return Bar(text, value, side, limit=limit.limit if limit else None,
               limit_text=limit.text if limit else "",
               failing=r.verdict.failing)


def bar_charts(results: list[Row], references: Mapping[tuple[str, str], Row] | None = None,
               ) -> tuple[Chart, ...]:
    """Bandwidth per workload and round, daemon CPU, daemon memory. references: a gated
    workload's (test, name) -> its reference's (A's) run, drawn beside it (A blue, B red): a
    gate's candidate alone was half the picture."""
    references = references or {}
    judged = [r for r in results if r.judged]
    results = judged or results  # layout steps only where nothing else was measured
    per_round, single = [], []
    for r in results:
        ref = references.get((str(r.test), str(r.name)))
        drawn = [(ref, "a", " A"), (r, "b", " B")] if ref is not None else [(r, "now", "")]
        for row, side, tag in drawn:
            per_round += [_bar(row, f"{label(r)}{tag} #{i + 1}", bw, Fig.BW, side)
                          for i, rnd in enumerate(row.rounds) if (bw := rnd.get(Fig.BW))]
            if not row.rounds and row.headline.io_bytes:
                single.append(_bar(row, f"{label(r)}{tag}", row.headline.bw_bytes, Fig.BW, side))
    by_metric: dict[str, list[Bar]] = {Fig.DAEMON_CPU: [], Fig.DAEMON_RSS: []}
    for r in results:
        for f in figures(r):
            if f.metric.key in by_metric:
                d, named = r.daemon, label(r)
                if f.metric.key == Fig.DAEMON_RSS and d is not None and d.carried:  # not its own
                    named += f" (started at {units.format_mb(d.start_rss_bytes or 0)})"
                by_metric[f.metric.key].append(_bar(r, named, f.value, f.metric.key))
    title = "bandwidth per workload and round" + (
        " (a gate's reference A blue, its candidate B red)" if references else "")
    return (Chart(title, METRICS[Fig.BW], tuple(per_round + single)),
            Chart("daemon CPU (100% = one core)", METRICS[Fig.DAEMON_CPU], tuple(by_metric[Fig.DAEMON_CPU])),
            Chart("daemon peak memory", METRICS[Fig.DAEMON_RSS], tuple(by_metric[Fig.DAEMON_RSS])))


def trace(name: str, r: Row) -> Trace | None:
    t = r.timeline
    if not t:
        return None
    ops = t.fuse_ops
    spans = [b - a for a, b in zip(t.t, t.t[1:], strict=False)]
    fuse = tuple(sum(row[i] for row in ops.values()) / span if span > 0 else 0.0
                 for i, span in enumerate(spans)) if ops else ()
    return Trace(name, tuple(t.t[1:]), tuple(b / 1e6 for b in t.bw),
                 tuple(x / 1e6 if x is not None else None for x in t.rss), tuple(t.cpu),
                 tuple((float(sec), ns / 1e6) for sec, ns in t.clat), t.latency_kind, fuse)


def timelines(results: list[Row], comparisons: list[Comparison],
              behind: set[tuple[str, str]]) -> tuple[TimeChart, ...]:
    """A chart per workload with a timeline; for an A/B, its first A and first B overlaid."""
    by = {(str(r.test), str(r.name)): r for r in results}
    charts = [TimeChart(label(r), (tr,)) for r in results
              if (str(r.test), str(r.name)) not in behind and (tr := trace("", r))]
    for c in comparisons:
        pair = [trace(side, by[key]) for side, names in (("A", c.a_results), ("B", c.b_results))
                if names and (key := (c.test, names[0])) in by]
        drawn = tuple(tr for tr in pair if tr is not None)
        if drawn:
            charts.append(TimeChart(f"{short_test(c.test)} {c.name}: A and B, first pair",
                                    drawn))
    return tuple(charts)
