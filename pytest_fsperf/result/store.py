"""What the object store served in a window, as a result holds it: the requests by kind and
API, errors, bytes, time to first byte, what the store conditions did; and their cost."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from pytest_fsperf import typed

KINDS = ("GET", "HEAD", "LIST", "PUT", "MULTIPART", "COPY", "DELETE", "OTHER")


@dataclass(frozen=True)
class Requests:
    """The requests of one measured window, by kind (KINDS) and by API as the server names it."""

    by_kind: dict[str, int]
    by_api: dict[str, int]
    errors_4xx: int
    errors_5xx: int
    sent_bytes: int | None  # by the server: what reads pulled
    received_bytes: int | None  # what writes pushed
    source: str = "MinIO metrics"
    errors_by_kind: dict[str, int] = field(default_factory=dict)  # 4xx and 5xx: not billed by some
    # The server's time to first byte: the upper edge of the histogram bucket holding each
    # percentile (MinIO's buckets are 50 ms, 100 ms, 250 ms ...: "at most", never finer).
    ttfb_at_most: dict[str, float] = field(default_factory=dict)  # "p50", "p90", "p99" -> s
    errors_unclassified: int = 0  # failed requests a source counts without their status
    # what the store conditions' proxy did in the window (--fsperf-store-*): requests,
    # throttled, errors (injected 5xx), resets, held, retries; first_byte_p50/p99 (s) as
    # the daemons met it
    conditions: dict[str, float] = field(default_factory=dict)
    # a write workload: seconds from its I/O's start until the store had received what it
    # wrote (the daemon's upload after the tool stopped its clock included)
    stored_after: float | None = None

    @property
    def total(self) -> int:
        return sum(self.by_kind.values())

    @property
    def get_bytes_mean(self) -> float | None:
        """Bytes per GET on average: the part size a reader asks for (sent / GETs)."""
        gets = self.by_kind.get("GET", 0)
        return self.sent_bytes / gets if gets and self.sent_bytes is not None else None

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "total": self.total, "get_bytes_mean": self.get_bytes_mean}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Requests:
        """to_dict's JSON back (what it adds, derived, is left)."""
        return typed.read(cls, {k: v for k, v in data.items() if k not in DERIVED}, "requests")


DERIVED = ("total", "get_bytes_mean")


@dataclass(frozen=True)
class Cost:
    price: str  # the price list's name
    currency: str
    requests: float  # the window's requests at that list's prices
    egress: float | None  # the bytes the store sent, were they sent to the internet

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)
