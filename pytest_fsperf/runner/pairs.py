"""The pairs of an interleaved A/B as they stood when it stopped (ab.py), kept by the
session's clock for a second pass (budget.py)."""

from __future__ import annotations

from dataclasses import dataclass

from pytest_fsperf.result.workload import WorkloadResult


@dataclass(frozen=True)
class Pairs:
    a: list[WorkloadResult]
    b: list[WorkloadResult]
    order: str
    stopped: str
    seconds: float
    dropped: tuple[str, ...] = ()  # runs not used, each with why
    died: tuple[str, ...] = ()  # runs whose daemon died (also in dropped), e.g. "B3"
    out_of_time: bool = False  # stopped undecided because the time budget was spent
    last_pair: float = 0.0  # seconds the last pair took, cold starts included
    offsets: tuple[float, ...] = ()  # per pair: its neighbours adjustment of ln(B/A)
    adjusted: str = ""  # what was adjusted, said (judge/neighbours.py)
