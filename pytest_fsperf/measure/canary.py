"""The machine canary: a short, fixed workload that never touches the filesystem under test.

It is run at the start of every session (and recorded in a saved run) and again between the
rounds of a saved-run comparison. When it moved by more than half the tolerance, a slower
or faster workload says more about the machine (a neighbour's job, another instance type)
than about the filesystem, and the comparison says so instead of blaming the filesystem.

Three parts, each timed at its best of five tries (capacity, not luck): hashing on every
core at once (CPU), copying a buffer (memory), and small writes and reads of a file in a
private local directory (system calls and the page cache). The score is work per second
relative to a fixed amount of work: the geometric mean of the three rates, in "canary units"
(only ratios between two scores mean anything).
"""

from __future__ import annotations

import functools
import hashlib
import math
import os
import statistics
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from pytest_fsperf.stats import shift
from pytest_fsperf.vocab import Direction

HASH_BYTES = 24 << 20  # per core
COPY_BYTES = 64 << 20
FILE_OPS = 20000
TRIES = 5


def _hash_all_cores() -> None:
    data = bytes(HASH_BYTES)
    threads = [threading.Thread(target=lambda: hashlib.sha256(data).digest())
               for _ in range(os.cpu_count() or 1)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


@functools.lru_cache(maxsize=1)
def _buffers() -> tuple[bytearray, bytearray]:
    """Made on the first reading, once (never at import: 128 MB in every pytest run)."""
    return bytearray(COPY_BYTES), bytearray(COPY_BYTES)


def _copy() -> None:
    src, dst = _buffers()
    dst[:] = src  # buffers made once: the copy, not the kernel's zeroing of new pages


def _file_ops(directory: str) -> Callable[[], None]:
    def run() -> None:
        path = os.path.join(directory, "canary")
        block = b"x" * 4096
        fd = os.open(path, os.O_CREAT | os.O_RDWR | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
        try:
            for i in range(64):
                os.pwrite(fd, block, i * 4096)
            for i in range(FILE_OPS):
                os.pread(fd, 4096, ((i * 7) % 64) * 4096)
        finally:
            os.close(fd)
            os.unlink(path)

    return run


def _best(part: Callable[[], None], tries: int) -> float:
    best = math.inf
    for _ in range(tries):
        t0 = time.perf_counter()
        part()
        best = min(best, time.perf_counter() - t0)
    return best


@dataclass(frozen=True)
class Reading:
    score: float  # geometric mean of the parts' rates; compare only as a ratio
    parts: dict[str, float]  # seconds per part (best of five)

    def to_dict(self) -> dict[str, object]:
        return {"score": self.score, "parts": dict(self.parts)}


def measure(directory: str, tries: int = TRIES) -> Reading:
    """About half a second on a 2-core machine at TRIES. `directory`: a private local
    directory (never the filesystem under test)."""
    _buffers()  # made (and zero-filled: every page touched) before the timed copies
    parts = {"cpu": _best(_hash_all_cores, tries), "memory": _best(_copy, tries),
             "syscalls": _best(_file_ops(directory), tries)}
    score = math.exp(statistics.fmean(math.log(1.0 / s) for s in parts.values()))
    return Reading(score, parts)


def moved(now: Sequence[float], then: Sequence[float]) -> float | None:
    """median(now) / median(then): how the machine changed between two sets of readings."""
    if not now or not then or min(now) <= 0 or min(then) <= 0:
        return None  # a score of 0 or less was never measured: no move to tell
    return statistics.median(now) / statistics.median(then)


def changed(now: Sequence[float], then: Sequence[float], tolerance: float) -> bool:
    """The machine changed when its canary moved by more than half the tolerance, and (with
    two or more readings on each side) its interval excludes no change: one reading varies
    by a few percent on its own, and that must not be taken for a changed machine. A move
    past the whole tolerance is a change even where the readings spread widely (a machine
    under a neighbour's bursts)."""
    ratio = moved(now, then)
    if ratio is None:
        return False
    if len(now) < 2 or len(then) < 2 or abs(ratio - 1) > tolerance:
        return abs(ratio - 1) > tolerance / 2
    return shift(list(now), list(then), tolerance / 2)[3] in (Direction.UP, Direction.DOWN)
