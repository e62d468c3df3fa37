"""How each figure of the registry (figures.METRICS) is read from one run's result: one
reader per figure, and where a figure applies at all. What a missing value means is the
figure's Source (figures.py), not its name: a RUN figure that reads None is one this workload
cannot give (dropped); any other reads None where its meter did not measure (kept: not
judged). Figures a meter reads itself (Metric.measured: the page faults, the disk I/O) are
the result's `measured`; the timeline's shape, the FUSE trace's per-opcode figures and the
ceilings' shares are read by their own parts (workload.py); each is declared in the registry."""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from pytest_fsperf.figures import METRICS, Fig
from pytest_fsperf.result.daemon import DaemonStats
from pytest_fsperf.result.parts import IoStats, OpStats
from pytest_fsperf.result.store import Cost, Requests
from pytest_fsperf.vocab import FilesOp


class Measured(Protocol):
    """What the readers read of a result (result/workload.WorkloadResult)."""

    @property
    def ops(self) -> OpStats | None: ...
    @property
    def daemon(self) -> DaemonStats | None: ...
    @property
    def write(self) -> IoStats | None: ...
    @property
    def requests(self) -> Requests | None: ...
    @property
    def cost(self) -> Cost | None: ...
    @property
    def rss_before(self) -> int | None: ...
    @property
    def rss_after(self) -> int | None: ...
    @property
    def page_cache(self) -> int | None: ...
    @property
    def bw_bytes(self) -> float: ...
    @property
    def iops(self) -> float: ...
    @property
    def io_bytes(self) -> int: ...
    @property
    def files(self) -> int: ...
    @property
    def cpu_per_gb(self) -> float | None: ...
    def worst(self, attr: str) -> float | None: ...
    def phase_figure(self, phase: str, key: str) -> float | None: ...


Reader = Callable[[Measured], float | None]


def _requests(kinds: tuple[str, ...]) -> Reader:
    return lambda r: float(sum(r.requests.by_kind[k] for k in kinds)) if r.requests else None


def _per_handle(r: Measured) -> float | None:
    """fsperf.files(mode="hold"): the daemon's memory while the files are held, over its
    memory before they were opened, per file."""
    if r.daemon is None or r.rss_before is None or r.ops is None:
        return None
    return (r.daemon.peak_rss_bytes - r.rss_before) / max(1, r.ops.count)


def _stored_bw(r: Measured) -> float | None:
    """A write's bytes over the time until the store had them."""
    q, w = r.requests, r.write
    return w.io_bytes / q.stored_after if q and q.stored_after and w and w.io_bytes else None


READ: dict[str, Reader] = {
    Fig.BW: lambda r: r.bw_bytes if r.ops is None or r.ops.io_bytes else None,
    Fig.IOPS: lambda r: r.iops if r.ops is None else None,
    Fig.OPS: lambda r: r.ops.per_second if r.ops is not None else None,
    Fig.LAT_MEAN: lambda r: r.worst("lat_mean_ns"),
    Fig.LAT_P50: lambda r: r.worst("lat_p50_ns"),
    Fig.LAT_P99: lambda r: r.worst("lat_p99_ns"),
    Fig.TTFB_P50: lambda r: r.phase_figure("first_byte", "p50_ns"),
    Fig.TTFB_P99: lambda r: r.phase_figure("first_byte", "p99_ns"),
    Fig.APP_ERRORS: lambda r: float(r.ops.failed) if r.ops is not None else None,
    Fig.DAEMON_CPU: lambda r: r.daemon.countable_cpu if r.daemon else None,
    Fig.DAEMON_CPU_PER_GB: lambda r: r.cpu_per_gb,
    Fig.DAEMON_RSS: lambda r: float(r.daemon.peak_rss_bytes) if r.daemon else None,
    Fig.DAEMON_RSS_AFTER: lambda r: float(r.rss_after) if r.rss_after is not None else None,
    Fig.DAEMON_RSS_PER_HANDLE: _per_handle,
    Fig.PAGE_CACHE: lambda r: float(r.page_cache) if r.page_cache is not None else None,
    Fig.REQ_TOTAL: lambda r: float(r.requests.total) if r.requests else None,
    Fig.REQ_GET: _requests(("GET",)),
    Fig.REQ_HEAD: _requests(("HEAD",)),
    Fig.REQ_LIST: _requests(("LIST",)),
    Fig.REQ_PUT: _requests(("PUT", "MULTIPART")),
    # amplification: what a FUSE developer optimises
    Fig.REQ_PER_MIB: lambda r: r.requests.total / (r.io_bytes / 2**20) if r.requests else None,
    Fig.REQ_PER_FILE: lambda r: r.requests.total / r.files if r.requests else None,
    Fig.STORED_BW: _stored_bw,
    Fig.COST: lambda r: r.cost.requests if r.cost else None,
    Fig.COST_PER_TB: lambda r: r.cost.requests / (r.io_bytes / 1e12) if r.cost else None,
}

# where a figure applies at all: elsewhere the workload cannot answer it
APPLIES: dict[str, Callable[[Measured], bool]] = {
    **{key: lambda r: r.io_bytes > 0 for key in (  # per byte moved: nothing moved, no figure
        Fig.DAEMON_CPU_PER_GB, Fig.REQ_PER_MIB, Fig.COST_PER_TB, Fig.FUSE_PER_MIB)},
    Fig.REQ_PER_FILE: lambda r: r.ops is not None and r.ops.count > 0,  # fio counts no files
    Fig.FUSE_PER_FILE: lambda r: r.files > 0,
    Fig.DAEMON_RSS_PER_HANDLE: lambda r: r.ops is not None and r.ops.operation == FilesOp.HOLD,
}

# the figures whose None stays in a result: their meter did not measure (figures.Source)
KEPT = frozenset(key for key, m in METRICS.items() if m.source.kept_when_missing)
# the figures a meter reads itself into a result's `measured`: None until it does
MEASURED: dict[str, float | None] = {key: None for key, m in METRICS.items() if m.measured}
