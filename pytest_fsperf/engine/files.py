"""The small-file engine: N threads take files from a queue and read or write each whole.

As the 128-thread program of the ossfs benchmarks does (seed 001), with MB/s = bytes /
10^6 / seconds of the whole run. fio's small-file mode counts open and close in its
runtime but never reports them; this engine times each file's open, first byte, whole
transfer and close (which for a write is where many FUSE daemons upload) separately.
"""

from __future__ import annotations

import concurrent.futures
import errno
import functools
import os
import queue
import stat
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from pytest_fsperf.engine import native
from pytest_fsperf.result.parts import LatencyStats, OpStats
from pytest_fsperf.vocab import FilesOp

CHUNK = 1024 * 1024  # the seed program's buffer
PHASES = ("open", "first_byte", "full", "close")


def file_names(directory: str, count: int) -> list[str]:
    return [os.path.join(directory, f"{i}.dat") for i in range(count)]


def list_files(directory: str) -> list[str]:
    """Every regular file under directory (what the seed's reader walks), sorted."""
    found = []
    for dirpath, _dirs, names in os.walk(directory):
        found += [os.path.join(dirpath, n) for n in names]
    return sorted(found)


def sized(paths: Sequence[str]) -> list[tuple[str, int]]:
    """Each file with its size, as the seed's reader learns them while walking (untimed)."""
    return [(p, os.lstat(p).st_size) for p in paths]


@dataclass
class _Worker:
    times: dict[str, list[int]]
    done_bytes: int = 0
    failed: list[tuple[str, int, str]] = field(default_factory=list)  # (operation, errno, said)


class Failed(Exception):
    """One file's operation that failed, as the application saw it."""

    def __init__(self, operation: str, exc: OSError) -> None:
        super().__init__(operation, exc)
        self.operation, self.errno = operation, exc.errno or 0
        self.said = exc.strerror or str(exc)


def errno_name(number: int) -> str:
    return errno.errorcode.get(number, f"errno {number}")


def tally(failed: Sequence[tuple[str, int, str]]) -> dict[str, int]:
    """'read ENOENT': 3, ... of the operations that failed."""
    out: dict[str, int] = {}
    for operation, number, _said in failed:
        key = f"{operation} {errno_name(number)}"
        out[key] = out.get(key, 0) + 1
    return out


def _one(path: str, write: bool, size: int, view: memoryview, w: _Worker,
         head: int = CHUNK) -> None:
    """One whole file in calls of up to 1 MiB into (or from) a reused buffer, as the seed's
    program does: no per-call allocation, and no read past the size it listed. `head`: the
    size of the first call (1: time to the first byte, then the rest in 1 MiB calls)."""
    t0 = time.perf_counter_ns()
    # never through a link: a store others can write may present one at a file's name
    # never a FIFO's wait either: NONBLOCK until it is known to be a regular file
    flags = (os.O_CREAT | os.O_WRONLY | os.O_TRUNC if write else os.O_RDONLY) | os.O_NOFOLLOW
    try:
        fd = os.open(path, flags | os.O_NONBLOCK, 0o644)
    except OSError as exc:
        raise Failed("open", exc) from None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise Failed("open", OSError(errno.EINVAL, "not a regular file"))
    os.set_blocking(fd, True)
    t1 = time.perf_counter_ns()
    first = 0
    offset = 0
    failed: Failed | None = None
    try:
        while offset < size:
            part = view[: min(CHUNK if offset else head, size - offset)]
            n = os.pwrite(fd, part, offset) if write else os.preadv(fd, [part], offset)
            if n <= 0:
                break  # the file is shorter than listed
            offset += n
            if not first:
                first = time.perf_counter_ns()
    except OSError as exc:
        failed = Failed("write" if write else "read", exc)
    t2 = time.perf_counter_ns()
    try:
        os.close(fd)
    except OSError as exc:  # where many daemons upload: a failure the application sees
        failed = failed or Failed("close", exc)
    t3 = time.perf_counter_ns()
    w.done_bytes += offset
    if failed is not None:
        raise failed
    for phase, value in zip(PHASES, (t1 - t0, (first or t2) - t0, t2 - t0, t3 - t2), strict=True):
        w.times[phase].append(value)


def timed_pool(jobs: Sequence[Callable[[], None]], go: threading.Event) -> float:
    """Run each job on its own thread; the threads exist before the clock starts (as the
    seed's goroutines do) and wait for `go`; returns the seconds from go to the last done."""
    pool = [threading.Thread(target=job, daemon=True) for job in jobs]
    for thread in pool:
        thread.start()
    start = time.perf_counter()
    go.set()
    for thread in pool:
        thread.join()
    return time.perf_counter() - start


def latency_stats(values: list[int]) -> LatencyStats:
    ordered = sorted(values)
    n = len(ordered)

    def pick(q: float) -> float:
        return float(ordered[min(n - 1, int(q * n))]) if n else 0.0

    return LatencyStats(mean_ns=sum(ordered) / n if n else 0.0, p50_ns=pick(0.5),
                        p99_ns=pick(0.99), max_ns=float(ordered[-1]) if n else 0.0)


def run_files(files: Sequence[tuple[str, int]], *, write: bool, threads: int,
              first: int = CHUNK, compiled: bool = True,
              started: Callable[[int], None] = lambda pid: None,
              pattern: bytes | None = None) -> OpStats:
    """Read (or write) each (path, size) whole with `threads` threads; the first call of each
    file moves `first` bytes (the phase first_byte ends when it returns). compiled: by the
    compiled worker (native.py; its pid told to `started`) where it can be built, else by
    threads of this process. A write writes `pattern` (1 MiB; random if not given) from
    each call's start: `differs` reads it back."""
    if threads < 1:
        raise ValueError("threads must be at least 1")
    if write and (pattern is None or len(pattern) != CHUNK):
        pattern = os.urandom(CHUNK)
    path, why = native.worker() if compiled else (None, "")
    if path is not None:
        seconds, total, times, failed = native.run(files, pattern if write else None, threads,
                                                   first, started)
        per_phase = {p: [t[i] for t in times] for i, p in enumerate(PHASES)}
        return _stats(write, len(files) - len(failed), total, seconds, threads, per_phase,
                      "native", failed)
    return _in_process(files, pattern if write else None, threads, first,
                       f"python ({why})" if why else "python")


def differs(files: Sequence[tuple[str, int]], first: int, pattern: bytes,
            threads: int = 16) -> str | None:
    """The first file (listed order) that does not hold what run_files wrote into it from
    `pattern`: "path: why", or None where every one does."""
    def one(item: tuple[str, int]) -> str | None:
        path, size = item
        try:  # NONBLOCK: a FIFO the store presents at a file's name must not hold root here
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
        except OSError as exc:
            return f"{path}: {exc.strerror or exc}"
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                why: str | None = "not a regular file"
            else:
                os.set_blocking(fd, True)
                why = _compare(fd, size, first, pattern)
        except OSError as exc:
            why = exc.strerror or str(exc)
        try:
            os.close(fd)  # where a daemon that checks what it read may say so
        except OSError as exc:
            why = why or f"on close: {exc.strerror or exc}"
        return f"{path}: {why}" if why else None

    with concurrent.futures.ThreadPoolExecutor(max(1, min(threads, len(files)))) as pool:
        return next((why for why in pool.map(one, files) if why), None)


def _stats(write: bool, count: int, total: int, seconds: float, threads: int,
           times: dict[str, list[int]], generator: str,
           failed: Sequence[tuple[str, int, str]] = ()) -> OpStats:
    """count: the files done whole; failed: (operation, errno, what was said) of the others."""
    return OpStats(
        operation=FilesOp.WRITE if write else FilesOp.READ, count=count, io_bytes=total,
        seconds=seconds, per_second=count / seconds if seconds > 0 else 0.0,
        bw_bytes=total / seconds if seconds > 0 else 0.0, threads=threads,
        phases={p: latency_stats(v) for p, v in times.items()}, generator=generator,
        errors=tally(failed), first_error=failed[0][2] if failed else "")


def _in_process(files: Sequence[tuple[str, int]], pattern: bytes | None, threads: int,
                first: int, generator: str) -> OpStats:
    """run_files by threads of this process (a write writes pattern)."""
    write = pattern is not None
    tasks: queue.SimpleQueue[tuple[str, int] | None] = queue.SimpleQueue()
    for item in files:
        tasks.put(item)
    for _ in range(threads):
        tasks.put(None)
    paths = [p for p, _size in files]
    workers = [_Worker({p: [] for p in PHASES}) for _ in range(threads)]
    data = pattern or b""

    go = threading.Event()

    def work(w: _Worker) -> None:
        view = memoryview(data if write else bytearray(CHUNK))
        go.wait()
        while (item := tasks.get()) is not None:
            try:
                _one(item[0], write, item[1], view, w, first)
            except Failed as exc:  # counted; the thread goes on with the next file
                w.failed.append((exc.operation, exc.errno, f"{item[0]}: {exc.said}"))

    seconds = timed_pool([functools.partial(work, w) for w in workers], go)
    failed = [f for w in workers for f in w.failed]
    total = sum(w.done_bytes for w in workers)
    times = {p: [v for w in workers for v in w.times[p]] for p in PHASES}
    return _stats(write, len(paths) - len(failed), total, seconds, threads, times, generator,
                  failed)


def _compare(fd: int, size: int, first: int, pattern: bytes) -> str | None:
    """Why the file at fd does not hold what a write of `size` bytes from pattern wrote."""
    offset = 0
    while offset < size:  # the calls a write made: each from the pattern's start
        want = min(CHUNK if offset else first, size - offset)
        got = os.pread(fd, want, offset)
        if got != pattern[:want]:
            at = next((i for i, (a, b) in enumerate(zip(got, pattern, strict=False)) if a != b),
                      len(got))
            return f"differs from byte {offset + at}"
        offset += want
    return f"longer than the {size} bytes written" if os.pread(fd, 1, size) else None
