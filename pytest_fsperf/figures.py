"""The registry of figures: each figure a result yields declared once - its key, label, how a
threshold on it is written and shown, its direction and unit, and where it is judged (the
marker keywords that bound it, A/B comparisons, saved runs, history) and shown (the results
table). The lists each of those reads are made from it."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from pytest_fsperf import units


@dataclass(frozen=True)
class Metric:
    key: str
    label: str  # how the figure is named in messages and tables
    parse: Callable[[object], float]  # a threshold as the user writes it
    show: Callable[[float], str]
    bigger_is_better: bool
    unit: str  # in files for other tools (github-action-benchmark): value / scale in unit
    scale: float = 1.0
    series: str = ""  # the name of its series there; stable, as users' history is kept by it
    # where it is judged (the one list of each: plan/marker.KEYWORDS, judge/comparison.METRICS,
    # judge/runs.SAVED and judge/history.FIGURES are made from these): the marker keywords
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

    def __post_init__(self) -> None:
        if not self.series:
            object.__setattr__(self, "series", self.label)


def _number(value: object) -> float:
    return float(str(value))


def _cpu_s(value: float) -> str:
    return f"{value:.3g} CPU-s/GB"


def _share(value: object) -> float:
    return units.parse_percent(value, "50%", "of the ceiling's bandwidth")


def _bw(value: object) -> float:
    return units.parse_bytes(value, rate=True)


METRICS: dict[str, Metric] = {m.key: m for m in (
    Metric("bw", "bandwidth", _bw, units.format_rate, True, "MB/s", 1e6,
           keywords=("min_bw", "max_bw"), compared=True, history=True),
    # A write's bytes over the time until the store had them (a daemon buffers, uploads later):
    # where the store is counted, what a release gate judges a write by.
    Metric("stored_bw", "bandwidth to the store", _bw, units.format_rate, True, "MB/s", 1e6,
           keywords=("min_stored_bw",), compared=True, column="to the store"),
    Metric("iops", "IOPS", units.parse_rate_count, units.format_count, True, "IOPS",
           keywords=("min_iops",), compared=True),
    Metric("ops", "ops/s", units.parse_rate_count, units.format_count, True, "ops/s", series="ops",
           keywords=("min_ops",), compared=True, history=True),
    Metric("daemon_cpu", "daemon CPU", units.parse_percent, units.format_percent, False, "%",
           keywords=("max_cpu",)),
    Metric("daemon_cpu_per_gb", "daemon CPU-s/GB", _number, _cpu_s, False, "CPU-s/GB",
           compared=True, history=True, column="CPU-s/GB"),
    Metric("daemon_rss", "daemon peak memory", units.parse_bytes, units.format_mb, False, "MB", 1e6,
           keywords=("max_rss",), compared=True, history=True),
    # The daemon's RSS a while after the window (--fsperf-rss-settle): what it gave back.
    Metric("daemon_rss_after", "daemon memory after settling", units.parse_bytes, units.format_mb,
           False, "MB", 1e6,
           keywords=("max_rss_after",), compared=True),
    # The slope of daemon_rss_after over a test's rounds: a leak grows round after round.
    Metric("daemon_rss_round_growth", "daemon memory growth per round", units.parse_bytes,
           units.format_mb, False, "MB", 1e6,
           keywords=("max_rss_round_growth",)),
    # fsperf.files(mode="hold"): the daemon's memory while N files are held open and idle,
    # over its RSS before they were opened, per file.
    Metric("daemon_rss_per_handle", "daemon memory per idle open file", units.parse_bytes,
           units.format_mb, False, "MB", 1e6,
           keywords=("max_rss_per_handle",), compared=True),
    # The daemon's major page faults over the window (measure/faults.py): its own pages read
    # back from disk, as after a cold start's cache drop.
    Metric("daemon_major_faults", "daemon major page faults", units.parse_count,
           units.format_count, False, "faults",
           keywords=("max_major_faults",), compared=True, history=True, column="major faults"),
    # The page cache the workload's files hold at the window's end (mincore of each).
    Metric("page_cache", "page cache of its files", units.parse_bytes, units.format_mb, False,
           "MB", 1e6,
           keywords=("max_page_cache",), compared=True),
    Metric("lat_p99", "p99 latency", units.parse_duration_ns, units.format_duration, False, "ms", 1e6,
           keywords=("max_p99",), compared=True),
    Metric("lat_p50", "p50 latency", units.parse_duration_ns, units.format_duration, False, "ms", 1e6,
           keywords=("max_p50",)),
    Metric("lat_mean", "mean latency", units.parse_duration_ns, units.format_duration, False, "ms", 1e6,
           keywords=("max_mean_lat",)),
    # Open to the first byte back, per file (the small-file engine's first_byte phase).
    Metric("ttfb_p50", "p50 time to first byte", units.parse_duration_ns, units.format_duration,
           False, "ms", 1e6,
           keywords=("max_ttfb_p50",)),
    Metric("ttfb_p99", "p99 time to first byte", units.parse_duration_ns, units.format_duration,
           False, "ms", 1e6,
           keywords=("max_ttfb",), column="p99 first byte"),
    # Object-store requests in the measured window (store/requests.py), by the server's count.
    Metric("req_total", "object-store requests", units.parse_count, units.format_count, False, "requests",
           keywords=("max_requests",), compared=True, saved=True, column="requests"),
    Metric("req_get", "GET requests", units.parse_count, units.format_count, False, "requests",
           keywords=("max_gets",), compared=True),
    Metric("req_head", "HEAD requests", units.parse_count, units.format_count, False, "requests",
           keywords=("max_heads",), compared=True),
    Metric("req_list", "LIST requests", units.parse_count, units.format_count, False, "requests",
           keywords=("max_lists",), compared=True),
    Metric("req_put", "PUT and multipart requests", units.parse_count, units.format_count, False,
           "requests",
           keywords=("max_puts",), compared=True),
    Metric("req_per_mib", "requests per MiB moved", _number, units.format_ratio, False, "requests/MiB",
           keywords=("max_requests_per_mib",), compared=True),
    Metric("req_per_file", "requests per file", _number, units.format_ratio, False, "requests/file",
           keywords=("max_requests_per_file",), compared=True),
    # The kernel's FUSE requests to the daemon in the window (measure/fusetrace.py).
    Metric("fuse_requests", "FUSE requests", units.parse_count, units.format_count, False,
           "requests",
           keywords=("max_fuse_requests",), compared=True, saved=True, column="FUSE requests"),
    Metric("fuse_per_mib", "FUSE requests per MiB moved", _number, units.format_ratio, False,
           "requests/MiB",
           keywords=("max_fuse_per_mib",), compared=True),
    Metric("fuse_per_file", "FUSE requests per file", _number, units.format_ratio, False,
           "requests/file",
           keywords=("max_fuse_per_file",), compared=True),
    # At the chosen price list's prices, in its currency (store/cost.py).
    Metric("cost", "request cost", units.parse_money, units.format_money, False, "currency",
           keywords=("max_cost",), compared=True),
    Metric("cost_per_tb", "request cost per TB moved", units.parse_money, units.format_money, False,
           "currency/TB",
           keywords=("max_cost_per_tb",)),
    # The run's shape, from its timeline (timeline.py).
    Metric("stall_s", "longest stall", units.parse_seconds, units.format_seconds, False, "s",
           keywords=("max_stall",)),
    Metric("decay", "decay (last third vs first)", units.parse_percent, units.format_percent,
           False, "%",
           keywords=("max_decay",)),
    Metric("bw_swing", "swing of the last 5 s", units.parse_percent, units.format_percent,
           False, "%",
           keywords=("max_swing",)),
    Metric("rss_growth", "daemon memory growth", units.parse_growth, units.format_growth, False,
           "MB/min", 1e6,
           keywords=("max_rss_growth",)),
    # The bandwidth as a share of what the store moved for the same job (ceilings/);
    # efficiency:fuse and efficiency:tmpfs of the other ceilings.
    Metric("efficiency", "share of the store's ceiling", _share, units.format_percent, True, "%",
           keywords=("min_efficiency",)),
)}


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
