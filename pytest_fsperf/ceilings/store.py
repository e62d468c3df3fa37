"""The object store's ceiling: the same transfer as a workload, done straight against the
store by a fast, well-kept client (obstore: Rust's object_store), at the workload's
concurrency - GET or PUT throughput, or HEAD and LIST rates.

It uses the backend's endpoint, bucket and credentials (the embedded MinIO by default),
writes only under a prefix of its own (fsperf-ceiling-<random>/) and removes it. obstore
against awscrt, measured here: benchmarks/store_clients.py.
"""

from __future__ import annotations

import enum
import os
import secrets
import time
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pytest_fsperf.engine.fiosize import parse_fio_size
from pytest_fsperf.result.ceiling import Ceiling, CeilingPath, missing

if TYPE_CHECKING:
    from obstore.store import ClientConfig  # a stub's type only

MIB = 1 << 20
PART = 8 * MIB  # sequential transfers go in parts of this size (the CRT's default too)
MOST = 256 * MIB  # bytes laid out per ceiling at most (read over and over for SECONDS)


class Op(enum.Enum):
    GET = "GET"
    PUT = "PUT"
    HEAD = "HEAD"
    LIST = "LIST"


@dataclass(frozen=True)
class Shape:
    """What the store is asked to do: `streams` at once, each over an object of its own of
    `object_bytes`, in requests of `part_bytes` (HEAD and LIST: `count` requests in all)."""

    op: Op
    streams: int
    object_bytes: int
    part_bytes: int
    count: int = 0

    def shown(self) -> str:
        if self.op == Op.LIST:
            return (f"LIST of a prefix of {self.count:,} objects, {self.streams} listing at a "
                    "time: entries per second")
        if self.op == Op.HEAD:
            return f"{self.op.value} x{self.count}, {self.streams} at a time"
        streams = f"{self.op.value} {self.streams} stream{'s' if self.streams > 1 else ''}"
        if self.op == Op.PUT:
            return f"{streams} of {_mib(self.part_bytes)} objects"
        return f"{streams} of {_mib(self.part_bytes)} parts ({_mib(self.object_bytes)} objects)"


def _mib(n: int) -> str:
    return f"{n / MIB:g} MiB" if n >= MIB else f"{n >> 10} KiB"


def shape_of(job: Mapping[str, str]) -> Shape | None:
    """The store transfer behind a fio job: its reads as GETs, its writes as PUTs, at its
    jobs times its depth; sequential in PART-sized parts, random in its block size.
    None: a mixed job (no one ceiling says what it should reach)."""
    rw = job.get("rw", job.get("readwrite", "read"))
    if rw in ("read", "randread"):
        op = Op.GET
    elif rw in ("write", "randwrite"):
        op = Op.PUT
    else:
        return None
    streams = int(job.get("numjobs", "1") or 1) * int(job.get("iodepth", "1") or 1)
    size = min(parse_fio_size(job.get("size", "64M")), MOST // max(1, streams))
    block = parse_fio_size(job.get("bs", "4k"))
    part = block if rw.startswith("rand") else max(block, PART)
    return Shape(op, streams, max(size, block), min(part, max(size, block)))


class Store:
    """obstore over one bucket, under a prefix of this session's own."""

    def __init__(self, config: Mapping[str, Any]) -> None:
        from obstore.store import S3Store

        endpoint = str(config.get("s3_endpoint") or config["endpoint"])  # (OSS: its gateway)
        self.prefix = f"fsperf-ceiling-{secrets.token_hex(6)}/"
        options: ClientConfig = {"allow_http": endpoint.startswith("http://")}
        if config.get("ca_file"):  # the store over TLS, as the daemon reads it: the same CA
            with open(str(config["ca_file"]), encoding="ascii") as f:
                options["root_certificate"] = f.read()
        self.store = S3Store(str(config["bucket"]), endpoint=endpoint,
                             access_key_id=str(config["access_key"]),
                             secret_access_key=str(config["secret_key"]),
                             region=str(config.get("region") or "us-east-1"),
                             client_options=options)
        self.made: list[str] = []

    def put(self, name: str, data: bytes) -> int:
        import obstore

        key = self.prefix + name
        self.made.append(key)
        obstore.put(self.store, key, data, use_multipart=len(data) > PART, chunk_size=PART,
                    max_concurrency=1)
        return len(data)

    def get(self, name: str, start: int, end: int) -> int:
        import obstore

        return len(obstore.get_range(self.store, self.prefix + name, start=start, end=end))

    def head(self, name: str) -> int:
        import obstore

        obstore.head(self.store, self.prefix + name)
        return 0

    def list(self) -> int:
        """List the prefix, every page; the entries listed."""
        import obstore

        return sum(len(batch) for batch in obstore.list(self.store, self.prefix))

    def remove(self) -> None:
        """Every object this session put (only those: nothing else under any prefix)."""
        import obstore

        for i in range(0, len(self.made), 1000):
            obstore.delete(self.store, self.made[i:i + 1000])
        self.made.clear()


def unavailable(config: Mapping[str, Any] | None) -> str:
    if not config or not config.get("endpoint") or not config.get("bucket"):
        return "no object store behind this mount known to the plugin (an endpoint and bucket)"
    if not config.get("access_key"):
        return "not an S3 or OSS store (obstore reads those here: Azurite and fake-gcs-server are not)"
    try:
        import obstore  # noqa: F401
    except ImportError:
        return "obstore is not installed (pip install 'pytest-fsperf[ceilings]')"
    return ""


def store_ceiling(config: Mapping[str, Any] | None, shape: Shape) -> Ceiling:
    """The store's rate for `shape`, from a client that moves bytes and nothing else."""
    why = unavailable(config)
    if why:
        return missing(CeilingPath.STORE, why)
    assert config is not None
    t0 = time.monotonic()
    store = Store(config)
    note = ""
    try:
        moved, requests, seconds = _measure(store, shape)
    except Exception as exc:  # obstore raises its own errors for HTTP and I/O failures
        return missing(CeilingPath.STORE, f"the store refused the ceiling's requests: {exc}")
    finally:
        try:
            store.remove()
        except Exception as exc:  # said in the ceiling, never raised over the workload's result
            note = f"its objects under {store.prefix} could not all be removed: {exc}"
    if shape.op == Op.LIST:  # a rate of entries, not of bytes or of requests
        return Ceiling(CeilingPath.STORE, f"obstore, {shape.shown()}", 0.0, moved / seconds, requests,
                       time.monotonic() - t0, note=note)
    return Ceiling(CeilingPath.STORE, f"obstore, {shape.shown()}", moved / seconds if moved else 0.0,
                   requests / seconds, requests, time.monotonic() - t0, note=note)


SECONDS = 2.0  # each stream repeats its requests for this long: a steady rate, cheaply
LAYOUT_STREAMS = 16  # PUTs at once when laying out a listing's objects (not timed)


def _timed(streams: int, one: Callable[[int, int], int]) -> tuple[int, int, float]:
    """Every stream calls one(stream, n) for n = 0, 1, ... until SECONDS have passed, all
    streams at once: (bytes moved, requests, seconds)."""
    deadline = time.monotonic() + SECONDS

    def stream(i: int) -> tuple[int, int]:
        moved = n = 0
        while time.monotonic() < deadline:
            moved += one(i, n)
            n += 1
        return moved, n

    with ThreadPoolExecutor(streams) as pool:
        t = time.monotonic()
        done = list(pool.map(stream, range(streams)))
        seconds = time.monotonic() - t
    return sum(b for b, _ in done), sum(r for _, r in done), seconds


def _measure(store: Store, shape: Shape) -> tuple[int, int, float]:
    if shape.op == Op.LIST:  # `count` empty objects laid out, listed whole over and over
        with ThreadPoolExecutor(LAYOUT_STREAMS) as pool:
            list(pool.map(lambda n: store.put(f"e{n}", b""), range(shape.count)))
        return _timed(shape.streams, lambda i, n: store.list())
    data = os.urandom(shape.part_bytes if shape.op == Op.PUT else shape.object_bytes)
    if shape.op == Op.PUT:  # each request a whole object of one part
        return _timed(shape.streams, lambda i, n: store.put(f"p{i}-{n}", data))
    with ThreadPoolExecutor(shape.streams) as pool:  # laid out first, not timed
        list(pool.map(lambda i: store.put(f"o{i}", data), range(shape.streams)))
    if shape.op == Op.HEAD:
        return _timed(shape.streams, lambda i, n: store.head(f"o{i}"))
    parts = max(1, shape.object_bytes // shape.part_bytes)

    def get(i: int, n: int) -> int:
        start = (n % parts) * shape.part_bytes
        return store.get(f"o{i}", start, min(shape.object_bytes, start + shape.part_bytes))
    return _timed(shape.streams, get)
