"""How often `fsperf bisect` names the right commit for a 10% step.

    python3 -m benchmarks.bisect_accuracy [--trials 10] [--commits 16] [--step 0.10] [--seed 7]

Each trial makes a repository of --commits commits of a small 'filesystem' (an rclone build
held to 40 MB/s), one random commit of which holds it to (1 - step) of that; `fsperf bisect`
(tolerance half the step, 90 s a step) looks for it. Prints each trial's answer, steps and
time, and how many named the right commit (target: 9 of 10 for a 10% step). Needs root,
rclone and fio; about 5 minutes a trial on 2 cores.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import tempfile
import time
from pathlib import Path

from benchmarks import busy_runner, loads

BUILD = """#!/bin/sh
set -eu
mkdir -p out
printf '#!/bin/sh\\nexec %s "$@" --bwlimit %s\\n' "$(command -v rclone)" "$(cat limit.txt)" > out/rclone
echo "# $(cat notes.txt)" >> out/rclone
chmod 755 out/rclone
"""
READ = """
def test_read(fsperf):
    fsperf.fio(rw="read", bs="1M", size="32M", direct=1)
"""


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), "-c", "user.name=b", "-c", "user.email=b@b", *args],
                          capture_output=True, text=True, check=True).stdout.strip()


def history(where: Path, commits: int, slow_at: int, step: float) -> list[str]:
    (where / "perf").mkdir(parents=True)
    (where / "build.sh").write_text(BUILD)
    (where / "perf" / "test_read.py").write_text(READ)
    git(where, "init", "-q", "-b", "main")
    made = []
    for i in range(commits):
        (where / "limit.txt").write_text(f"{40 * (1 - step) if i >= slow_at else 40:g}M\n")
        (where / "notes.txt").write_text(f"change {i}\n")
        git(where, "add", ".")
        git(where, "commit", "-qm", f"change {i}")
        made.append(git(where, "rev-parse", "HEAD"))
    return made


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--trials", type=int, default=10)
    ap.add_argument("--commits", type=int, default=16)
    ap.add_argument("--step", type=float, default=0.10)
    ap.add_argument("--seed", type=int, default=7, help="which commits are made slow")
    ap.add_argument("--busy", choices=("steps", "spikes", "flip"),
                    help="a bursty neighbour beside each trial (benchmarks/busy_runner.py)")
    a = ap.parse_args()
    rng = random.Random(a.seed)
    right = 0
    for trial in range(a.trials):
        slow_at = rng.randrange(1, a.commits)
        with tempfile.TemporaryDirectory(prefix="fsperf-bisect-bench-") as d:
            repo = Path(d) / "fs"
            commits = history(repo, a.commits, slow_at, a.step)
            out = Path(d) / "bisect.json"
            t0 = time.monotonic()
            group = busy_runner.neighbour(a.seed + trial, a.busy, Path(d)) if a.busy else None
            subprocess.run(["python3", "-m", "pytest_fsperf", "bisect", "--good", commits[0],
                            "--bad", commits[-1], "--build", "sh build.sh", "--binary", "out/rclone",
                            "--backend", "rclone", "--test", "perf/test_read.py",
                            "--step-seconds", "90", "--tolerance", f"{100 * a.step / 2:g}%",
                            "--json", str(out), "--", "--fsperf-profile=off"],
                           cwd=repo, stdout=subprocess.DEVNULL, check=False,
                           env={**os.environ, "PYTHONUNBUFFERED": "1"})
            if group is not None:
                loads.kill(group)
            doc = json.loads(out.read_text()) if out.exists() else {}
            named = doc.get("first_bad")
            ok = named == commits[slow_at]
            right += ok
            print(f"trial {trial + 1}: slow commit {slow_at}, named "
                  f"{commits.index(named) if named in commits else named}, "
                  f"{len(doc.get('steps', []))} steps, {time.monotonic() - t0:.0f} s: "
                  f"{'right' if ok else 'WRONG'} ({doc.get('sure', '-')})", flush=True)
    print(f"named the right commit in {right} of {a.trials} (a {100 * a.step:g}% step; target 9 of 10)")


if __name__ == "__main__":
    main()
