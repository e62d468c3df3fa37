"""The parts of a measured workload's result: fio's figures per direction, job and client,
an in-process engine's operations, the headline and each figure's spread over rounds."""

from __future__ import annotations

from dataclasses import dataclass, field

from pytest_fsperf.result.daemon import DaemonStats
from pytest_fsperf.result.store import Requests
from pytest_fsperf.vocab import ColdRead


@dataclass(frozen=True)
class IoStats:
    """One direction (read or write) of a fio job, as fio reported it."""

    io_bytes: int
    bw_bytes: float  # B/s, fio's bw_bytes
    iops: float
    total_ios: int
    runtime_ms: int
    lat_mean_ns: float
    lat_p50_ns: float | None
    lat_p99_ns: float | None
    lat_p999_ns: float | None
    lat_kind: str  # "clat" (completion latency) or "lat" (total), whichever fio gave


@dataclass(frozen=True)
class JobStats:
    """One fio job of several reported apart (fsperf.fio(per_job=True)), as fio printed it."""

    read: IoStats | None
    write: IoStats | None

    @property
    def bw_bytes(self) -> float:
        return sum(d.bw_bytes for d in (self.read, self.write) if d is not None)


@dataclass(frozen=True)
class ClientStats:
    """One client of a many-client run (fio's client/server mode): its fio server, the
    directory its job ran in (its own mount), fio's figures for it, and its daemon's."""

    server: str  # host:port of its fio server
    directory: str
    read: IoStats | None
    write: IoStats | None
    daemon: DaemonStats | None
    daemon_note: str = ""  # why its daemon was not measured, when it was not
    host: str = ""  # a host over SSH: its [user@]name[:port]; a pod: "NS/NAME (node N)"
    cold_read: ColdRead | None = None  # that host's own cold check, and its evidence
    cold_evidence: str = ""
    requests: Requests | None = None  # what its daemon asked of the store, where it counts
    requests_note: str = ""  # why not, where not
    daemon_of: str = ""  # its daemon is measured in this other client's row (pods of one node)
    pod: bool = False  # host is a Kubernetes pod (--fsperf-k8s), not a host over SSH

    @property
    def place(self) -> str:
        """Where it ran, as a line names it: "host root@n1", "pod apps/r-0 (node n1)"."""
        return f"{'pod' if self.pod else 'host'} {self.host}"


@dataclass(frozen=True)
class LatencyStats:
    mean_ns: float
    p50_ns: float
    p99_ns: float
    max_ns: float


@dataclass(frozen=True)
class OpStats:
    """A file or metadata engine's run: operations (files, entries) over elapsed time."""

    operation: str  # "read files", "write files", "list", "list+stat", "walk", "stat"
    count: int
    io_bytes: int
    seconds: float
    per_second: float  # files/s or entries/s
    bw_bytes: float  # io_bytes / seconds, as the seed program computes MB/s
    threads: int
    phases: dict[str, LatencyStats]  # per file: open, first_byte, full, close; per op: op
    # what moved the files: "native" (the compiled worker), or "python" (threads in this
    # process), with why the worker did not run where it was wanted
    generator: str = "python"
    # the operations that failed, by operation and errno ("read ENOENT": 3): what the
    # application saw (issue 72.4); the first, with its file, said whole
    errors: dict[str, int] = field(default_factory=dict)
    first_error: str = ""

    @property
    def failed(self) -> int:
        return sum(self.errors.values())


@dataclass(frozen=True)
class Headline:
    """The figures a report leads with (medians over rounds); 0.0: none moved (what a file
    from before a figure was written holds for it)."""

    io_bytes: int = 0
    bw_bytes: float = 0.0
    iops: float = 0.0
    ops_per_second: float | None = None
    lat_p99_ns: float | None = None


@dataclass(frozen=True)
class Spread:
    """One figure over the rounds: how many, the median, MAD, its 95% bootstrap interval."""

    n: int
    median: float
    mad: float
    ci_low: float
    ci_high: float
