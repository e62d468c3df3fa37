"""What a bisection is asked to do: the repository, the two commits, how to build and what to
measure (frozen, checked before anything is built)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Plan:
    repo: str  # the user's checkout (its path)
    good: str  # full commit ids
    bad: str
    build: str  # shell command run in a checkout's root
    binary: str  # the daemon it builds, relative to the checkout
    backend: str  # --fsperf-backend
    test: tuple[str, ...]  # pytest arguments naming what to measure
    step_seconds: float = 300.0  # each gate's budget (--fsperf-ab-seconds)
    seconds: float = 3600.0  # the whole bisection's
    tolerance: float = 0.10
    pytest_args: tuple[str, ...] = ()
