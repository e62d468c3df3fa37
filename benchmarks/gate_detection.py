"""How well does the gate catch a real 10% slowdown, and how often does it cry wolf?

A real throttle is injected with rclone over a local MinIO: A mounts with --bwlimit LIMIT,
B with --bwlimit 0.9 x LIMIT (the same workload 10% slower), and A/A runs mount A twice.
Each trial is fsperf.compare itself (ab.run_compare on a Workspace, no pytest): ROUNDS
interleaved rounds (A B A B ..., each after a cold remount) of a time-based fio read, judged
by the A/B rule (B/A past the tolerance and its 95% bootstrap interval excluding 1). Prints
detection rate, false-alarm rate and the seconds of measurement per trial.

    python3 benchmarks/gate_detection.py [--trials 5] [--rounds 3] [--limit 40M] [--seconds 2]
"""

from __future__ import annotations

import argparse
import time

from pytest_fsperf.ab import run_compare
from pytest_fsperf.config import Settings
from pytest_fsperf.measure.workspace import Workspace
from pytest_fsperf.mounts.mounter import MountPlan
from pytest_fsperf.mounts.registry import Registry
from pytest_fsperf.session import FsperfSession, Target
from pytest_fsperf.stats import median
from pytest_fsperf.store.minio import find_minio, start_minio

TOLERANCE = 0.05


def trial(session: FsperfSession, target: Target, a: tuple[str, ...], b: tuple[str, ...],
          rounds: int, seconds: float, n: int) -> tuple[str, float, float]:
    """One A/B by the plugin's own runner (fsperf.compare without pytest): returns the
    bandwidth outcome, seconds of measurement and wall seconds."""
    ws = Workspace(session, target, f"gate::trial{n}", target.new_workdir(f"trial{n}"))
    job = {"rw": "read", "bs": "1M", "size": "64M", "direct": 1, "time_based": 1,
           "runtime": f"{seconds:g}s"}
    t0 = time.monotonic()
    c = run_compare(ws, job, a, b, rounds, "read", "gate_detection", TOLERANCE)
    measured = sum(r.wall_seconds for r in ws.results)
    return c.metrics["bw"].outcome, measured, time.monotonic() - t0


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--trials", type=int, default=5)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--limit", default="40M")
    ap.add_argument("--seconds", type=float, default=2.0)
    args = ap.parse_args()
    binary = find_minio()
    if binary is None:
        raise SystemExit("MinIO is not installed (see README: fsperf_s3)")
    limit_mib = float(args.limit.rstrip("M"))
    a = ("--bwlimit", f"{limit_mib:g}M")
    b = ("--bwlimit", f"{0.9 * limit_mib:g}M")
    server = start_minio(binary)
    session = FsperfSession(Settings())
    try:
        target = session.open_target(MountPlan(Registry().get("rclone", "bench"), a, server.config()))
        results: dict[str, list[tuple[str, float, float]]] = {"A/B (B 10% slower)": [], "A/A": []}
        for n in range(args.trials):
            for kind, other in (("A/B (B 10% slower)", b), ("A/A", a)):
                results[kind].append(trial(session, target, a, other, args.rounds, args.seconds, n))
                print(kind, results[kind][-1])
        ab, aa = results["A/B (B 10% slower)"], results["A/A"]
        detected = sum(o == "B worse" for o, _m, _w in ab) / len(ab)
        false_alarms = sum(o in ("B worse", "B better") for o, _m, _w in aa) / len(aa)
        print(f"{args.trials} trials each, {args.rounds} rounds of {args.seconds:g} s reads, "
              f"A --bwlimit {a[1]}, B --bwlimit {b[1]}, tolerance {100 * TOLERANCE:g}%")
        print(f"detection of the 10% slowdown: {100 * detected:.0f}%  (target >= 95%)")
        print(f"false alarms on A/A: {100 * false_alarms:.0f}%  (target <= 1%)")
        print(f"measurement per trial: {median([m for _o, m, _w in ab + aa]):.1f} s "
              f"(wall with remounts {median([w for _o, _m, w in ab + aa]):.1f} s; target <= 120 s)")
    finally:
        session.close()
        server.stop()


if __name__ == "__main__":
    main()
