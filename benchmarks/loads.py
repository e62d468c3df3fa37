"""Background loads for the benchmarks, started as a neighbour's would be: outside this
process's tree (a session of their own, re-parented away from us by `setsid -f`), so that the
plugin counts them as the rest of the machine (measure/rest.py), not as its own."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import time

HOG = f"exec {sys.executable} -c 'while True: pass'"


def disk_loop(target: str) -> str:
    return (f"while true; do dd if=/dev/zero of={target} bs=1M count=64 oflag=direct "
            "status=none; done")


def stranger(script: str) -> int:
    """Start `script` (sh) as a stranger's process group; returns its group id."""
    with tempfile.TemporaryDirectory(prefix="fsperf-load-") as d:
        pidfile = os.path.join(d, "pid")
        subprocess.run(["setsid", "-f", "sh", "-c", f"echo $$ > {pidfile}; {script}"],
                       check=True)
        for _ in range(500):
            try:
                with open(pidfile) as f:
                    text = f.read().strip()
                if text:
                    return int(text)
            except FileNotFoundError:
                pass
            time.sleep(0.01)
    raise RuntimeError("the load did not start")


def kill(group: int) -> None:
    try:
        os.killpg(group, signal.SIGKILL)
    except ProcessLookupError:
        return
    for _ in range(200):  # not our child: wait until it is gone
        try:
            os.killpg(group, 0)
        except ProcessLookupError:
            return
        time.sleep(0.01)
