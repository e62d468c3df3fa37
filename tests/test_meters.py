"""The meters on real processes: a child that burns CPU and grows its memory."""

from __future__ import annotations

import subprocess
import sys
import time

import psutil
import pytest

from pytest_fsperf.measure import meters
from pytest_fsperf.mounts.daemon import describe

GROW = """
import sys, time
blocks = []
sys.stdin.readline()
end = time.monotonic() + 0.6
while time.monotonic() < end:
    pass
blocks.append(bytearray(200 * 2**20))
for i in range(0, len(blocks[0]), 4096):
    blocks[0][i] = 1
print("peak", flush=True)
sys.stdin.readline()
del blocks[0]
print("freed", flush=True)
time.sleep(30)
"""


@pytest.fixture
def child():
    proc = subprocess.Popen([sys.executable, "-c", GROW], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE)
    time.sleep(0.3)
    yield proc
    proc.kill()
    proc.wait()


def _say(child, line):
    child.stdin.write(line)
    child.stdin.flush()


def _run(child, meter):
    meter.start()
    _say(child, b"go\n")
    assert child.stdout.readline() == b"peak\n"
    deadline = time.monotonic() + 10  # a sampler needs the peak to last until it looks
    while not meter._exact and meter._sampled_peak_kib < 200 * 1024 and time.monotonic() < deadline:
        time.sleep(0.02)
    _say(child, b"release\n")
    assert child.stdout.readline() == b"freed\n"  # the peak has come and gone
    return meter.stop("grow")


def _cpu(pid):
    times = psutil.Process(pid).cpu_times()
    return times.user + times.system


@pytest.mark.fio
def test_exact_peak_survives_freeing_and_cpu_is_counted(child):
    before = _cpu(child.pid)  # the child waits on stdin: idle until the meter starts
    stats = _run(child, meters.DaemonMeter(describe(child.pid, "test").daemon))
    after = _cpu(child.pid)  # and sleeps once done
    assert stats.peak_rss_method == "VmHWM"
    assert stats.peak_rss_bytes >= 200 * 2**20  # the peak, although freed before the end
    assert meters.status_kib(child.pid, "VmRSS") * 1024 < 100 * 2**20
    assert stats.cpu_seconds > 0
    assert stats.cpu_seconds == pytest.approx(after - before, abs=0.02)
    assert stats.cpu_percent == pytest.approx(100 * stats.cpu_seconds / stats.wall_seconds)


@pytest.mark.fio
def test_sampled_fallback_when_reset_is_refused(child, monkeypatch):
    monkeypatch.setattr(meters, "reset_peak_rss", lambda pid, proc="/proc": False)
    stats = _run(child, meters.DaemonMeter(describe(child.pid, "test").daemon, interval=0.05))
    assert stats.peak_rss_method == "sampled"
    assert stats.peak_rss_bytes >= 200 * 2**20


@pytest.mark.fio
def test_exit_during_window_is_reported(child):
    called = []
    meter = meters.DaemonMeter(describe(child.pid, "test").daemon,
                               on_exit=lambda: called.append(1), interval=0.05)
    meter.start()
    child.kill()
    child.wait()
    time.sleep(0.3)
    with pytest.raises(meters.DaemonExited, match=rf"FUSE daemon PID {child.pid} exited during w1"):
        meter.stop("w1")
    assert called == [1]


def test_io_window_spans_the_bytes_moved_not_the_idle_ends():
    # 1 s idle start (fio's set-up), 2 s of I/O at 100 ticks/s, 1 s idle teardown
    timeline = [(t / 10, 0, 0) for t in range(10)]
    timeline += [(1 + t / 10, 10 * t, 50 * t) for t in range(21)]
    timeline += [(3 + t / 10, 200, 1000) for t in range(1, 11)]
    seconds, ticks = meters.io_window(timeline)
    assert abs(seconds - 2.0) < 0.11 and 190 <= ticks <= 210


def test_io_window_is_none_when_nothing_moved():
    assert meters.io_window([(t / 10, t, 7) for t in range(20)]) is None
    assert meters.io_window([(0.0, 0, 0), (1.0, 5, 9)]) is None


@pytest.mark.fio
def test_a_byte_counter_that_missed_the_bytes_does_not_set_the_window(child):
    """Many clients on libaio: the fio servers' job processes move nothing through read()
    or write(), and the window their counter gave was 'I/O ran 0.051 s'. Where it saw under
    half the bytes fio reports, the whole run is the window, and said to be."""
    moved = iter(range(0, 10**6, 100))  # a few KB: fio's own bookkeeping
    meter = meters.DaemonMeter(describe(child.pid, "test").daemon, moved=lambda: next(moved))
    meter.start()
    _say(child, b"go\n")
    assert child.stdout.readline() == b"peak\n"
    _say(child, b"release\n")
    assert child.stdout.readline() == b"freed\n"
    stats = meter.stop("aio", expected=10**9)
    assert stats.cpu_window == "whole run"
    assert stats.cpu_window_seconds == pytest.approx(stats.wall_seconds)


@pytest.mark.fio
def test_an_in_process_engine_counts_no_child_reaped_in_its_window():
    """As found: jfs_bench_stat's load generator at 833% CPU on a 2-CPU machine: a helper
    reaped inside a 10 ms window brought all its CPU along. Engines of this process alone
    count this process only; the compiled worker (a child) counts its own."""
    import subprocess
    import sys

    from pytest_fsperf.measure.rest import own_cpu

    alone, with_children = own_cpu(False), own_cpu(True)
    subprocess.run([sys.executable, "-c", "import time\nt = time.process_time()\n"
                    "while time.process_time() - t < 0.3: pass"], check=True)
    assert own_cpu(True) - with_children >= 0.25
    assert own_cpu(False) - alone < 0.1
