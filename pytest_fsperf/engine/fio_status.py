"""When fio's I/O ran and how many bytes it had moved each second, on this process's clock,
for every ioengine.

The bytes a process moves through read()/write() show in its /proc/PID/io, but libaio,
io_uring and mmap move none through those calls; fio's own reports do. Two of them are used:
- its status report once a second (--status-interval=1, JSON, appended to its output file):
  the bytes every job has moved so far, stamped with the wall clock;
- its per-second latency log, stamped on CLOCK_MONOTONIC (log_alternate_epoch_clock_id=1,
  Python's time.monotonic()): its last entry is written when the job's I/O loop ends.
The I/O window is [end - runtime, end]: fio's runtime counts from the start of that loop.
"""

from __future__ import annotations

import glob
import itertools
import os
import threading
import time
from typing import Any

from pytest_fsperf.engine.fio import documents

DIRECTIONS = ("read", "write", "trim")
INTERVAL = 1  # s between status reports (--status-interval)
LATE = 0.25  # s: a report stamped this long after its moment waited for a blocked job
CLOCK_MONOTONIC = 1


def instrumented(job: dict[str, str], prefix: str) -> dict[str, str]:
    """The job as the plugin runs it: a per-second latency log on the monotonic clock, and
    total latency percentiles (submission + completion) unless the user asked for completion
    latency (clat_percentiles=1 or lat_percentiles=0)."""
    out = {**job, "write_lat_log": prefix, "log_avg_msec": "1000",
           "log_alternate_epoch": "1", "log_alternate_epoch_clock_id": str(CLOCK_MONOTONIC)}
    if "lat_percentiles" not in job and job.get("clat_percentiles") != "1":
        out["lat_percentiles"] = "1"
    return out


# ioengines whose bytes fio's processes move through read()/write() calls, which /proc counts
# live (posixaio: glibc's threads call pread/pwrite)
COUNTED = frozenset({"sync", "psync", "vsync", "pvsync", "pvsync2", "posixaio"})
NO_LOG = ("gtod_reduce", "disable_lat", "disable_clat")


def needs_status(job: dict[str, str]) -> bool:
    """Whether fio's once-a-second status reports are wanted: for an engine whose bytes /proc
    does not see (libaio, io_uring, mmap), or a job whose latency log may be empty. Each is a
    full JSON report fio writes to the local disk (tens of KB per job with json+)."""
    return (job.get("ioengine", "psync") not in COUNTED
            or any(job.get(k, "0") not in ("0", "") for k in NO_LOG))


def moved(doc: Any) -> int | None:
    """Bytes every job of one fio report has moved, all directions; None if not a report."""
    try:
        return sum(int(job[d]["io_bytes"]) for job in doc["jobs"] for d in DIRECTIONS
                   if d in job)
    except (KeyError, TypeError, ValueError):
        return None


def runtime(doc: Any) -> int:
    """The longest runtime (ms) of a report's jobs and directions; 0 if none."""
    try:
        return max((int(job[d]["runtime"]) for job in doc["jobs"] for d in DIRECTIONS
                    if d in job), default=0)
    except (KeyError, TypeError, ValueError):
        return 0


class Status:
    """fio's status reports, read as fio appends them: called, the bytes moved so far (a
    counter for the progress line and the timeline, good for every ioengine). A report's
    bytes and runtime are taken at one moment, when its making starts; its wall-clock stamp
    comes after every job has answered, late when one was blocked (a stopped daemon), so the
    moment is placed by the runtime, fio's own clock."""

    def __init__(self, path: str) -> None:
        self._path = path
        self._lock = threading.Lock()
        self._pos = 0
        self._pending = ""
        self._offset = time.time() - time.monotonic()  # wall clock -> monotonic
        self.points: list[tuple[float, int, int]] = []  # (monotonic s stamped, runtime ms, bytes)

    def __call__(self) -> int:
        with self._lock:
            self._poll()
            return self.points[-1][2] if self.points else 0

    def _poll(self) -> None:
        try:
            with open(self._path, "rb") as f:
                f.seek(self._pos)
                while chunk := f.read(1 << 22):  # all fio has written (json+ reports are large)
                    self._pos += len(chunk)
                    self._take(chunk)
        except OSError:
            return

    def _take(self, chunk: bytes) -> None:
        text = self._pending + chunk.decode("utf-8", errors="replace")
        cut = text.rfind("\n}\n")  # a report ends with its closing brace on a line of its own
        if cut < 0:
            self._pending = text[-(1 << 24):]
            return
        self._pending = text[cut + 3:]
        for doc in documents(text[:cut + 3]):
            n, stamp = moved(doc), doc.get("timestamp_ms") if isinstance(doc, dict) else None
            if n is not None and isinstance(stamp, int | float):
                self.points.append((stamp / 1000.0 - self._offset, runtime(doc), n))

    def series(self, start: float, end: float, total: int) -> list[tuple[float, int]]:
        """The bytes-so-far curve from (start, 0) to (end, total), through each report at
        start + its runtime. A report stamped well after that moment waited for a blocked
        job: nothing moved from its moment to its stamp (a stall, then what followed)."""
        marks = []
        with self._lock:
            self._poll()
            for stamped, ms, n in self.points:
                at = start + ms / 1000.0
                if ms > 0 and at < end:
                    marks.append((at, min(n, total)))
                    if stamped - at > LATE:
                        marks.append((min(stamped, end), min(n, total)))
        inside = sorted(marks)
        curve, top = [(start, 0)], 0
        for t, n in inside:
            top = max(top, n)
            curve.append((t, top))
        curve.append((end, total))
        return curve

    def started(self) -> float | None:
        """Monotonic s the I/O started, from the reports alone (a stamp less its runtime; a
        late stamp only adds, so the least); None before a report with a runtime."""
        with self._lock:
            self._poll()
            return min((t - ms / 1000.0 for t, ms, _n in self.points if ms > 0), default=None)


def per_interval(curve: list[tuple[float, int]], edges: list[float]) -> list[int]:
    """Bytes moved between consecutive edges, the curve read linearly between its points;
    the intervals add up to the curve's total when the edges span it."""
    def at(x: float) -> float:
        if x <= curve[0][0]:
            return float(curve[0][1])
        for (t0, n0), (t1, n1) in itertools.pairwise(curve):
            if x <= t1:
                return n0 + (n1 - n0) * (x - t0) / (t1 - t0) if t1 > t0 else float(n1)
        return float(curve[-1][1])

    marks = [round(at(x)) for x in edges]
    return [max(0, b - a) for a, b in itertools.pairwise(marks)]


def io_end(prefix: str) -> float | None:
    """Monotonic s of the last entry of the jobs' latency logs: where their I/O ended."""
    last = None
    for path in glob.glob(glob.escape(prefix) + "_*lat.*.log"):
        try:
            with open(path, "rb") as f:
                f.seek(max(0, os.fstat(f.fileno()).st_size - 4096))
                tail = f.read().decode("ascii", errors="replace").strip().splitlines()
        except OSError:
            continue
        for line in reversed(tail):
            try:
                ms = int(line.split(",", 1)[0])
            except ValueError:
                continue
            last = ms if last is None else max(last, ms)
            break
    return last / 1000.0 if last is not None else None


def io_span(prefix: str, runtime_ms: int, status: Status) -> tuple[float, float] | None:
    """(start, end) of fio's I/O on the monotonic clock: the latency logs' end less fio's
    runtime; without those logs (gtod_reduce, disable_lat), from the status reports' start
    to that plus the runtime. None if neither."""
    seconds = runtime_ms / 1000.0
    if seconds <= 0:
        return None
    end = io_end(prefix)
    if end is not None:
        return end - seconds, end
    start = status.started()
    return (start, start + seconds) if start is not None else None
