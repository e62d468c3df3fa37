"""The report's rows: each workload's result made once, from its JSON form (this run's, a
worker's, a saved run's), into a frozen dataclass whose words are enums. The renderers read
attributes, never keys of the JSON; tests/test_golden.py checks every field against the
schema (report/schema.json)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields
from typing import Any

from pytest_fsperf.vocab import ColdRead, DaemonCache, EngineKind, Outcome, PageCache, Text


def _word(kind: type[Text], value: object) -> str:
    """A word of the vocabulary as its enum (a str); a word this version does not know (a
    saved run of another) as it was written."""
    try:
        return kind(value)
    except ValueError:
        return str(value) if value is not None else ""


@dataclass(frozen=True)
class ResultRow:
    """One measured workload, as every report shows it."""

    test: str
    name: str
    kind: str  # an EngineKind
    verdict: Outcome = Outcome.NOT_JUDGED
    verdict_own: Outcome = Outcome.NOT_JUDGED  # by the test's own thresholds alone
    judged: bool = True
    scenario: str | None = None
    cache: str = ""  # a PageCache
    daemon_cache: str | None = None  # a DaemonCache
    cold_read: str | None = None  # a ColdRead
    wall_seconds: float = 0.0
    tool_cpu_percent: float | None = None  # the load generator's own CPU over the window
    ops: Mapping[str, Any] | None = None  # the small-file or metadata engine's run
    total: Mapping[str, Any] = field(default_factory=dict)  # the headline figures (medians)
    read: Mapping[str, Any] | None = None
    write: Mapping[str, Any] | None = None
    rounds: tuple[Mapping[str, Any], ...] = ()
    stats: Mapping[str, Any] = field(default_factory=dict)  # per figure over rounds
    daemon: Mapping[str, Any] | None = None
    daemon_note: str = ""
    daemon_counters: Mapping[str, float] | None = None
    memory: Mapping[str, Any] | None = None  # the daemon's cgroup: limit, peak, oom_kills
    rss_before: int | None = None  # the daemon's RSS before the window (with rss_after)
    rss_after: int | None = None  # and --fsperf-rss-settle s after it: what it gave back
    page_cache: int | None = None  # what the workload's processes took of the page cache
    cache_disk_peak_bytes: int | None = None
    requests: Mapping[str, Any] | None = None
    requests_note: str = ""
    cost: Mapping[str, Any] | None = None
    fuse: Mapping[str, Any] | None = None
    fuse_note: str = ""
    timeline: Mapping[str, Any] | None = None
    clients: tuple[Mapping[str, Any], ...] = ()
    ceilings: tuple[Mapping[str, Any], ...] = ()
    mount: Mapping[str, Any] | None = None
    notes: tuple[str, ...] = ()
    failures: tuple[str, ...] = ()  # why it failed or is undecided, one line each
    not_judged: tuple[str, ...] = ()  # thresholds that could not be judged (PARTIAL)
    limits: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)  # threshold lines
    baseline: Mapping[str, Any] | None = None  # the shipped or saved baseline it was checked against
    baseline_key: str | None = None
    baseline_checks: tuple[Mapping[str, Any], ...] = ()
    run_comparison: Mapping[str, Any] | None = None
    doc: Mapping[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def of(cls, doc: Mapping[str, Any]) -> ResultRow:
        """The row of a result's JSON form; what it lacks takes the defaults above."""
        verdict = Outcome.of(doc.get("verdict"))
        seq = ("rounds", "clients", "ceilings", "notes", "failures", "not_judged",
               "baseline_checks")
        given: dict[str, Any] = {k: doc[k] for k in FIELDS if doc.get(k) is not None}
        given.update({k: tuple(doc.get(k) or ()) for k in seq})
        given.update(
            kind=_word(EngineKind, doc.get("kind")), verdict=verdict,
            verdict_own=Outcome.of(doc["verdict_own"]) if "verdict_own" in doc else verdict,
            cache=_word(PageCache, doc.get("cache")), doc=doc,
            daemon_cache=_word(DaemonCache, doc["daemon_cache"]) if doc.get("daemon_cache") else None,
            cold_read=_word(ColdRead, doc["cold_read"]) if doc.get("cold_read") else None)
        return cls(**given)

    @property
    def key(self) -> tuple[str, str]:
        return (self.test, self.name)


FIELDS = frozenset(f.name for f in fields(ResultRow)) - {"doc"}


def rows(results: Sequence[Mapping[str, Any] | ResultRow]) -> list[ResultRow]:
    """Each result as its row (made once; rows given are kept)."""
    return [r if isinstance(r, ResultRow) else ResultRow.of(r) for r in results]
