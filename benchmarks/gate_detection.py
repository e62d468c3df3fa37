"""How well does the gate catch a real 10% slowdown, and how often does it cry wolf?

A real throttle is injected with rclone over a local MinIO: A mounts with --bwlimit LIMIT,
B with --bwlimit 0.9 x LIMIT (the same workload 10% slower), and A/A runs mount A twice.
Each trial runs ROUNDS interleaved rounds (A B A B ..., each after a cold remount) of a
time-based fio read and applies the A/B rule of pytest-fsperf (B/A past the tolerance and
its 95% bootstrap interval excluding 1). Prints detection rate, false-alarm rate and the
seconds of measurement per trial.

    python3 benchmarks/gate_detection.py [--trials 5] [--rounds 3] [--limit 40M] [--seconds 2]
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time

from pytest_fsperf.backends.mounter import MountedFs, MountPlan
from pytest_fsperf.backends.registry import Registry
from pytest_fsperf.cache import make_cold
from pytest_fsperf.engine import fio
from pytest_fsperf.stats import median, shift
from pytest_fsperf.store.minio import find_minio, start_minio


def read_bw(workdir: str, seconds: float, out: str) -> float:
    job = {"rw": "read", "bs": "1M", "size": "64M", "direct": "1", "time_based": "1",
           "runtime": f"{seconds:g}s"}
    fio.run_fio(fio.command(job, "gate", workdir, out), out)
    read, _write, _raw = fio.parse_output(out)
    assert read is not None
    return read.bw_bytes


def trial(fs: MountedFs, a: tuple[str, ...], b: tuple[str, ...], rounds: int, seconds: float,
          workdir_name: str, out: str) -> tuple[str, float, float]:
    av, bv = [], []
    t0 = time.monotonic()
    measured = 0.0
    for _ in range(rounds):
        for opts, into in ((a, av), (b, bv)):
            fs.remount(opts, wipe=True)
            workdir = os.path.join(fs.mountpoint, workdir_name)
            make_cold(workdir, fuse=True)
            m0 = time.monotonic()
            into.append(read_bw(workdir, seconds, out))
            measured += time.monotonic() - m0
    _ratio, _lo, _hi, direction = shift(bv, av, 0.05)  # the rule fsperf.compare applies
    return direction, measured, time.monotonic() - t0


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
    fs = MountedFs(MountPlan(Registry().get("rclone", "bench"), a, server.config()))
    out = os.path.join(tempfile.mkdtemp(prefix="fsperf-gate-"), "fio.json")
    try:
        fs.start()
        os.makedirs(os.path.join(fs.mountpoint, "gate"), exist_ok=True)
        fio.run_fio(fio.command({"rw": "write", "bs": "1M", "size": "64M", "direct": "1"}, "gate",
                                os.path.join(fs.mountpoint, "gate"), out), out)
        results = {"A/B (B 10% slower)": [], "A/A": []}
        for _ in range(args.trials):
            for kind, other in (("A/B (B 10% slower)", b), ("A/A", a)):
                results[kind].append(trial(fs, a, other, args.rounds, args.seconds, "gate", out))
                print(kind, results[kind][-1])
        ab, aa = results["A/B (B 10% slower)"], results["A/A"]
        detected = sum(o == "down" for o, _m, _w in ab) / len(ab)
        false_alarms = sum(o in ("down", "up") for o, _m, _w in aa) / len(aa)
        print(f"{args.trials} trials each, {args.rounds} rounds of {args.seconds:g} s reads, "
              f"A --bwlimit {a[1]}, B --bwlimit {b[1]}")
        print(f"detection of the 10% slowdown: {100 * detected:.0f}%  (target >= 95%)")
        print(f"false alarms on A/A: {100 * false_alarms:.0f}%  (target <= 1%)")
        print(f"measurement per trial: {median([m for _o, m, _w in ab + aa]):.1f} s "
              f"(wall with remounts {median([w for _o, _m, w in ab + aa]):.1f} s; target <= 120 s)")
    finally:
        fs.close()
        server.stop()


if __name__ == "__main__":
    main()
