"""A/B in one session: two mount-option sets (fsperf.compare) or two builds of the daemon
(--fsperf-reference, release gating), run as interleaved pairs, each run after a cold start,
judged on the per-pair ratios (paired.py) and stopped when decisive or out of budget.
(Saved runs are runs.py.)"""

from __future__ import annotations

import dataclasses
import os
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from pytest_fsperf.engine import fio as fio_engine
from pytest_fsperf.errors import MeasurementError, UsageError
from pytest_fsperf.judge.comparison import compare, judge_all, scattered
from pytest_fsperf.judge.deciding import BY_DEFAULT, Deciding, decided_by, primary
from pytest_fsperf.judge.neighbours import Neighbours, both_off
from pytest_fsperf.judge.paired import Budget, order, should_stop
from pytest_fsperf.measure import profile, rest
from pytest_fsperf.measure.meters import DaemonExited
from pytest_fsperf.measure.profile import Profiling
from pytest_fsperf.mounts.request import parse_options
from pytest_fsperf.result.comparison import Comparison
from pytest_fsperf.result.daemon import Profile
from pytest_fsperf.result.workload import WorkloadResult, median_round
from pytest_fsperf.runner import fio_run
from pytest_fsperf.runner.budget import pair_budget
from pytest_fsperf.runner.pairs import (
    RERUNS,
    SETTLE_MAX,
    Pairs,
    fills_cache,
    invalid,
    too_many_dropped,
    why_dropped,
)
from pytest_fsperf.runner.space import Release, Space
from pytest_fsperf.vocab import AB, CompareKind, Difference

Workload = Mapping[str, object] | Callable[[Space], WorkloadResult]

__all__ = ["Comparison", "Release", "Workload", "check_build", "gate", "interleave", "run_compare"]


@dataclass(frozen=True)
class Side:
    """One side of an A/B: what it is (as shown) and how to make it current and cold."""

    name: AB
    shown: tuple[str, ...]
    enter: Callable[[], object]


def interleave(sides: tuple[Side, Side], run: Callable[[AB, int], WorkloadResult],
               budget: Budget, tolerance: float, gate: bool = False,
               started: float | None = None,
               steady: Callable[[], str] | None = None, earlier: Pairs | None = None,
               deciding: Deciding = BY_DEFAULT) -> Pairs:
    """Pairs A B, B A, ... (each run after its side's enter(): a cold start) until the
    deciding figure is decisive or the budget is spent. gate: "not worse" decides too.
    started: when the comparison began (time.monotonic), so that its preparation counts.
    steady: called once if a side's runs spread implausibly (from 2 pairs on) to make the
    runs meet one state from then on (Workspace.settle_from_now); where it says what it did,
    the pairs so far are dropped and the comparison starts again. Only where the runs fill
    page cache (fills_cache): what settling waits out touches nothing else (issue 24: direct
    fio reads of a tmpfs through bindfs fell in two clusters under load, settling cost 19-41
    s and changed nothing).
    A pair whose two runs met two machines (the rest of the machine's CPU, or the VM's
    steal, over each run moved past rest.REST_LIMIT) is dropped, not rerun.
    earlier: the pairs of this comparison's first pass (a session's second pass goes on from
    them: "+" in the order; the intervals are confidence sequences, valid at any look).
    deciding: the figures that decide together (judge/deciding.py)."""
    return Interleaving(sides, run, budget, tolerance, gate, started, steady, earlier,
                        deciding).pairs()


class Interleaving:
    """One interleaved comparison's state: the runs kept per side, the order they ran in,
    what was dropped and why, where the time went. `pairs()` runs it to its end."""

    def __init__(self, sides: tuple[Side, Side], run: Callable[[AB, int], WorkloadResult],
                 budget: Budget, tolerance: float, gate: bool, started: float | None,
                 steady: Callable[[], str] | None, earlier: Pairs | None,
                 deciding: Deciding = BY_DEFAULT) -> None:
        self.sides = {AB(s.name): s for s in sides}
        self.deciding = deciding
        self.run, self.budget, self.tolerance, self.gate = run, budget, tolerance, gate
        self.steady = steady
        self.runs: dict[AB, list[WorkloadResult]] = {
            AB.A: list(earlier.a) if earlier else [], AB.B: list(earlier.b) if earlier else []}
        self.ran = earlier.order + "+" if earlier else ""
        self.t0 = time.monotonic() if started is None else started
        self.spent_before = time.monotonic() - self.t0  # preparation before the first pair
        self.spent = Spent(self.spent_before)
        self.dropped = list(earlier.dropped) if earlier else []  # every run not used, with why
        self.died = list(earlier.died) if earlier else []
        self.before = earlier.seconds if earlier else None  # the first pass's time
        self.dropped_pairs = 0
        self.moved = 0  # of them, pairs whose two runs met two machines
        # each valid pair's own seconds: cold starts, runs, reruns (a second pass: the first's too)
        self.costs: list[float] = [earlier.last_pair] if earlier and earlier.last_pair else []
        self.last_pair = max(self.costs, default=0.0)  # what the next pair is taken to cost
        self.pair_t0 = self.pair_layout = 0.0  # the pair under way: its start, its layout
        self.fresh_is_usual = False  # every run makes its own files (fio unlink=1): that is the state
        self.neighbours = Neighbours.empty()
        self.neighbours.offsets = list(earlier.offsets) if earlier else []
        self.neighbours.offsets += [0.0] * (self.pair - len(self.neighbours.offsets))
        self.neighbours.seen([(side, r.rest, self.value(r)) for side in AB for r in self.runs[side]])
        self.saved = False  # the pair under way moved, and is kept adjusted

    def value(self, result: WorkloadResult) -> float | None:
        """A run's deciding figure (the first B run's choice holds for the comparison)."""
        first = self.runs[AB.B][0] if self.runs[AB.B] else result
        return result.single_metrics().get(primary(first))

    @property
    def pair(self) -> int:
        """Valid pairs kept so far."""
        return len(self.runs[AB.A])

    def pairs(self) -> Pairs:
        while True:
            self.pair_t0, self.pair_layout = time.monotonic(), 0.0
            these, spoilt = self.one_pair()
            ended = self.drop(spoilt) if these is None else self.keep(these)
            if ended is not None:
                return ended

    def run_side(self, side: AB) -> WorkloadResult | None:
        """One run of a side after its cold start; an invalid run is run again (bounded);
        None: still not valid, or its daemon died."""
        n = self.pair + 1
        for attempt in range(1 + RERUNS):
            self.spent.cold += _timed(self.sides[side].enter)  # a cold start: a dead daemon's remount
            t = time.monotonic()
            self.ran += side
            try:
                got = self.run(side, n)
            except DaemonExited as exc:
                self.died.append(f"{side}{n}")
                self.dropped.append(f"{side}{n}: the daemon died ({exc})")
                continue
            finally:
                took = time.monotonic() - t
                self.spent.runs += took
            if got.fresh_files and attempt == RERUNS:
                self.fresh_is_usual = True  # made again on the rerun: no run finds them in place
            why = invalid(got, self.fresh_is_usual)
            if not why:
                return got
            if got.fresh_files and not self.fresh_is_usual:  # it laid the files out: once
                self.spent.laid_out(took)
                self.spent_before += took  # not a pair's cost: the next pair will not pay it
                self.pair_layout += took
            self.dropped.append(why)
        return None

    def one_pair(self) -> tuple[dict[AB, WorkloadResult] | None, bool]:
        """Both sides' runs in this pair's order, or None (and whether the machine changed
        under the pair: its runs met two machines)."""
        these: dict[AB, WorkloadResult] = {}
        for side in map(AB, order(self.pair)):
            got = self.run_side(side)
            if got is None:  # still invalid after its reruns: the pair is not used
                return None, False
            these[side] = got
        first, second = (f"{s}{self.pair + 1}" for s in order(self.pair))
        one, two = these[AB(first[0])].rest, these[AB(second[0])].rest
        moved = rest.moved(one, two, first, second)
        # the rest's CPU moved, its steal did not, and the figure's sensitivity to it is known:
        # kept and adjusted for it (judge/neighbours.py), not dropped
        self.saved = bool(moved) and self.neighbours.current() is not None and not rest.moved(
            one, two, first, second, cpu=False)
        why = ("" if self.saved else moved) or both_off(self.runs, these, first, second)
        if why:
            self.dropped.append(f"pair {first}/{second}: {why}")  # not rerun: the change is in time
            self.moved += 1
            self.neighbours.seen([(s, these[s].rest, self.value(these[s])) for s in AB])
            return None, True
        return these, False

    def drop(self, spoilt: bool) -> Pairs | None:
        """A pair not used: go on (after the machine settles, where it changed), or end."""
        self.ran += "x"  # in the order shown: a pair dropped
        self.dropped_pairs += 1
        elapsed = time.monotonic() - self.t0
        # Runs that are not valid (never cold ...) stop it early: the next pair will be
        # the same. A machine that changed within a pair is waited out (bounded) and
        # pairing goes on: the budget is spent, not abandoned (issue 51).
        invalid_pairs = self.dropped_pairs - self.moved
        too_many = too_many_dropped(invalid_pairs, self.pair)
        if not too_many and elapsed + self.last_pair < self.budget.seconds:
            if spoilt:
                self.spent.settled += rest.wait_steady(
                    min(SETTLE_MAX, self.budget.seconds - elapsed - self.last_pair))
            return None
        why = why_dropped(invalid_pairs, self.moved)
        shown = self.spent.shown(elapsed, self.budget, self.before)
        if too_many or self.pair < 2:
            return self._end(f"unstable: {self.pair} valid pairs, {self.dropped_pairs} dropped "
                             f"({why}); {shown}", elapsed)
        return self._end(f"time budget spent after {self.pair} valid pairs ({self.dropped_pairs} "
                         f"dropped: {why}); {shown}", elapsed,
                         out_of_time=self.pair < self.budget.max_pairs, last_pair=self.last_pair)

    def keep(self, these: dict[AB, WorkloadResult]) -> Pairs | None:
        """A valid pair: judged with the pairs before it; the end, or None to go on."""
        for side in AB:
            self.runs[side].append(these[side])
        a_run, b_run = these[AB.A], these[AB.B]
        self.neighbours.keep((a_run.rest, self.value(a_run)), (b_run.rest, self.value(b_run)),
                             moved=self.saved)
        pair = self.pair
        figures = self.deciding.figures(self.runs[AB.B][0])
        ms = judge_all(self.runs[AB.A], self.runs[AB.B], figures, self.tolerance,
                       self.budget.anytime, self.gate, self.budget.alpha, self.neighbours.offsets,
                       every=False)
        m, by = ms.get(figures[0]), decided_by(ms, figures, self.deciding.accepted)
        if (self.steady is not None and pair >= 2 and m and (why := "; ".join(scattered(m)))
                and any(fills_cache(r) for s in AB for r in self.runs[s])):
            done, self.steady = self.steady(), None  # asked once
            if done:  # the pairs so far are not used; start again
                self.dropped.append(f"pairs 1-{pair}: {why}; {done}")
                self.runs, self.ran = {AB.A: [], AB.B: []}, self.ran + "|"
                self.neighbours.offsets, self.neighbours.moves = [], []
                self.spent_before = time.monotonic() - self.t0
                return None
        decided = by in ms and ms[by].outcome != Difference.INCONCLUSIVE
        now = time.monotonic()
        elapsed = now - self.t0
        # what a pair costs (issue 63): this one's and the others' own time, not the waits for
        # the machine and the dropped pairs since the last valid one (a gate stopped with 4
        # pairs' time left, a dropped pair and a wait taken for the next pair's cost)
        # the slowest pair's: one as slow as it must still fit (a median overran budgets)
        self.costs.append(now - self.pair_t0 - self.pair_layout)
        last = max(self.costs)
        self.last_pair, self.spent_before = last, elapsed
        if not should_stop(decided, self.budget, pair, elapsed, last):
            return None
        pairs = f"{pair} pair{'' if pair == 1 else 's'}"
        if decided and pair >= self.budget.min_pairs:
            why = f"decided after {pairs}"
        elif pair >= self.budget.max_pairs:
            why = f"pair cap reached ({pairs}, a safety cap: --fsperf-ab-max-rounds)"
        else:
            why = (f"time budget spent after {pairs}: the next pair (about {last:.0f} s, "
                   "cold starts included, as the slowest so far) would not fit")
        return self._end(f"{why}; {self.spent.shown(elapsed, self.budget, self.before)}", elapsed,
                         out_of_time=(not (decided and pair >= self.budget.min_pairs)
                                      and pair < self.budget.max_pairs), last_pair=last)

    def _end(self, why: str, elapsed: float, out_of_time: bool = False,
             last_pair: float = 0.0) -> Pairs:
        return Pairs(self.runs[AB.A], self.runs[AB.B], self.ran, why, (self.before or 0.0) + elapsed,
                     tuple(self.dropped), tuple(self.died), out_of_time=out_of_time,
                     last_pair=last_pair, layout=self.spent.before,
                     offsets=tuple(self.neighbours.offsets), adjusted=self.neighbours.said())


@dataclass
class Spent:
    """Where an interleaved comparison's wall time went, as the report says it."""

    before: float  # layout and anything else before the first pair
    cold: float = 0.0  # cold starts (remounts, cache drops)
    runs: float = 0.0  # the measured runs, including runs not used, less those that laid out
    settled: float = 0.0  # waiting for the machine to settle after a pair it spoilt

    def laid_out(self, seconds: float) -> None:
        """A run that made its files (fio's layout, a prep step): layout, not a run."""
        self.before += seconds
        self.runs -= seconds

    def shown(self, elapsed: float, budget: Budget, first_pass: float | None = None) -> str:
        then = (f" (a second pass, after {first_pass:.0f} s in the first: the session's time "
                "left over, --fsperf-gate-seconds)") if first_pass is not None else ""
        waited = f", waiting for the machine {self.settled:.0f} s" if self.settled >= 0.5 else ""
        return (f"{elapsed:.0f} s of {budget.seconds:.0f} s{then}: layout {self.before:.0f} s, "
                f"cold starts {self.cold:.0f} s, runs {self.runs:.0f} s{waited}")


def _timed(call: Callable[[], object]) -> float:
    t = time.monotonic()
    call()
    return time.monotonic() - t


def run_compare(fs: Space, workload: Workload, a: Sequence[str] | str, b: Sequence[str] | str,
                rounds: int, name: str | None, where: str, tolerance: float = 0.10,
                max_rounds: int | None = None, seconds: float | None = None,
                a_build: str | None = None, b_build: str | None = None) -> Comparison:
    """A and B interleaved on the same mount point, each run after a cold remount with its
    options (and build); a read job's files are laid out once first. At least `rounds`
    pairs, more while undecided, up to `max_rounds` pairs or `seconds`. The original
    options and build are restored."""
    owned = fs.target.owned
    if owned is None or not owned.backend.has_daemon:
        raise UsageError(f"{where}: needs a backend the plugin mounts (fsperf_mount marker or "
                         "--fsperf-backend), not an existing directory")
    budget = pair_budget(rounds, max_rounds, seconds, fs.budget(), where)
    options = {AB.A: parse_options(a, f"{where} a"), AB.B: parse_options(b, f"{where} b")}
    original, original_build = owned.options, owned.build
    builds = {AB.A: check_build(a_build, f"{where} a_build") or original_build,
              AB.B: check_build(b_build, f"{where} b_build") or original_build}
    if a_build or b_build:
        why = owned.can_build()
        if why:
            raise UsageError(f"{where}: {why}")
    job: dict[str, str] | None = None
    if isinstance(workload, Mapping):
        base, job = fio_run.job(fs, name, workload, where)
    elif callable(workload):
        base = name or str(getattr(workload, "__name__", "workload"))
    else:
        raise UsageError(f"{where}: workload must be fio options (a dict) or a function")

    def run(side: AB, pair: int) -> WorkloadResult:
        if job is not None:
            return fs.keep(fio_run.measure(fs, fs.unique(f"{base}[{side}{pair}]"), False, job,
                                           layout=False))
        assert callable(workload)
        return workload(fs)

    def side(name: AB) -> Side:
        shown = tuple(owned.shown(options[name]))
        if builds[name] != original_build or a_build or b_build:
            shown += (f"build {builds[name]}",)
        return Side(name, shown, lambda: fs.cold_start(options[name], build=builds[name]))

    def probe(name: AB) -> WorkloadResult:
        if job is not None:  # not kept: the profiled runs are not the comparison's
            return fio_run.measure(fs, fs.unique(f"{base}[{name}.profiled]"), False, job, layout=False)
        return run(name, len(pairs.a) + 1)

    started = time.monotonic()  # the layout and every cold start count in the budget
    kept = len(fs.results)  # what is kept from here on is this comparison's
    try:  # the original options and build are back after the pairs and any profiled pair
        with fs.pairing():
            if job is not None and fio_engine.is_reading(job):
                fs.remount(options[AB.A], wipe=False, build=builds[AB.A])
                fio_run.lay_out(fs, job, fs.output(base))
            pairs = interleave((side(AB.A), side(AB.B)), run, budget, tolerance, started=started,
                               steady=fs.settle_from_now, deciding=fs.config.deciding)
        c = compare(fs.test, base, owned.backend.name, side(AB.A).shown, side(AB.B).shown,
                    pairs.a, pairs.b, pairs.order, tolerance, budget, pairs.stopped,
                    pairs.seconds, CompareKind.BUILDS if a_build or b_build else CompareKind.OPTIONS,
                    pairs.dropped, pairs.died, pairs.offsets, pairs.adjusted, fs.config.deciding)
        c = dataclasses.replace(c, runs=tuple(r.name for r in fs.results[kept:]))
        return profiled(fs, c, (side(AB.A), side(AB.B)), probe)
    finally:
        if owned.options != original or owned.build != original_build or not owned.alive():
            fs.remount(original, wipe=False, build=original_build)


def profiled(fs: Space, c: Comparison, sides: tuple[Side, Side],
             run: Callable[[AB], WorkloadResult]) -> Comparison:
    """One more pair, A then B, each after its cold start, with the daemon profiled
    (--fsperf-profile: auto when B is worse, on always): which functions' share of its
    samples moved. Its runs are not in the figures; a failure is said, never raised."""
    setting = fs.running.profiling
    if setting == Profiling.OFF or (setting == Profiling.AUTO and c.outcome != Difference.B_WORSE):
        return c
    why = profile.unavailable()
    if fs.running.clients.elsewhere:  # the profiler here sees none of their work
        why = "the daemons ran on other hosts or nodes (--fsperf-hosts, --fsperf-k8s)"
    if why:
        return dataclasses.replace(c, profile_note=f"not profiled: {why}")
    got: dict[AB, Profile] = {}
    try:
        with fs.pairing(), fs.profiling():
            for side in sides:
                side.enter()
                r = run(side.name)
                if r.profile is None:
                    why = r.profile_note or f"no daemon profile was taken ({r.daemon_note})"
                    return dataclasses.replace(c, profile_note=why)
                got[side.name] = r.profile
    except MeasurementError as exc:
        return dataclasses.replace(c, profile_note=f"not profiled: the profiled pair failed: {exc}")
    a, b = got[AB.A], got[AB.B]
    return dataclasses.replace(
        c, profile=profile.diff(a, b), profiles={str(AB.A): profile.top(a), str(AB.B): profile.top(b)},
        profile_note=f"profiled one more pair (not in the figures): {a.samples} samples of A's "
                     f"daemon, {b.samples} of B's, perf record -g at {profile.FREQUENCY} Hz")


def check_build(path: str | None, where: str) -> str | None:
    """A build of the daemon: an executable file, used in place of the backend's binary."""
    if path is None or path == "":
        return None
    if not os.path.isfile(path) or not os.access(path, os.X_OK):
        raise UsageError(f"{where}: {path!r} is not an executable file")
    return os.path.realpath(path)


def gate(fs: Space, label: str, run: Callable[[str], WorkloadResult], release: Release,
         budget: Budget, tolerance: float, earlier: Pairs | None = None,
         carry: Callable[[Pairs], object] | None = None,
         ) -> tuple[Comparison, WorkloadResult, WorkloadResult]:
    """One workload of a release gate, in pairs ABBA..., each run after a cold start on its
    side. Returns the comparison and the median run of each side (B's carries every pair's
    figures as its rounds). earlier: the pairs it goes on from (a session's second pass);
    carry: given the pairs where the budget ran out undecided (for a second pass)."""
    owned = fs.target.owned
    home = (fs.target, str(fs.workdir))
    builds = {AB.A: release.reference, AB.B: release.candidate}
    places = {AB.A: release.reference_place or home, AB.B: home}

    def enter(name: AB) -> object:
        if release.reference_place is None:
            return fs.cold_start(build=builds[name])
        fs.place(*places[name])
        return fs.cold_start()

    def side(name: AB) -> Side:
        return Side(name, (builds[name],), lambda: enter(name))

    try:  # home again, on the candidate's build, after the pairs and any profiled pair
        with fs.pairing():
            pairs = interleave((side(AB.A), side(AB.B)),
                               lambda s, n: run(f"{label}.{s}{n}"), budget, tolerance, gate=True,
                               steady=fs.settle_from_now, earlier=earlier,
                               deciding=fs.config.deciding)
        if pairs.out_of_time and carry is not None:
            carry(pairs)
        backend = owned.backend.name if owned is not None else (fs.target.mount().fstype or "mount")
        if not pairs.b:
            raise MeasurementError(f"{label}: release gate: no valid pair ({pairs.stopped}): "
                                   + "; ".join(pairs.dropped))
        c = compare(fs.test, label, backend, (release.reference,), (release.candidate,), pairs.a,
                    pairs.b, pairs.order, tolerance, budget, pairs.stopped, pairs.seconds,
                    CompareKind.MOUNT_GATE if release.reference_place else CompareKind.GATE,
                    pairs.dropped, pairs.died, pairs.offsets, pairs.adjusted, fs.config.deciding)
        c = profiled(fs, c, (side(AB.A), side(AB.B)), lambda s: run(f"{label}.{s}.profiled"))
    finally:
        fs.place(*home)
        if owned is not None and (owned.build != release.candidate or not owned.alive()):
            fs.remount(None, wipe=False, build=release.candidate)
    reference_run = median_round(pairs.a, f"{label}[reference]")
    return c, median_round(pairs.b, label), dataclasses.replace(reference_run, judged=False)
