"""The FUSE daemon's figures over a window, as a result holds them: its CPU and memory, its
page faults, its cgroup's memory and its CPU profile's summary. The meters that read them
(measure/) make these; nothing here reads /proc."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, TypedDict

# s: CPU time over a shorter window (10 ms clock ticks) says little: the daemon's CPU%, and
# the rest of the machine (measure/rest.py), share the one limit
SHORT_WINDOW = 0.5


EXACT_WINDOW = 0.05  # s: CPU time read in ns (schedstat) means something from here on


def countable_cpu(seconds: float, cpu_percent: float, exact: bool = False) -> float | None:
    """The daemon's CPU% where the window it is over was long enough for CPU time counted in
    10 ms ticks to mean something, or the time was read in ns from every thread (exact);
    None (shown '-', not judged) otherwise. The one such rule."""
    return cpu_percent if seconds >= (EXACT_WINDOW if exact else SHORT_WINDOW) else None


def short_cpu_note(seconds: float) -> str:
    """Why a daemon CPU% is not given: its window was too short."""
    return (f"not measured: the I/O ran {seconds:.2g} s, under the {SHORT_WINDOW:g} s that CPU "
            "time counted in 10 ms ticks needs")


def countable_cpu_of(daemon: Mapping[str, Any]) -> float | None:
    """countable_cpu of a daemon row (its window, CPU%, and whether read in ns)."""
    return countable_cpu(cpu_seconds_of(daemon), float(daemon.get("cpu_percent") or 0.0),
                         bool(daemon.get("cpu_exact")))


def cpu_seconds_of(daemon: Mapping[str, Any]) -> float:
    """The window a daemon row's CPU% is over (rows from before it was kept: the whole run)."""
    return float(daemon.get("cpu_window_seconds") or daemon["wall_seconds"])


@dataclass(frozen=True)
class ProcessStats:
    """One process of a daemon of several (a supervisor and its workers)."""

    pid: int
    role: str  # "supervisor" or "worker"
    command: str
    cpu_seconds: float
    peak_rss_bytes: int | None  # VmHWM; None where only the sum was sampled


@dataclass(frozen=True)
class DaemonStats:
    """The FUSE daemon over the workload's window, read from /proc/PID."""

    pid: int
    wall_seconds: float
    cpu_seconds: float
    cpu_percent: float  # 100% = one fully busy core
    peak_rss_bytes: int
    peak_rss_method: str  # "VmHWM" (exact) or "sampled"
    read_bytes: int | None  # rchar delta: all syscall reads (backend files, sockets, /dev/fuse)
    write_bytes: int | None  # wchar delta: all syscall writes (incl. replies to the kernel)
    cpu_window: str = "whole run"  # what cpu_percent is over: "I/O" (the time I/O ran) or "whole run"
    cpu_window_seconds: float = 0.0  # its length
    # the CPU time was read in ns from each thread's schedstat, the same threads at both ends
    # and agreeing with the process's 10 ms ticks: exact over a window too short for ticks
    cpu_exact: bool = False
    # A daemon of several processes: each one; the figures above are their sums (peak
    # memory: the sum of each process's own peak)
    processes: tuple[ProcessStats, ...] = ()
    # its memory (VmRSS, all processes) as the window started: a peak near it was carried
    # in from earlier work (buffers a daemon keeps), not made by this window
    start_rss_bytes: int | None = None

    @property
    def countable_cpu(self) -> float | None:
        return countable_cpu(self.cpu_window_seconds or self.wall_seconds, self.cpu_percent,
                             self.cpu_exact)

    @property
    def carried(self) -> bool:
        """It held most of its peak as the window started (100 MB or more): the peak tells
        of earlier work as much as of this window's."""
        start = self.start_rss_bytes or 0
        return start >= 100e6 and start >= 0.5 * self.peak_rss_bytes


@dataclass(frozen=True)
class Memory:
    """What the cgroup counted: its limit, its peak, its OOM kills."""

    cgroup: int  # its version: 1 or 2
    limit: int | None  # bytes; None: none (a cgroup that only counts)
    peak: int | None  # bytes: the most the cgroup's processes held (page cache they own too)
    oom_kills: int  # processes the kernel killed for this cgroup's limit
    page_cache: int | None = None  # bytes of page cache charged to it now


class ProfileSummary(TypedDict):
    """The daemon's CPU profile of an A/B's profiled pair, as a results file keeps it."""

    samples: int
    kernel: float  # share of samples whose leaf is in the kernel
    stripped: float  # share of user-space leaves without a symbol
    functions: dict[str, float]  # the functions most often the leaf: share of samples


@dataclass(frozen=True)
class Profile:
    """One window's samples of the daemon, folded."""

    samples: int
    kernel: float  # share of samples whose leaf is in the kernel
    stripped: float  # share of user-space leaves without a symbol
    self_share: dict[str, float]  # function -> share of samples where it is the leaf
    folded: tuple[tuple[str, int], ...]  # (stack, samples), most samples first

    def folded_text(self) -> str:
        return "".join(f"{stack} {n}\n" for stack, n in self.folded)

    def summary(self, functions: int = 10) -> ProfileSummary:
        """For the JSON: the shares and the functions most often on CPU."""
        ranked = sorted(self.self_share.items(), key=lambda kv: -kv[1])[:functions]
        return {"samples": self.samples, "kernel": round(self.kernel, 4),
                "stripped": round(self.stripped, 4),
                "functions": {name: round(share, 4) for name, share in ranked}}

    @classmethod
    def from_summary(cls, data: Mapping[str, Any]) -> Profile:
        """A profile as its summary kept it: its shares and top functions, no stacks."""
        return cls(int(data["samples"]), float(data["kernel"]), float(data["stripped"]),
                   {str(k): float(v) for k, v in dict(data["functions"]).items()}, ())
