"""Each ceiling measured once per session and shape (--fsperf-ceilings)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pytest_fsperf.ceilings.fuse import fuse_ceilings
from pytest_fsperf.ceilings.store import Op, Shape, shape_of, store_ceiling
from pytest_fsperf.result.ceiling import Ceiling, Path, missing
from pytest_fsperf.runner.target import Session, Target

FIO_ONLY = "measured for fio jobs only (the same job is run on tmpfs and through bindfs)"

STORE_FIELDS = ("endpoint", "bucket", "access_key", "secret_key", "region")


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
            self._found[key] = (missing(Path.TMPFS, FIO_ONLY), missing(Path.FUSE, FIO_ONLY),
                                store_ceiling(store, shape))
        return self._found[key]

    def for_listing(self, entries: int, store: Mapping[str, Any] | None) -> tuple[Ceiling, ...]:
        """The metadata engine's: the store's listing of as many objects as it has entries,
        one listing at a time (what a client that takes sizes and times from LIST alone can
        reach), in entries per second."""
        shape = Shape(Op.LIST, 1, 0, 0, entries)
        key = ("meta", shape, (store.get("endpoint"), store.get("bucket")) if store else None)
        if key not in self._found:
            self._found[key] = (missing(Path.TMPFS, FIO_ONLY), missing(Path.FUSE, FIO_ONLY),
                                store_ceiling(store, shape))
        return self._found[key]
