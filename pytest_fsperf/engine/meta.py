"""The metadata engine: listing, listing with stat, a recursive walk, stat of N files.

`list` is `ls -f` (names only, one readdir pass), `list_stat` is `ls -l` (readdir, then
lstat of each entry), `walk` is `find` (every directory below, recursively), `stat` is a
stat() of each of N known paths (the stat step of `juicefs bench`).
"""

from __future__ import annotations

import os
import time

from pytest_fsperf.engine.files import latency_stats
from pytest_fsperf.errors import MeasurementError
from pytest_fsperf.result.parts import LatencyStats, OpStats

OPERATIONS = ("list", "list_stat", "walk", "stat")


def make_tree(root: str, count: int, per_dir: int = 0) -> list[str]:
    """count empty files under root; per_dir > 0 spreads them over subdirectories."""
    paths = tree_paths(root, count, per_dir)
    os.makedirs(root, exist_ok=True)
    made = {root}
    for path in paths:
        parent = os.path.dirname(path)
        if parent not in made:
            os.makedirs(parent, exist_ok=True)
            made.add(parent)
        os.close(os.open(path, os.O_CREAT | os.O_WRONLY | os.O_NOFOLLOW, 0o644))
    return paths


def _list(root: str, with_stat: bool) -> int:
    n = 0
    with os.scandir(root) as it:
        for entry in it:
            if with_stat:
                entry.stat(follow_symlinks=False)
            n += 1
    return n


def _walk(root: str) -> int:
    n = 0
    for _dirpath, dirs, files in os.walk(root):
        n += len(dirs) + len(files)
    return n


def expected_entries(operation: str, count: int, per_dir: int = 0) -> int:
    """How many entries the operation must see in a tree make_tree laid out."""
    dirs = -(-count // per_dir) if per_dir else 0
    if operation == "walk":
        return count + dirs
    if operation in ("list", "list_stat"):
        return dirs or count
    return count


def run_meta(operation: str, root: str, paths: list[str] | None = None,
             expected: int | None = None) -> OpStats:
    """expected: the entries laid out; seeing fewer is a MeasurementError (the figure would
    be of another workload than the one named)."""
    if operation not in OPERATIONS:
        raise ValueError(f"unknown metadata operation {operation!r} (known: {', '.join(OPERATIONS)})")
    per_op: list[int] = []
    start = time.perf_counter()
    if operation == "stat":
        for path in paths or []:
            t0 = time.perf_counter_ns()
            os.stat(path)
            per_op.append(time.perf_counter_ns() - t0)
        count = len(per_op)
    elif operation == "walk":
        count = _walk(root)
    else:
        count = _list(root, operation == "list_stat")
    seconds = time.perf_counter() - start
    if expected is not None and count < expected:
        raise MeasurementError(
            f"{operation} saw {count} of the {expected} entries laid out: the filesystem lost or "
            "hid entries (e.g. uploads not finished before the cold remount)")
    phases: dict[str, LatencyStats] = {"op": latency_stats(per_op)} if per_op else {}
    return OpStats(operation=operation, count=count, io_bytes=0, seconds=seconds,
                   per_second=count / seconds if seconds > 0 else 0.0, bw_bytes=0.0, threads=1,
                   phases=phases)


def tree_paths(root: str, count: int, per_dir: int = 0) -> list[str]:
    """The paths make_tree created."""
    return [os.path.join(root, f"d{i // per_dir}", f"f{i}") if per_dir else os.path.join(root, f"f{i}")
            for i in range(count)]
