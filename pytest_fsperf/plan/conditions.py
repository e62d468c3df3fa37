"""Store conditions: what a real object store adds that the plugin's loopback stores do not
(round trip, time to first byte, bandwidth, a request-rate limit answered as the store
answers it, injected faults), applied by a proxy of the plugin's (proxy/proxy.go, built
on first use with Go) between the daemons and the store. Chosen by a named profile
(PROFILES, sourced in docs/how-to/store-conditions.md) and per condition."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping
from dataclasses import dataclass

from pytest_fsperf import units
from pytest_fsperf.errors import UsageError

MS = 1e-3
# each condition's bounds (seconds, bytes/s, requests/s, shares, bytes), as the options'
LIMITS = {"rtt": (0, 60), "ttfb": (0, 60), "tail": (0, 60), "conn_bandwidth": (0, 1e12),
          "bandwidth": (0, 1e12), "rate": (0, 1e9), "burst": (0, 1e9), "errors": (0, 1),
          "resets": (0, 1), "corrupt": (0, 1), "tail_every": (0, 1e9),
          "window": (1448, 1 << 30), "init_window": (1448, 1 << 30)}
CONNECTION = 50e6  # bytes/s one connection to S3 moves (aws-c-s3: 4 Gbit/s a VIP, 10 connections)


@dataclass(frozen=True)
class StoreConditions:
    """Each 0 is "none"; times in seconds, bandwidths in bytes/s, rates per second."""

    rtt: float = 0.0  # added to each request, and once more for a new connection
    ttfb: float = 0.0  # added before each reply's first byte
    conn_bandwidth: float = 0.0  # each connection's bodies
    bandwidth: float = 0.0  # all connections' bodies together
    rate: float = 0.0  # requests a second the store takes; past it: its throttling answer
    burst: float = 0.0  # requests over the rate taken at once
    errors: float = 0.0  # fraction of requests answered with a 5xx (never reaching the store)
    resets: float = 0.0  # fraction of bodies (replies, uploads) cut mid-body, the connection reset
    corrupt: float = 0.0  # fraction of ranged reads (206) with one byte flipped: silent corruption
    tail_every: int = 0  # 1 request in this many held for `tail` more
    tail: float = 0.0
    # with a round trip, each connection paced as TCP paces it: a window of bytes a round trip,
    # doubling from the first (slow start) to the most; idle past the retransmission timeout
    # (Linux: at least 200 ms), it starts slow again
    window: int = 4 << 20
    init_window: int = 10 * 1448  # RFC 6928: 10 segments of a 1500-byte MTU
    profile: str = ""  # the named profile these came from, if any
    # the daemons reach the store over TLS (the proxy's, with a CA made for it), as every real
    # endpoint is: their TLS work in their CPU and latency; None: as --fsperf-store-tls says
    # (its default: stores.TLS_BY_DEFAULT: S3, Azure, GCS)
    tls: bool | None = None

    def checked(self, where: str) -> StoreConditions:
        """Conditions given whole (a marker's store=StoreConditions(...)), held to the bounds
        the options hold them to (a negative round trip or a NaN would reach the proxy)."""
        for name, (low, high) in LIMITS.items():
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not low <= value <= high:
                raise UsageError(f"{where}: {name}={units.cut_repr(value)} must be a number from "
                                 f"{low:g} to {high:g}")
        for name in ("tail_every", "window", "init_window"):  # counts: whole numbers
            if not isinstance(getattr(self, name), int):
                raise UsageError(f"{where}: {name}={units.cut_repr(getattr(self, name))} must be a "
                                 "whole number")
        if self.tls is not None and not isinstance(self.tls, bool):
            raise UsageError(f"{where}: tls={units.cut_repr(self.tls)} must be True, False or None")
        if not isinstance(self.profile, str) or (
                self.profile and self.profile.removesuffix(", changed") not in PROFILES):
            raise UsageError(f"{where}: profile={units.cut_repr(self.profile)} must be the name of a store "
                             f"profile ({', '.join(PROFILES)})")
        return self

    @property
    def bare(self) -> bool:
        return not any((self.rtt, self.ttfb, self.conn_bandwidth, self.bandwidth, self.rate,
                        self.errors, self.resets, self.corrupt, self.tail_every and self.tail,
                        bool(self.tls)))

    @property
    def faulty(self) -> bool:
        """Requests fail or are cut: data written must be checked when read back."""
        return bool(self.errors or self.resets or self.rate or self.corrupt)

    def describe(self) -> str:
        """One line: `in-region: rtt 2 ms, ttfb 10 ms` ("bare" for none)."""
        parts = []
        if self.rtt:
            parts.append(f"rtt {_ms(self.rtt)}")
        if self.ttfb:
            parts.append(f"ttfb {_ms(self.ttfb)}")
        if self.conn_bandwidth:
            parts.append(f"{units.format_rate(self.conn_bandwidth)} per connection")
        if self.bandwidth:
            parts.append(f"{units.format_rate(self.bandwidth)} in all")
        if self.rate:
            parts.append(f"{self.rate:g} requests/s (burst {self.burst:g})")
        if self.errors:
            parts.append(f"{100 * self.errors:g}% 5xx")
        if self.resets:
            parts.append(f"{100 * self.resets:g}% reset mid-body")
        if self.corrupt:
            parts.append(f"{100 * self.corrupt:g}% of ranged reads with a byte flipped")
        if self.tail_every and self.tail:
            parts.append(f"1 in {self.tail_every} held {_ms(self.tail)}")
        if self.tls:
            parts.append("over TLS")
        said = ", ".join(parts) or "bare"
        return f"{self.profile}: {said}" if self.profile and self.profile != "bare" else said

    def __str__(self) -> str:  # as a user names it: the profile, else the conditions
        return self.profile or self.describe()

    def to_dict(self) -> dict[str, float | int | str | bool | None]:
        return dataclasses.asdict(self)

    def settings(self, upstream: str, dialect: str, stats: str, owners: list[int],
                 seed: int) -> dict[str, object]:
        """The proxy's settings line (proxy/proxy.go)."""
        return {"upstream": upstream, "dialect": dialect, "rtt_ns": int(self.rtt * 1e9),
                "ttfb_ns": int(self.ttfb * 1e9), "window": self.window,
                "init_window": self.init_window, "idle_ns": int((0.2 + self.rtt) * 1e9),
                "conn_bps": self.conn_bandwidth,
                "total_bps": self.bandwidth, "rate": self.rate, "burst": self.burst,
                "errors": self.errors, "resets": self.resets, "corrupt": self.corrupt,
                "tail_every": self.tail_every, "tail_ns": int(self.tail * 1e9),
                "owners": owners, "stats": stats, "seed": seed}


def _ms(seconds: float) -> str:
    """A condition's time as it was asked: 10 ms, 0.5 ms (not 10.0 ms, 500 us)."""
    return f"{seconds * 1e3:.6g} ms"


# The named profiles: their numbers and where each comes from are in
# docs/how-to/store-conditions.md (a number without a published source is said to be ours).
# S3 Standard / OSS from a machine in the same region: a short network round trip, a first
# byte in tens of ms (S3 Express: "single-digit ms ... up to 10x faster than S3 Standard"),
# 50 MB/s a connection (the AWS CRT's 4 Gbit/s per address over 10 connections): a client
# is as fast as the requests it keeps in flight
IN_REGION = StoreConditions(rtt=2 * MS, ttfb=10 * MS, conn_bandwidth=CONNECTION, profile="in-region")

PROFILES: Mapping[str, StoreConditions] = {
    "bare": StoreConditions(profile="bare"),
    "in-region": IN_REGION,
    # the same store from another region (ours: a continental round trip)
    "cross-region": dataclasses.replace(IN_REGION, rtt=60 * MS, profile="cross-region"),
    # S3 Express One Zone in the same zone: single-digit ms first byte (no published figure
    # a connection: none set)
    "express": StoreConditions(rtt=0.5 * MS, ttfb=3 * MS, profile="express"),
    # in-region, at a store's request-rate limit (S3: 5,500 GET/s per prefix; OSS: 2,000
    # QPS for sequential names; here scaled to a 2-core runner: 200/s, burst 50)
    "throttled": dataclasses.replace(IN_REGION, rate=200.0, burst=50.0, profile="throttled"),
    # in-region with faults: 1% of requests a 5xx, 1% of replies reset mid-body, 1 in 100
    # held 200 ms (ours: a bad hour of a real store, for retry paths and data integrity)
    "faulty": dataclasses.replace(IN_REGION, errors=0.01, resets=0.01, tail_every=100,
                                  tail=200 * MS, profile="faulty"),
}


def profile(text: str, where: str) -> StoreConditions:
    found = PROFILES.get(text.strip().lower())
    if found is None:
        raise UsageError(f"{where}: not a store profile ({', '.join(PROFILES)})")
    return found


def duration(text: str, where: str) -> float:
    """'10ms', '0.5ms', '0' -> seconds."""
    try:
        ns = units.parse_duration_ns(text) if text.strip() not in ("0", "") else 0.0
    except ValueError as exc:
        raise UsageError(f"{where}: {exc}") from None
    if not 0 <= ns <= 60e9:
        raise UsageError(f"{where}: from 0 to 60 s")
    return ns / 1e9


def bandwidth(text: str, where: str) -> float:
    try:
        value = units.parse_bytes(text, rate=True) if text.strip() != "0" else 0.0
    except ValueError as exc:
        raise UsageError(f"{where}: {exc}") from None
    if value and not 1e3 <= value <= 1e12:
        raise UsageError(f"{where}: from 1kB/s to 1TB/s (or 0: none)")
    return value


RATE = re.compile(r"\s*([0-9]{1,9}(?:\.[0-9]{1,6})?)\s*(?:/s)?\s*(?:,\s*burst\s*=?\s*([0-9]{1,9}))?\s*")


def rate(text: str, where: str) -> tuple[float, float]:
    """'200/s' or '200/s,burst=50' -> (200, 50)."""
    m = RATE.fullmatch(text)
    if not m:
        raise UsageError(f"{where}: a rate such as 200/s or 200/s,burst=50 (0: none)")
    return float(m.group(1)), float(m.group(2) or 0)


def fraction(text: str, where: str) -> float:
    """'1%' or '0.01' -> 0.01."""
    value = text.strip()
    try:
        share = float(value[:-1]) / 100 if value.endswith("%") else float(value)
    except ValueError:
        share = -1.0
    if not re.fullmatch(r"[0-9.]{1,12}%?", value) or not 0 <= share <= 1:
        raise UsageError(f"{where}: a share from 0% to 100%, such as 1% or 0.01")
    return share


def tail(text: str, where: str) -> tuple[int, float]:
    """'1/100:200ms' -> one request in 100 held 200 ms."""
    m = re.fullmatch(r"\s*1\s*/\s*([0-9]{1,7})\s*:\s*(\S{1,20})\s*", text)
    if not m or int(m.group(1)) < 1:
        raise UsageError(f"{where}: a slow tail such as 1/100:200ms (one request in 100 held "
                         "200 ms)")
    return int(m.group(1)), duration(m.group(2), where)


def combined(base: StoreConditions, **given: object) -> StoreConditions:
    """A profile with the conditions given one by one (None: the profile's) over it."""
    changes = {k: v for k, v in given.items() if v is not None}
    if not changes:
        return base
    named = f"{base.profile}, changed" if base.profile and base.profile != "bare" else ""
    return dataclasses.replace(base, **changes, profile=named)  # type: ignore[arg-type]


def conditions_text(did: Mapping[str, float]) -> str:
    """What the proxy did in a window, for a reader: `812 requests: 12 throttled, 3 retried;
    first byte p50 12.1 ms, p99 14.0 ms`."""
    parts = [f"{int(did[k])} {word}" for k, word in (
        ("throttled", "throttled"), ("errors", "answered 5xx"), ("resets", "reset mid-body"),
        ("corrupted", "with a byte flipped"),
        ("held", "held (slow tail)"), ("retries", "retried")) if did.get(k)]
    first = [f"{p} {units.format_duration(did[f'first_byte_{p}'] * 1e9)}" for p in ("p50", "p99")
             if f"first_byte_{p}" in did]
    text = f"{int(did.get('requests', 0))} requests" + (
        f" over {int(did['connections'])} new connections" if did.get("connections") else "") + (
        f": {', '.join(parts)}" if parts else "")
    return text + (f"; first byte {', '.join(first)}" if first else "")
