"""What reading results back into their types costs: a result's JSON checked against the
schema and read field by field (ResultRow.of), against writing it (to_dict); and a whole
session's report of N workloads built from their JSON (view.build over the read rows), as the
reporter, `fsperf comment` and an xdist controller do it.

Target: reading a result under 5 ms; 200 workloads read and laid out under 2 s.

    python benchmarks/typed_results.py [workloads]
"""

from __future__ import annotations

import json
import statistics
import sys
import time
from collections.abc import Callable

from pytest_fsperf.judge.runs import fingerprint
from pytest_fsperf.report import view
from pytest_fsperf.result.daemon import DaemonStats
from pytest_fsperf.result.document import ResultRow, rows
from pytest_fsperf.result.fuse import FuseOp, FuseRequests
from pytest_fsperf.result.parts import IoStats
from pytest_fsperf.result.store import Requests
from pytest_fsperf.result.timeline import Timeline
from pytest_fsperf.result.workload import WorkloadResult
from pytest_fsperf.vocab import DaemonCache, EngineKind, PageCache


def result(i: int) -> dict[str, object]:
    """A fio read with a daemon, FUSE trace, request counts, a timeline and 5 rounds."""
    bw = 1e9 + i
    n = 30
    r = WorkloadResult(
        test=f"perf/test_read.py::test_read[{i}]", name="seq_read", kind=EngineKind.FIO,
        options={"rw": "read", "bs": "1M", "size": "1G"}, cache=PageCache.DROPPED,
        daemon_cache=DaemonCache.REMOUNTED,
        read=IoStats(2**30, bw, 1000.0, 1024, 1000, 1e6, 9e5, 2e6, 4e6, "lat"), write=None,
        daemon=DaemonStats(100 + i, 1.0, 0.9, 90.0, 200 * 2**20, "VmHWM", 2**30, 2**30, "I/O", 1.0),
        daemon_note="found by the mount's FUSE connection", wall_seconds=1.1,
        tool_cpu_percent=20.0,
        rounds=tuple({"bw": bw * (1 + k / 100), "daemon_cpu": 90.0, "seconds": 1.1} for k in range(5)),
        fuse=FuseRequests(42, 1.0, tuple(FuseOp(op, 1000, {}, 2**20, 80.0, 900.0, 0)
                                         for op in ("READ", "GETATTR", "LOOKUP", "OPEN"))),
        requests=Requests({"GET": 64, "HEAD": 1, "LIST": 0, "PUT": 0, "MULTIPART": 0, "COPY": 0,
                           "DELETE": 0, "OTHER": 0}, {"GetObject": 64}, 0, 0, 2**30, 0),
        timeline=Timeline(1.0, [float(t) for t in range(n + 1)], [2**25] * n, [90.0] * n,
                          [2**27] * n, [8] * n, [20] * n, [None] * n))
    return {**r.to_dict(), "verdict": "pass", "verdict_own": "pass", "failures": [],
            "not_judged": [], "limits": {}, "baseline": None, "baseline_checks": [],
            "baseline_key": f"{r.test}:{r.name}", "baseline_entry": {},
            "fingerprint": fingerprint(None, r.options, None, None), "run_comparison": None}


def timed(call: Callable[[], object], repeat: int = 7) -> float:
    """The median wall time of `call`, s."""
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        call()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 200
    docs = [json.loads(json.dumps(result(i))) for i in range(n)]
    one = docs[0]
    row = ResultRow.of(one)
    read = timed(lambda: ResultRow.of(one), 21)
    write = timed(lambda: row.to_dict(), 21)
    print(f"one result: read {1e3 * read:.2f} ms (schema check + types), written {1e3 * write:.2f} ms")
    whole = timed(lambda: view.build(None, rows(docs), [], False), 3)
    print(f"{n} workloads: read and laid out in {whole:.2f} s ({1e3 * whole / n:.2f} ms each)")
    print(f"targets: read under 5 ms ({'met' if read < 0.005 else 'MISSED'}); "
          f"{n} workloads under 2 s ({'met' if whole < 2.0 else 'MISSED'})")


if __name__ == "__main__":
    main()
