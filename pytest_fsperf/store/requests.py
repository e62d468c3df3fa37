"""What a workload asked of the object store, counted by the server itself.

MinIO serves per-API counters as Prometheus text (`/minio/metrics/v3/api/requests`, readable
without a token when the server runs with MINIO_PROMETHEUS_AUTH_TYPE=public, as the plugin's
own MinIO does): requests per API, 4xx and 5xx errors, bytes sent and received. They are read
before and after a measured window and the difference is the workload's. (The v2 endpoint,
/minio/v2/metrics/node, serves these from a cache refreshed every 10 s here: a window would
count its requests late, in the next one. v3 counts them as they happen.) A server whose
metrics cannot be read gives no figures and a reason, never zeros.
"""

from __future__ import annotations

import math
import time
import urllib.error
import urllib.request
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from prometheus_client.parser import text_string_to_metric_families

from pytest_fsperf.result.store import KINDS, Requests

PATH = "/minio/metrics/v3/api/requests"
API_KIND = {
    "getobject": "GET", "headobject": "HEAD",
    "listobjectsv1": "LIST", "listobjectsv2": "LIST", "listobjectversions": "LIST",
    "listmultipartuploads": "LIST", "listobjectparts": "LIST",
    "putobject": "PUT",
    "newmultipartupload": "MULTIPART", "putobjectpart": "MULTIPART",
    "completemultipartupload": "MULTIPART", "abortmultipartupload": "MULTIPART",
    "copyobject": "COPY", "copyobjectpart": "COPY",
    "deleteobject": "DELETE", "deletemultipleobjects": "DELETE",
}


@dataclass(frozen=True)
class Snapshot:
    """The server's counters at one moment, as they are (totals since it started)."""

    requests: Mapping[str, float]  # by API name
    errors_4xx: float
    errors_5xx: float
    sent: float | None
    received: float | None
    errors: Mapping[str, float] = field(default_factory=dict)  # 4xx and 5xx by API name
    ttfb: Mapping[float, float] = field(default_factory=dict)  # le (s) -> count, all S3 APIs


def combined(parts: Sequence[Requests], source: str) -> Requests:
    """Several clients' own counts as one (their time-to-first-byte percentiles do not add:
    left out)."""
    def add(key: str, maps: Sequence[Mapping[str, int]]) -> dict[str, int]:
        out: dict[str, int] = {}
        for m in maps:
            for k, n in m.items():
                out[k] = out.get(k, 0) + n
        return out

    def total(values: Sequence[int | None]) -> int | None:
        return None if any(v is None for v in values) else sum(v or 0 for v in values)

    return Requests(add("kind", [p.by_kind for p in parts]), add("api", [p.by_api for p in parts]),
                    sum(p.errors_4xx for p in parts), sum(p.errors_5xx for p in parts),
                    total([p.sent_bytes for p in parts]), total([p.received_bytes for p in parts]),
                    source=source, errors_by_kind=add("errors", [p.errors_by_kind for p in parts]),
                    errors_unclassified=sum(p.errors_unclassified for p in parts))


def parse(text: str) -> Snapshot:
    """MinIO's v3 API metrics text into a snapshot (the Prometheus parser, not regexes);
    S3 API calls only (type="s3"), by API name in lower case (getobject, headobject, ...)."""
    requests: dict[str, float] = {}
    errors = {"4xx": 0.0, "5xx": 0.0}
    by_api: dict[str, float] = {}
    traffic: dict[str, float] = {}
    ttfb: dict[float, float] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.labels.get("type", "s3") != "s3":
                continue
            api = sample.labels.get("name", "").lower()
            if sample.name == "minio_api_requests_total" and api:
                requests[api] = requests.get(api, 0.0) + sample.value
            elif sample.name in ("minio_api_requests_4xx_errors_total",
                                 "minio_api_requests_5xx_errors_total"):
                errors["4xx" if "_4xx_" in sample.name else "5xx"] += sample.value
                by_api[api] = by_api.get(api, 0.0) + sample.value
            elif sample.name.startswith("minio_api_requests_ttfb_seconds_distribution"):
                le = float(sample.labels.get("le", "inf"))
                ttfb[le] = ttfb.get(le, 0.0) + sample.value
            elif family.name.startswith("minio_api_requests_traffic_"):
                # the parser names a counter's sample NAME_total: the family keeps MinIO's name
                traffic[family.name] = traffic.get(family.name, 0.0) + sample.value
    return Snapshot(requests, errors["4xx"], errors["5xx"],
                    traffic.get("minio_api_requests_traffic_sent_bytes"),
                    traffic.get("minio_api_requests_traffic_received_bytes"), by_api, ttfb)


def at_most(counts: Mapping[float, float], q: float) -> float | None:
    """The upper edge of the cumulative histogram bucket that holds quantile q; None where
    nothing was counted, inf where it lies past the last finite edge."""
    edges = sorted(counts)
    if not edges or counts[edges[-1]] <= 0:
        return None
    need = q * counts[edges[-1]]
    return next(le for le in edges if counts[le] >= need)


def difference(before: Snapshot, after: Snapshot) -> Requests:
    by_api = {api: int(after.requests.get(api, 0) - before.requests.get(api, 0))
              for api in sorted(set(after.requests) | set(before.requests))}
    by_api = {api: n for api, n in by_api.items() if n}
    by_kind = dict.fromkeys(KINDS, 0)
    for api, n in by_api.items():
        by_kind[API_KIND.get(api, "OTHER")] += n

    def grew(a: float | None, b: float | None) -> int | None:
        # MinIO shows a traffic counter from its first byte on: absent before means 0
        return int(b - (a or 0.0)) if b is not None else None

    errors = dict.fromkeys(KINDS, 0)
    for api in set(after.errors) | set(before.errors):
        errors[API_KIND.get(api, "OTHER")] += int(after.errors.get(api, 0) - before.errors.get(api, 0))
    ttfb = {le: after.ttfb[le] - before.ttfb.get(le, 0.0) for le in after.ttfb}
    percentiles = {name: edge for name, q in (("p50", 0.5), ("p90", 0.9), ("p99", 0.99))
                   if (edge := at_most(ttfb, q)) is not None and math.isfinite(edge)}
    return Requests(by_kind, by_api, int(after.errors_4xx - before.errors_4xx),
                    int(after.errors_5xx - before.errors_5xx),
                    grew(before.sent, after.sent), grew(before.received, after.received),
                    errors_by_kind={k: n for k, n in errors.items() if n},
                    ttfb_at_most=percentiles)


class Meter(Protocol):
    """Counts a window's object requests: the store's own metrics or the daemon's counters."""

    def start(self) -> None: ...

    def stop(self) -> Requests: ...


class RequestMeter:
    """Reads a MinIO server's counters around a window."""

    def __init__(self, endpoint: str, settle: float = 3.0) -> None:
        self.url = endpoint.rstrip("/") + PATH
        self.settle = settle
        self._before: Snapshot | None = None

    def read_once(self) -> Snapshot:
        with urllib.request.urlopen(self.url, timeout=5) as resp:
            return parse(resp.read().decode("utf-8", "replace"))

    def read(self) -> Snapshot:
        """The counters once they stopped moving: a request the daemon sent just before the
        window closed may still be counted a moment later. Two equal reads 0.2 s apart, at
        most `settle` s."""
        last = self.read_once()
        deadline = time.monotonic() + self.settle
        while time.monotonic() < deadline:
            time.sleep(0.2)
            now = self.read_once()
            if now == last:
                return now
            last = now
        return last

    def start(self) -> None:
        self._before = self.read()

    def received(self) -> float | None:
        """Bytes the store received since start(), read now (MinIO shows the counter from
        its first byte on: absent means 0)."""
        if self._before is None:
            return None
        now = self.read_once().received
        return (now or 0.0) - (self._before.received or 0.0)

    def stop(self) -> Requests:
        assert self._before is not None, "start() first"
        return difference(self._before, self.read())


def probe(endpoint: str | None) -> tuple[RequestMeter | None, str]:
    """A meter for `endpoint`, or None and why its requests cannot be counted."""
    if not endpoint:
        return None, ""  # no object store behind the mount (bindfs, a local rclone remote)
    meter = RequestMeter(endpoint)
    try:
        snap = meter.read_once()
    except urllib.error.HTTPError as exc:
        return None, (f"the store's metrics ({meter.url}) answered HTTP {exc.code}: not MinIO, or "
                      "its metrics need a token (MINIO_PROMETHEUS_AUTH_TYPE=public opens them)")
    except (OSError, ValueError) as exc:
        return None, f"the store's metrics ({meter.url}) could not be read: {exc}"
    if not snap.requests and snap.sent is None:
        return None, f"{meter.url} has no MinIO request counters"
    return meter, ""
