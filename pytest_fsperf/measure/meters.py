"""Meters that read the FUSE daemon from /proc while a workload runs.

CPU: utime+stime of /proc/PID/stat (includes exited threads), sampled every 50 ms; CPU% is
taken over the time I/O ran, not over the tool's start-up and teardown; 100% = one core. That
time is the span the load generator reports (fio's, engine/fio_status.py), read off the
samples linearly; else, given a byte counter, from the last sample before the first 0.5% of
the bytes moved to the first sample after the last 0.5%. Without either, or when nothing
moved, over the whole window (and the stats say so).
Peak memory: VmHWM after `echo 5 > clear_refs` reset it to the current RSS at the start;
where the reset is refused, the highest VmRSS seen by a sampler, marked "sampled".
A light watcher thread notices a daemon that exits and calls back (the engine then stops the load at once).
"""

from __future__ import annotations

import itertools
import os
import threading
import time
from collections.abc import Callable

from pytest_fsperf.errors import MeasurementError
from pytest_fsperf.infra.procs import io_counters
from pytest_fsperf.mounts.daemon import Daemon, start_time, stat_fields
from pytest_fsperf.result.daemon import SHORT_WINDOW, DaemonStats, ProcessStats

CLK_TCK = os.sysconf("SC_CLK_TCK")
WATCH_INTERVAL = 0.25  # seconds between liveness / RSS samples
TICK = 0.05  # seconds between CPU and bytes-moved samples
NS_THREADS = 32  # a daemon of at most this many threads is also sampled in ns (schedstat)
EDGE = 0.005  # the share of the bytes moved before I/O counts as started (and after it ended)


class DaemonExited(MeasurementError):
    def __init__(self, message: str, pid: int | None = None) -> None:
        super().__init__(message)
        self.pid = pid  # the daemon that is gone


def cpu_ticks(pid: int, proc: str = "/proc") -> int | None:
    fields = stat_fields(pid, proc)
    return int(fields[11]) + int(fields[12]) if fields else None  # utime + stime


def status_kib(pid: int, key: str, proc: str = "/proc") -> int | None:
    try:
        with open(f"{proc}/{pid}/status", encoding="ascii", errors="replace") as f:
            for line in f:
                if line.startswith(key + ":"):
                    return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        return None
    return None


def thread_ns(pid: int, proc: str = "/proc") -> dict[int, int] | None:
    """CPU time in ns of each live thread of a process (schedstat's first field); None where
    it cannot be read. Threads that exited are not in it (the ticks of /proc/PID/stat are)."""
    out: dict[int, int] = {}
    try:
        tids = os.listdir(f"{proc}/{pid}/task")
    except OSError:
        return None
    for tid in tids:
        try:
            with open(f"{proc}/{pid}/task/{tid}/schedstat", encoding="ascii") as f:
                out[int(tid)] = int(f.read().split()[0])
        except FileNotFoundError:
            continue  # exited while listed
        except (OSError, ValueError, IndexError):
            return None
    return out


def exact_cpu(before: dict[int, int] | None, after: dict[int, int] | None,
              ticks: int) -> float | None:
    """CPU seconds between two thread_ns readings, where they can be trusted: every thread of
    the first still there, and the sum within 2 ticks of what the process's own ticks say (a
    thread born and gone in between took its time with it)."""
    if before is None or after is None or not set(before) <= set(after):
        return None
    ns = sum(n - before.get(tid, 0) for tid, n in after.items())
    seconds = ns / 1e9
    return seconds if abs(seconds * CLK_TCK - ticks) <= 2 else None


def reset_peak_rss(pid: int, proc: str = "/proc") -> bool:
    """Reset VmHWM to the current RSS. False where the kernel or permissions refuse."""
    try:
        with open(f"{proc}/{pid}/clear_refs", "w", encoding="ascii") as f:
            f.write("5")
    except OSError:
        return False
    hwm, rss = status_kib(pid, "VmHWM", proc), status_kib(pid, "VmRSS", proc)
    # RSS may grow between the two reads; a reset that took leaves HWM close to RSS.
    return hwm is not None and rss is not None and hwm <= rss + 1024


class DaemonMeter:
    """Brackets one workload. start() ... stop() -> DaemonStats, or DaemonExited."""

    def __init__(self, daemon: Daemon, on_exit: Callable[[], None] | None = None,
                 proc: str = "/proc", interval: float = WATCH_INTERVAL,
                 moved: Callable[[], int] | None = None, tick: float = TICK,
                 spanned: bool = False) -> None:
        self.daemon = daemon
        self._proc = proc
        self._interval = interval
        self._on_exit = on_exit
        self._stop = threading.Event()
        self._exited = threading.Event()
        self._sampled_peak_kib = 0
        self._start_kib: int | None = None
        self._exact = False
        self._thread: threading.Thread | None = None
        self._t0 = 0.0
        self._cpu0 = 0
        self._io0: tuple[int, int] | None = None
        self._moved = moved  # bytes the workload has moved so far (fio's tree, the engine)
        # CPU sampled every tick only where a window inside the run will be read: a byte
        # counter's, or the span the load generator gives at stop() (spanned)
        self._timed = moved is not None or spanned
        self._tick = min(tick, interval)
        self.timeline: list[tuple[float, int, int]] = []  # (monotonic s, CPU ticks, bytes moved)
        self._per_cpu0: dict[int, int] = {}
        self._ns0: dict[int, int] | None = None
        self._ns_sampled = False
        self.ns_points: list[tuple[float, int, int]] = []  # (monotonic s, CPU ns of threads, 0)

    def _threads(self) -> dict[int, int] | None:
        """thread_ns of every process of the daemon, in one map (None: one unreadable)."""
        out: dict[int, int] = {}
        for m in self.daemon.members:
            got = thread_ns(m.pid, self._proc)
            if got is None:
                return None
            out.update(got)
        return out

    def _alive(self) -> bool:
        return all(start_time(m.pid, self._proc) == m.start_time for m in self.daemon.members)

    def _per_ticks(self) -> dict[int, int] | None:
        """CPU ticks of each process of the daemon, read once (None if one cannot be read)."""
        ticks = {m.pid: cpu_ticks(m.pid, self._proc) for m in self.daemon.members}
        return None if any(t is None for t in ticks.values()) else {
            pid: t for pid, t in ticks.items() if t is not None}

    def _ticks(self) -> int | None:
        per = self._per_ticks()
        return sum(per.values()) if per is not None else None

    def _sample(self) -> None:
        rss = [status_kib(m.pid, "VmRSS", self._proc) for m in self.daemon.members]
        if all(r is not None for r in rss):
            self._sampled_peak_kib = max(self._sampled_peak_kib, sum(r for r in rss if r))

    def _point(self) -> None:
        if not self._timed:
            return
        ticks = self._ticks()
        if ticks is not None:
            now = time.monotonic()
            self.timeline.append((now, ticks, self._moved() if self._moved is not None else 0))
            if self._ns_sampled:  # a daemon of few threads: its CPU in ns too, for short spans
                threads = self._threads()
                if threads is not None:
                    self.ns_points.append((now, sum(threads.values()), 0))

    def _watch(self) -> None:
        every = max(1, round(self._interval / self._tick))
        n = 0
        while not self._stop.wait(self._tick):
            self._point()
            n += 1
            if n % every:
                continue
            if not self._alive():
                self._exited.set()
                if self._on_exit:
                    self._on_exit()
                return
            if not self._exact:
                self._sample()

    def start(self) -> None:
        pid = self.daemon.pid
        per0 = self._per_ticks()
        if per0 is None or not self._alive():
            raise DaemonExited(f"FUSE daemon PID {pid} is gone before the workload started", pid)
        cpu0, self._per_cpu0 = sum(per0.values()), per0
        self._ns0 = self._threads()
        self._ns_sampled = self._ns0 is not None and len(self._ns0) <= NS_THREADS
        self._exact = all([reset_peak_rss(m.pid, self._proc) for m in self.daemon.members])
        self._sample()
        self._start_kib = self._sampled_peak_kib or None
        self._io0 = self._io()
        self._cpu0 = cpu0
        self._t0 = time.monotonic()
        self._point()
        self._thread = threading.Thread(target=self._watch, name="fsperf-daemon-meter", daemon=True)
        self._thread.start()

    def _io(self) -> tuple[int, int] | None:
        io = [io_counters(m.pid, self._proc) for m in self.daemon.members]
        if any(x is None for x in io):
            return None
        return sum(x[0] for x in io if x), sum(x[1] for x in io if x)

    def stop(self, workload: str, span: tuple[float, float] | None = None,
             expected: int | None = None) -> DaemonStats:
        """span: (start, end), monotonic s, of the time the workload's I/O ran, where the
        load generator said (CPU% is over it). expected: the bytes it says it moved; where
        the byte counter saw under half of them (libaio, io_uring and mmap move none through
        read()/write()), its window is not taken: the whole run is."""
        pid = self.daemon.pid
        self._point()
        ns1 = self._threads()
        per1 = self._per_ticks() or {}
        cpu1 = sum(per1.values()) if len(per1) == len(self.daemon.members) else None
        wall = time.monotonic() - self._t0
        io1 = self._io()
        per = [(m, per1.get(m.pid), status_kib(m.pid, "VmHWM", self._proc))
               for m in self.daemon.members]
        hwm = None if any(h is None for _m, _c, h in per) else sum(h or 0 for _m, _c, h in per)
        alive = self._alive()
        self._stop.set()
        if self._thread:
            self._thread.join()
        if self._exited.is_set() or not alive or cpu1 is None or hwm is None:
            raise DaemonExited(f"FUSE daemon PID {pid} exited during {workload}", pid)
        if not self._exact:
            self._sample()
        cpu_seconds = (cpu1 - self._cpu0) / CLK_TCK
        io = (io1[0] - self._io0[0], io1[1] - self._io0[1]) if io1 and self._io0 else None
        seen = self.timeline[-1][2] - self.timeline[0][2] if self.timeline else 0
        counted = self._moved is not None and (expected is None or 2 * seen >= expected)
        found = (ticks_between(self.timeline, *span) if span is not None
                 else io_window(self.timeline) if counted else None)
        exact = None
        if found is not None:
            seconds, ticks = found
            window, window_cpu = "I/O", ticks / CLK_TCK
            in_ns = (ticks_between(self.ns_points, *span)
                     if span is not None and seconds < SHORT_WINDOW
                     and exact_cpu(self._ns0, ns1, cpu1 - self._cpu0) is not None else None)
            if in_ns is not None:  # too short for ticks: the threads' ns over the span
                exact, window_cpu = in_ns[1] / 1e9, in_ns[1] / 1e9
        else:
            seconds, window, window_cpu = wall, "whole run", cpu_seconds
            exact = exact_cpu(self._ns0, ns1, cpu1 - self._cpu0)
            if exact is not None:
                cpu_seconds = window_cpu = exact
        return DaemonStats(
            pid=pid,
            wall_seconds=wall,
            cpu_seconds=cpu_seconds,
            cpu_percent=100.0 * window_cpu / seconds if seconds > 0 else 0.0,
            cpu_window=window,
            cpu_window_seconds=seconds,
            cpu_exact=exact is not None,
            peak_rss_bytes=1024 * (hwm if self._exact else self._sampled_peak_kib),
            peak_rss_method="VmHWM" if self._exact else "sampled",
            start_rss_bytes=1024 * self._start_kib if self._start_kib else None,
            read_bytes=io[0] if io else None,
            write_bytes=io[1] if io else None,
            processes=tuple(
                ProcessStats(m.pid, self.daemon.role(m.pid), " ".join(m.cmdline)[:200],
                             ((c or 0) - self._per_cpu0.get(m.pid, 0)) / CLK_TCK,
                             1024 * h if self._exact and h is not None else None)
                for m, c, h in per) if self.daemon.others else (),
        )

    def abort(self) -> None:
        self._stop.set()
        if self._thread:
            self._thread.join()


def ticks_between(timeline: list[tuple[float, int, int]], start: float,
                  end: float) -> tuple[float, float] | None:
    """(seconds, CPU time) from start to end, the CPU counter (ticks, or ns) read linearly
    between the samples; None when the samples do not cover the span (the meter started after
    it, or too few)."""
    if len(timeline) < 2 or end <= start:
        return None
    first, last = timeline[0][0], timeline[-1][0]
    slack = 2 * TICK  # fio's clock and ours agree to a millisecond; the samples to a tick
    if start < first - slack or end > last + slack:
        return None

    def at(x: float) -> float:
        x = min(max(x, first), last)
        for (t0, c0, _m0), (t1, c1, _m1) in itertools.pairwise(timeline):
            if x <= t1:
                return c0 + (c1 - c0) * (x - t0) / (t1 - t0) if t1 > t0 else float(c1)
        return float(timeline[-1][1])

    return end - start, at(end) - at(start)


def io_window(timeline: list[tuple[float, int, int]]) -> tuple[float, int] | None:
    """(seconds, CPU ticks) from the last sample before I/O started to the first after it
    ended, by the bytes moved; None when nothing moved or too few samples were taken."""
    if len(timeline) < 3:
        return None
    moved0, total = timeline[0][2], timeline[-1][2] - timeline[0][2]
    if total <= 0:
        return None
    low, high = moved0 + EDGE * total, moved0 + (1 - EDGE) * total
    start = max((p for p in timeline if p[2] <= low), key=lambda p: p[0])
    end = min((p for p in timeline if p[2] >= high), key=lambda p: p[0])
    if end[0] <= start[0]:
        return None
    return end[0] - start[0], end[1] - start[1]
