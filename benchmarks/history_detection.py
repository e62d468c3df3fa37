"""Does `fsperf history` find a 10% step at the right run, and stay quiet without one?

Each series is made of real runs of the plugin, one after another, as a nightly CI would
save them: bindfs over a tmpfs, each run after a cold remount with its "build" (the quota
wrappers of gate_detection.py: 20% of a core; from run K on, 18%: a daemon about 10%
slower), a cold read (2000 files of 128 KiB, or --workload fio: 128 KiB direct reads of
--seconds), with the machine canary read before and after. K is drawn from 10-20. Some runs
(--load-share) get a background load the benchmark starts and stops: one busy CPU process,
or a loop of direct disk writes. Series without a step use the 20% build throughout, loads
alike. Each series is then judged by
history.analyse, as `fsperf history` does.

    python3 -m benchmarks.history_detection [--series 10] [--flat 10] [--runs 30]
        [--load-share 0.25] [--rounds 1] [--keep DIR]

Prints each series (its change points, found against the true step), then: steps found at
the right run (±1), flat series with no change point, and the seconds of measurement per
run; and, on the same runs, what a run-vs-run comparison (--fsperf-compare=latest
--fsperf-compare-last=3, tolerance 5%) says of each run: the step run flagged, and runs
flagged that were not the step. --keep writes each series' runs as saved-run files
(DIR/stepN/, DIR/flatN/) for `fsperf history DIR/step0 --html trend.html`.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import random
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from benchmarks.gate_detection import CGROUP, _on_term, cgroup, job, load, with_retry_rmdir, wrapper
from pytest_fsperf.judge import history
from pytest_fsperf.judge.comparison import judge_metric
from pytest_fsperf.measure import canary
from pytest_fsperf.mounts.mounter import MountPlan
from pytest_fsperf.mounts.registry import Registry
from pytest_fsperf.options.config import Settings
from pytest_fsperf.result.comparison import Comparison
from pytest_fsperf.result.workload import WorkloadResult
from pytest_fsperf.runner.target import Target
from pytest_fsperf.runner.workspace import Workspace
from pytest_fsperf.saved import runs as saved
from pytest_fsperf.scenarios import steps
from pytest_fsperf.session.state import FsperfSession
from pytest_fsperf.stats import median
from pytest_fsperf.vocab import CompareKind, RunOutcome

FILES = steps.FilesJob(mode="read", count=2000, size="128KiB", threads=8, subdir="files")
FINGERPRINT = {"scale": 1.0, "fs": "bindfs"}
TOLERANCE = 0.05


Read = Callable[[str, bool], WorkloadResult]


def reader(ws: Workspace, workload: str, seconds: float) -> Read:
    """One cold read of the series' workload (label, first run of the series): the small-file
    engine's read of FILES, or fio's direct reads of `seconds` (gate_detection's job)."""
    if workload == "files":
        return lambda label, _first: steps.files_step(ws, label, FILES, True, "history_detection")
    _base, spec = ws.job("read", job(seconds), "history_detection")
    return lambda label, first: ws.measure(label, True, spec, layout=first)


def one_run(ws: Workspace, local: str, build: str, name: str, i: int, rounds: int, read: Read,
            workload: str, reference: str = "") -> dict[str, Any]:
    """A saved run's document, as the plugin writes one: `rounds` cold reads (as
    --fsperf-rounds), the machine canary read before each and after the last. With a
    `reference` build, as a gated session saves it: each round is a pair (its runs pinned to
    CPUs as a gate pins them, --fsperf-cpus=auto), the reference's
    cold read and the build's, in the order ABBA... as the gate's (every run starts with A:
    an order effect is then a constant in the B/A series, not noise), and the run holds
    their B/A (comparison.judge_metric, as the gate)."""
    readings, done, ref = [], [], []
    with ws.pairing() if reference else contextlib.nullcontext():  # pinned, as a gate's runs
        for k in range(rounds):
            readings.append(canary.measure(local).score)
            first = i == 0 and k == 0
            if reference and k % 2 == 0:
                ws.cold_start(build=reference)
                ref.append(read(f"{workload}.{name}.{i}.{k}.ref", first))
                first = False
            ws.cold_start(build=build)
            done.append(read(f"{workload}.{name}.{i}.{k}", first))
            if reference and k % 2 == 1:
                ws.cold_start(build=reference)
                ref.append(read(f"{workload}.{name}.{i}.{k}.ref", False))
    readings.append(canary.measure(local).score)
    mid = sorted(done, key=lambda r: r.bw_bytes)[len(done) // 2]
    doc: dict[str, Any] = {
        "schema": "pytest-fsperf/1", "created": f"2026-01-01T{i // 60:02d}:{i % 60:02d}:00+0000",
        "environment": {"build": {"id": f"{name}-{i}"}},
        "results": [{"test": "history_detection", "name": workload,
                     "fingerprint": {**FINGERPRINT, "workload": workload},
                     "total": mid.total(), "canary": readings,
                     "rest": dataclasses.asdict(mid.rest) if mid.rest else None,
                     "rounds": [{"bw": r.bw_bytes, "ops": None} for r in done] if rounds > 1 else []}]}
    if reference:
        bw = judge_metric("bw", [r.bw_bytes for r in ref], [r.bw_bytes for r in done], TOLERANCE,
                          gate=True)
        doc["comparisons"] = [Comparison(
            "history_detection", workload, "bindfs", (reference,), (build,), rounds,
            "".join("AB" if k % 2 == 0 else "BA" for k in range(rounds)),
            tuple(r.name for r in ref), tuple(r.name for r in done), {"bw": bw},
            kind=CompareKind.GATE).to_dict()]
    return doc


def series(session: FsperfSession, target: Target, builds: tuple[str, str], step: int | None,
           n: int, share: float, rng: random.Random, scratch: Path, name: str, rounds: int,
           workload: str, read_s: float, reference: str = "",
           ) -> tuple[list[saved.Run], list[float], list[str]]:
    ws = Workspace(session, target, f"history::{name}", target.new_workdir(name))
    local = session.local_dir()
    read = reader(ws, workload, read_s)
    if workload == "files":  # files in place; fio lays out its file on the first run
        steps.files_step(ws, f"files.{name}.layout", FILES, False, "history_detection")
    found, seconds, loads = [], [], []
    for i in range(n):
        kind = rng.choice(("cpu", "disk")) if rng.random() < share else "none"
        build = builds[1] if step is not None and i >= step else builds[0]
        t = time.monotonic()
        with load(kind, scratch):
            doc = one_run(ws, local, build, name, i, rounds, read, workload, reference)
        seconds.append(time.monotonic() - t)
        loads.append(kind)
        found.append(saved.Run(f"run{i:02d}", doc["created"], saved.build_of(doc), doc))
    target.remove(str(ws.workdir))
    return found, seconds, loads


LAST = 3  # run-vs-run: each run against the last LAST saved runs, as --fsperf-compare-last


def run_vs_run(found: list[saved.Run], step: int | None) -> tuple[bool | None, int, int, int]:
    """Each run from the LAST-th on judged against the LAST before it, as --fsperf-compare
    does: (the step run flagged as a regression, other runs flagged, 'machine changed'
    outcomes, runs judged)."""
    from pytest_fsperf.judge import runs

    caught: bool | None = None
    false = machine = judged_runs = 0
    results = [r.doc["results"][0] for r in found]
    for i in range(LAST, len(results)):
        before = [(found[j].name, results[j]) for j in range(i - 1, i - 1 - LAST, -1)]
        c = runs.compare(before[0][0], results[i]["name"], before[0][1], results[i], TOLERANCE,
                         before)
        judged_runs += 1
        machine += c.outcome == RunOutcome.MACHINE_CHANGED
        flagged = c.outcome == RunOutcome.REGRESSION
        if step is not None and i == step:
            caught = flagged
        elif flagged:
            false += 1
    return caught, false, machine, judged_runs


def judged(found: list[saved.Run], step: int | None) -> tuple[bool, str]:
    """Whether the series was judged right (the step found at its run ±1, or no change point
    without one), and what was found. With a reference, the B/A series is judged."""
    s = max(history.series(found, ("bw",)), key=lambda s: bool(s.against))
    a = history.analyse(s)
    said = ", ".join(f"run {c.index} {c.change:+.1%} p={c.pvalue:.1g} {c.cause.value}"
                     for c in a.changes) or "none"
    out = a.left_out
    said += f" ({len(out)} runs left out: {', '.join(map(str, out))})" if out else ""
    bws = s.values()
    if step is None:
        return not a.changes, said
    right = [c for c in a.changes if abs(c.index - step) <= 1 and c.worse]
    level = (f"; true step {median(bws[step:]) / median(bws[:step]) - 1:+.1%}"
             if 0 < step < len(bws) else "")
    return bool(right), said + level


def main() -> None:
    import signal

    signal.signal(signal.SIGTERM, _on_term)
    ap = argparse.ArgumentParser()
    ap.add_argument("--series", type=int, default=10, help="series with a 10%% step")
    ap.add_argument("--flat", type=int, default=10, help="series without a step")
    ap.add_argument("--runs", type=int, default=30)
    ap.add_argument("--load-share", type=float, default=0.25, help="runs with a background load")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--rounds", type=int, default=1, help="cold reads per run (--fsperf-rounds)")
    ap.add_argument("--keep", type=Path, help="write each series' runs here")
    ap.add_argument("--workload", choices=("fio", "files"), default="files",
                    help="files: a cold read of 2000 files of 128 KiB (steps of 3-26%% "
                         "measured); fio: 128 KiB direct reads of --seconds (steps of 3-16%%, "
                         "and no quieter across runs: the machine drifts over minutes)")
    ap.add_argument("--seconds", type=float, default=2.0, help="each fio read")
    ap.add_argument("--reference", choices=("none", "build"), default="none",
                    help="build: every run also reads the 20%% build (a pinned reference) in "
                         "pairs with its own, as a gated session (--fsperf-reference) saves it; "
                         "history judges the B/A series")
    args = ap.parse_args()
    missing = history.available()
    if missing:
        raise SystemExit(missing)
    rng = random.Random(args.seed)
    scratch = Path(tempfile.mkdtemp(prefix="fsperf-history-"))
    source = scratch / "source"
    source.mkdir()
    session = FsperfSession(Settings())
    rows: dict[str, list[bool]] = {"step": [], "flat": []}
    per_run: list[float] = []
    pair = {"caught": 0, "false": 0, "machine": 0, "judged": 0}
    try:
        subprocess.run(["mount", "-t", "tmpfs", "-o", "size=512m", "tmpfs", str(source)], check=True)
        bindfs = shutil.which("bindfs") or "bindfs"
        builds = (wrapper(scratch, "bindfs-a", bindfs, cgroup("fsperf-history-a", 20)),
                  wrapper(scratch, "bindfs-b", bindfs, cgroup("fsperf-history-b", 18)))
        target = session.open_target(MountPlan(Registry().get("bindfs", "bench"), (),
                                               {"source": str(source)}))
        kinds = ["step"] * args.series + ["flat"] * args.flat
        rng.shuffle(kinds)
        for n, kind in enumerate(kinds):
            step = rng.randint(10, 20) if kind == "step" else None
            name = f"{kind}{n}"
            found, seconds, loads = series(session, target, builds, step, args.runs,
                                           args.load_share, rng, scratch, name, args.rounds,
                                           args.workload, args.seconds,
                                           builds[0] if args.reference == "build" else "")
            per_run += seconds
            ok, said = judged(found, step)
            rows[kind].append(ok)
            caught, false, machine, count = run_vs_run(found, step)
            pair["caught"] += bool(caught)
            pair["false"] += false
            pair["machine"] += machine
            pair["judged"] += count
            said += (f"; run-vs-run: step run {'flagged' if caught else 'not flagged'}"
                     if step is not None else "; run-vs-run:") + f", {false} other runs flagged"
            loaded = sum(x != "none" for x in loads)
            print(f"{name}: step at {step}, {loaded} loaded runs; change points: {said}; "
                  f"{'right' if ok else 'WRONG'}", flush=True)
            if args.keep:
                out = args.keep / name
                out.mkdir(parents=True, exist_ok=True)
                for r in found:
                    (out / f"{r.name}.json").write_text(json.dumps(r.doc))
    finally:
        session.close()
        subprocess.run(["umount", "-l", str(source)], check=False)
        for name in ("fsperf-history-a", "fsperf-history-b"):
            with_retry_rmdir(CGROUP / name)
        shutil.rmtree(scratch, ignore_errors=True)
    print(f"{args.runs} runs per series of {args.rounds} round(s) each"
          f"{', each against the pinned reference build' if args.reference == 'build' else ''}, "
          f"{100 * args.load_share:g}% of runs under a background load (cpu or disk), "
          f"Otava max p-value {history.MAX_PVALUE:g}, window {history.WINDOW}")
    print(f"10% step found at the right run (±1): {sum(rows['step'])}/{len(rows['step'])} "
          "(target >= 9 of 10)")
    print(f"no change point without a step: {sum(rows['flat'])}/{len(rows['flat'])} "
          "(target >= 9 of 10)")
    print(f"run-vs-run on the same runs (each against the last {LAST}, tolerance "
          f"{100 * TOLERANCE:g}%): step run flagged {pair['caught']}/{len(rows['step'])}; "
          f"other runs flagged {pair['false']} of {pair['judged'] - len(rows['step'])}; "
          f"'machine changed' {pair['machine']} of {pair['judged']}")
    if per_run:
        also = ", the reference's" if args.reference == "build" else ""
        print(f"seconds per run (canary, cold remount, read{also}, canary): "
              f"median {median(per_run):.1f}")


if __name__ == "__main__":
    main()
