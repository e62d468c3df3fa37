"""Waiting out a VM's free page reporting after a cache drop (measure/balloon.py)."""

from __future__ import annotations

import pytest

from pytest_fsperf.measure import balloon
from pytest_fsperf.measure.balloon import Settle

LINES = """           CPU0       CPU1
 31:          0       5317 PCI-MSIX-0000:00:01.0   3-edge      virtio0-stats
 32:       {n}          7 PCI-MSIX-0000:00:01.0   4-edge      virtio0-reporting_vq
 36:          0    4776654 PCI-MSIX-0000:00:02.0   1-edge      virtio1-req.0
"""


class Clock:
    """A fake clock; each sleep advances it, and the interrupts file is rewritten by `at`."""

    def __init__(self, path, at):
        self.t, self.path, self.at = 0.0, path, at

    def __call__(self):
        return self.t

    def sleep(self, seconds):
        self.t += seconds
        self.path.write_text(LINES.format(n=self.at(self.t)))


def test_reports_sums_the_reporting_queue_over_cpus(tmp_path):
    path = tmp_path / "interrupts"
    path.write_text(LINES.format(n=2385))
    assert balloon.reports(str(path)) == 2392
    path.write_text(LINES.replace("virtio0-reporting_vq", "virtio0-deflate").format(n=1))
    assert balloon.reports(str(path)) is None  # no free page reporting: nothing to wait for
    assert balloon.settle(str(path)) is None


def test_settle_waits_until_a_quiet_spell_past_the_reporting_delay(tmp_path):
    path = tmp_path / "interrupts"
    path.write_text(LINES.format(n=100))
    # reports at 2 s and 4 s after the drop (passes of 2 s), then none
    clock = Clock(path, lambda t: 100 + (t >= 2.0) + (t >= 4.0))
    waited, done = balloon.settle(str(path), clock=clock, sleep=clock.sleep)
    assert done and 4.0 + balloon.QUIET <= waited < 4.0 + balloon.QUIET + 0.25
    assert balloon.said((waited, done)).startswith("free page reporting settled (6.")


def test_settle_gives_up_at_its_limit_and_says_so(tmp_path):
    path = tmp_path / "interrupts"
    path.write_text(LINES.format(n=0))
    clock = Clock(path, lambda t: int(t))  # a report every second, for ever
    waited, done = balloon.settle(str(path), limit=10.0, clock=clock, sleep=clock.sleep)
    assert not done and 10.0 <= waited < 10.3
    assert balloon.said((waited, done)) == "free page reporting still running after 10 s (the limit)"


def test_auto_settles_only_in_paired_runs_that_showed_they_need_it():
    assert Settle.AUTO.wanted(paired=True, unsteady=True)
    assert not Settle.AUTO.wanted(paired=True) and not Settle.AUTO.wanted(False, True)
    assert Settle.ON.wanted(paired=False) and not Settle.OFF.wanted(paired=True, unsteady=True)


@pytest.mark.parametrize(("settle", "paired", "reporting", "done"), [
    (Settle.AUTO, True, 3, True), (Settle.AUTO, False, 3, False), (Settle.AUTO, True, None, False),
    (Settle.OFF, True, 3, False), (Settle.ON, True, 3, False)])
def test_settle_from_now_acts_only_in_an_auto_pairing_on_a_reporting_vm(
        monkeypatch, settle, paired, reporting, done):
    from types import SimpleNamespace

    from pytest_fsperf.runner.workspace import Workspace

    monkeypatch.setattr(balloon, "reports", lambda *a: reporting)
    ws = SimpleNamespace(running=SimpleNamespace(settle=settle), paired=paired, unsteady=False)
    said = Workspace.settle_from_now(ws)  # type: ignore[arg-type]
    assert bool(said) == done == ws.unsteady
    assert Workspace.settle_from_now(ws) == ""  # once  # type: ignore[arg-type]


def test_the_pairing_ends_unsteady_too():
    from types import SimpleNamespace

    from pytest_fsperf.runner.workspace import Workspace

    ws = SimpleNamespace(paired=False, unsteady=True)
    with Workspace.pairing(ws):  # type: ignore[arg-type]
        assert ws.paired and not ws.unsteady
        ws.unsteady = True
    assert not ws.paired and not ws.unsteady


def test_a_bad_value_names_where_it_came_from(pytester):
    pytester.makeini("[pytest]\nfsperf_settle = sometimes\n")
    pytester.makepyfile("def test_x(fsperf): pass")
    result = pytester.runpytest()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "fsperf_settle" in result.stderr.str() and "sometimes" in result.stderr.str()
    assert "Traceback" not in result.stderr.str()
