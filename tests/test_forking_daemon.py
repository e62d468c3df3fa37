"""A daemon of two processes that both hold the FUSE connection (tests/forkfs.py: a
supervisor that forks the worker serving every request, as `juicefs mount -d` does). Both
are found and named, CPU is summed over the I/O window, peak memory is each one's own."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from pytest_fsperf.infra.mountinfo import find_mount, read_mounts
from pytest_fsperf.mounts.daemon import find_daemon
from tests.conftest import need, run_json
from tests.forkfs import SUPERVISOR_CPU, WORKER_MB

TIER = "fuse"  # every test here, unless one says otherwise (conftest.py)
HERE = Path(__file__).parent


def _ticks(pid: int) -> int:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])  # utime + stime


@pytest.fixture
def forkfs(tmp_path: Path) -> Iterator[tuple[Path, dict[str, int]]]:
    pytest.importorskip("fuse", reason="fusepy is not installed (pip install fusepy)")
    need("fusermount3")
    src, mnt, pidfile = tmp_path / "src", tmp_path / "mnt", tmp_path / "pid"
    src.mkdir()
    mnt.mkdir()
    proc = subprocess.Popen([sys.executable, str(HERE / "forkfs.py"), str(src), str(mnt),
                             str(pidfile)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    try:
        for _ in range(100):
            if all(Path(f"{pidfile}.{r}").exists() for r in ("supervisor", "worker")):
                break
            os.listdir(mnt)  # the kernel's INIT, which makes it fork
            time.sleep(0.1)
        pids = {r: int(Path(f"{pidfile}.{r}").read_text()) for r in ("supervisor", "worker")}
        yield mnt, pids
    finally:
        subprocess.run(["fusermount3", "-u", "-z", str(mnt)], capture_output=True)
        proc.kill()
        proc.wait()


def test_a_forking_daemon_is_measured_whole(pytester, forkfs):
    mnt, pids = forkfs
    lookup = find_daemon(find_mount(str(mnt), read_mounts()))
    assert lookup.daemon is not None
    assert {m.pid for m in lookup.daemon.members} == set(pids.values())
    assert lookup.daemon.role(pids["supervisor"]) == "supervisor"
    assert lookup.daemon.role(pids["worker"]) == "worker"
    before = {r: _ticks(p) for r, p in pids.items()}
    pytester.makepyfile("""
        def test_rw(fsperf):
            fsperf.fio(name="w", rw="write", bs="1M", size="64M", time_based=1, runtime="3s",
                       end_fsync=1)
            fsperf.cold()
            fsperf.fio(name="r", rw="read", bs="1M", size="64M", time_based=1, runtime="3s")
    """)
    result, doc = run_json(pytester, f"--fsperf-mount={mnt}")
    after = {r: _ticks(p) for r, p in pids.items()}
    result.assert_outcomes(passed=1)
    tck = os.sysconf("SC_CLK_TCK")
    for row in doc["results"]:
        d = row["daemon"]
        procs = {p["role"]: p for p in d["processes"]}
        assert {r: p["pid"] for r, p in procs.items()} == pids, d
        assert d["cpu_seconds"] == pytest.approx(sum(p["cpu_seconds"] for p in procs.values()))
        # the supervisor's own burn shows (about SUPERVISOR_CPU of a core over ~3 s)
        assert 0.3 * SUPERVISOR_CPU * 3 <= procs["supervisor"]["cpu_seconds"] <= 3 * SUPERVISOR_CPU * 4
        assert procs["worker"]["cpu_seconds"] > 0.1
        # each one's own peak: the worker holds its ballast, the supervisor does not
        assert procs["worker"]["peak_rss_bytes"] >= WORKER_MB << 20
        assert procs["supervisor"]["peak_rss_bytes"] < (WORKER_MB << 20) / 2
        assert d["peak_rss_bytes"] == sum(p["peak_rss_bytes"] for p in procs.values())
        assert "supervisor" in row["daemon_note"]
    # the windows' CPU is within what /proc said over the whole session, process by process
    for role in pids:
        measured = sum(next(p for p in r["daemon"]["processes"] if p["role"] == role)["cpu_seconds"]
                       for r in doc["results"])
        session = (after[role] - before[role]) / tck
        assert 0.2 * session <= measured <= session + 0.05, (role, measured, session)
    result.stdout.fnmatch_lines(["*w: daemon of 2 processes, figures summed: supervisor PID "
                                 f"{pids['supervisor']}*worker PID {pids['worker']}*"])
