"""Each ceiling measured once per session and shape (--fsperf-ceilings)."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from typing import Any

from pytest_fsperf.ceilings.fuse import fuse_ceilings
from pytest_fsperf.ceilings.store import Op, Shape, shape_of, store_ceiling
from pytest_fsperf.result.ceiling import Ceiling, CeilingPath, missing
from pytest_fsperf.result.workload import WorkloadResult
from pytest_fsperf.runner.space import Space
from pytest_fsperf.runner.target import Session, Target
from pytest_fsperf.vocab import EngineKind, FilesOp

FIO_ONLY = "measured for fio jobs only (the same job is run on tmpfs and through bindfs)"

# s3_endpoint: where an S3 client reaches an OSS store (the plugin's gateway); ca_file: the
# CA its TLS proxy is signed by (the ceiling reads the store as the daemon does)
STORE_FIELDS = ("endpoint", "bucket", "access_key", "secret_key", "region", "s3_endpoint", "ca_file")


def store_config(target: Target) -> dict[str, Any] | None:
    """The object store behind a mount the plugin owns, where its config names one."""
    owned = target.owned
    if owned is None:
        return None
    fields = owned.rendered.fields
    if not fields.get("endpoint") or not fields.get("bucket"):
        return None
    return {k: fields[k] for k in STORE_FIELDS if fields.get(k) is not None}


class Ceilings:
    """The session's ceilings by job shape and store: measured at the first workload of each
    shape, then reused (their cost said once, in the first)."""

    def __init__(self, session: Session) -> None:
        self.session = session
        self._found: dict[tuple[Any, ...], tuple[Ceiling, ...]] = {}

    def for_job(self, job: Mapping[str, str], store: Mapping[str, Any] | None) -> tuple[Ceiling, ...]:
        key = (tuple(sorted(job.items())),
               (store.get("endpoint"), store.get("bucket")) if store else None)
        if key not in self._found:
            tmpfs, fuse = fuse_ceilings(self.session, dict(job))
            shape = shape_of(job)
            self._found[key] = (tmpfs, fuse) + ((store_ceiling(store, shape),) if shape else ())
        return self._found[key]

    def for_files(self, options: Mapping[str, str], store: Mapping[str, Any] | None
                  ) -> tuple[Ceiling, ...]:
        """The small-file engine's (its result's options: mode, size, threads): the store's,
        GETs or PUTs of whole objects of its file size, its threads at once."""
        size = int(options["size"])
        shape = Shape(Op.GET if options["mode"] == "read" else Op.PUT, int(options["threads"]),
                      size, size)
        key = ("files", shape, (store.get("endpoint"), store.get("bucket")) if store else None)
        if key not in self._found:
            self._found[key] = (missing(CeilingPath.TMPFS, FIO_ONLY), missing(CeilingPath.FUSE, FIO_ONLY),
                                store_ceiling(store, shape))
        return self._found[key]

    def for_listing(self, entries: int, store: Mapping[str, Any] | None) -> tuple[Ceiling, ...]:
        """The metadata engine's: the store's listing of as many objects as it has entries,
        one listing at a time (what a client that takes sizes and times from LIST alone can
        reach), in entries per second."""
        shape = Shape(Op.LIST, 1, 0, 0, entries)
        key = ("meta", shape, (store.get("endpoint"), store.get("bucket")) if store else None)
        if key not in self._found:
            self._found[key] = (missing(CeilingPath.TMPFS, FIO_ONLY), missing(CeilingPath.FUSE, FIO_ONLY),
                                store_ceiling(store, shape))
        return self._found[key]

    def beside(self, ws: Space) -> Callable[[WorkloadResult], WorkloadResult]:
        """What finishes each judged result of a workspace: the ceilings of its shape beside it."""
        return lambda r: self.finish(ws.target, r)

    def finish(self, target: Target, r: WorkloadResult) -> WorkloadResult:
        """A finished judged result with the ceilings of its shape, measured after it (never
        inside its window or its cold start): a fio job's three; the small-file and metadata
        engines' store's. Many clients: none (no one client's shape bounds them all)."""
        if r.clients:
            return r
        store = store_config(target)
        wrote = ((r.write is not None and r.write.io_bytes > 0)
                 or (r.ops is not None and r.ops.operation == FilesOp.WRITE))
        if store is not None and wrote:  # the store's ceiling must not share the store with
            target.settle_uploads()  # the daemon's upload backlog (rclone)
        if r.kind == EngineKind.FIO:
            return dataclasses.replace(r, ceilings=self.for_job(r.options, store))
        if r.kind == EngineKind.FILES:
            return dataclasses.replace(r, ceilings=self.for_files(r.options, store))
        if r.kind == EngineKind.META:
            return dataclasses.replace(r, ceilings=self.for_listing(int(r.options["entries"]), store))
        return r
