"""The object requests behind the mount over a window: the store's counters (or JuiceFS's
.stats), JuiceFS's own counters, and what the store conditions' proxy did."""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from pytest_fsperf.measure.reading import Reading, Span
from pytest_fsperf.plan.conditions import conditions_text
from pytest_fsperf.result.store import Requests
from pytest_fsperf.store import juicefs
from pytest_fsperf.store import requests as store_requests
from pytest_fsperf.store.conditioner import Conditioned

NOT_HERE = "not counted here: this machine's JuiceFS client did not run the workload"


@dataclass(frozen=True)
class StoreReading(Reading):
    requests: Requests | None  # what the object store served in the window
    requests_note: str = ""  # why not, where not
    daemon_counters: dict[str, float] | None = None  # the daemon's own (JuiceFS .stats)


class StoreRequests:
    """Started at once (before the sampler): read around the whole window. here=False: the
    workload ran elsewhere: this machine's JuiceFS client's own counts are not taken for it
    (a store's counters are: they count every client)."""

    def __init__(self, found: tuple[store_requests.Meter | None, str], proxy: Conditioned | None,
                 juicefs_root: Callable[[], Path | None], here: bool) -> None:
        self.store, self.note = found
        if not here and isinstance(self.store, juicefs.StatsMeter):
            self.store, self.note = None, NOT_HERE
        self.own: juicefs.OwnMeter | None = None
        self._here, self._root = here, juicefs_root
        self.proxy = proxy
        self._before: dict[str, object] = {}

    def start(self) -> None:
        if self.proxy is not None:
            self._before = self.proxy.stats()
        if self.store is not None:
            try:
                self.store.start()
            except (OSError, ValueError) as exc:
                self.store, self.note = None, f"the store's metrics failed: {exc}"
        # JuiceFS's own counters: from the request meter's reads when .stats is that already
        stats_root = (None if isinstance(self.store, juicefs.StatsMeter) or not self._here
                      else self._root())
        self.own = juicefs.OwnMeter(stats_root) if stats_root is not None else None
        if self.own is not None:
            try:
                self.own.start()
            except (OSError, ValueError):
                self.own = None

    def stop(self, span: Span) -> StoreReading:
        requests, note, counters = None, self.note, None
        if self.store is not None:
            try:
                requests = self.store.stop()
            except (OSError, ValueError) as exc:
                note = f"the store's metrics failed: {exc}"
        if self.own is not None:
            with contextlib.suppress(OSError, ValueError):
                counters = self.own.stop()
        elif isinstance(self.store, juicefs.StatsMeter) and requests is not None:
            counters = self.store.counters
        if requests is not None and span.stored is not None:
            start = span.io_span[0] if span.io_span else span.began
            requests = dataclasses.replace(requests, stored_after=span.stored - start)
        if self.proxy is not None:  # what the store conditions did in the window
            did = self.proxy.window(self._before, self.proxy.stats())
            if requests is not None:
                requests = dataclasses.replace(requests, conditions=did)
            else:
                note += "; under the store conditions: " + conditions_text(did)
        return StoreReading(requests, note, counters)

    def received(self) -> float | None:
        """What the store has received since the window opened; None where not counted."""
        if isinstance(self.store, store_requests.RequestMeter):
            with contextlib.suppress(OSError, ValueError):
                return self.store.received()
        return None

    def abort(self) -> None:
        pass  # counters read twice: nothing held
