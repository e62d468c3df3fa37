"""A sharded checkpoint, as ML training saves one: each shard written under a temporary name
in large sequential calls, fsync'ed, closed and renamed to its final name, then the
directory fsync'ed; the clock stops when the last shard is durable. Restoring is reading
the shards back whole (the small-file engine's read)."""

from __future__ import annotations

import os
import queue
import threading
import time

from pytest_fsperf.engine.files import latency_stats, timed_pool
from pytest_fsperf.errors import MeasurementError
from pytest_fsperf.result.parts import OpStats

CALL = 8 * 1024 * 1024  # bytes per write call: large, as framework savers write
PHASES = ("write", "fsync", "close", "rename")


def shard_names(directory: str, shards: int) -> list[str]:
    return [os.path.join(directory, f"shard-{i:05d}-of-{shards:05d}.bin") for i in range(shards)]


def save(directory: str, shards: int, size: int, threads: int) -> OpStats:
    """Write the checkpoint; figures: bytes, shards, seconds to durable, and per shard the
    time in each phase."""
    names = shard_names(directory, shards)
    tasks: queue.SimpleQueue[str | None] = queue.SimpleQueue()
    for name in names:
        tasks.put(name)
    for _ in range(threads):
        tasks.put(None)
    data = memoryview(os.urandom(min(CALL, max(size, 1))))
    times: dict[str, list[int]] = {p: [] for p in PHASES}
    errors: list[str] = []
    lock = threading.Lock()
    go = threading.Event()

    def one(final: str) -> None:
        temp = final + ".tmp"
        t0 = time.perf_counter_ns()
        fd = os.open(temp, os.O_CREAT | os.O_WRONLY | os.O_TRUNC | os.O_NOFOLLOW, 0o644)
        try:
            offset = 0
            while offset < size:
                offset += os.write(fd, data[: min(len(data), size - offset)])
            t1 = time.perf_counter_ns()
            os.fsync(fd)
            t2 = time.perf_counter_ns()
        finally:
            os.close(fd)
        t3 = time.perf_counter_ns()
        os.rename(temp, final)
        t4 = time.perf_counter_ns()
        with lock:
            for phase, value in zip(PHASES, (t1 - t0, t2 - t1, t3 - t2, t4 - t3), strict=True):
                times[phase].append(value)

    def work() -> None:
        go.wait()
        while (name := tasks.get()) is not None:
            if errors:
                continue
            try:
                one(name)
            except OSError as exc:
                errors.append(f"{name}: {exc.strerror or exc}")

    seconds = timed_pool([work] * threads, go)
    start = time.perf_counter()
    if not errors:
        dfd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
        try:
            os.fsync(dfd)  # the renames are durable too
        except OSError as exc:  # some FUSE daemons refuse fsync of a directory: say so
            errors.append(f"fsync of the directory {directory}: {exc.strerror or exc}")
        finally:
            os.close(dfd)
    seconds += time.perf_counter() - start  # durable: the directory's fsync is in the time
    if errors:
        raise MeasurementError(f"checkpoint save failed: {errors[0]}")
    total = shards * size
    return OpStats("save checkpoint", shards, total, seconds, shards / seconds,
                   total / seconds, threads, {p: latency_stats(v) for p, v in times.items()})
