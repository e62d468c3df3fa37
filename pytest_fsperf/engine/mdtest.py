"""Metadata rates as mdtest measures them: over a tree of N files (spread over directories
of `per_dir`), T threads create each file (O_EXCL, write `size` bytes, close), stat it, read
it back (open, read, close), rename it, then rename every directory, then remove every file
(and the directories); each phase timed on its own, in operations per second."""

from __future__ import annotations

import os
import queue
import threading
import time
from collections.abc import Callable, Sequence

from pytest_fsperf.engine.files import latency_stats, timed_pool
from pytest_fsperf.engine.meta import tree_paths
from pytest_fsperf.errors import MeasurementError
from pytest_fsperf.result.parts import OpStats

PHASES = ("create", "stat", "read", "rename", "rename_dir", "remove")


def renamed(path: str) -> str:
    return path + ".mv"


def _create(size: int) -> Callable[[str], int]:
    data = os.urandom(size)

    def create(path: str) -> int:
        fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
        try:
            return os.write(fd, data) if data else 0
        finally:
            os.close(fd)

    return create


def _read(size: int) -> Callable[[str], int]:
    def read(path: str) -> int:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
        try:
            return len(os.read(fd, max(size, 1)))
        finally:
            os.close(fd)

    return read


def _stat(path: str) -> int:
    os.stat(path)
    return 0


def _rename(path: str) -> int:
    os.rename(path, renamed(path))
    return 0


def _remove(path: str) -> int:
    os.unlink(path)
    return 0


def run_ops(phase: str, targets: Sequence[str], op: Callable[[str], int], threads: int) -> OpStats:
    """`op` on each target by `threads` threads; the clock runs from the go to the last."""
    tasks: queue.SimpleQueue[str | None] = queue.SimpleQueue()
    for target in targets:
        tasks.put(target)
    for _ in range(threads):
        tasks.put(None)
    times: list[int] = []
    moved = [0]
    errors: list[str] = []
    lock = threading.Lock()
    go = threading.Event()

    def work() -> None:
        mine, got = [], 0
        go.wait()
        while (target := tasks.get()) is not None:
            if errors:
                continue
            t0 = time.perf_counter_ns()
            try:
                got += op(target)
            except OSError as exc:
                errors.append(f"{phase} {target}: {exc.strerror or exc}")
                continue
            mine.append(time.perf_counter_ns() - t0)
        with lock:
            times.extend(mine)
            moved[0] += got

    seconds = timed_pool([work] * threads, go)
    if errors:
        raise MeasurementError(f"mdtest {errors[0]}")
    return OpStats(phase, len(targets), moved[0], seconds, len(targets) / seconds,
                   moved[0] / seconds, threads, {"op": latency_stats(times)})


def phases(per_dir: int) -> tuple[str, ...]:
    """The phases a tree has: without subdirectories (per_dir=0) there is no rename_dir."""
    return PHASES if per_dir else tuple(p for p in PHASES if p != "rename_dir")


def phase_run(phase: str, root: str, files: int, per_dir: int, size: int,
              threads: int) -> Callable[[], OpStats]:
    """The phase as a callable for the engine's window (the tree's directories are made
    before, outside it)."""
    paths = tree_paths(root, files, per_dir)
    dirs = sorted({os.path.dirname(p) for p in paths} - {root})
    if phase == "create":
        for d in dirs:
            os.makedirs(d, exist_ok=True)
        return lambda: run_ops(phase, paths, _create(size), threads)
    if phase == "stat":
        return lambda: run_ops(phase, paths, _stat, threads)
    if phase == "read":
        return lambda: run_ops(phase, paths, _read(size), threads)
    if phase == "rename":
        return lambda: run_ops(phase, paths, _rename, threads)
    if phase == "rename_dir":
        return lambda: run_ops(phase, dirs, _rename, 1)
    if phase == "remove":
        return lambda: _remove_all(root, threads)
    raise ValueError(f"unknown mdtest phase {phase!r}")


def _remove_all(root: str, threads: int) -> OpStats:
    """Unlink every file (wherever the renames left it), then the empty directories."""
    files = [os.path.join(dp, f) for dp, _ds, fs in os.walk(root) for f in fs]
    stats = run_ops("remove", files, _remove, threads)
    for dp, _ds, _fs in sorted(os.walk(root), key=lambda w: -len(w[0])):
        if dp != root:
            os.rmdir(dp)
    return stats
