"""The daemon's cgroup where it runs under a memory limit (infra/cgroup.py): its peak and
OOM kills over the window, and whether a kill there is why the daemon died."""

from __future__ import annotations

from dataclasses import dataclass

from pytest_fsperf import units
from pytest_fsperf.infra import cgroup
from pytest_fsperf.measure.reading import Reading, Span
from pytest_fsperf.result.daemon import Memory


@dataclass(frozen=True)
class MemoryReading(Reading):
    memory: Memory | None  # the daemon's cgroup: limit, peak, OOM kills


class CageMemory:
    def __init__(self, cage: cgroup.MemoryCage) -> None:
        self.cage = cage
        self.killed = cage.read().oom_kills  # before: a kill in the window is the window's

    @classmethod
    def made(cls, cage: cgroup.MemoryCage | None) -> CageMemory | None:
        return cls(cage) if cage is not None else None

    def start(self) -> None:
        self.cage.reset_peak()

    def stop(self, span: Span) -> MemoryReading:
        return MemoryReading(self.cage.read())

    def abort(self) -> None:
        pass

    def cause(self) -> str:
        """Where the cgroup counted an OOM kill in the window: that is why the daemon died."""
        return oom_cause(self.cage, self.killed)


def oom_cause(cage: cgroup.MemoryCage | None, before: int) -> str:
    """Where the daemon's cgroup counted an OOM kill since `before`: the words saying so."""
    if cage is None:
        return ""
    now = cage.read()
    if now.oom_kills <= before or now.limit is None:
        return ""
    peak = f", peak {units.format_mb(now.peak)}" if now.peak else ""
    return (f"the daemon was killed for memory: its cgroup's limit {units.format_limit(now.limit)}"
            f"{peak}, {now.oom_kills - before} OOM kill{'s' * (now.oom_kills - before > 1)} "
            f"(cgroup v{now.cgroup}'s own count); ")
