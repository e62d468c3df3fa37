"""Every ioengine fio offers here is measured alike on a real bindfs mount: the daemon's CPU%
over the time fio's I/O ran (libaio, io_uring and mmap move no bytes through read(), so the
window cannot come from the load generator's /proc counters), per-second bandwidth that adds
up to fio's bytes, and p99 that is fio's total latency (submission + completion)."""

from __future__ import annotations

import os
import threading

import psutil
import pytest

from pytest_fsperf.engine import fio_status
from tests.conftest import measured_fio, run_json

ENGINES = ["psync", "sync", "libaio", "io_uring", "posixaio", "mmap"]


def _uring_refused() -> str:
    try:
        with open("/proc/sys/kernel/io_uring_disabled", encoding="ascii") as f:
            return "io_uring is disabled by kernel.io_uring_disabled" if f.read().strip() != "0" else ""
    except OSError:
        return ""


def _cpu(pid: int) -> float:
    times = psutil.Process(pid).cpu_times()
    return times.user + times.system


class WhileFio:
    """The daemon's CPU seconds while the measuring fio process lives (from the sample before
    it appears to the one after it is gone): fio's runtime and its start-up and teardown, not
    the plugin's layout pass before it."""

    def __init__(self, pid: int) -> None:
        self.pid, self.spent, self._stop = pid, 0.0, threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        before, running = _cpu(self.pid), False
        while not self._stop.wait(0.05):
            now, live = _cpu(self.pid), measured_fio()
            if live or running:
                self.spent += now - before
            running, before = live, now

    def stop(self) -> float:
        self._stop.set()
        self._thread.join()
        return self.spent


@pytest.mark.parametrize("engine", ENGINES)
def test_every_ioengine_gets_the_daemons_cpu_its_seconds_and_total_latency(pytester, bindfs, engine):
    if engine == "io_uring" and _uring_refused():
        pytest.skip(_uring_refused())
    m = bindfs()
    (m.source / "f").write_bytes(os.urandom(1 << 20) * 128)
    # mmap reads the page cache: each loop's open drops it (fio's invalidate), a time-based
    # run would wrap around a file already cached
    shape = ('direct=1, time_based=1, runtime=4, iodepth=8' if engine != "mmap"
             else 'loops=40')
    pytester.makepyfile(f"""
        from pytest_fsperf import fsperf

        @fsperf(max_cpu="1000%")
        def test_read(fsperf):
            fsperf.fio(rw="read", bs="128k", filename="f", size="128M", ioengine="{engine}",
                       {shape})
    """)
    watch = WhileFio(m.pid)
    result, doc = run_json(pytester, f"--fsperf-mount={m.point}", "--fsperf-fuse-trace=off")
    spent = watch.stop()
    result.assert_outcomes(passed=1)
    (row,) = doc["results"]
    fio = row["raw"]["job"]["read"]
    runtime = fio["runtime"] / 1000
    daemon = row["daemon"]
    assert daemon["cpu_window"] == "I/O" and daemon["cpu_window_seconds"] == pytest.approx(runtime, abs=0.02)
    assert "max_cpu" not in " ".join(row["not_judged"]), row["not_judged"]
    # what the daemon spent in fio's start-up and teardown (open, release) is a few ticks
    expected = 100 * spent / runtime
    assert daemon["cpu_percent"] == pytest.approx(expected, rel=0.10, abs=2.0), (engine, spent, runtime)
    moved = row["timeline"]["moved"]
    assert sum(moved) == pytest.approx(fio["io_bytes"], rel=0.05), (moved, fio["io_bytes"])
    assert max(moved) > 0.2 * fio["io_bytes"] / runtime  # a second's worth, not a sliver
    assert row["read"]["lat_kind"] == "lat"
    assert row["read"]["lat_p99_ns"] == fio["lat_ns"]["percentile"]["99.000000"]
    result.stdout.fnmatch_lines(["*p99 lat*"])


def test_completion_latency_stays_where_the_user_asks_for_it(pytester, bindfs):
    m = bindfs()
    (m.source / "f").write_bytes(os.urandom(1 << 20) * 16)
    pytester.makepyfile("""
        from pytest_fsperf import fsperf

        def test_read(fsperf):
            fsperf.fio(rw="read", bs="128k", filename="f", size="16M", ioengine="libaio",
                       iodepth=4, direct=1, clat_percentiles=1)
    """)
    result, doc = run_json(pytester, f"--fsperf-mount={m.point}", "--fsperf-fuse-trace=off")
    result.assert_outcomes(passed=1)
    (row,) = doc["results"]
    assert row["read"]["lat_kind"] == "clat"
    assert row["read"]["lat_p99_ns"] == row["raw"]["job"]["read"]["clat_ns"]["percentile"]["99.000000"]


@pytest.mark.unit
def test_per_second_bytes_add_up_to_the_total_and_follow_the_reports():
    curve = [(10.0, 0), (11.0, 100), (12.0, 300), (12.5, 400)]
    edges = [9.5, 10.5, 11.5, 12.5, 13.5]
    assert fio_status.per_interval(curve, edges) == [50, 150, 200, 0]
    assert sum(fio_status.per_interval(curve, [9.0, 9.7, 10.2, 13.0])) == 400


@pytest.mark.unit
def test_status_reports_are_read_as_fio_appends_them(tmp_path):
    out = tmp_path / "o.json"
    report = '{\n  "timestamp_ms" : %d,\n  "jobs" : [\n{"read": {"io_bytes": %d, "runtime": %d}}\n  ]\n}\n'
    status = fio_status.Status(str(out))
    assert status() == 0  # no file yet
    second = report % (2000, 9, 1010)
    out.write_text("fio: a warning first\n" + report % (1000, 5, 10) + second[:20])
    assert status() == 5  # half a report is not read yet
    with out.open("a") as f:
        f.write(second[20:])
    assert status() == 9 and len(status.points) == 2
    start = status.started()
    assert start is not None
    # placed by fio's runtime, not by a stamp made late by a blocked job
    curve = status.series(start, start + 3.0, 12)
    assert [n for _t, n in curve] == [0, 5, 9, 12]
    assert [t - start for t, _n in curve] == pytest.approx([0.0, 0.01, 1.01, 3.0])


def test_the_ossfs2_suite_on_bindfs_shows_daemon_cpu_for_every_workload(pytester):
    """As found: the shipped suites use libaio (as their documents do) and printed daemon CPU
    '-' for seq_write_1t and seq_read_1t; the small-file read at scale 0.01 ran under 0.5 s."""
    from tests.conftest import need

    need("bindfs")
    result, doc = run_json(pytester, "--pyargs", "pytest_fsperf.suites.ossfs2",
                           "--fsperf-backend=bindfs", "--fsperf-scale=0.01")
    result.assert_outcomes(passed=5)
    rows = [r for r in doc["results"] if r.get("judged", True)]
    assert {r["name"] for r in rows} == {"seq_write_1t", "seq_read_1t", "seq_read_4t",
                                         "smallfile_write_128t", "smallfile_read_128t"}
    for r in rows:
        assert r["daemon"]["cpu_percent"] is not None, (r["name"], r["daemon"])
        assert r["daemon"]["cpu_percent"] > 0, r["name"]


@pytest.mark.unit
def test_cpu_read_in_ns_is_trusted_only_with_the_same_threads_and_the_ticks_agreeing():
    from pytest_fsperf.measure.meters import CLK_TCK, exact_cpu

    tick = 10**9 // CLK_TCK
    before = {1: 0, 2: 5 * tick}
    assert exact_cpu(before, {1: 10 * tick, 2: 8 * tick, 3: 2 * tick}, 15) == pytest.approx(15 / CLK_TCK)
    assert exact_cpu(before, {1: 10 * tick}, 10) is None  # thread 2 exited: its time is gone
    assert exact_cpu(before, {1: 10 * tick, 2: 5 * tick}, 20) is None  # ticks say more ran
    assert exact_cpu(None, {1: 1}, 0) is None


@pytest.mark.unit
def test_status_reports_are_asked_only_where_proc_misses_the_bytes_or_the_log_may_be_empty():
    assert not fio_status.needs_status({"rw": "read"})  # psync, fio's default here
    assert not fio_status.needs_status({"ioengine": "posixaio"})
    assert fio_status.needs_status({"ioengine": "libaio"})
    assert fio_status.needs_status({"ioengine": "mmap"})
    assert fio_status.needs_status({"ioengine": "psync", "gtod_reduce": "1"})
