"""CPU placement of the daemon and the load (measure/placement.py): parsing, the split,
and pinning a process this test starts, then putting it back."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import psutil
import pytest

from pytest_fsperf.errors import UsageError
from pytest_fsperf.judge.comparison import placed
from pytest_fsperf.measure import placement
from pytest_fsperf.measure.placement import CpuMode
from pytest_fsperf.result.machine import Placement

TWO = len(os.sched_getaffinity(0)) >= 2


def test_split_puts_the_daemon_on_the_upper_half():
    assert placement.split([0, 1]) == Placement(daemon=(1,), load=(0,))
    assert placement.split([0, 1, 2, 3, 4]) == Placement(daemon=(2, 3, 4), load=(0, 1))
    assert placement.split([3]) is None  # one CPU: nothing to split


def test_auto_pins_only_paired_runs():
    auto = placement.AUTO
    assert auto.placement(paired=False, cpus=[0, 1]) is None
    assert auto.placement(paired=True, cpus=[0, 1]) == Placement((1,), (0,))
    assert placement.parse("off", "x").placement(paired=True, cpus=[0, 1]) is None
    assert placement.parse("split", "x").placement(paired=False, cpus=[0, 1]) == Placement((1,), (0,))


def test_given_lists_are_parsed_and_checked_against_the_cpus_allowed():
    got = placement.parse("2-3,6/0", "--fsperf-cpus=2-3,6/0 (command line)", allowed=range(8))
    assert got.mode == CpuMode.GIVEN and got.given == Placement((2, 3, 6), (0,))
    assert got.given.shown() == "daemon on CPU 2-3,6, load on CPU 0"
    for text, said in (("fast", "is not off, auto, split or DAEMON_CPUS/LOAD_CPUS"),
                       ("1/x", "the load's CPUs 'x' is not a CPU list"),
                       ("3-1/0", "3-1 runs backwards"),
                       ("9/0", "the daemon's CPU 9 is not one this process may use (0-7)")):
        with pytest.raises(UsageError) as exc:
            placement.parse(text, "--fsperf-cpus (ini file)", allowed=range(8))
        assert str(exc.value).startswith("--fsperf-cpus (ini file): "), exc.value
        assert said in str(exc.value)


def test_the_setting_comes_from_the_command_line_with_where(pytester):
    pytester.makepyfile("def test_x(fsperf): pass")
    result = pytester.runpytest("--fsperf-cpus=0/99")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "--fsperf-cpus=0/99 (command line): the load's CPU 99 is not one" in result.stderr.str()
    assert "Traceback" not in result.stderr.str()


def test_a_comparison_names_its_placement_or_the_mix():
    class Run:
        def __init__(self, p):
            self.placement = p
    one = Placement((1,), (0,))
    assert placed([Run(one), Run(one)]) == "daemon on CPU 1, load on CPU 0"
    assert placed([Run(None), Run(None)]) == ""
    assert placed([Run(one), Run(None)]).startswith("placed unlike each other: ")


THREADS = """
import threading, time
threading.Thread(target=time.sleep, args=(30,), daemon=True).start()
print("ready", flush=True)
time.sleep(30)
"""


@pytest.mark.fio
@pytest.mark.skipif(not TWO, reason="needs two CPUs")
def test_pinned_moves_every_thread_of_the_daemon_and_the_caller_then_puts_them_back():
    child = subprocess.Popen([sys.executable, "-c", THREADS], stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout is not None and child.stdout.readline().strip() == "ready"
        tids = [t.id for t in psutil.Process(child.pid).threads()]
        assert len(tids) == 2
        before = {tid: os.sched_getaffinity(tid) for tid in tids}
        own = os.sched_getaffinity(0)
        cpus = sorted(own)
        where = Placement(daemon=(cpus[-1],), load=(cpus[0],))
        with placement.pinned(where, [child.pid]):
            assert all(os.sched_getaffinity(tid) == {cpus[-1]} for tid in tids)
            assert os.sched_getaffinity(0) == {cpus[0]}
            # a process started by the load inherits the load's CPUs (fio does)
            probe = subprocess.run([sys.executable, "-c", "import os; print(sorted(os.sched_getaffinity(0)))"],
                                   capture_output=True, text=True, check=True)
            assert probe.stdout.strip() == str([cpus[0]])
        assert {tid: os.sched_getaffinity(tid) for tid in tids} == before
        assert os.sched_getaffinity(0) == own
    finally:
        child.kill()
        child.wait()


@pytest.mark.fio
def test_pinned_survives_a_daemon_that_is_gone():
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    time.sleep(0.05)
    own = os.sched_getaffinity(0)
    with placement.pinned(Placement((min(own),), (min(own),)), [child.pid]):
        pass
    assert os.sched_getaffinity(0) == own
