"""How far the rest of the machine's CPU (measure/rest.py) moves between the two runs of a
gate's pair on its own, and how far when a neighbour starts between them: sets REST_LIMIT.

Each "run" is a cold read of 64 MiB of a local file in direct 4 KiB reads (about a second
here; page cache dropped before it, as a gate's cold start does) by a child process,
measured as a gate run is: the rest of the machine over its window. Idle, under a constant
CPU hog and under a disk loop; then a hog or a disk loop starting between the two runs.
Needs root (drop_caches).

    python3 -m benchmarks.rest_jitter [PAIRS]   # default 15 pairs per condition
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile

from benchmarks import loads
from pytest_fsperf.measure.rest import REST_LIMIT, RestMeter
from pytest_fsperf.result.machine import Rest

SIZE = 64 << 20


def run(path: str) -> Rest:
    with open("/proc/sys/vm/drop_caches", "w") as f:
        f.write("3\n")
    meter = RestMeter(())
    meter.start()
    subprocess.run(["dd", f"if={path}", "of=/dev/null", "bs=4k", "count=16384", "iflag=direct",
                    "status=none"], check=True)
    got = meter.stop()
    assert got is not None
    return got


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 15
    with tempfile.TemporaryDirectory(prefix="fsperf-rest-", dir="/var/tmp") as scratch:
        path = os.path.join(scratch, "data")
        with open(path, "wb") as f:
            for _ in range(SIZE >> 20):
                f.write(os.urandom(1 << 20))
        print(f"REST_LIMIT {REST_LIMIT} cores; |b-a| cores of two runs; b-a where a load starts "
              "between them")
        loads.conditions(lambda: run(path).cpu, 1.0, lambda a, b: b - a,
                         lambda a, b: f"{b - a:+.2f}", scratch, n)


if __name__ == "__main__":
    main()
