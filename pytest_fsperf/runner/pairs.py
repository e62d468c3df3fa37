"""The pairs of an interleaved A/B as they stood when it stopped (ab.py), kept by the
session's clock for a second pass (budget.py); and which runs may stand in a pair."""

from __future__ import annotations

from dataclasses import dataclass

from pytest_fsperf.result.workload import WorkloadResult
from pytest_fsperf.vocab import ColdRead


@dataclass(frozen=True)
class Pairs:
    a: list[WorkloadResult]
    b: list[WorkloadResult]
    order: str
    stopped: str
    seconds: float
    dropped: tuple[str, ...] = ()  # runs not used, each with why
    died: tuple[str, ...] = ()  # runs whose daemon died (also in dropped), e.g. "B3"
    out_of_time: bool = False  # stopped undecided because the time budget was spent
    last_pair: float = 0.0  # seconds the last pair took, cold starts included
    layout: float = 0.0  # seconds before the first pair and laying files out (a second pass pays it again)
    offsets: tuple[float, ...] = ()  # per pair: its neighbours adjustment of ln(B/A)
    adjusted: str = ""  # what was adjusted, said (judge/neighbours.py)


SETTLE_MAX = 10.0  # seconds, at most, waiting for the machine to settle after a spoilt pair
RERUNS = 1  # a run that is not valid is run again this often before its pair is dropped
MAX_DROPPED = 3  # pairs dropped before the comparison stops as unstable ...
DROPPED_SHARE = 0.2  # ... once they are also more than this share of the pairs tried


def too_many_dropped(dropped: int, kept: int) -> bool:
    """Whether the pairs dropped say the comparison cannot get valid pairs: MAX_DROPPED at
    least, and more than DROPPED_SHARE of all tried. A long comparison drops a pair now and
    then (the metadata gate benchmark: 5 pairs in 26 trials, up to 2 in one of 60 pairs);
    that is not a machine that cannot be measured."""
    return dropped >= MAX_DROPPED and dropped > DROPPED_SHARE * (dropped + kept)


def why_dropped(invalid_pairs: int, machine_pairs: int) -> str:
    """Why pairs were dropped, in a few words: runs not valid after their rerun, the
    machine changed within the pair, or both."""
    kinds = [f"{invalid_pairs} with a run not valid after its rerun"] if invalid_pairs else []
    if machine_pairs:
        kinds.append(f"{machine_pairs} where the machine changed within the pair")
    return ", ".join(kinds)


def invalid(r: WorkloadResult, fresh_is_usual: bool) -> str:
    """Why a run may not stand in a pair ("" where it may): a cold read the page cache
    served (the daemon did not send the bytes) measures the cache, not the daemon; files
    made just for this run (laid out or created by it) where the other runs find theirs in
    place read and write unlike them (issue 24: a freshly written file read through bindfs
    up to 2x faster than a rewritten one)."""
    if r.cold_read == ColdRead.NOT_COLD:
        return f"{r.name}: not cold ({r.cold_evidence})"
    if r.fresh_files and not fresh_is_usual:
        return f"{r.name}: its files were made just for it (the other runs reuse theirs)"
    return ""


SETTLE_CACHE = 32 << 20  # bytes of page cache a run must fill for settling to matter


def fills_cache(r: WorkloadResult) -> bool:
    """The run filled page cache (of the mount, or of the daemon's backing files, as bindfs
    over a disk does even for direct reads): memory a VM's free page reporting may have handed
    back to the host. At least half the bytes it moved (and SETTLE_CACHE): the page cache is
    the whole machine's. (Free memory was tried first and moved by tens of MB, once by 256,
    around runs for other reasons: processes ending, memory freed.) Unknown counts as filled."""
    return (r.cache_filled is None
            or r.cache_filled >= max(SETTLE_CACHE, r.io_bytes // 2))
