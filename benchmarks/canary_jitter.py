"""How far the machine canary moves on its own between two readings 2 s apart (as between the
two runs of a gate's pair; best of 3 tries, as the gate reads it): idle, under a constant CPU
hog and under a disk loop; and how far it moves when a hog or a disk loop starts between the
two readings. It set the gate's first machine check (a 25% limit), now replaced by the rest
of the machine's CPU over each run (measure/rest.py, benchmarks/rest_jitter.py).

    python3 -m benchmarks.canary_jitter [PAIRS]   # default 15 pairs per condition
"""

from __future__ import annotations

import math
import statistics
import sys
import tempfile
import time
from collections.abc import Callable

from benchmarks import loads
from pytest_fsperf.measure import canary

PAIR_TRIES = 3  # what the gate read before each run of a pair, best of 3 (about 0.25 s)
Load = Callable[[str], int]


def hog(_scratch: str) -> int:
    return loads.stranger(loads.HOG)


def disk(scratch: str) -> int:
    return loads.stranger(loads.disk_loop(f"{scratch}/x"))


def stop(group: int) -> None:
    loads.kill(group)


def reading(scratch: str) -> float:
    return canary.measure(scratch, PAIR_TRIES).score


def jitter(scratch: str, n: int) -> str:
    moved = []
    for _ in range(n):
        a = reading(scratch)
        time.sleep(2)
        moved.append(abs(math.log(reading(scratch) / a)))
    moved.sort()
    return (f"|ln(b/a)| median {statistics.median(moved):.3f}, 90th percentile "
            f"{moved[int(0.9 * len(moved))]:.3f}, max {moved[-1]:.3f}")


def step(scratch: str, load: Load, n: int) -> str:
    ratios = []
    for _ in range(n):
        a = reading(scratch)
        p = load(scratch)
        time.sleep(2)
        ratios.append(reading(scratch) / a)
        stop(p)
    return " ".join(f"{r:.2f}" for r in ratios)


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 15
    with tempfile.TemporaryDirectory(prefix="fsperf-canary-") as scratch:
        print("idle:", jitter(scratch, n), flush=True)
        for name, load in (("cpu hog", hog), ("disk loop", disk)):
            p = load(scratch)
            time.sleep(1)
            print(f"under a constant {name}:", jitter(scratch, n), flush=True)
            stop(p)
        for name, load in (("cpu hog", hog), ("disk loop", disk)):
            print(f"a {name} starts between the readings, b/a:", step(scratch, load, 8), flush=True)


if __name__ == "__main__":
    main()
