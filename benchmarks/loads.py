"""Background loads for the benchmarks, started as a neighbour's would be: outside this
process's tree (a session of their own, re-parented away from us by `setsid -f`), so that the
plugin counts them as the rest of the machine (measure/rest.py), not as its own."""

from __future__ import annotations

import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")

HOG = f"exec {sys.executable} -c 'while True: pass'"


def disk_loop(target: str) -> str:
    return (f"while true; do dd if=/dev/zero of={target} bs=1M count=64 oflag=direct "
            "status=none; done")


def stranger(script: str) -> int:
    """Start `script` (sh) as a stranger's process group; returns its group id."""
    with tempfile.TemporaryDirectory(prefix="fsperf-load-") as d:
        pidfile = os.path.join(d, "pid")
        subprocess.run(["setsid", "-f", "sh", "-c", f"echo $$ > {pidfile}; {script}"],
                       check=True)
        for _ in range(500):
            try:
                with open(pidfile) as f:
                    text = f.read().strip()
                if text:
                    return int(text)
            except FileNotFoundError:
                pass
            time.sleep(0.01)
    raise RuntimeError("the load did not start")


def kill(group: int) -> None:
    try:
        os.killpg(group, signal.SIGKILL)
    except ProcessLookupError:
        return
    for _ in range(200):  # not our child: wait until it is gone
        try:
            os.killpg(group, 0)
        except ProcessLookupError:
            return
        time.sleep(0.01)


def _hog(_scratch: str) -> int:
    return stranger(HOG)


def _disk(scratch: str) -> int:
    return stranger(disk_loop(f"{scratch}/x"))


LOADS = (("cpu hog", _hog), ("disk loop", _disk))


def conditions(read: Callable[[], T], apart: float, distance: Callable[[T, T], float],
               step_shown: Callable[[T, T], str], scratch: str, n: int, steps: int = 8) -> None:
    """Print how far two readings `apart` seconds apart move on their own (n pairs: idle,
    under a steady CPU hog, under a steady disk loop; |distance| median, 90th percentile,
    max) and when a hog or a disk loop starts between them (`steps` pairs each)."""
    def jitter() -> str:
        moved = []
        for _ in range(n):
            a = read()
            time.sleep(apart)
            moved.append(abs(distance(a, read())))
        moved.sort()
        return (f"median {statistics.median(moved):.3f}, 90th percentile "
                f"{moved[int(0.9 * len(moved))]:.3f}, max {moved[-1]:.3f}")

    def step(load: Callable[[str], int]) -> str:
        said = []
        for _ in range(steps):
            a = read()
            group = load(scratch)
            time.sleep(apart)
            said.append(step_shown(a, read()))
            kill(group)
        return " ".join(said)

    print("idle:", jitter(), flush=True)
    for name, load in LOADS:
        group = load(scratch)
        time.sleep(1)
        print(f"under a constant {name}:", jitter(), flush=True)
        kill(group)
    for name, load in LOADS:
        print(f"a {name} starts between the readings:", step(load), flush=True)
