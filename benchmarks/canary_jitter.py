"""How far the machine canary moves on its own between two readings 2 s apart (as between the
two runs of a gate's pair; best of 3 tries, as the gate reads it): idle, under a constant CPU
hog and under a disk loop; and how far it moves when a hog or a disk loop starts between the
two readings. It set the gate's first machine check (a 25% limit), now replaced by the rest
of the machine's CPU over each run (measure/rest.py, benchmarks/rest_jitter.py).

    python3 -m benchmarks.canary_jitter [PAIRS]   # default 15 pairs per condition
"""

from __future__ import annotations

import math
import sys
import tempfile

from benchmarks import loads
from pytest_fsperf.measure import canary

PAIR_TRIES = 3  # what the gate read before each run of a pair, best of 3 (about 0.25 s)


def reading(scratch: str) -> float:
    return canary.measure(scratch, PAIR_TRIES).score


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 15
    with tempfile.TemporaryDirectory(prefix="fsperf-canary-") as scratch:
        print("|ln(b/a)| of two readings; b/a where a load starts between them")
        loads.conditions(lambda: reading(scratch), 2.0, lambda a, b: math.log(b / a),
                         lambda a, b: f"{b / a:.2f}", scratch, n)


if __name__ == "__main__":
    main()
