"""Relative baselines: what a document says one option set (or build) gains over another,
as an expected ratio B/A, checked by an A/B of the user's own (fsperf.compare(...,
expect="NAME:ENTRY")). Document 002 gives only such figures for ossfs 1.91+: `ls` of 1,000
files 74.3% less time with -o readdir_optimize, 10 files of 10 GB read 79% faster with
-o direct_read, each against 1.91+ without the option and against 1.88.x."""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

from pytest_fsperf.baselines import Baseline, load
from pytest_fsperf.errors import UsageError
from pytest_fsperf.result.judged import AS_DOCUMENTED, LARGER, SMALLER, UNDECIDED, Expectation


@dataclass(frozen=True)
class RelativeEntry:
    name: str
    scenario: str  # the workload both sides run
    a: str  # what A is, as the document says
    b: str
    b_options: tuple[str, ...]  # the option B adds, where A is the same build without it
    printed: str  # as the document printed it: "74.3%" less time
    less_time: float  # 0.743: B takes 25.7% of A's time

    @property
    def speedup(self) -> float:
        """B/A of a rate (bandwidth, operations per second) the document implies."""
        return 1.0 / (1.0 - self.less_time)


def entries(baseline: Baseline) -> dict[str, RelativeEntry]:
    found = {}
    for name, raw in (baseline.data.get("relative") or {}).items():
        found[name] = RelativeEntry(name, str(raw["scenario"]), str(raw["a"]), str(raw["b"]),
                                    tuple(raw.get("b_options", ())), str(raw["printed"]),
                                    float(raw["less_time"]))
    return found


@dataclass(frozen=True)
class Expected:
    """What fsperf.compare(expect=...) checks B/A against: an entry of a relative baseline
    (Expected("ossfs-1.91-options", "readdir_optimize_ls"), or the text "NAME:ENTRY")."""

    baseline: str
    entry: str

    @classmethod
    def of(cls, given: Expected | str) -> Expected:
        if isinstance(given, Expected):
            return given
        name, _, entry = str(given).partition(":")
        return cls(name, entry)

    def __str__(self) -> str:
        return f"{self.baseline}:{self.entry}"


def find(expected: Expected, root: Path, where: str) -> tuple[Baseline, RelativeEntry]:
    """The relative baseline and its entry; UsageError naming the known ones."""
    baseline = load(expected.baseline, root, where)
    known = entries(baseline)
    if expected.entry not in known:
        raise UsageError(f"{where}: expect={str(expected)!r}: {expected.baseline} has no relative "
                         f"entry {expected.entry!r} (has: {', '.join(sorted(known)) or 'none'})")
    return baseline, known[expected.entry]


def check(baseline: Baseline, entry: RelativeEntry, ratio: float | None, low: float | None,
          high: float | None, tolerance: float, note: str = "", judged: bool = True) -> Expectation:
    """The A/B's B/A (with its interval) against the documented gain G: as documented when
    the whole interval lies within G's tolerance band, a smaller or larger gain when it lies
    wholly below or above the band, else inconclusive (the runs spread too widely to say).
    note, judged: a condition that differs (another scale), and whether a smaller gain then
    fails."""
    expected = entry.speedup
    band = (expected * (1 - tolerance), expected * (1 + tolerance))
    if ratio is None or low is None or high is None or not all(map(math.isfinite, (low, high))):
        outcome = UNDECIDED
    elif high < band[0]:
        outcome = SMALLER
    elif low > band[1]:
        outcome = LARGER
    elif band[0] <= low and high <= band[1]:
        outcome = AS_DOCUMENTED
    else:
        outcome = UNDECIDED
    return Expectation(baseline.name, entry.name, entry.a, entry.b, entry.printed, expected,
                       ratio, low, high, outcome, note, judged)
