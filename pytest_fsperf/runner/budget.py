"""One time budget that the gated workloads of a session share (--fsperf-gate-seconds)."""

from __future__ import annotations

import time
from dataclasses import dataclass, field


@dataclass
class SessionClock:
    """The session's budget for its gated workloads: each gets what is left divided by the
    tests still to run (the test's workloads share that), at most --fsperf-ab-seconds, so
    time a workload decided early did not use goes to those after it. None: no session
    budget; each workload has --fsperf-ab-seconds."""

    seconds: float | None = None
    started: float = field(default_factory=lambda: time.monotonic())
    tests_left: int = 0  # tests with the fsperf fixture not yet finished (set at collection)

    def left(self) -> float | None:
        if self.seconds is None:
            return None
        return max(0.0, self.seconds - (time.monotonic() - self.started))

    def share(self, cap: float) -> float:
        """What the next gated workload may spend, in seconds."""
        left = self.left()
        return cap if left is None else min(cap, left / max(1, self.tests_left))

    def elapsed(self) -> float:
        return time.monotonic() - self.started
