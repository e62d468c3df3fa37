"""`fsperf bench --ceilings`: the ceilings of this machine and its store alone, for a
suite's fio workloads, before any filesystem is measured."""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pytest_fsperf.ceilings import published
from pytest_fsperf.ceilings.fuse import fuse_ceilings
from pytest_fsperf.ceilings.store import shape_of, store_ceiling
from pytest_fsperf.engine import fio as fio_engine
from pytest_fsperf.result.ceiling import Ceiling
from pytest_fsperf.runner.target import Session
from pytest_fsperf.scenarios import library
from pytest_fsperf.units import format_rate


@dataclass(frozen=True)
class Row:
    scenario: str
    job: dict[str, str]
    ceilings: tuple[Ceiling, ...]


def fio_jobs(scenarios: Sequence[str], scale: float) -> list[tuple[str, dict[str, str]]]:
    """Each scenario's fio steps as the suite runs them at `scale` (others have none)."""
    jobs = []
    for sid in scenarios:
        sc = library.get(sid, "fsperf bench --ceilings")
        for step in sc.steps:
            if step.engine == "fio":
                params = {k: v for k, v in step.params.items() if k != "per_job"}
                jobs.append((sid, fio_engine.build_job(params, scale, f"scenario {sid}")))
    return jobs


def measure(session: Session, jobs: Sequence[tuple[str, dict[str, str]]],
            store: Mapping[str, Any] | None) -> list[Row]:
    rows = []
    for sid, job in jobs:
        tmpfs, fuse = fuse_ceilings(session, job)
        shape = shape_of(job)
        found = (tmpfs, fuse) + ((store_ceiling(store, shape),) if shape else ())
        rows.append(Row(sid, job, found))
    return rows


def shown(c: Ceiling) -> str:
    if c.unavailable:
        return f"- ({c.unavailable})"
    return f"{format_rate(c.bw_bytes)} ({c.how}; {c.seconds:.0f} s to measure)"


def report(rows: Sequence[Row], started: float) -> list[str]:
    lines = []
    for row in rows:
        lines.append(f"{row.scenario}:")
        lines += [f"  {c.path}: {shown(c)}" for c in row.ceilings]
        lines += [f"  published, {p.said()}" for p in published.project(row.scenario, row.ceilings)]
    lines.append(f"measured in {time.monotonic() - started:.0f} s")
    return lines
