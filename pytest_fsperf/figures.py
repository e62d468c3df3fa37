"""The registry of figures: each figure a result yields declared once - its key, label, how a
threshold on it is written and shown, its direction and unit, and where it is judged (the
marker keywords that bound it, A/B comparisons, saved runs, history) and shown (the results
table). The lists each of those reads are made from it."""

from __future__ import annotations

import enum
from collections.abc import Callable
from dataclasses import dataclass
from typing import Final

from pytest_fsperf import units


class Fig:
    """Each figure's name: the registry's key (METRICS), a result's metrics() key, a threshold's
    figure, a comparison's. Code names a figure by its attribute here (a misspelt one fails
    mypy), never by text; the values are plain text, as JSON and xdist carry them."""

    BW: Final = "bw"
    STORED_BW: Final = "stored_bw"
    IOPS: Final = "iops"
    OPS: Final = "ops"
    DAEMON_CPU: Final = "daemon_cpu"
    DAEMON_CPU_PER_GB: Final = "daemon_cpu_per_gb"
    DAEMON_RSS: Final = "daemon_rss"
    DAEMON_RSS_AFTER: Final = "daemon_rss_after"
    DAEMON_RSS_ROUND_GROWTH: Final = "daemon_rss_round_growth"
    DAEMON_RSS_PER_HANDLE: Final = "daemon_rss_per_handle"
    DAEMON_MAJOR_FAULTS: Final = "daemon_major_faults"
    DAEMON_MINOR_FAULTS: Final = "daemon_minor_faults"
    DAEMON_DISK_READ: Final = "daemon_disk_read"
    DAEMON_DISK_WRITTEN: Final = "daemon_disk_written"
    PAGE_CACHE: Final = "page_cache"
    LAT_P99: Final = "lat_p99"
    LAT_P50: Final = "lat_p50"
    LAT_MEAN: Final = "lat_mean"
    TTFB_P50: Final = "ttfb_p50"
    TTFB_P99: Final = "ttfb_p99"
    REQ_TOTAL: Final = "req_total"
    REQ_GET: Final = "req_get"
    REQ_HEAD: Final = "req_head"
    REQ_LIST: Final = "req_list"
    REQ_PUT: Final = "req_put"
    REQ_PER_MIB: Final = "req_per_mib"
    REQ_PER_FILE: Final = "req_per_file"
    FUSE_REQUESTS: Final = "fuse_requests"
    FUSE_PER_MIB: Final = "fuse_per_mib"
    FUSE_PER_FILE: Final = "fuse_per_file"
    COST: Final = "cost"
    COST_PER_TB: Final = "cost_per_tb"
    STALL_S: Final = "stall_s"
    DECAY: Final = "decay"
    BW_SWING: Final = "bw_swing"
    RSS_GROWTH: Final = "rss_growth"
    EFFICIENCY: Final = "efficiency"
    APP_ERRORS: Final = "app_errors"


class Source(enum.Enum):
    """Where a figure is read from, and so what its absence says. RUN: the engine's own
    figures; a workload that has none cannot answer, and a bound on it is a usage error.
    Every other source is a meter's: where it did not measure (no daemon found, no store
    counters, no trace, too short a timeline, no ceiling) the figure is None and a bound on it
    is "not judged", with that meter's own reason (judge/thresholds.py)."""

    RUN = "run"
    DAEMON = "daemon"
    STORE = "store"
    FUSE = "fuse"
    PAGE_CACHE = "page cache"
    SHAPE = "shape"
    CEILING = "ceiling"

    @property
    def kept_when_missing(self) -> bool:
        """None stays in a result's figures (not measured here), not dropped (cannot answer)."""
        return self is not Source.RUN


@dataclass(frozen=True)
class Metric:
    key: str  # a Fig name; one part of a figure: "fuse_per_file:GETATTR", "efficiency:fuse"
    label: str  # how the figure is named in messages and tables
    parse: Callable[[object], float]  # a threshold as the user writes it
    show: Callable[[float], str]
    bigger_is_better: bool
    unit: str  # in files for other tools (github-action-benchmark): value / scale in unit
    scale: float = 1.0
    series: str = ""  # the name of its series there; stable, as users' history is kept by it
    # where it is judged (the one list of each: plan/marker.KEYWORDS, judge/comparison.COMPARED,
    # judge/runs.SAVED and judge/series.FOLLOWED are made from these): the marker keywords
    # that bound it (min_... or max_...), whether A/B comparisons judge it, whether a saved
    # run's comparison does (a count a build and its options fix: more in every round than
    # in any saved run, past the tolerance, is a regression), whether history follows it
    keywords: tuple[str, ...] = ()
    compared: bool = False
    saved: bool = False
    history: bool = False
    # the results table's column for it, shown where a test bounds the figure ("": none
    # but the headline's own: bandwidth, rate, p99, daemon CPU and memory)
    column: str = ""
    # how an A/B decides on it (judge/deciding.py): among the figures a release gate and
    # fsperf.compare decide on by default (gated; where `unless` is measured, that one
    # instead: daemon CPU% decides only where no bytes moved), with its own tolerance (None:
    # the test's), a floor (a figure below it counts as it: 3% against 1% of a core is no
    # change), judged as an exact count (count: every pair
    # past the tolerance decides at once) and, for a request shape (shape), without a better
    # direction: moved either way is "changed"
    gated: bool = False
    unless: str = ""
    tolerance: float | None = None
    floor: float = 0.0
    count: bool = False
    shape: bool = False
    source: Source = Source.RUN  # where it is read from: what None means (Source)
    # read by a meter of its own (measure/registry.py) into a result's `measured`, not by a
    # reader of result/readers.py: None there until its meter reads it
    measured: bool = False

    def tolerance_or(self, test_tolerance: float) -> float:
        """Its own tolerance, else the test's."""
        return test_tolerance if self.tolerance is None else self.tolerance

    def __post_init__(self) -> None:
        if not self.series:
            object.__setattr__(self, "series", self.label)


def _number(value: object) -> float:
    return units.plain_number(value)


def _cpu_s(value: float) -> str:
    return f"{value:.3g} CPU-s/GB"


def _share(value: object) -> float:
    return units.parse_percent(value, "50%", "of the ceiling's bandwidth")


def _bw(value: object) -> float:
    return units.parse_bytes(value, rate=True)


METRICS: dict[str, Metric] = {m.key: m for m in (
    Metric(Fig.BW, "bandwidth", _bw, units.format_rate, True, "MB/s", 1e6,
           keywords=("min_bw", "max_bw"), compared=True, history=True),
    # A write's bytes over the time until the store had them (a daemon buffers, uploads later):
    # where the store is counted, what a release gate judges a write by.
    Metric(Fig.STORED_BW, "bandwidth to the store", _bw, units.format_rate, True, "MB/s", 1e6,
           keywords=("min_stored_bw",), compared=True, column="to the store"),
    Metric(Fig.IOPS, "IOPS", units.parse_rate_count, units.format_count, True, "IOPS",
           keywords=("min_iops",), compared=True),
    Metric(Fig.OPS, "ops/s", units.parse_rate_count, units.format_count, True, "ops/s", series="ops",
           keywords=("min_ops",), compared=True, history=True),
    Metric(Fig.DAEMON_CPU, "daemon CPU", units.parse_percent, units.format_percent, False, "%",
           keywords=("max_cpu",), compared=True, gated=True, unless=Fig.DAEMON_CPU_PER_GB,
           tolerance=0.25, floor=10.0, source=Source.DAEMON),
    Metric(Fig.DAEMON_CPU_PER_GB, "daemon CPU-s/GB", _number, _cpu_s, False, "CPU-s/GB",
           compared=True, history=True, column="CPU-s/GB", gated=True, tolerance=0.20, source=Source.DAEMON),
    Metric(Fig.DAEMON_RSS, "daemon peak memory", units.parse_bytes, units.format_mb, False, "MB", 1e6,
           keywords=("max_rss",), compared=True, history=True, gated=True, tolerance=0.20,
           floor=16e6, source=Source.DAEMON),
    # The daemon's RSS a while after the window (--fsperf-rss-settle): what it gave back.
    Metric(Fig.DAEMON_RSS_AFTER, "daemon memory after settling", units.parse_bytes, units.format_mb,
           False, "MB", 1e6,
           keywords=("max_rss_after",), compared=True, gated=True, tolerance=0.20, floor=16e6,
           source=Source.DAEMON),
    # The slope of daemon_rss_after over a test's rounds: a leak grows round after round.
    Metric(Fig.DAEMON_RSS_ROUND_GROWTH, "daemon memory growth per round", units.parse_bytes,
           units.format_mb, False, "MB", 1e6,
           keywords=("max_rss_round_growth",), source=Source.DAEMON),
    # fsperf.files(mode="hold"): the daemon's memory while N files are held open and idle,
    # over its RSS before they were opened, per file.
    Metric(Fig.DAEMON_RSS_PER_HANDLE, "daemon memory per idle open file", units.parse_bytes,
           units.format_mb, False, "MB", 1e6,
           keywords=("max_rss_per_handle",), compared=True, source=Source.DAEMON),
    # The daemon's major page faults over the window (measure/faults.py): its own pages read
    # back from disk, as after a cold start's cache drop.
    Metric(Fig.DAEMON_MAJOR_FAULTS, "daemon major page faults", units.parse_count,
           units.format_count, False, "faults",
           keywords=("max_major_faults",), compared=True, history=True, column="major faults",
           source=Source.DAEMON, measured=True),
    Metric(Fig.DAEMON_MINOR_FAULTS, "daemon minor page faults", units.parse_count,
           units.format_count, False, "faults", keywords=("max_minor_faults",), source=Source.DAEMON,
           measured=True),
    # What the daemon read from and wrote to storage in the window (measure/storage_io.py): a
    # stage or cache on a local disk, where the store alone was expected.
    Metric(Fig.DAEMON_DISK_READ, "daemon disk read", units.parse_bytes, units.format_mb, False,
           "MB", 1e6, keywords=("max_disk_read",), source=Source.DAEMON, measured=True),
    Metric(Fig.DAEMON_DISK_WRITTEN, "daemon disk written", units.parse_bytes, units.format_mb, False,
           "MB", 1e6, keywords=("max_disk_written",), compared=True, floor=1e6, history=True,
           column="disk written", source=Source.DAEMON, measured=True),
    # The page cache the workload's files hold at the window's end (mincore of each).
    Metric(Fig.PAGE_CACHE, "page cache of its files", units.parse_bytes, units.format_mb, False,
           "MB", 1e6,
           keywords=("max_page_cache",), compared=True, source=Source.PAGE_CACHE),
    Metric(Fig.LAT_P99, "p99 latency", units.parse_duration_ns, units.format_duration, False, "ms", 1e6,
           keywords=("max_p99",), compared=True),
    Metric(Fig.LAT_P50, "p50 latency", units.parse_duration_ns, units.format_duration, False, "ms", 1e6,
           keywords=("max_p50",)),
    Metric(Fig.LAT_MEAN, "mean latency", units.parse_duration_ns, units.format_duration, False, "ms", 1e6,
           keywords=("max_mean_lat",)),
    # Open to the first byte back, per file (the small-file engine's first_byte phase).
    Metric(Fig.TTFB_P50, "p50 time to first byte", units.parse_duration_ns, units.format_duration,
           False, "ms", 1e6,
           keywords=("max_ttfb_p50",)),
    Metric(Fig.TTFB_P99, "p99 time to first byte", units.parse_duration_ns, units.format_duration,
           False, "ms", 1e6,
           keywords=("max_ttfb",), column="p99 first byte"),
    # Object-store requests in the measured window (store/requests.py), by the server's count.
    Metric(Fig.REQ_TOTAL, "object-store requests", units.parse_count, units.format_count, False, "requests",
           keywords=("max_requests",), compared=True, count=True, saved=True, column="requests",
           source=Source.STORE),
    Metric(Fig.REQ_GET, "GET requests", units.parse_count, units.format_count, False, "requests",
           keywords=("max_gets",), compared=True, count=True, source=Source.STORE),
    Metric(Fig.REQ_HEAD, "HEAD requests", units.parse_count, units.format_count, False, "requests",
           keywords=("max_heads",), compared=True, count=True, source=Source.STORE),
    Metric(Fig.REQ_LIST, "LIST requests", units.parse_count, units.format_count, False, "requests",
           keywords=("max_lists",), compared=True, count=True, source=Source.STORE),
    Metric(Fig.REQ_PUT, "PUT and multipart requests", units.parse_count, units.format_count, False,
           "requests",
           keywords=("max_puts",), compared=True, count=True, source=Source.STORE),
    Metric(Fig.REQ_PER_MIB, "requests per MiB moved", _number, units.format_ratio, False, "requests/MiB",
           keywords=("max_requests_per_mib",), compared=True,
           gated=True, tolerance=0.25, floor=0.1, count=True, shape=True, source=Source.STORE),
    Metric(Fig.REQ_PER_FILE, "requests per file", _number, units.format_ratio, False, "requests/file",
           keywords=("max_requests_per_file",), compared=True,
           gated=True, tolerance=0.25, floor=0.1, count=True, shape=True, source=Source.STORE),
    # The kernel's FUSE requests to the daemon in the window (measure/fusetrace.py).
    Metric(Fig.FUSE_REQUESTS, "FUSE requests", units.parse_count, units.format_count, False,
           "requests",
           keywords=("max_fuse_requests",), compared=True, count=True, saved=True,
           column="FUSE requests", source=Source.FUSE),
    Metric(Fig.FUSE_PER_MIB, "FUSE requests per MiB moved", _number, units.format_ratio, False,
           "requests/MiB",
           keywords=("max_fuse_per_mib",), compared=True,
           gated=True, tolerance=0.25, floor=0.1, count=True, shape=True, source=Source.FUSE),
    Metric(Fig.FUSE_PER_FILE, "FUSE requests per file", _number, units.format_ratio, False,
           "requests/file",
           keywords=("max_fuse_per_file",), compared=True,
           gated=True, tolerance=0.25, floor=0.1, count=True, shape=True, source=Source.FUSE),
    # Operations the application saw fail (open, read, write, close), by the engine's count:
    # none allowed unless the test says how many (max_app_errors); a gate compares them.
    Metric(Fig.APP_ERRORS, "operations that failed", units.parse_count, units.format_count, False,
           "operations", keywords=("max_app_errors",), compared=True, gated=True,
           tolerance=0.25, floor=1.0, count=True, column="failed"),
    # At the chosen price list's prices, in its currency (store/cost.py).
    Metric(Fig.COST, "request cost", units.parse_money, units.format_money, False, "currency",
           keywords=("max_cost",), compared=True, source=Source.STORE),
    Metric(Fig.COST_PER_TB, "request cost per TB moved", units.parse_money, units.format_money, False,
           "currency/TB",
           keywords=("max_cost_per_tb",), source=Source.STORE),
    # The run's shape, from its timeline (timeline.py).
    Metric(Fig.STALL_S, "longest stall", units.parse_seconds, units.format_seconds, False, "s",
           keywords=("max_stall",), source=Source.SHAPE),
    Metric(Fig.DECAY, "decay (last third vs first)", units.parse_percent, units.format_percent,
           False, "%",
           keywords=("max_decay",), source=Source.SHAPE),
    Metric(Fig.BW_SWING, "swing of the last 5 s", units.parse_percent, units.format_percent,
           False, "%",
           keywords=("max_swing",), source=Source.SHAPE),
    Metric(Fig.RSS_GROWTH, "daemon memory growth", units.parse_growth, units.format_growth, False,
           "MB/min", 1e6,
           keywords=("max_rss_growth",), source=Source.SHAPE),
    # The bandwidth as a share of what the store moved for the same job (ceilings/);
    # efficiency:fuse and efficiency:tmpfs of the other ceilings.
    Metric(Fig.EFFICIENCY, "share of the store's ceiling", _share, units.format_percent, True, "%",
           keywords=("min_efficiency",), source=Source.CEILING),
)}


# The figures a baseline file holds, by its keys (baselines/, result/judged.py)
FILE_KEYS: Final = {"bw": Fig.BW, "cpu": Fig.DAEMON_CPU, "rss": Fig.DAEMON_RSS}


# FUSE requests, by opcode
OPCODES = frozenset({  # the kernel's names, without FUSE_ (Linux 6.18's list)
    "LOOKUP", "FORGET", "GETATTR", "SETATTR", "READLINK", "SYMLINK", "MKNOD", "MKDIR", "UNLINK",
    "RMDIR", "RENAME", "LINK", "OPEN", "READ", "WRITE", "STATFS", "RELEASE", "FSYNC",
    "SETXATTR", "GETXATTR", "LISTXATTR", "REMOVEXATTR", "FLUSH", "INIT", "OPENDIR", "READDIR",
    "RELEASEDIR", "FSYNCDIR", "GETLK", "SETLK", "SETLKW", "ACCESS", "CREATE", "INTERRUPT",
    "BMAP", "DESTROY", "IOCTL", "POLL", "NOTIFY_REPLY", "BATCH_FORGET", "FALLOCATE",
    "READDIRPLUS", "RENAME2", "LSEEK", "COPY_FILE_RANGE", "SETUPMAPPING", "REMOVEMAPPING",
    "SYNCFS", "TMPFILE", "STATX",
})
