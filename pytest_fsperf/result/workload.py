"""What one measured workload produced. Plain frozen data, serialisable to JSON."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, replace
from enum import Enum
from statistics import linear_regression, median
from typing import Any, TypeVar

from pytest_fsperf import typed
from pytest_fsperf.figures import Fig
from pytest_fsperf.result import readers
from pytest_fsperf.result.ceiling import Ceiling, CeilingPath
from pytest_fsperf.result.daemon import DaemonStats, Memory, Profile, short_cpu_note
from pytest_fsperf.result.fuse import FuseRequests
from pytest_fsperf.result.machine import Mounted, Placement, Rest
from pytest_fsperf.result.parts import ClientStats, Headline, IoStats, JobStats, OpStats, Spread
from pytest_fsperf.result.schema import JUDGEMENT, check
from pytest_fsperf.result.store import Cost, Requests
from pytest_fsperf.result.timeline import Timeline, shape
from pytest_fsperf.stats import mad, median_ci
from pytest_fsperf.vocab import READ_ONLY_OPERATIONS, ColdRead, DaemonCache, EngineKind, PageCache


def _plain_dict(items: list[tuple[str, Any]]) -> dict[str, Any]:
    return {k: v.value if isinstance(v, Enum) else v for k, v in items}


SHAPE = (Fig.STALL_S, Fig.DECAY, Fig.BW_SWING, Fig.RSS_GROWTH)  # from the timeline
# a workload's bandwidth (a listing's entries/s) as a percentage of each ceiling (min_efficiency)
SHARES = {Fig.EFFICIENCY: CeilingPath.STORE, "efficiency:fuse": CeilingPath.FUSE,
          "efficiency:tmpfs": CeilingPath.TMPFS}


R = TypeVar("R", bound="WorkloadResult")


@dataclass(frozen=True)
class WorkloadResult:
    test: str
    name: str
    kind: EngineKind
    options: dict[str, str]  # effective options after scaling
    cache: PageCache  # a str: "cold: drop_caches", "cold: fadvise", ..., "warm"
    daemon_cache: DaemonCache  # a str, e.g. "cold: remounted, disk cache wiped"
    read: IoStats | None
    write: IoStats | None
    daemon: DaemonStats | None
    daemon_note: str  # why daemon figures are missing, or how the daemon was found
    wall_seconds: float
    # The load generator's CPU, 100% = one core: fio's own (wait4); for in-process engines,
    # this process (engine threads and the meters) plus reaped children (sysbench).
    tool_cpu_percent: float
    judged: bool = True
    ops: OpStats | None = None
    scenario: str | None = None  # the built-in scenario id it ran, if any
    notes: tuple[str, ...] = ()  # e.g. the juicefs bench grade of the row
    cache_disk_peak_bytes: int | None = None  # peak disk use of the daemon's cache dirs, sampled
    rounds: tuple[dict[str, float | None], ...] = ()  # every round's figures (--fsperf-rounds)
    mount: Mounted | None = None  # the backend the plugin mounted: name, options (redacted)
    cold_steps: tuple[str, ...] = ()  # what cold() did: unmount, wiped DIR, mount, drop_caches
    canary: tuple[float, ...] = ()  # machine canary scores around its rounds (saved/compared runs)
    cold_read: ColdRead = ColdRead.UNCHECKED  # was a cold read served by the daemon?
    cold_evidence: str = ""  # the bytes behind that, in words
    round_cold: tuple[ColdRead, ...] = ()  # each round's own cold check (rounds, A/B pairs)
    # fio: the files were created by this run or laid out just before it (True), or were
    # found as an earlier run left them (False); a fresh file reads unlike a reused one
    fresh_files: bool | None = None
    placement: Placement | None = None  # the CPUs the daemon and the load were pinned to
    # how much the machine's page cache grew while it ran (of the mount's files, or of the
    # daemon's backing files): what a VM's free page reporting after a drop can slow
    cache_filled: int | None = None
    rest: Rest | None = None  # the rest of the machine's CPU and steal over the run (cores)
    # what the store, FUSE with nothing behind it and tmpfs moved for the same job
    # (--fsperf-ceilings; ceilings/): the workload as a fraction of each
    ceilings: tuple[Ceiling, ...] = ()
    fuse: FuseRequests | None = None  # the kernel's FUSE requests to the daemon, by opcode
    fuse_note: str = ""  # why there is no FUSE trace, when there is none
    requests: Requests | None = None  # what the object store served in the window, by kind
    requests_note: str = ""  # why there are no request figures, when there are none
    cost: Cost | None = None  # those requests at the chosen price list's prices
    timeline: Timeline | None = None  # per interval, when the run lasted a few of them
    daemon_counters: dict[str, float] | None = None  # the daemon's own (JuiceFS .stats)
    memory: Memory | None = None  # the daemon's cgroup: its memory limit, peak, OOM kills
    rss_after: int | None = None  # the daemon's RSS after --fsperf-rss-settle s, bytes
    rss_before: int | None = None  # its RSS just before the window (with rss_after), bytes
    # the figures a listed meter reads itself (measure/registry.py), by the registry's keys
    # (figures.py); None: its meter did not measure (the daemon's page faults, its disk I/O)
    measured: dict[str, float | None] = field(default_factory=dict)
    page_cache: int | None = None  # the page cache its files held at the window's end, bytes
    page_cache_note: str = ""  # why it was not counted
    # many clients (fsperf.fio(clients=N)): each one; read/write above are fio's "All clients"
    clients: tuple[ClientStats, ...] = ()
    # fio's jobs reported apart (per_job=True): each one; read/write above are their sum
    jobs: tuple[JobStats, ...] = ()
    # the daemon's CPU profile (an A/B's profiled pair): in the JSON only its summary
    profile: Profile | None = field(default=None, compare=False)
    profile_note: str = ""  # why a profile asked for was not taken
    raw: dict[str, Any] = field(default_factory=dict, compare=False)
    output_file: str = field(default="", compare=False)  # fio's JSON; lives for the session

    @property
    def directions(self) -> list[IoStats]:
        return [d for d in (self.read, self.write) if d is not None and d.total_ios > 0]

    @property
    def io_bytes(self) -> int:
        if self.ops is not None:
            return self.ops.io_bytes
        return sum(d.io_bytes for d in self.directions)

    @property
    def bw_bytes(self) -> float:
        """Read plus write bandwidth, B/s."""
        if self.ops is not None:
            return self.ops.bw_bytes
        return sum(d.bw_bytes for d in self.directions)

    @property
    def iops(self) -> float:
        return sum(d.iops for d in self.directions)

    def worst(self, attr: str) -> float | None:
        """A latency figure: the small-file engine's per file; fio's worst direction."""
        if self.ops is not None:  # per file (or op): the whole transfer
            phase = self.ops.phases.get("full") or self.ops.phases.get("op")
            key = {"lat_mean_ns": "mean_ns", "lat_p50_ns": "p50_ns", "lat_p99_ns": "p99_ns"}[attr]
            return float(getattr(phase, key)) if phase else None
        values = [getattr(d, attr) for d in self.directions]
        if not values or any(v is None for v in values):
            return None
        return float(max(values))

    def phase_figure(self, phase: str, key: str) -> float | None:
        """A phase of the small-file engine per file (open, first_byte, full, close)."""
        stats = self.ops.phases.get(phase) if self.ops is not None else None
        return float(getattr(stats, key)) if stats is not None else None

    @property
    def lat_p99_ns(self) -> float | None:
        return self.worst("lat_p99_ns")

    def metrics(self) -> dict[str, float | None]:
        """Every figure a threshold may name; over several rounds, each figure's median.
        None: this kind measures it, but it was not measured honestly this time (see
        daemon_note). Missing key: this kind cannot answer."""
        own = self.single_metrics()
        if self.rounds:
            own = {key: median(values) if (values := self.values(key)) else None for key in own}
            after = self.values(Fig.DAEMON_RSS_AFTER)
            if len(after) >= 3:  # a leak grows round after round: least-squares slope
                own[Fig.DAEMON_RSS_ROUND_GROWTH] = linear_regression(
                    range(len(after)), after).slope  # bytes per round
        return {**own, **self._shares(own.get(self._rate))}

    @property
    def _rate(self) -> str:
        """The figure a ceiling bounds: bandwidth, or entries per second for a listing."""
        return Fig.BW if self.io_bytes or self.kind != EngineKind.META else Fig.OPS

    def _shares(self, bw: float | None) -> dict[str, float | None]:
        """efficiency (of the store's ceiling), efficiency:fuse and :tmpfs: the bandwidth as a
        percentage of each ceiling measured for a fio job or the small-file engine (None:
        not measured, see ceiling_note); the other engines have no ceilings."""
        if self.kind not in (EngineKind.FIO, EngineKind.FILES, EngineKind.META):
            return {}
        out: dict[str, float | None] = {}
        for key, path in SHARES.items():
            c = next((c for c in self.ceilings if c.path == path), None)
            out[key] = (None if bw is None or c is None or c.unavailable
                        else 100 * bw / c.bw_bytes if self.io_bytes and c.bw_bytes
                        else 100 * bw / c.ops if not self.io_bytes and c.ops else None)
        return out

    def ceiling_note(self, metric: str) -> str:
        """Why a share of a ceiling is not known."""
        path = SHARES.get(metric, CeilingPath.STORE)
        c = next((c for c in self.ceilings if c.path == path), None)
        if not self.ceilings:
            return "no ceilings were measured for it"
        return f"the {path} ceiling was not measured: {c.unavailable}" if c and c.unavailable \
            else f"no {path} ceiling for this job"

    def single_metrics(self) -> dict[str, float | None]:
        """This run's own figures, not the rounds' medians: each read by its reader
        (result/readers.py); None kept where the figure's meter did not measure (a bound on it
        is then "not judged", never passed), dropped where this workload cannot answer it."""
        figures: dict[str, float | None] = {}
        for key, read in readers.READ.items():
            applies = readers.APPLIES.get(key)
            if applies is None or applies(self):
                value = read(self)
                if value is not None or key in readers.KEPT:
                    figures[key] = value
        parts = {**self._fuse_figures(), **readers.MEASURED, **self.measured}
        shape_of = shape(self.timeline)
        parts.update({k: shape_of.get(k) for k in SHAPE})  # None: too short to have a shape
        figures.update((k, v) for k, v in parts.items() if self._kept(k, v))
        return figures

    def _kept(self, key: str, value: float | None) -> bool:
        """A part's figure stays where it applies, and, unmeasured, where its source says None
        is 'not measured here' (a per-opcode FUSE figure is its base figure's kind)."""
        base = key.split(":", 1)[0]
        applies = readers.APPLIES.get(base)
        return (applies is None or applies(self)) and (value is not None or base in readers.KEPT)

    @property
    def files(self) -> int:
        """The files (or entries) the workload touched: the engine's count; fio's jobs times
        their nrfiles."""
        if self.ops is not None:
            return self.ops.count
        if self.kind != EngineKind.FIO:
            return 0
        try:
            return int(self.options.get("numjobs", "1")) * int(self.options.get("nrfiles", "1"))
        except ValueError:
            return 0

    def _fuse_figures(self) -> dict[str, float | None]:
        """The FUSE request figures: all requests, per MiB moved, per file; and per opcode
        seen (fuse_requests:READ, fuse_per_file:GETATTR ...). None: not traced."""
        f = self.fuse
        mib, files = self.io_bytes / 2**20, self.files
        if f is None:
            return {Fig.FUSE_REQUESTS: None, Fig.FUSE_PER_MIB: None, Fig.FUSE_PER_FILE: None}
        out: dict[str, float | None] = {
            Fig.FUSE_REQUESTS: float(f.total), Fig.FUSE_PER_MIB: f.total / mib if mib else None,
            Fig.FUSE_PER_FILE: f.total / files if files else None}
        for op in f.ops:
            out[f"fuse_requests:{op.opcode}"] = float(op.count)
            if files:
                out[f"fuse_per_file:{op.opcode}"] = op.count / files
            if mib:
                out[f"fuse_per_mib:{op.opcode}"] = op.count / mib
        return out

    def figure(self, metric: str) -> float | None:
        """One figure by its key, as metrics() gives it (see pick)."""
        return pick(self.metrics(), metric)

    @property
    def read_only_bytes(self) -> int:
        """Bytes read by a workload that only reads (0 for one that also writes)."""
        if self.ops is not None:
            return self.ops.io_bytes if self.ops.operation in READ_ONLY_OPERATIONS else 0
        if self.write is not None and self.write.total_ios > 0:
            return 0
        return self.read.io_bytes if self.read is not None else 0

    @property
    def cpu_per_gb(self) -> float | None:
        """The daemon's CPU-seconds per GB the workload moved, over its whole window: the work
        per byte, which does not depend on how long the window was."""
        if self.daemon is None or not self.io_bytes:
            return None
        return self.daemon.cpu_seconds / (self.io_bytes / 1e9)

    def values(self, metric: str) -> list[float]:
        """A figure of every round (one value without rounds)."""
        if metric in SHARES:  # each round's bandwidth against the one ceiling
            per_unit = self._shares(1.0).get(metric)  # the share of 1 B/s (or 1 entry/s)
            return [v * per_unit for v in self.values(self._rate)] if per_unit else []
        if not self.rounds:
            own = pick(self.single_metrics(), metric)
            return [own] if own is not None else []
        return [v for r in self.rounds if (v := pick(r, metric)) is not None]

    def total(self) -> Headline:
        """The headline figures (medians over rounds), as the report and JSON show them."""
        m = self.metrics()
        return Headline(self.io_bytes, m.get(Fig.BW) or 0.0, m.get(Fig.IOPS) or 0.0, m.get(Fig.OPS),
                        m.get(Fig.LAT_P99))

    def to_dict(self) -> dict[str, Any]:
        """Plain data (the enums as their words): it travels through xdist and into JSON."""
        data = asdict(self, dict_factory=_plain_dict)
        del data["output_file"]
        data["total"] = asdict(self.total())
        data["stats"] = {k: asdict(v) for k, v in self.spreads().items()}
        data["requests"] = self.requests.to_dict() if self.requests else None
        for c, row in zip(self.clients, data["clients"], strict=True):
            row["requests"] = c.requests.to_dict() if c.requests else None
        data["fuse"] = self.fuse.to_dict() if self.fuse else None
        data["profile"] = self.profile.summary() if self.profile else None
        data["cost"] = self.cost.to_dict() if self.cost else None
        data["timeline"] = self.timeline.to_dict() if self.timeline else None
        # not measured is null with its reason, never 0.0 (a dashboard would plot 0%)
        for stats, row in ((self.daemon, data["daemon"]),
                           *((c.daemon, d["daemon"]) for c, d in zip(self.clients, data["clients"],
                                                                      strict=True))):
            if stats is not None and stats.countable_cpu is None:
                row["cpu_percent"] = None
                row["cpu_percent_note"] = short_cpu_note(stats.cpu_window_seconds or stats.wall_seconds)
        return data

    def spreads(self) -> dict[str, Spread]:
        """Each figure over the rounds (summary)."""
        return summary(self)

    @classmethod
    def from_dict(cls: type[R], data: Mapping[str, Any]) -> R:
        """A result's JSON (to_dict's, a worker's, a saved run's) back into its types, checked
        against the schema's result and each field's annotation; what to_dict derives (total,
        stats) is left, and so is a report's judgement where cls holds none. ValueError names
        the result and its wrong field. to_dict(from_dict(x)) writes x again."""
        if not isinstance(data, Mapping):  # a file's result of another shape: said, not raised
            raise ValueError(f"a result is not an object but {type(data).__name__}")
        what = f"result {str(data.get('test', '?'))[:200]}::{str(data.get('name', '?'))[:100]}"
        check(data, "result", what)
        left = (JUDGEMENT | {"total", "stats"}) - typed.names(cls)
        own = {k: v for k, v in data.items() if k not in left}
        return typed.read(cls, own, what, READERS)


def _daemon(data: Mapping[str, Any]) -> DaemonStats:
    """A daemon's JSON: a CPU% not countable was written null, with why."""
    own = {k: v for k, v in data.items() if k != "cpu_percent_note"}
    if own.get("cpu_percent") is None:
        own["cpu_percent"] = math.nan
    return typed.read(DaemonStats, own, "daemon")


READERS: typed.Hooks = {DaemonStats: _daemon, Requests: Requests.from_dict, Timeline: Timeline.from_dict,
                        FuseRequests: FuseRequests.from_dict, Profile: Profile.from_summary}


def pick(figures: dict[str, float | None], metric: str) -> float | None:
    """A figure of a metrics() dict; a per-opcode FUSE figure (fuse_per_file:GETATTR) of an
    opcode the trace did not see is 0 where the trace was taken."""
    if metric in figures or ":" not in metric:
        return figures.get(metric)
    base = figures.get(metric.split(":", 1)[0])
    return 0.0 if base is not None else None


def median_round(runs: list[WorkloadResult], name: str) -> WorkloadResult:
    """The median run (by bandwidth, or ops/s where no bytes moved), renamed, carrying every
    run's figures as its rounds: for an odd count its figures are one real run's."""
    key = Fig.BW if runs[0].io_bytes else Fig.OPS
    ordered = sorted(runs, key=lambda r: r.single_metrics().get(key) or 0.0)
    return replace(ordered[(len(ordered) - 1) // 2], name=name, rounds=tuple(
        {**r.single_metrics(), "seconds": r.wall_seconds} for r in runs),
        round_cold=tuple(r.cold_read for r in runs))


def summary(r: WorkloadResult) -> dict[str, Spread]:
    """Per figure over the rounds: n, median, MAD, and the 95% bootstrap interval of the median."""
    out: dict[str, Spread] = {}
    own = None if r.rounds else r.single_metrics()  # one run's figures, worked out once
    for key in r.metrics():
        found = pick(own, key) if own is not None and key not in SHARES else None
        values = r.values(key) if own is None or key in SHARES else [found] if found is not None else []
        if values:
            lo, hi = median_ci(values)
            out[key] = Spread(len(values), median(values), mad(values), lo, hi)
    return out
