"""The release gate on a busy runner: bursty neighbours beside a 10%-slower daemon and A/A.

A shared CI runner in miniature: a neighbour (a stranger's process group, outside ours, so the
plugin counts it as the rest of the machine) switches between idle, one and two busy cores
on a seeded schedule, in one of several patterns:

- steady: one busy core, all the time (a steady hog);
- steps: a new level (0, 1 or 2 cores) every 3-8 s (bursty);
- spikes: idle, with bursts of 2 cores for 1-2 s every 4-10 s;
- flip: 0 and 2 cores in turn, every 4 s;
- mixed: a steady core, with a second for 1-3 s every 3-8 s and now and then none.

Each trial is the plugin's own release gate (as gate_detection.py: two bindfs "builds" over
tmpfs in CPU quotas, B 10% slower; A/A runs A's build on both sides), for the small-file cold
read, fio's direct reads or the metadata `ls -l`. Prints every trial, then per workload and
neighbour: 10% slower caught, A/A flagged, undecided, the time to a decision and the most
budget an undecided gate left unspent. --suites N: N whole-suite A/As beside the bursty
neighbour instead (each workload gated once, A against A, each at its share of the suite's
error as a release gate's session gives it): how many suites flagged anything.

    python3 -m benchmarks.busy_runner [--workloads files,fio,meta] [--trials 3]
        [--aa-trials 3] [--budget 180] [--patterns steady,steps,mixed] [--seed 1] [--count N]
        [--suites N]
"""

from __future__ import annotations

import argparse
import itertools
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

from benchmarks import gate_detection as gd
from benchmarks import loads
from pytest_fsperf.judge.paired import suite_alpha
from pytest_fsperf.measure.balloon import Settle
from pytest_fsperf.measure.profile import Profiling
from pytest_fsperf.mounts.mounter import MountPlan
from pytest_fsperf.mounts.registry import Registry
from pytest_fsperf.options.config import Settings
from pytest_fsperf.session.state import FsperfSession
from pytest_fsperf.stats import median
from pytest_fsperf.vocab import Difference

# The neighbour: a seeded schedule of busy-core levels, kept by forked spinners.
NEIGHBOUR = r"""
import os, random, signal, sys, time
seed, pattern = int(sys.argv[1]), sys.argv[2]
rnd = random.Random(seed)
kids = []
def level(n):
    while len(kids) < n:
        pid = os.fork()
        if pid == 0:
            while True:
                pass
        kids.append(pid)
    while len(kids) > n:
        os.kill(kids.pop(), signal.SIGKILL)
        os.wait()
while True:
    if pattern == "steady":
        level(1); time.sleep(3600)
    elif pattern == "mixed":
        level(1); time.sleep(rnd.uniform(3, 8)); level(2 if rnd.random() < 0.8 else 0)
        time.sleep(rnd.uniform(1, 3))
    elif pattern == "steps":
        level(rnd.choice((0, 1, 2))); time.sleep(rnd.uniform(3, 8))
    elif pattern == "spikes":
        level(0); time.sleep(rnd.uniform(4, 10)); level(2); time.sleep(rnd.uniform(1, 2))
    else:
        level(0); time.sleep(4); level(2); time.sleep(4)
"""
PATTERNS = ("steady", "steps", "mixed", "spikes", "flip")


def neighbour(seed: int, pattern: str, scratch: Path) -> int:
    script = scratch / "neighbour.py"
    script.write_text(NEIGHBOUR)
    return loads.stranger(f"exec {sys.executable} {script} {seed} {pattern}")


def main() -> None:
    signal.signal(signal.SIGTERM, gd._on_term)
    ap = argparse.ArgumentParser()
    ap.add_argument("--workloads", default="files,fio,meta")
    ap.add_argument("--trials", type=int, default=3, help="10%% slower trials per workload")
    ap.add_argument("--aa-trials", type=int, default=3, help="A/A trials per workload")
    ap.add_argument("--budget", type=float, default=180.0, help="seconds per gate, all counted")
    ap.add_argument("--patterns", default="steady,steps,mixed")
    ap.add_argument("--suites", type=int, default=0, help="whole-suite A/As instead")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--quota", default="20,18", metavar="A,B", help="%% of a core for A and B")
    ap.add_argument("--seconds", type=float, default=1.5, help="each fio read")
    ap.add_argument("--count", type=int, default=0,
                    help="files per small-file run (default 2000), entries per listing (20000)")
    a = ap.parse_args()
    scratch = Path(tempfile.mkdtemp(prefix="fsperf-busy-"))
    source = scratch / "source"
    source.mkdir()
    session = FsperfSession(Settings(ab_max_rounds=200, ab_seconds=a.budget,
                                     profiling=Profiling("off"), settle=Settle("off")))
    patterns = itertools.cycle(a.patterns.split(","))
    rows: dict[tuple[str, str], list[tuple[str, Difference, int, float, str]]] = {}
    flagged_suites: list[int] = []
    try:
        subprocess.run(["mount", "-t", "tmpfs", "-o", "size=512m", "tmpfs", str(source)], check=True)
        bindfs = shutil.which("bindfs") or "bindfs"
        qa, qb = (float(q) for q in a.quota.split(","))
        period = gd.period_for(qa, qb)
        build_a = gd.wrapper(scratch, "bindfs-a", bindfs, gd.cgroup("fsperf-busy-a", qa, period))
        build_b = gd.wrapper(scratch, "bindfs-b", bindfs, gd.cgroup("fsperf-busy-b", qb, period))
        target = session.open_target(MountPlan(Registry().get("bindfs", "bench"), (),
                                               {"source": str(source)}))
        n = 0
        for suite in range(a.suites):  # a whole suite of A/As beside one bursty neighbour
            group = neighbour(a.seed + suite, "steps", scratch)
            try:
                found = []
                for nth, workload in enumerate(a.workloads.split(","), start=1):
                    outcome, pairs, _m, wall, _s = gd.build_trial(
                        session, target, n, build_a, build_a, a.seconds, workload,
                        a.count or (20000 if workload == "meta" else 2000),
                        alpha=suite_alpha(1, nth))
                    n += 1
                    found.append(outcome in (Difference.B_WORSE, Difference.B_BETTER))
                    print(f"suite {suite + 1} {workload}: {outcome} after {pairs} pairs, "
                          f"{wall:.0f} s", flush=True)
            finally:
                loads.kill(group)
            flagged_suites.append(any(found))
        for workload in a.workloads.split(",") if not a.suites else ():
            count = a.count or (20000 if workload == "meta" else 2000)
            kinds = [("slow", build_b)] * a.trials + [("A/A", build_a)] * a.aa_trials
            for kind, b in kinds:
                pattern = next(patterns)
                group = neighbour(a.seed + n, pattern, scratch)
                try:
                    outcome, pairs, _measured, wall, stopped = gd.build_trial(
                        session, target, n, build_a, b, a.seconds, workload, count)
                finally:
                    loads.kill(group)
                rows.setdefault((workload, pattern), []).append((kind, outcome, pairs, wall, stopped))
                left = a.budget - wall if outcome == Difference.INCONCLUSIVE else 0.0
                print(f"{workload} {kind} {pattern}: {outcome} after {pairs} pairs, {wall:.0f} s"
                      + (f", {left:.0f} s of the budget left" if left > 0 else ""), flush=True)
                n += 1
    finally:
        session.close()
        subprocess.run(["umount", "-l", str(source)], check=False)
        for name in ("fsperf-busy-a", "fsperf-busy-b"):
            gd.with_retry_rmdir(gd.CGROUP / name)
        shutil.rmtree(scratch, ignore_errors=True)
    print(f"\nbusy runner (patterns {a.patterns}, seed {a.seed}), budget {a.budget:g} s, "
          f"quota {a.quota}% of a core, tolerance {100 * gd.TOLERANCE:g}%")
    if a.suites:
        print(f"whole-suite A/A ({a.workloads}) beside the bursty neighbour: "
              f"{sum(flagged_suites)} of {len(flagged_suites)} suites flagged a workload")
        return
    print("| workload | neighbour | 10% slower caught | A/A flagged | undecided | to a decision "
          "(median) | most left undecided |")
    print("|---|---|---|---|---|---|---|")
    for (workload, pattern), found in rows.items():
        slow = [r for r in found if r[0] == "slow"]
        aa = [r for r in found if r[0] == "A/A"]
        caught = sum(r[1] == Difference.B_WORSE for r in slow)
        flagged = sum(r[1] in (Difference.B_WORSE, Difference.B_BETTER) for r in aa)
        undecided = sum(r[1] == Difference.INCONCLUSIVE for r in found)
        times = [r[3] for r in found if r[1] != Difference.INCONCLUSIVE]
        took = f"{median(times):.0f} s" if times else "-"
        left = max((a.budget - r[3] for r in found if r[1] == Difference.INCONCLUSIVE), default=0)
        print(f"| {workload} | {pattern} | {caught} of {len(slow)} | {flagged} of {len(aa)} | "
              f"{undecided} of {len(found)} | {took} | {left:.0f} s |")


if __name__ == "__main__":
    main()
