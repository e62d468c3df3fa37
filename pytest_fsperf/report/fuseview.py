"""The FUSE request mix in the report: a table of every traced workload, and why a workload
was not traced (measure/fusetrace.py)."""

from __future__ import annotations

from pytest_fsperf import units
from pytest_fsperf.figures import Fig
from pytest_fsperf.result.document import ResultRow
from pytest_fsperf.result.fuse import FuseOp, FuseRequests

Row = ResultRow
SHOWN_OPS = 6  # opcodes per row; the rest are counted together


def _us(value: float | None) -> str:
    return units.format_duration(value * 1e3) if value is not None else "-"


def op_cell(op: FuseOp) -> str:
    """READ 8192 (p50 85 us, p99 3.1 ms; 64 MiB); GETXATTR 406 (406 ENODATA)."""
    parts = [f"p50 {_us(op.p50_us)}, p99 {_us(op.p99_us)}"]
    if op.bytes:
        parts.append(units.format_size(op.bytes))
    if op.errors:
        parts.append(", ".join(f"{n} {code}" for code, n in sorted(op.errors.items())))
    if op.unanswered:
        parts.append(f"{op.unanswered} unanswered at the end")
    return f"{op.opcode} {op.count} ({'; '.join(parts)})"


def mix(fuse: FuseRequests, shown: int = SHOWN_OPS) -> str:
    cells = [op_cell(op) for op in fuse.ops[:shown]]
    rest = fuse.ops[shown:]
    if rest:
        cells.append(f"{len(rest)} more opcodes: {sum(op.count for op in rest)} requests")
    return "; ".join(cells)


def _ratio(value: float | None) -> str:
    return units.format_ratio(value) if value is not None else "-"


def table_rows(results: list[Row]) -> list[tuple[str, ...]]:
    rows: list[tuple[str, ...]] = []
    for r in results:
        f = r.fuse
        if not f:
            continue
        lost = f" ({f.lost} events lost: lower bounds)" if f.lost else ""
        rows.append((r.test.rpartition("::")[2], r.name, f"{f.total}{lost}",
                     _ratio(r.median(Fig.FUSE_PER_FILE)), _ratio(r.median(Fig.FUSE_PER_MIB)), mix(f)))
    return rows


HEAD = ("test", "workload", "FUSE requests", "per file", "per MiB",
        "by opcode: count (send to end p50, p99; payload; errors)")
EXPLAINED = ("FUSE requests: sent by the kernel to the daemon during the measured window, from "
             "the fuse:fuse_request_send/end tracepoints; send to end is queueing plus the "
             "daemon's service, as the kernel sees it")


def unavailable(results: list[Row]) -> list[str]:
    """Why FUSE requests were not counted, once per reason (a FUSE mount that was not traced)."""
    seen = {str(r.fuse_note) for r in results if not r.fuse and r.fuse_note}
    return [f"FUSE requests {note}" if note.startswith("not ") else f"FUSE requests: {note}"
            for note in sorted(seen)]
