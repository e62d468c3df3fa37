"""JuiceFS counts its own client's object requests: the virtual file `.stats` in the mount
root is Prometheus text, one sample per line, the method in the name
(juicefs_object_request_durations_histogram_seconds_GET_total, ..._data_bytes_GET). Read around
a window it gives the requests of any JuiceFS mount, also one the plugin did not mount."""

from __future__ import annotations

import math
import re
from pathlib import Path

from prometheus_client.parser import text_string_to_metric_families

from pytest_fsperf.result.store import KINDS, Requests

STATS = ".stats"
_COUNT = re.compile(r"juicefs_object_request_durations_histogram_seconds_(\w+?)_total")
_BYTES = re.compile(r"juicefs_object_request_data_bytes_(\w+)")
METHOD_KIND = {"GET": "GET", "HEAD": "HEAD", "LIST": "LIST", "PUT": "PUT", "DELETE": "DELETE",
               "COPY": "COPY", "CreateMultipartUpload": "MULTIPART", "UploadPart": "MULTIPART",
               "CompleteMultipartUpload": "MULTIPART", "AbortMultipartUpload": "MULTIPART"}


def parse(text: str) -> dict[str, float]:
    """Every sample of .stats by its full name (the parser, not hand-split lines). Counters
    and levels are finite and not negative: anything else is a ValueError (the figures of
    that window are then "not measured", with this reason)."""
    found = {s.name: s.value for family in text_string_to_metric_families(text)
             for s in family.samples if not s.labels}
    for name, value in found.items():
        if not math.isfinite(value) or value < 0:
            raise ValueError(f"JuiceFS .stats gives {name} = {value}, not a count")
    return found


def stats_root(mount_point: str, fstype: str) -> Path | None:
    """The mount's root where it is a JuiceFS mount with its .stats file, else None; decided
    by the mount table first (no stat() on any other mount, no `.stats` object of another
    filesystem's bucket taken for counts)."""
    root = Path(mount_point)  # .stats is in the mount's root, not a subdirectory
    return root if fstype == "fuse.juicefs" and has_stats(root) else None


def has_stats(mount: Path) -> bool:
    try:
        return (mount / STATS).is_file()
    except OSError:
        return False


def difference(before: dict[str, float], after: dict[str, float]) -> Requests:
    def grew(name: str) -> int:
        was, now = before.get(name, 0.0), after.get(name, 0.0)
        if now < was:
            raise ValueError(f"JuiceFS .stats: {name} went down from {was:g} to {now:g} "
                             "(the client restarted?)")
        return int(now - was)

    by_api: dict[str, int] = {}
    data: dict[str, int] = {}
    for name in after:
        if m := _COUNT.fullmatch(name):
            by_api[m[1]] = grew(name)
        elif m := _BYTES.fullmatch(name):
            data[m[1]] = grew(name)
    by_api = {k: n for k, n in by_api.items() if n}
    by_kind = dict.fromkeys(KINDS, 0)
    for method, n in by_api.items():
        by_kind[METHOD_KIND.get(method, "OTHER")] += n
    received = sum(n for m, n in data.items() if METHOD_KIND.get(m) in ("PUT", "MULTIPART"))
    # JuiceFS counts failed requests without their status: they are not 4xx or 5xx here
    return Requests(by_kind, by_api, 0, 0, data.get("GET", 0), received,
                    source="JuiceFS .stats", errors_unclassified=grew("juicefs_object_request_errors"))


class StatsMeter:
    """A JuiceFS mount's own object-request counters around a window."""

    def __init__(self, mount: Path) -> None:
        self.path = mount / STATS
        self._before: dict[str, float] | None = None
        self.counters: dict[str, float] = {}  # JuiceFS's own counters over the last window

    def read(self) -> dict[str, float]:
        return parse(self.path.read_text("utf-8", "replace"))

    def start(self) -> None:
        self._before = self.read()

    def stop(self) -> Requests:
        assert self._before is not None, "start() first"
        after = self.read()
        self.counters = own_counters(self._before, after)  # the same reads serve both
        return difference(self._before, after)


OWN = {  # what JuiceFS says of itself, by .stats name: (our key, summed counter or level)
    "juicefs_fuse_ops_durations_histogram_seconds_total": ("fuse_ops", True),
    "juicefs_transaction_durations_histogram_seconds_total": ("meta_transactions", True),
    "juicefs_blockcache_hits": ("blockcache_hits", True),
    "juicefs_blockcache_miss": ("blockcache_misses", True),
    "juicefs_blockcache_hit_bytes": ("blockcache_hit_bytes", True),
    "juicefs_blockcache_miss_bytes": ("blockcache_miss_bytes", True),
    "juicefs_object_request_errors": ("object_errors", True),
    "juicefs_cpu_usage": ("cpu_seconds", True),
    "juicefs_memory": ("memory_bytes", False),
}


def own_counters(before: dict[str, float], after: dict[str, float]) -> dict[str, float]:
    """JuiceFS's own counters over a window: FUSE operations, metadata transactions, block
    cache hits and misses, its CPU seconds (differences) and its memory (at the end)."""
    out: dict[str, float] = {}
    for name, (key, counter) in OWN.items():
        if name in after and not (counter and after[name] < before.get(name, 0.0)):
            out[key] = after[name] - before.get(name, 0.0) if counter else after[name]
    for name, value in after.items():  # object time per method: seconds spent in requests
        if (m := re.fullmatch(r"juicefs_object_request_durations_histogram_seconds_(\w+?)_sum",
                              name)):
            spent = value - before.get(name, 0.0)
            if spent > 0:
                out[f"object_seconds_{m[1]}"] = spent
    return out


class OwnMeter:
    """JuiceFS's own counters (.stats) around a window, whatever counts the requests."""

    def __init__(self, mount: Path) -> None:
        self.stats = StatsMeter(mount)
        self._before: dict[str, float] = {}

    def start(self) -> None:
        self._before = self.stats.read()

    def stop(self) -> dict[str, float]:
        return own_counters(self._before, self.stats.read())
