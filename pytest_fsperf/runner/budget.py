"""One time budget that the gated workloads of a session share (--fsperf-gate-seconds)."""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from pytest_fsperf.errors import UsageError
from pytest_fsperf.judge.paired import Budget
from pytest_fsperf.runner.pairs import Pairs


@dataclass
class SessionClock:
    """The session's budget for its gated workloads: each gets what is left divided by the
    tests still to run (the test's workloads share that), at most --fsperf-ab-seconds, so
    time a workload decided early did not use goes to those after it. A workload whose share
    ran out undecided while tests remain is carried: its pairs are kept, and once every test
    has run, its test runs again (the second pass) and its gate goes on from those pairs with
    what the session has left, so that time goes to those before it too. None: no session
    budget; each workload has --fsperf-ab-seconds."""

    seconds: float | None = None
    started: float = field(default_factory=lambda: time.monotonic())
    tests_left: int = 0  # tests with the fsperf fixture not yet finished (set at collection)
    tests: int = 0  # tests with the fsperf fixture in the session (set at collection): a gate's
    # false alarms are held for all of them together (paired.suite_alpha)
    second_pass: bool = True  # off under pytest-xdist (a worker's reports go out as they come)
    in_second_pass: bool = False
    carried: dict[tuple[str, str], Pairs] = field(default_factory=dict)  # (test, workload)

    def left(self) -> float | None:
        if self.seconds is None:
            return None
        return max(0.0, self.seconds - (time.monotonic() - self.started))

    def share(self, cap: float) -> float:
        """What the next gated workload may spend, in seconds."""
        left = self.left()
        return cap if left is None else min(cap, left / max(1, self.tests_left))

    def carry(self, test: str, workload: str, pairs: Pairs) -> bool:
        """Keep an undecided workload's pairs for the second pass, where there is one to
        come: a session budget, tests after this one, and not in the second pass already."""
        if self.seconds is None or not self.second_pass or self.in_second_pass:
            return False
        if self.tests_left <= 1:  # the last test: it had all that was left
            return False
        self.carried[(test, workload)] = pairs
        return True

    def carries(self, test: str) -> bool:
        """Whether a workload of the test waits for the second pass."""
        return any(t == test for t, _workload in self.carried)

    def fits(self, test: str) -> bool:
        """Whether a carried workload of the test fits the share of what is left: its layout
        again (the test runs anew) and one more pair as slow as its slowest."""
        share = self.share(float("inf"))
        return any(share >= p.layout + p.last_pair for (t, _w), p in self.carried.items() if t == test)

    def resume(self, test: str, workload: str) -> Pairs | None:
        """The pairs a carried workload goes on from, once (None: start afresh)."""
        return self.carried.pop((test, workload), None)

    def elapsed(self) -> float:
        return time.monotonic() - self.started


def pair_budget(rounds: int, max_rounds: int | None, seconds: float | None, settings_budget: Budget,
            where: str) -> Budget:
    """An A/B's budget of pairs and seconds (fsperf.compare's rounds=, max_rounds=, seconds=),
    each checked and named where wrong; the settings' where not given."""
    for key, value, low in (("rounds", rounds, 1), ("max_rounds", max_rounds, 1)):
        if value is not None and (isinstance(value, bool) or not isinstance(value, int)
                                  or not low <= value <= 1000):
            raise UsageError(f"{where}: {key}={value!r} must be a whole number from 1 to 1000")
    if seconds is not None and (isinstance(seconds, bool) or not isinstance(seconds, int | float)
                                or not 0 < seconds <= 7 * 86_400):  # a NaN budget never ended
        raise UsageError(f"{where}: seconds={str(seconds)[:20]!r} must be a number of seconds "
                         "above 0, at most a week")
    most = max_rounds if max_rounds is not None else max(rounds, settings_budget.max_pairs)
    if most < rounds:
        raise UsageError(f"{where}: max_rounds={most} is below rounds={rounds}")
    return Budget(rounds, most, seconds if seconds is not None else settings_budget.seconds)
