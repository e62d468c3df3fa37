"""The window's own meter: the FUSE daemons it is about, the target's and those of the other
clients measured with it (measure/meters.DaemonMeter each), and their reading."""

from __future__ import annotations

from dataclasses import dataclass

from pytest_fsperf.measure.meters import DaemonMeter
from pytest_fsperf.measure.reading import Reading, Span
from pytest_fsperf.mounts.daemon import Lookup
from pytest_fsperf.result.daemon import DaemonStats


@dataclass(frozen=True)
class DaemonReading(Reading):
    daemon: DaemonStats | None  # the target's daemon over the window (None: not measured)


class Daemons:
    """The target's FUSE daemon and the daemons of the other clients measured with it."""

    def __init__(self, label: str, meter: DaemonMeter | None,
                 peers: list[tuple[Lookup, DaemonMeter | None]]) -> None:
        self.label, self.meter, self.peers = label, meter, peers
        self.peer_stats: list[DaemonStats | None] = []

    def _all(self) -> list[DaemonMeter]:
        return [m for m in (self.meter, *(m for _o, m in self.peers)) if m is not None]

    def start(self) -> None:
        for m in self._all():
            m.start()

    def check(self) -> None:
        """After a failed workload: raise DaemonExited where a daemon died (the cause)."""
        for m in self._all():
            m.stop(self.label)

    def stop(self, span: Span) -> DaemonReading:
        self.peer_stats = [m.stop(self.label, span.io_span, span.expected) if m else None
                           for _o, m in self.peers]
        return DaemonReading(self.meter.stop(self.label, span.io_span, span.expected)
                             if self.meter else None)

    def abort(self) -> None:
        for m in self._all():
            m.abort()
