"""The second pass of a gated session (--fsperf-gate-seconds). A test whose gated workload
ran out of its share undecided while tests remained is held: its reports are not logged
yet. Once every test has run, each held test runs again, in order, with the session's time
left shared among them; its gate goes on from the pairs it had (runner/budget.py). A held
test for which no time is left, or one more pair would not fit, keeps its first reports,
logged then. Off under pytest-xdist and once the session is stopping (-x, a crash)."""

from __future__ import annotations

import warnings
from collections.abc import Callable
from dataclasses import dataclass, field

import pytest
from _pytest.runner import runtestprotocol  # as pytest-rerunfailures does

from pytest_fsperf.runner.budget import SessionClock

HELD = pytest.StashKey[list[tuple[str, str, int]]]()  # a held test's warnings, not yet said


@dataclass
class Held:
    item: pytest.Item
    reports: list[pytest.TestReport]


@dataclass
class SecondPass:
    clock: SessionClock
    key: Callable[[pytest.Item], str]  # the test's id, as the workspace knows it
    held: list[Held] = field(default_factory=list)

    def wanted(self, item: pytest.Item) -> bool:
        return (self.clock.seconds is not None and self.clock.second_pass
                and "fsperf" in getattr(item, "fixturenames", ()))

    def holding(self, item: pytest.Item) -> bool:
        """Whether the test, running now, has a workload carried to the second pass."""
        return not self.clock.in_second_pass and self.clock.carries(self.key(item))

    def protocol(self, item: pytest.Item, nextitem: pytest.Item | None) -> bool:
        """pytest_runtest_protocol of a test in a gated session: run it; log its reports now,
        or hold them when it is carried."""
        if nextitem is None and self.held:  # keep the session's mounts for the second pass
            nextitem = self.held[0].item
        reports = runtestprotocol(item, nextitem=nextitem, log=False)
        if self.holding(item):
            self.held.append(Held(item, reports))
        else:
            _log(item, reports)
        return True

    def finish(self, session: pytest.Session) -> None:
        """After the first pass: run each held test again while time is left (through
        pytest's protocol hook, so that its wrappers - warnings, timeouts - apply)."""
        held, self.held = self.held, []
        self.clock.in_second_pass = True
        self.clock.tests_left = len(held)
        for i, h in enumerate(held):
            after = held[i + 1].item if i + 1 < len(held) else None
            rerun = not session.shouldstop and not session.shouldfail and self._fits(h.item)
            self._forget(h.item)
            if rerun:
                h.item.stash[HELD] = []  # the first pass's warnings: its report is replaced
                h.item.ihook.pytest_runtest_protocol(item=h.item, nextitem=after)
            else:
                self.clock.tests_left = max(0, self.clock.tests_left - 1)
                _log(h.item, h.reports)
                # what the first pass kept set up for it, unless the next needs it too
                session._setupstate.teardown_exact(after)

    def release(self) -> None:
        """The session is ending early (interrupted): the held tests' first reports stand."""
        held, self.held = self.held, []
        for h in held:
            self._forget(h.item)
            _log(h.item, h.reports)

    def _fits(self, item: pytest.Item) -> bool:
        """A carried workload of the test fits its share of what is left (runner/budget.py)."""
        return self.clock.fits(self.key(item))

    def _forget(self, item: pytest.Item) -> None:
        """Drop what the first pass left on the item: its fsperf JUnit properties."""
        item.user_properties[:] = [p for p in item.user_properties
                                   if not str(p[0]).startswith("fsperf.")]


def _log(item: pytest.Item, reports: list[pytest.TestReport]) -> None:
    """Log a test's reports as pytest's own protocol would, then the warnings held back."""
    item.ihook.pytest_runtest_logstart(nodeid=item.nodeid, location=item.location)
    for report in reports:
        item.ihook.pytest_runtest_logreport(report=report)
    for text, path, line in item.stash.get(HELD, []):
        message = warnings.WarningMessage(pytest.PytestWarning(text), pytest.PytestWarning,
                                          path, line)
        item.config.hook.pytest_warning_recorded.call_historic(kwargs=dict(
            warning_message=message, when="runtest", nodeid=item.nodeid, location=None))
    item.stash[HELD] = []
    item.ihook.pytest_runtest_logfinish(nodeid=item.nodeid, location=item.location)
