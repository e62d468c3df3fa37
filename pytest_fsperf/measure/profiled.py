"""The daemon's CPU profile over a window (perf record -g, measure/profile.py), where the
window is profiled (an A/B's profiled pair), as a meter of the window."""

from __future__ import annotations

import subprocess
from dataclasses import dataclass

from pytest_fsperf.measure import profile
from pytest_fsperf.measure.profile import Profiler
from pytest_fsperf.measure.reading import Reading, Span
from pytest_fsperf.result.daemon import Profile


@dataclass(frozen=True)
class ProfileReading(Reading):
    profile: Profile | None  # the daemon's CPU profile (an A/B's profiled pair)
    profile_note: str = ""  # why a profile asked for was not taken


class DaemonProfile:
    def __init__(self, profiler: Profiler) -> None:
        self.profiler = profiler

    @classmethod
    def wanted(cls, to: str | None, pids: tuple[int, ...]) -> DaemonProfile | ProfileReading | None:
        """to: where its data goes, None where the window is not profiled."""
        if to is None or not pids:
            return None
        why = profile.refused(list(pids))
        if why:
            return ProfileReading(None, f"not profiled: {why}")
        return cls(Profiler(list(pids), to))

    def start(self) -> None:
        self.profiler.start()

    def stop(self, span: Span) -> ProfileReading:
        try:
            return ProfileReading(self.profiler.stop())
        except (OSError, subprocess.SubprocessError) as exc:
            return ProfileReading(None, f"the profile failed: {exc}")

    def abort(self) -> None:
        self.profiler.close()
