"""Where an A/B's difference came from, in the FUSE requests of its runs: opcodes sent more
or less often, and opcodes served slower or faster (measure/fusetrace.py). Each finding is
ranked by the time it accounts for (requests times their median service time), largest
first; small or thinly sampled changes are not findings."""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from pytest_fsperf import units
from pytest_fsperf.result.workload import WorkloadResult

COUNT_CHANGE = 0.10  # a count that moved by more than this share (and MIN_COUNT_DELTA)
MIN_COUNT_DELTA = 2.0  # requests per run
SERVICE_CHANGE = 1.15  # a median service time that moved by more than this factor
MIN_SAMPLES = 20  # requests per run on both sides before a service time is compared
TAIL_CHANGE = 2.0  # a p99 service time that moved by more than this factor (tails are noisy)
MIN_TAIL_SAMPLES = 100  # requests per run on both sides before a p99 is compared
SHOWN = 3


@dataclass(frozen=True)
class Side:
    """One opcode on one side: medians over the side's traced runs."""

    count: float
    p50_us: float | None
    per_file: float | None
    p99_us: float | None = None


def _side(runs: Sequence[WorkloadResult], opcode: str) -> Side:
    counts, p50s, p99s, per_file = [], [], [], []
    for r in runs:
        assert r.fuse is not None
        op = r.fuse.op(opcode)
        counts.append(op.count if op else 0)
        if op and op.p50_us is not None:
            p50s.append(op.p50_us)
        if op and op.p99_us is not None:
            p99s.append(op.p99_us)
        if r.files > 1:
            per_file.append((op.count if op else 0) / r.files)
    return Side(statistics.median(counts), statistics.median(p50s) if p50s else None,
                statistics.median(per_file) if per_file else None,
                statistics.median(p99s) if p99s else None)


def _us(value: float) -> str:
    return units.format_duration(value * 1e3)


def _count(a: Side, b: Side) -> str | None:
    delta = b.count - a.count
    if abs(delta) < MIN_COUNT_DELTA or abs(delta) <= COUNT_CHANGE * max(a.count, b.count):
        return None
    if a.per_file is not None and b.per_file is not None:
        return f"{units.format_ratio(b.per_file)} per file (was {units.format_ratio(a.per_file)})"
    return f"{b.count:,.0f} requests (was {a.count:,.0f})"


def _moved(a: float | None, b: float | None, factor: float) -> bool:
    if a is None or b is None or a <= 0:
        return False
    return not 1 / factor <= b / a <= factor


def _service(a: Side, b: Side) -> str | None:
    """The median service time where it moved past SERVICE_CHANGE, else the tail (p99) where
    it moved past TAIL_CHANGE: a throttled daemon serves most requests as fast and some
    after a stall."""
    least = min(a.count, b.count)
    same = " (same count)" if _count(a, b) is None else ""
    if least >= MIN_SAMPLES and _moved(a.p50_us, b.p50_us, SERVICE_CHANGE):
        return f"service time p50 {_us(a.p50_us or 0)} -> {_us(b.p50_us or 0)}{same}"
    if least >= MIN_TAIL_SAMPLES and _moved(a.p99_us, b.p99_us, TAIL_CHANGE):
        return f"service time p99 {_us(a.p99_us or 0)} -> {_us(b.p99_us or 0)}{same}"
    return None


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
