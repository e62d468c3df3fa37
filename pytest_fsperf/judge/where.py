"""Where an A/B's difference came from, in the FUSE requests of its runs: opcodes sent more
or less often, and opcodes served slower or faster (measure/fusetrace.py). Each finding is
ranked by the time it accounts for (requests times their median service time), largest
first; small or thinly sampled changes are not findings."""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from .. import units
from ..result import WorkloadResult

COUNT_CHANGE = 0.10  # a count that moved by more than this share (and MIN_COUNT_DELTA)
MIN_COUNT_DELTA = 2.0  # requests per run
SERVICE_CHANGE = 1.15  # a median service time that moved by more than this factor
MIN_SAMPLES = 20  # requests per run on both sides before a service time is compared
SHOWN = 3


@dataclass(frozen=True)
class Side:
    """One opcode on one side: medians over the side's traced runs."""

    count: float
    p50_us: float | None
    per_file: float | None


def _side(runs: Sequence[WorkloadResult], opcode: str) -> Side:
    counts, p50s, per_file = [], [], []
    for r in runs:
        assert r.fuse is not None
        op = r.fuse.op(opcode)
        counts.append(op.count if op else 0)
        if op and op.p50_us is not None:
            p50s.append(op.p50_us)
        if r.files > 1:
            per_file.append((op.count if op else 0) / r.files)
    return Side(statistics.median(counts), statistics.median(p50s) if p50s else None,
                statistics.median(per_file) if per_file else None)


def _us(value: float) -> str:
    return units.format_duration(value * 1e3)


def _count(a: Side, b: Side) -> str | None:
    delta = b.count - a.count
    if abs(delta) < MIN_COUNT_DELTA or abs(delta) <= COUNT_CHANGE * max(a.count, b.count):
        return None
    if a.per_file is not None and b.per_file is not None:
        return f"{units.format_ratio(b.per_file)} per file (was {units.format_ratio(a.per_file)})"
    return f"{b.count:,.0f} requests (was {a.count:,.0f})"


def _service(a: Side, b: Side) -> str | None:
    if a.p50_us is None or b.p50_us is None or min(a.count, b.count) < MIN_SAMPLES:
        return None
    ratio = b.p50_us / a.p50_us if a.p50_us > 0 else 0.0
    if 1 / SERVICE_CHANGE <= ratio <= SERVICE_CHANGE:
        return None
    same = " (same count)" if _count(a, b) is None else ""
    return f"service time p50 {_us(a.p50_us)} -> {_us(b.p50_us)}{same}"


def findings(a: Sequence[WorkloadResult], b: Sequence[WorkloadResult]) -> tuple[str, ...]:
    """'FUSE_READ service time p50 410 us -> 480 us (same count)', 'FUSE_GETATTR 0 per file
    (was 1)', ...: the largest first; () where a side has no trace."""
    a, b = [r for r in a if r.fuse is not None], [r for r in b if r.fuse is not None]
    if not a or not b:
        return ()
    opcodes = {op.opcode for r in (*a, *b) if r.fuse for op in r.fuse.ops}
    ranked = []
    for opcode in opcodes:
        sa, sb = _side(a, opcode), _side(b, opcode)
        said = [s for s in (_count(sa, sb), _service(sa, sb)) if s]
        if not said:
            continue
        weight = abs(sb.count * (sb.p50_us or 0.0) - sa.count * (sa.p50_us or 0.0))
        ranked.append((weight, f"FUSE_{opcode} " + ", ".join(said)))
    ranked.sort(key=lambda x: -x[0])
    return tuple(text for _w, text in ranked[:SHOWN])
