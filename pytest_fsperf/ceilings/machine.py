"""`fsperf bench --ceilings`: the ceilings of this machine and its store alone, for a
suite's fio workloads, before any filesystem is measured."""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..engine import fio as fio_engine
from ..scenarios import library
from ..session.state import FsperfSession
from ..units import format_rate
from . import published
from .fuse import fuse_ceilings
from .model import Ceiling
from .store import shape_of, store_ceiling


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


def measure(session: FsperfSession, jobs: Sequence[tuple[str, dict[str, str]]],
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


def run(scenarios: Sequence[str], scale: float, keyword: str | None) -> list[str]:
    """Measure every fio scenario's ceilings (those whose id holds `keyword`, if given) with
    the embedded MinIO as the store where it is installed; the report's lines."""
    from ..options.config import Settings
    from ..session import leftovers
    from ..session.lock import machine_lock
    from ..store.minio import INSTALL, find_minio, start_minio

    started = time.monotonic()
    jobs = [(s, j) for s, j in fio_jobs(scenarios, scale) if not keyword or keyword in s]
    settings = Settings(scale=scale)
    with leftovers.recorded() as swept, machine_lock(timeout=settings.lock_timeout):
        session = FsperfSession(settings)
        binary = find_minio()
        server = None
        try:
            server = start_minio(binary) if binary else None
            lines = [f"removed what a killed session left: {s}" for s in swept]
            if server is None:
                lines.append(f"store: no MinIO here to measure against ({INSTALL})")
            config = server.config() if server is not None else None
            return lines + report(measure(session, jobs, config), started)
        finally:
            session.close()
            if server is not None:
                server.stop()
