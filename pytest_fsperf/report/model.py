"""What every renderer draws: tables, bars, charts and sections, and the names a row goes by."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from pytest_fsperf.figures import METRICS, Metric
from pytest_fsperf.result.comparison import Comparison
from pytest_fsperf.result.document import ResultRow
from pytest_fsperf.vocab import Decision, Outcome

HEADER = ("test", "workload", "bandwidth", "per second", "IOPS or ops", "p99 lat", "daemon CPU",
          "daemon peak mem", "cache", "verdict")


Row = ResultRow  # one workload's result, as every report shows it (rows.py)


@dataclass(frozen=True)
class Table:
    header: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]
    right: frozenset[int] = frozenset()  # right-aligned columns (figures)


@dataclass(frozen=True)
class Bar:
    label: str
    value: float
    side: str = "now"  # now, a, b, saved: how the chart colours it
    limit: float | None = None  # the test's threshold on this figure, drawn across the bar
    limit_text: str = ""  # as the user wrote it: "min_bw 2GB/s"
    failing: bool = False  # the workload failed its test


@dataclass(frozen=True)
class Chart:
    title: str
    metric: Metric
    bars: tuple[Bar, ...]


@dataclass(frozen=True)
class Section:
    """A comparison or check: a heading, lines under it, a table, a chart."""

    title: str
    lines: tuple[str, ...] = ()
    table: Table | None = None
    chart: Chart | None = None
    # an A/B's two daemon profiles, folded (stack, samples): a differential flame graph
    profiles: Mapping[str, list[tuple[str, int]]] | None = None


@dataclass(frozen=True)
class Figure:
    metric: Metric
    value: float


@dataclass(frozen=True)
class Trace:
    """One run's timeline, as drawn: a name (A, B or the workload) and its per-interval ends."""

    name: str
    t: tuple[float, ...]  # end of each interval, s
    bw: tuple[float, ...]  # MB/s
    rss: tuple[float | None, ...]  # MB
    cpu: tuple[float | None, ...]  # %
    clat: tuple[tuple[float, float], ...] = ()  # (s of fio's clock, mean latency ms)
    latency_kind: str = "clat"  # "lat" total, "clat" completion: the table's p99 kind
    fuse: tuple[float, ...] = ()  # FUSE requests per second, all opcodes (where traced)


@dataclass(frozen=True)
class TimeChart:
    title: str
    traces: tuple[Trace, ...]


@dataclass(frozen=True)
class View:
    header: tuple[tuple[str, str], ...]  # (what, value): the filesystem, machine, date, scale
    results: Table
    verdicts: tuple[Outcome, ...]
    notes: tuple[str, ...]
    charts: tuple[Chart, ...] = ()
    sections: tuple[Section, ...] = field(default_factory=tuple)
    summary: tuple[str, ...] = ()  # the decision, then each failing or undecided line
    timelines: tuple[TimeChart, ...] = ()  # per workload; A and B overlaid for an A/B
    decision: Decision = Decision.PASS  # the summary's first line says it, with its counts

    @property
    def failing(self) -> int:
        return sum(v.failing for v in self.verdicts)

    @property
    def unsure(self) -> int:
        return sum(v.unsure for v in self.verdicts)


def short_test(r: ResultRow | Comparison | str) -> str:
    """The test's name without its file: 'test_seq_read[4k]'."""
    return (r if isinstance(r, str) else r.test).rsplit("::", 1)[-1]


def label(r: Row) -> str:
    return f"{short_test(r)} {r.name}"


def figure_cell(metric: str, value: float | None) -> str:
    return METRICS[metric].show(value) if value is not None else "-"


def metric_name(metric: str) -> str:
    return METRICS[metric].label if metric in METRICS else metric
