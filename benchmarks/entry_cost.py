"""What the installed plugin costs a pytest run that does not use it.

    python3 -m benchmarks.entry_cost [--runs 15] [--tests 200]

In a fresh project of TESTS plain tests (no fsperf flag, ini key, marker or fixture),
`pytest --co -q` runs with the plugin as installed and with it blocked (`-p no:fsperf`),
alternating, RUNS times each. Prints per way the median and the least wall time (on a busy
machine the least is the steadier) and the median peak RSS (the child's ru_maxrss), and the
differences. Issue 74's target: at most +50 ms and +10 MB.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def once(project: Path, blocked: bool) -> tuple[float, float]:
    """(seconds, peak RSS in MB) of one `pytest --co -q`."""
    args = [sys.executable, "-m", "pytest", "--co", "-q", "-p", "no:cacheprovider"]
    args += ["-p", "no:fsperf"] if blocked else []
    start = time.perf_counter()
    proc = subprocess.Popen(args, cwd=project, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    took = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    err = proc.stderr.read().decode() if proc.stderr else ""
    if proc.returncode != 0:
        raise SystemExit(f"pytest --co exited {proc.returncode}: {err.strip()[-300:]}")
    return took, usage.ru_maxrss / 1024


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=15)
    ap.add_argument("--tests", type=int, default=200)
    a = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="fsperf-entry-") as tmp:
        project = Path(tmp)
        (project / "test_plain.py").write_text("".join(
            f"def test_{n}(tmp_path):\n    assert tmp_path\n\n" for n in range(a.tests)))
        ways: dict[bool, list[tuple[float, float]]] = {False: [], True: []}
        once(project, False)  # the first run warms the page cache for both
        for n in range(a.runs):
            for blocked in ((False, True) if n % 2 == 0 else (True, False)):
                ways[blocked].append(once(project, blocked))
    rows = {}
    for blocked, runs in ways.items():
        rows[blocked] = (statistics.median(t for t, _ in runs), min(t for t, _ in runs),
                         statistics.median(m for _, m in runs))
    bytecode = ("compiled at each run (PYTHONDONTWRITEBYTECODE)" if os.environ.get("PYTHONDONTWRITEBYTECODE")
                else "read from .pyc files after the first run")
    print(f"`pytest --co -q` of {a.tests} plain tests, {a.runs} runs each way, alternating, after one "
          f"discarded run; the modules' bytecode {bytecode}")
    print("| way | wall time, median | least | peak RSS, median |")
    print("|---|---|---|---|")
    for blocked, name in ((True, "plugin blocked (-p no:fsperf)"), (False, "plugin installed")):
        t, least, m = rows[blocked]
        print(f"| {name} | {t * 1000:.0f} ms | {least * 1000:.0f} ms | {m:.1f} MB |")
    dt, dl, dm = (rows[False][i] - rows[True][i] for i in range(3))
    print(f"\nthe plugin's cost: {dt * 1000:+.0f} ms at the median, {dl * 1000:+.0f} ms at the least, "
          f"{dm:+.1f} MB (target: at most +50 ms, +10 MB)")


if __name__ == "__main__":
    main()
