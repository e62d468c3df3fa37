"""The one protocol every meter of a measured window follows: started just before the
workload, stopped after it into a typed reading, released however the window ended."""

from __future__ import annotations

import abc
import enum
from dataclasses import dataclass
from typing import ClassVar, Protocol, TypeVar


class When(enum.Enum):
    """When a meter runs in its window. AROUND: started first and stopped last, around the
    whole window (counters read twice: the store's, the cgroup's, the RSS). PINNED: started
    just before the workload, after the daemon's CPU is pinned, and stopped first, in
    reverse order (a trace, a profile, the rest of the machine, the page faults)."""

    AROUND = "around"
    PINNED = "pinned"


@dataclass(frozen=True)
class Reading:
    """What a meter read over a window: a frozen dataclass whose fields are the workload
    result's fields of the same names; the result is built from the readings. A field whose
    value has figures() adds them to the figures thresholds judge (WorkloadResult.metrics)."""


R_co = TypeVar("R_co", bound=Reading, covariant=True)


class Span(Protocol):
    """When the workload ran, as the window knows it when the meters stop."""

    wall: float  # seconds from the workload's start to its end
    began: float  # monotonic s it began
    io_span: tuple[float, float] | None  # when the I/O ran (monotonic s), if the tool said
    expected: int | None  # the bytes the load generator says it moved, if known
    stored: float | None  # monotonic s the store had received what it wrote, if waited for


class Instrument(Protocol[R_co]):
    def start(self) -> None:
        """Begin: just before the workload."""

    def stop(self, span: Span) -> R_co:
        """The workload ended well: what was read over it."""

    def abort(self) -> None:
        """However the window ended: release what it holds (a no-op once stopped)."""


@dataclass(frozen=True)
class Figures(Reading):
    """A listed meter's own figures by the registry's keys (figures.Fig), None where it could
    not read one: the window gathers every such reading into the result's `measured`, so a
    new meter needs no field of the result (measure/registry.py)."""

    measured: dict[str, float | None]


@dataclass
class _NoSpan:
    wall: float = 0.0
    began: float = 0.0
    io_span: tuple[float, float] | None = None
    expected: int | None = None
    stored: float | None = None


NO_SPAN: Span = _NoSpan()  # what a meter stopped by abort() is given: no workload ran


Counts = tuple[int, tuple[int, ...]]  # a process's start time (its identity) and its counters


class ProcessCounts(abc.ABC):
    """A meter of counters each daemon process keeps, read at the window's start and end
    (nothing held): summed over the processes that were the same at both ends (their start
    time; one that exited, or whose PID another process took, is not counted), its FIGURES
    each None where no process could be read. A meter gives `read` and `figures`."""

    FIGURES: ClassVar[tuple[str, ...]] = ()

    def __init__(self, pids: tuple[int, ...]) -> None:
        self.pids = pids
        self.before: dict[int, Counts] = {}

    @classmethod
    def made(cls, pids: tuple[int, ...]) -> ProcessCounts | None:
        return cls(pids) if pids else None

    @abc.abstractmethod
    def read(self, pid: int) -> Counts | None:
        """The process's start time and its counters now; None where they cannot be read."""

    @abc.abstractmethod
    def figures(self, moved: tuple[int, ...]) -> dict[str, float | None]:
        """The figures of the counters' growth, summed over the processes."""

    def start(self) -> None:
        self.before = {pid: c for pid in self.pids if (c := self.read(pid)) is not None}

    def stop(self, span: Span) -> Figures:
        moved = [tuple(b - a for a, b in zip(was[1], now[1], strict=True))
                 for pid, was in self.before.items()
                 if (now := self.read(pid)) is not None and now[0] == was[0]]
        if not moved:
            return Figures(dict.fromkeys(self.FIGURES))
        return Figures(self.figures(tuple(sum(column) for column in zip(*moved, strict=True))))

    def abort(self) -> None:
        self.before = {}  # counters read twice: nothing else held
