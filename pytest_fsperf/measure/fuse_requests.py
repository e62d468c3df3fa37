"""The kernel's FUSE requests to the daemon over a window, by opcode (measure/fusetrace.py
reads them), as a meter of the window: armed when made (tracefs opened), or why not."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass

from pytest_fsperf.infra.mountinfo import Mount
from pytest_fsperf.measure import fusetrace
from pytest_fsperf.measure.fusetrace import Trace, Tracing
from pytest_fsperf.measure.reading import Reading, Span
from pytest_fsperf.result.fuse import FuseRequests
from pytest_fsperf.result.timeline import Timeline


@dataclass(frozen=True)
class FuseReading(Reading):
    fuse: FuseRequests | None  # the kernel's FUSE requests to the daemon, by opcode
    fuse_note: str = ""  # why there is no trace, when there is none


class FuseTrace:
    def __init__(self, trace: Trace) -> None:
        self.trace = trace

    @classmethod
    def armed(cls, fuse: bool, tracing: Tracing,
              mount: Callable[[], Mount]) -> FuseTrace | FuseReading | None:
        """The trace of the window; else why not (a reading without a trace); None: not FUSE."""
        if not fuse:
            return None
        if tracing == Tracing.OFF:
            return FuseReading(None, "not traced (--fsperf-fuse-trace=off)")
        why = fusetrace.unavailable()
        if why:
            return FuseReading(None, f"not available: {why}")
        try:
            found = mount()
        except (OSError, LookupError) as exc:
            return FuseReading(None, f"not available: the mount could not be read ({exc})")
        trace = Trace(fusetrace.connection_id(found.major, found.minor))
        try:
            trace.open()
        except OSError as exc:
            trace.close()
            return FuseReading(None, f"not available: tracefs refused the trace ({exc.strerror or exc})")
        return cls(trace)

    def start(self) -> None:
        self.trace.start()

    def stop(self, span: Span) -> FuseReading:
        self.trace.stop()
        try:
            return FuseReading(self.trace.summary(span.began, span.began + span.wall))
        except (OSError, ValueError):
            return FuseReading(None)

    def per_interval(self, timeline: Timeline, started: float) -> Timeline:
        """The timeline with the FUSE requests of each of its intervals."""
        edges = [started + x for x in timeline.t[1:]]
        return dataclasses.replace(timeline, fuse_ops=self.trace.per_interval(started, edges[-1], edges))

    def abort(self) -> None:
        self.trace.close()
