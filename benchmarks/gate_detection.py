"""How well does release gating catch a real 10% slower daemon, and how often does it cry wolf?

A real slower build is injected: two "builds" of bindfs (over a tmpfs), each a wrapper that
puts the daemon into a cgroup with a CPU quota before exec'ing bindfs. Reference A: 20% of a
core; candidate B: 18% (the same daemon, 10% less CPU: about 10% less bandwidth on 128 KiB
direct reads of 3 s). A/A trials run B in A's own cgroup (`--aa-cgroup same`, the default:
the same build in the same place), or in a cgroup of its own with A's 20% (`own`: two
cgroups of equal quota differed by up to 6% within a trial here, a real difference the gate
rightly flags). Or, with
`--injection bwlimit`, rclone over a local directory with --bwlimit 40M against 36M.

Each trial is the plugin's own release gate (ab.gate, as --fsperf-reference runs it, no
pytest): interleaved pairs ABBA..., each run after a cold remount with its build, judged on
the paired ratios, stopped when decisive (worse, better, same or not worse) or when the
budget (pairs, seconds) is spent. Trials cycle through the
background loads the benchmark starts and stops itself: none, cpu (one busy process), disk
(a loop of 64 MiB direct writes to the local disk).

`--mode saved` measures the saved-run comparison instead: three saved runs of ROUNDS rounds
of A with no load start the history; each trial is a run of ROUNDS rounds of A (A/A) or B
under the trial's load, compared as `--fsperf-compare=latest --fsperf-compare-last=3` does
(machine canary first, then the last three runs' medians); each A/A run joins the history,
as CI would save each run of the reference.

    python3 benchmarks/gate_detection.py [--mode builds|saved] [--trials 20] [--aa-trials 100]
        [--workload fio|files|meta] [--count N] [--injection quota|bwlimit]
        [--quota 20,18] [--bwlimit 40,36] [--seconds 3] [--budget 300]

Prints every trial and then detection rate, false-alarm rate and time to a decision.
"""

from __future__ import annotations

import argparse
import dataclasses
import itertools
import math
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from benchmarks import loads
from pytest_fsperf.judge import runs
from pytest_fsperf.measure import canary
from pytest_fsperf.measure.balloon import Settle
from pytest_fsperf.measure.profile import Profiling
from pytest_fsperf.mounts.mounter import MountPlan
from pytest_fsperf.mounts.registry import Registry
from pytest_fsperf.options.config import Settings
from pytest_fsperf.result.workload import WorkloadResult
from pytest_fsperf.runner.ab import gate
from pytest_fsperf.runner.space import Release
from pytest_fsperf.runner.target import Target
from pytest_fsperf.runner.workspace import Workspace
from pytest_fsperf.scenarios import steps
from pytest_fsperf.session.state import FsperfSession
from pytest_fsperf.stats import median
from pytest_fsperf.vocab import Difference, RunOutcome

TOLERANCE = 0.05
CGROUP = Path("/sys/fs/cgroup/cpu")
PERIOD_US = 10_000
LOADS = ("none", "cpu", "disk")


def cgroup(name: str, percent: float, period: int = PERIOD_US) -> Path:
    path = CGROUP / name
    path.mkdir(exist_ok=True)
    # A 10 ms period: the quota is spread finely over each read, not in 100 ms lumps.
    (path / "cpu.cfs_period_us").write_text(str(period))
    (path / "cpu.cfs_quota_us").write_text(str(int(percent / 100 * period)))
    return path


def period_for(*percents: float) -> int:
    """PERIOD_US, or longer where a quota would fall under the kernel's 1 ms least."""
    return max(PERIOD_US, math.ceil(1000 * 100 / min(percents)))


def wrapper(where: Path, name: str, binary: str, group: Path | None, extra: str = "") -> str:
    """A 'build': a script that joins its cgroup, then execs the real daemon."""
    path = where / name
    join = f"echo $$ > {group}/cgroup.procs\n" if group else ""
    path.write_text(f"#!/bin/sh\n{join}exec {binary} \"$@\"{extra}\n")
    path.chmod(0o755)
    return str(path)


@contextmanager
def load(kind: str, scratch: Path) -> Iterator[None]:
    """Background load the benchmark starts and stops: none, cpu or disk."""
    groups: list[int] = []  # a neighbour's, not ours: the plugin sees them as the machine's
    if kind == "cpu":
        groups.append(loads.stranger(loads.HOG))
    elif kind == "disk":
        groups.append(loads.stranger(loads.disk_loop(str(scratch / "disk-load"))))
    try:
        yield
    finally:
        for g in groups:
            loads.kill(g)
        (scratch / "disk-load").unlink(missing_ok=True)


def job(seconds: float) -> dict[str, object]:
    return {"rw": "read", "bs": "128k", "size": "256M", "direct": 1, "time_based": 1,
            "runtime": f"{seconds:g}s"}


def runner(ws: Workspace, workload: str, seconds: float, count: int
           ) -> Callable[[str], WorkloadResult]:
    """One run of the trial's workload, measured after the cold start the gate made: the
    small-file engine's cold read of `count` files of 128 KiB, the metadata engine's cold
    `ls -l` (list+stat) of `count` entries, or fio's direct reads of `seconds`."""
    if workload == "files":
        files = steps.FilesJob(mode="read", count=count, size="128KiB", threads=8, subdir="files")
        return lambda label: ws.keep(steps.files_step(ws, label, files, True, "gate_detection"))
    if workload == "meta":
        meta = steps.MetaJob(op="list_stat", entries=count)
        return lambda label: ws.keep(steps.meta_step(ws, label, meta, True, "gate_detection"))
    _base, spec = ws.job("read", job(seconds), "gate_detection")
    return lambda label: ws.keep(ws.measure(label, True, spec, layout=True))


def build_trial(session: FsperfSession, target: Target, n: int, a: str, b: str,
                seconds: float, workload: str, count: int, alpha: float | None = None,
                ) -> tuple[Difference, int, float, float, str]:
    """One release gate (its flag at `alpha`, a suite's share, where given); returns the
    deciding figure's outcome, pairs, seconds of measurement, wall s (everything counted)
    and the stop reason."""
    ws = Workspace(session, target, f"gate::trial{n}", target.new_workdir(f"trial{n}"))
    t0 = time.monotonic()
    budget = ws.budget() if alpha is None else dataclasses.replace(ws.budget(), alpha=alpha)
    c, _b, _a = gate(ws, workload, runner(ws, workload, seconds, count), Release(a, b), budget,
                     TOLERANCE)
    measured = sum(r.wall_seconds for r in ws.results)
    target.remove(str(ws.workdir))
    m = c.metrics[c.decided_by]
    ratios = [f"{y / x:.3f}" for x, y in zip(m.a, m.b, strict=True) if x and y]
    print(f"  pairs B/A {' '.join(ratios)}; B/A {m.ratio:.3f} [{m.ci_low or 0:.3f}, "
          f"{m.ci_high or 0:.3f}]; {c.stopped}" + (f"; unstable: {c.unstable}" if c.unstable else "")
          + (f"; dropped: {'; '.join(c.dropped)}" if c.dropped else "")
          + (f"; {c.machine}" if "adjusted" in c.machine else ""), flush=True)
    return c.outcome, c.rounds, measured, time.monotonic() - t0, c.stopped


def _side(ws: Workspace, build: str, rounds: int, seconds: float, local: str,
          ) -> dict[str, object]:
    values, readings = [], []
    base, spec = ws.job("read", job(seconds), "gate_detection")
    for i in range(rounds):
        readings.append(canary.measure(local).score)
        ws.cold_start(build=build)
        values.append(ws.measure(ws.unique(f"{base}.{i}"), True, spec, layout=i == 0).bw_bytes)
    readings.append(canary.measure(local).score)
    return {"total": {"io_bytes": 1}, "rounds": [{"bw": v} for v in values],
            "fingerprint": {}, "canary": readings}


HISTORY = 3  # saved-run mode: compared with the last N matching runs (--fsperf-compare-last)


def saved_trial(session: FsperfSession, target: Target, n: int, b: str, seconds: float,
                rounds: int, kind: str, scratch: Path, history: list[dict[str, object]],
                ) -> tuple[str, float, dict[str, object]]:
    """A run of `b` under `kind`, compared as --fsperf-compare=latest --fsperf-compare-last=N
    does: with the last N saved runs of A (the history), machine canary first."""
    ws = Workspace(session, target, f"gate::saved{n}", target.new_workdir(f"saved{n}"))
    with load(kind, scratch):
        new = _side(ws, b, rounds, seconds, session.local_dir())
    target.remove(str(ws.workdir))
    recent = [(f"run{i}", r) for i, r in enumerate(reversed(history[-HISTORY:]))]
    c = runs.compare(recent[0][0], "read", recent[0][1], new, TOLERANCE, recent)
    return c.outcome, c.canary or 0.0, new


def saved_history(session: FsperfSession, target: Target, a: str, seconds: float,
                  rounds: int) -> list[dict[str, object]]:
    """The saved runs of the reference before the trials: HISTORY runs of A, no load."""
    ws = Workspace(session, target, "gate::history", target.new_workdir("history"))
    found = [_side(ws, a, rounds, seconds, session.local_dir()) for _ in range(HISTORY)]
    target.remove(str(ws.workdir))
    return found


def _on_term(signum: int, _frame: object) -> None:
    raise KeyboardInterrupt(signal.Signals(signum).name)  # unmount and clean up in `finally`


def main() -> None:
    signal.signal(signal.SIGTERM, _on_term)
    ap = argparse.ArgumentParser()
    ap.add_argument("--mode", choices=("builds", "saved"), default="builds")
    ap.add_argument("--trials", type=int, default=20, help="slowdown trials")
    ap.add_argument("--aa-trials", type=int, default=100)
    ap.add_argument("--injection", choices=("quota", "bwlimit"), default="quota")
    ap.add_argument("--seconds", type=float, default=3.0, help="each fio read")
    ap.add_argument("--max-pairs", type=int, default=100, help="a safety cap; the time decides")
    ap.add_argument("--budget", type=float, default=300.0, help="seconds per gate, all counted")
    ap.add_argument("--profile", choices=("off", "auto"), default="off",
                    help="auto: a caught regression profiles one more pair (not timed apart)")
    ap.add_argument("--workload", choices=("fio", "files", "meta"), default="fio",
                    help="fio: 128 KiB direct reads of --seconds; files: a cold read of 2000 "
                         "files of 128 KiB; meta: a cold ls -l of 20000 entries")
    ap.add_argument("--count", type=int, default=0,
                    help="files: files of 128 KiB (default 2000, about 0.5-1 s a run here); "
                         "meta: entries listed (default 20000)")
    ap.add_argument("--bwlimit", default="40,36", metavar="A,B",
                    help="bwlimit injection: the reference's and the candidate's MB/s")
    ap.add_argument("--rounds", type=int, default=5, help="saved mode: rounds per run")
    ap.add_argument("--quota", default="20,18", metavar="A,B",
                    help="quota injection: the reference's and the candidate's %% of a core "
                         "(metadata work needs a daemon the quota binds: e.g. 4,3.6)")
    ap.add_argument("--settle", choices=[m.value for m in Settle], default="auto",
                    help="--fsperf-settle: auto settles a gate once its runs spread past 1.5x")
    ap.add_argument("--aa-cgroup", choices=("same", "own"), default="same",
                    help="A/A: B in A's cgroup, or in its own with the same quota")
    args = ap.parse_args()
    count = args.count or (20000 if args.workload == "meta" else 2000)
    scratch = Path(tempfile.mkdtemp(prefix="fsperf-gate-"))
    source = scratch / "source"
    source.mkdir()
    session = FsperfSession(Settings(ab_max_rounds=args.max_pairs, ab_seconds=args.budget,
                                     profiling=Profiling(args.profile),
                                     settle=Settle(args.settle)))
    try:
        if args.injection == "quota":
            subprocess.run(["mount", "-t", "tmpfs", "-o", "size=512m", "tmpfs", str(source)], check=True)
            bindfs = shutil.which("bindfs") or "bindfs"
            qa, qb = (float(q) for q in args.quota.split(","))
            period = period_for(qa, qb)
            a = wrapper(scratch, "bindfs-a", bindfs, cgroup("fsperf-gate-a", qa, period))
            slow = wrapper(scratch, "bindfs-b", bindfs, cgroup("fsperf-gate-b", qb, period))
            same = wrapper(scratch, "bindfs-aa", bindfs, cgroup("fsperf-gate-aa", qa, period)
                           if args.aa_cgroup == "own" else CGROUP / "fsperf-gate-a")
            plan = MountPlan(Registry().get("bindfs", "bench"), (), {"source": str(source)})
        else:
            rclone = shutil.which("rclone") or "rclone"
            ra, rb = args.bwlimit.split(",")
            a = wrapper(scratch, "rclone-a", rclone, None, f" --bwlimit {ra}M")
            slow = wrapper(scratch, "rclone-b", rclone, None, f" --bwlimit {rb}M")
            same = wrapper(scratch, "rclone-aa", rclone, None, f" --bwlimit {ra}M")
            plan = MountPlan(Registry().get("rclone", "bench"), (), {"source": str(source)})
        target = session.open_target(plan)
        loads = itertools.cycle(LOADS)
        kinds = [("slow", slow)] * args.trials + [("A/A", same)] * args.aa_trials
        order = [k for pair in itertools.zip_longest(kinds[:args.trials], kinds[args.trials:])
                 for k in pair if k]  # interleave slow and A/A trials
        found: dict[str, list[tuple[object, ...]]] = {"slow": [], "A/A": []}
        history = (saved_history(session, target, a, args.seconds, args.rounds)
                   if args.mode == "saved" else [])
        for n, (kind, b) in enumerate(order):
            bg = next(loads)
            if args.mode == "builds":
                with load(bg, scratch):
                    row: tuple[object, ...] = (*build_trial(session, target, n, a, b, args.seconds,
                                                            args.workload, count), bg)
            else:
                outcome, moved, run = saved_trial(session, target, n, b, args.seconds, args.rounds,
                                                  bg, scratch, history)
                if kind == "A/A":
                    history.append(run)  # as CI saves each run of the reference
                row = (outcome, f"canary {moved:.3f}", bg)
            found[kind].append(row)
            print(kind, *row, flush=True)
        summary(args, found)
    finally:
        session.close()
        if args.injection == "quota":
            subprocess.run(["umount", "-l", str(source)], check=False)
            for name in ("fsperf-gate-a", "fsperf-gate-b", "fsperf-gate-aa"):
                with_retry_rmdir(CGROUP / name)
        shutil.rmtree(scratch, ignore_errors=True)


def with_retry_rmdir(path: Path) -> None:
    for _ in range(50):
        try:
            path.rmdir()
            return
        except FileNotFoundError:
            return
        except OSError:
            time.sleep(0.1)


def summary(args: argparse.Namespace, found: dict[str, list[tuple[object, ...]]]) -> None:
    slow, aa = found["slow"], found["A/A"]
    injected = args.quota + "% of a core" if args.injection == "quota" else args.bwlimit + " MB/s"
    print(f"mode {args.mode}, injection {args.injection} ({injected}), workload {args.workload} "
          f"({args.seconds:g} s reads for fio, count {args.count or 'default'}), "
          f"tolerance {100 * TOLERANCE:g}%, budget {args.budget:g} s, settle {args.settle}, "
          f"loads cycled {'/'.join(LOADS)}")
    if args.mode == "builds":
        caught = sum(r[0] == Difference.B_WORSE for r in slow)
        flagged = sum(r[0] in (Difference.B_WORSE, Difference.B_BETTER) for r in aa)
        times = [float(r[3]) for r in slow + aa]  # type: ignore[arg-type]
        measured = [float(r[2]) for r in slow + aa]  # type: ignore[arg-type]
        print(f"10% slower caught: {caught}/{len(slow)}  (target >= 95%)")
        print(f"A/A flagged: {flagged}/{len(aa)}  (target <= 1%, over >= 100 trials); "
              + ", ".join(f"{sum(r[0] == d for r in aa)} {d}" for d in Difference))
        print(f"time to a decision: median {median(times):.0f} s wall, {median(measured):.0f} s "
              f"measuring; pairs: median {median([float(r[1]) for r in slow + aa]):.0f}")  # type: ignore[arg-type]
    else:
        caught = sum(r[0] == RunOutcome.REGRESSION for r in slow)
        flagged = sum(r[0] in (RunOutcome.REGRESSION, RunOutcome.IMPROVEMENT) for r in aa)
        machine = sum(r[0] == RunOutcome.MACHINE_CHANGED for r in aa)
        passed = sum(r[0] == RunOutcome.PASS for r in aa)
        print(f"saved run, 10% slower caught: {caught}/{len(slow)}; 'machine changed' instead: "
              f"{sum(r[0] == RunOutcome.MACHINE_CHANGED for r in slow)}")
        print(f"saved run, A/A passed: {passed}/{len(aa)}")
        print(f"saved run, A/A flagged: {flagged}/{len(aa)} (target <= 5% under injected load); "
              f"'machine changed' instead: {machine}")


if __name__ == "__main__":
    main()
