"""A history of saved runs: each workload's figures as a series over runs, and the change
points in it (Apache Otava's E-Divisive means, `pip install pytest-fsperf[history]`).

A series never mixes fingerprints (workload, scale, filesystem, mount options, kernel,
machine): each distinct fingerprint of a workload is a series of its own, and what differs
between them is said. The machine canary of each run is a series too; a change point in a
workload that falls on one in the canary (one run either way) is the machine's, not the
filesystem's.

A run saved from a release gate (--fsperf-reference) also holds each workload's B/A against
the reference build, measured in pairs in the same run: a series of its own per reference
(`against`). The machine's drift between runs moves both sides of a pair alike and cancels
in the ratio, so a step there is the candidate's.
"""

from __future__ import annotations

import enum
import math
import re
import shlex
import statistics
from collections.abc import Sequence
from dataclasses import dataclass, replace

from pytest_fsperf.judge.series import CANARY as CANARY
from pytest_fsperf.judge.series import FOLLOWED as FOLLOWED
from pytest_fsperf.judge.series import Point as Point
from pytest_fsperf.judge.series import Series as Series
from pytest_fsperf.judge.series import comparisons_of
from pytest_fsperf.judge.series import differences as differences
from pytest_fsperf.judge.series import series as series
from pytest_fsperf.measure.rest import REST_LIMIT
from pytest_fsperf.saved.runs import Run

INSTALL = "pip install 'pytest-fsperf[history]' (Apache Otava)"
MAX_PVALUE = 0.001  # Otava's default: a change point must be this unlikely by chance
WINDOW = 30  # runs per sliding window of the split step
# a level shift smaller than this is not a change point: figures that come in steps (peak
# memory in pages) otherwise give p = 0 for a shift of one page
MIN_CHANGE = 0.01
NEAR = 1  # a workload's change point within this many runs of the canary's is the machine's


class Cause(enum.Enum):
    FILESYSTEM = "filesystem"  # no canary change point near it
    MACHINE = "machine"  # the canary changed at the same run (±NEAR)
    UNKNOWN = "unknown"  # the runs carry no canary readings


@dataclass(frozen=True)
class Change:
    """A change point: from run `index` on, the series sits at a new level."""

    series: Series
    index: int
    before: float  # mean of the level before and after (Otava's t-test means)
    after: float
    pvalue: float
    cause: Cause

    @property
    def change(self) -> float:
        """after / before - 1."""
        return self.after / self.before - 1 if self.before else math.inf

    @property
    def worse(self) -> bool:
        return (self.after < self.before) == self.series.higher_is_better

    @property
    def first(self) -> Point:
        return self.series.points[self.index]

    def message(self) -> str:
        return f"{self.series.key} {self.series.label}: {self.said()}"

    def said(self) -> str:
        """The change without whose it is: 'worse by 10.3% from run ...'."""
        p = self.first
        build = f", build {p.build}" if p.build else ""
        cause = {Cause.MACHINE: "; the machine changed (the canary changed at the same run), "
                                "not the filesystem",
                 Cause.UNKNOWN: "; no canary readings to tell the machine from the filesystem",
                 Cause.FILESYSTEM: ""}[self.cause]
        s = self.series
        return (f"{'worse' if self.worse else 'better'} by "
                f"{abs(self.change):.1%} from run {p.run}{build} ({p.created}): mean "
                f"{s.shown(self.before)} -> {s.shown(self.after)}, p = {self.pvalue:.2g}{cause}")


def available() -> str:
    """"" where Apache Otava can be imported, else the line that says how to install it."""
    try:
        import otava.analysis  # noqa: F401
    except ImportError:
        return f"change points need Apache Otava: {INSTALL}"
    return ""


@dataclass(frozen=True)
class Found:
    index: int
    before: float
    after: float
    pvalue: float


def change_points(values: Sequence[float], max_pvalue: float = MAX_PVALUE,
                  min_magnitude: float = MIN_CHANGE, window: int = WINDOW) -> list[Found]:
    """Otava's change points of one series (raises ImportError without it)."""
    from otava.analysis import compute_change_points

    if len(values) < 3:
        return []
    found, _weak = compute_change_points(list(values), window_len=window, max_pvalue=max_pvalue,
                                         min_magnitude=min_magnitude)
    return [Found(int(c.index), float(c.stats.mean_1), float(c.stats.mean_2),
                  float(c.stats.pvalue)) for c in found]


def normalised(s: Series) -> Series | None:
    """The series with each run's figure divided by its canary relative to the series'
    median canary (a machine 10% slower that run raises a bandwidth by 10%); None without
    canary readings."""
    canary = s.canary()
    if canary is None or s.against:
        return None
    mid = statistics.median(canary)
    scale = [(c / mid) if c else 1.0 for c in canary]
    if s.higher_is_better:
        points = [_scaled(p, 1 / f) for p, f in zip(s.points, scale, strict=True)]
    else:
        points = [_scaled(p, f) for p, f in zip(s.points, scale, strict=True)]
    return Series(s.key, s.figure, s.fingerprint, tuple(points), s.against)


def _scaled(p: Point, by: float) -> Point:
    return Point(p.run, p.build, p.created, p.value * by, p.low * by, p.high * by, p.canary,
                 p.rest)


def disturbed(s: Series, limit: float = REST_LIMIT) -> list[int]:
    """The runs a neighbour disturbed: the rest of the machine used more than `limit` cores
    above its median over the series' runs (a gate drops a pair at the same limit). Only
    where at least half the runs carry the reading; runs without it are kept."""
    usual = usual_rest(s)
    if usual is None:
        return []
    return [i for i, p in enumerate(s.points) if p.rest is not None and p.rest > usual + limit]


def usual_rest(s: Series) -> float | None:
    """The median of the runs' rest-of-the-machine readings, where at least half carry one."""
    read = [p.rest for p in s.points if p.rest is not None]
    return statistics.median(read) if read and 2 * len(read) >= len(s.points) else None


def machine_series(s: Series) -> Series | None:
    """The canary's readings over the same runs, as a series of their own."""
    canary = s.canary()
    if canary is None:
        return None
    return Series(s.key, CANARY, s.fingerprint, tuple(
        Point(p.run, p.build, p.created, c, c, c, c) for p, c in zip(s.points, canary, strict=True)))


@dataclass(frozen=True)
class Analysis:
    series: Series
    changes: tuple[Change, ...]
    machine: tuple[Found, ...]  # the canary's own change points
    note: str = ""  # e.g. the canary moved where the workload did not
    left_out: tuple[int, ...] = ()  # runs a busy neighbour disturbed, not searched (disturbed())

    def machine_only(self) -> list[Found]:
        """Canary change points with no workload change point near them."""
        mine = [c.index for c in self.changes]
        return [m for m in self.machine if all(abs(m.index - i) > NEAR for i in mine)]


def analyse(s: Series, max_pvalue: float = MAX_PVALUE, min_magnitude: float = MIN_CHANGE,
            window: int = WINDOW) -> Analysis:
    """The change points of `s`, each with its cause (Cause), and the canary's."""
    canary = machine_series(s)
    machine = (tuple(change_points(canary.values(), max_pvalue, min_magnitude, window))
               if canary is not None else ())
    # a B/A pair meets a neighbour on both its sides: its run stays (left out, the step was
    # found in 2 of 7 series of benchmarks/history_detection.py --reference build, kept in 4)
    out = [] if s.against else disturbed(s)
    kept = [i for i in range(len(s.points)) if i not in out]
    changes = []
    for f in change_points([s.points[i].value for i in kept], max_pvalue, min_magnitude, window):
        at = kept[f.index]  # the run in the whole series
        cause = (Cause.UNKNOWN if canary is None else
                 Cause.MACHINE if any(abs(m.index - at) <= NEAR for m in machine)
                 else Cause.FILESYSTEM)
        changes.append(Change(s, at, f.before, f.after, f.pvalue, cause))
    left = ""
    if out:
        left = ("runs left out, a neighbour busy during them (the rest of the machine used more "
                f"than {REST_LIMIT:g} cores above its usual {usual_rest(s):.2f}): "
                + ", ".join(f"{s.points[i].run} ({s.points[i].rest:.2f})" for i in out))
    a = Analysis(s, tuple(changes), machine, left, tuple(out))
    alone = a.machine_only()
    if alone:
        runs = ", ".join(f"{s.points[m.index].run} ({m.after / m.before - 1:+.1%})" for m in alone)
        said = f"the machine's canary changed from run {runs}; {s.key} {s.label} did not"
        a = replace(a, note=f"{a.note}; {said}" if a.note else said)
    return a


LEVEL = 2  # runs a new level needs before the gate acts on it


def gate(analyses: Sequence[Analysis], tolerance: float, newest: str, recent: int = 5,
         ) -> list[Change]:
    """--fsperf-history-gate: per series whose newest run is `newest` (of a workload with a B/A
    series against a reference, that series alone), the change point that
    began within the `recent` newest runs (and LEVEL runs ago or more), made the figure
    worse by more than `tolerance`, is the filesystem's (not the machine's), and still holds
    at the newest run (worse than the level before it by more than the tolerance)."""
    found = []
    paired = {a.series.key for a in analyses
              if a.series.against and a.series.points and a.series.points[-1].run == newest}
    for a in analyses:
        points = a.series.points
        if not points or points[-1].run != newest:
            continue
        if a.series.key in paired and not a.series.against:
            continue  # its B/A against the reference is judged: the machine's drift cancels there
        for c in reversed(a.changes):
            if len(points) - c.index > recent:
                break
            if len(points) - c.index < LEVEL:
                continue  # one run alone is a run-vs-run comparison, which cries wolf here
            now = points[-1].value / c.before - 1 if c.before else 0.0
            held = now < -tolerance if a.series.higher_is_better else now > tolerance
            if c.worse and abs(c.change) > tolerance and c.cause != Cause.MACHINE and held:
                found.append(c)
                break
    return found


def report(found: Sequence[Run], figures: Sequence[str] = FOLLOWED,
           max_pvalue: float = MAX_PVALUE, min_magnitude: float = MIN_CHANGE, window: int = WINDOW,
           normalise: bool = False) -> tuple[list[Analysis], list[str], list[str]]:
    """Every series of `found` analysed; the notes on fingerprints; the lines that say it
    all (as `fsperf history` and --fsperf-history print them)."""
    every = series(found, figures)
    analyses = [analyse(s, max_pvalue, min_magnitude, window) for s in every]
    notes = [m.said() for m in differences(every)] + [
        line for run in found for line in comparisons_of(run)[1]]
    lines = [f"{len(found)} runs, {found[0].name} to {found[-1].name}; {len(every)} series"
             if found else "no saved run", *notes]
    for a in analyses:
        s = a.series
        head = f"{s.key} {s.label} ({len(s.points)} runs)"
        if not a.changes:
            lines.append(f"{head}: no change point")
        for c in a.changes:
            lines.append(f"{head}: {c.said()}")
            hint = bisect_hint(c)
            if hint:
                lines.append(f"  look inside: {hint}")
        if a.note:
            lines.append(f"  {a.note}")
        if normalise:
            lines.append(f"  {normalised_effect(a, max_pvalue, min_magnitude, window)}")
    return analyses, notes, lines


COMMIT = re.compile(r"[0-9a-f]{7,40}")


def bisect_hint(c: Change) -> str:
    """Where a worsening the filesystem made falls between two runs whose builds are commit
    ids: the `fsperf bisect` command that looks at the commits between them."""
    s = c.series
    if not c.worse or c.cause is not Cause.FILESYSTEM or c.index < 1:
        return ""
    good, bad = s.points[c.index - 1].build, s.points[c.index].build
    if not (COMMIT.fullmatch(good) and COMMIT.fullmatch(bad)) or good == bad:
        return ""
    test = s.key.rsplit("::", 1)[0]
    return (f"fsperf bisect --good {good} --bad {bad} --test {shlex.quote(test)} "
            "--build 'YOUR BUILD' --binary PATH/TO/DAEMON --backend NAME")


def normalised_effect(a: Analysis, max_pvalue: float, min_magnitude: float, window: int) -> str:
    """What dividing by the canary does to a series' change points, said."""
    if a.series.against:
        return ("normalised by the canary: not needed (B/A against a reference measured in the "
                "same runs: the machine moves both sides)")
    n = normalised(a.series)
    if n is None:
        return "normalised by the canary: not possible (runs without canary readings)"
    other = analyse(n, max_pvalue, min_magnitude, window)
    raw = [a.series.points[c.index].run for c in a.changes]
    now = [n.points[c.index].run for c in other.changes]
    if raw == now:
        return f"normalised by the canary: the same change points ({', '.join(now) or 'none'})"
    return (f"normalised by the canary: change points from runs {', '.join(now) or 'none'} "
            f"(raw: {', '.join(raw) or 'none'})")


MIN_RUNS = 4  # a series shorter than this has no change point to judge by


def gate_new(found: Sequence[Run], new: Run, tolerance: float, recent: int = 5,
             ) -> tuple[list[Change], set[str]]:
    """--fsperf-history-gate for the workloads of `new` (a run not saved yet, last): the
    change points to fail with (gate()), and the workloads (TEST::WORKLOAD) judged: those
    whose series, `new` included, has MIN_RUNS runs or more."""
    keys = {r.key for r in new.results}
    every = [s for s in series([*found, new]) if s.key in keys and len(s.points) >= MIN_RUNS]
    return gate([analyse(s) for s in every], tolerance, new.name, recent), {s.key for s in every}
