"""The kernel's FUSE requests to the daemon over a window, by opcode, as a result holds them
(measure/fusetrace.py traces them)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, TypedDict


class FuseOpJSON(TypedDict):
    """One opcode's requests, as a results file holds them (keyed by the opcode)."""

    count: int  # sent in the window
    errors: dict[str, int]  # errno name -> replies with it ("ENODATA": 12)
    bytes: int  # payload: data a READ returned, data a WRITE carried; 0 for the others
    p50_us: float | None  # send to end, over the requests that ended in the window
    p99_us: float | None
    unanswered: int  # sent in the window, not answered by its end


class FuseRequestsJSON(TypedDict):
    """The kernel's FUSE requests to the daemon over the window, by opcode."""

    connection: int  # the FUSE connection traced (its device number)
    seconds: float  # the window traced
    total: int  # requests sent in it
    lost: int  # events the ring buffer dropped: the counts are lower bounds
    ops: dict[str, FuseOpJSON]  # by opcode: "READ", "GETATTR", ... (the kernel's name without FUSE_)


@dataclass(frozen=True)
class FuseOp:
    """One opcode's requests in the window."""

    opcode: str  # "READ", "GETATTR", ... (the kernel's name without FUSE_)
    count: int  # sent in the window
    errors: dict[str, int]  # errno name -> replies with it ("ENODATA": 12)
    bytes: int  # payload: data a READ returned, data a WRITE carried; 0 for the others
    p50_us: float | None  # send to end, over the requests that ended in the window
    p99_us: float | None
    unanswered: int = 0  # sent in the window, not answered by its end

    @property
    def failed(self) -> int:
        return sum(self.errors.values())


@dataclass(frozen=True)
class FuseRequests:
    """The FUSE request mix of one window."""

    connection: int
    seconds: float
    ops: tuple[FuseOp, ...]  # most requests first
    lost: int = 0  # events the ring buffer dropped: the counts are lower bounds

    @property
    def total(self) -> int:
        return sum(op.count for op in self.ops)

    def count(self, opcode: str) -> int:
        return next((op.count for op in self.ops if op.opcode == opcode), 0)

    def op(self, opcode: str) -> FuseOp | None:
        return next((op for op in self.ops if op.opcode == opcode), None)

    def to_dict(self) -> FuseRequestsJSON:
        return {"connection": self.connection, "seconds": self.seconds, "total": self.total,
                "lost": self.lost,
                "ops": {op.opcode: {"count": op.count, "errors": op.errors, "bytes": op.bytes,
                                    "p50_us": op.p50_us, "p99_us": op.p99_us,
                                    "unanswered": op.unanswered} for op in self.ops}}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> FuseRequests:
        ops = tuple(FuseOp(name, int(o["count"]), dict(o.get("errors") or {}), int(o["bytes"]),
                           o.get("p50_us"), o.get("p99_us"), int(o.get("unanswered", 0)))
                    for name, o in data["ops"].items())
        return cls(int(data["connection"]), float(data["seconds"]), ops, int(data.get("lost", 0)))
