"""The runner's face to the engines, scenarios and the fixture: a Space (space.py) whose
workloads run in rounds, or under a release gate in interleaved pairs (ab.py), with a fio
workload (fio_run.py) and the measured window (window.py) reached from one object."""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Callable, Mapping
from typing import Any

from pytest_fsperf.errors import MeasurementError
from pytest_fsperf.judge.paired import suite_alpha
from pytest_fsperf.measure.cage import oom_cause
from pytest_fsperf.result.parts import OpStats
from pytest_fsperf.result.workload import WorkloadResult
from pytest_fsperf.runner import ab, fio_run, window
from pytest_fsperf.runner.readings import Window
from pytest_fsperf.runner.space import Space
from pytest_fsperf.vocab import ColdRead, EngineKind


class Workspace(Space):
    """One test's measuring state on one target (Space) and its workloads; the engines,
    scenarios and the A/B runner work through it; `Fsperf` is the test-facing face of it."""

    def repeat(self, name: str, run: Callable[[str], WorkloadResult],
               tag: Callable[[WorkloadResult], WorkloadResult] | None = None,
               judged: bool = True) -> WorkloadResult:
        """Run a workload: in rounds; under a release gate (--fsperf-reference,
        --fsperf-reference-mount) every judged workload on the reference and the candidate in
        interleaved pairs instead, an unjudged one (preparation) once, on the candidate. A
        daemon the kernel killed for its memory limit fails it as that, wherever it died
        (a layout, files being opened), not as a vanished mount."""
        try:
            return self._repeat(name, run, tag, judged)
        except (OSError, MeasurementError) as exc:
            owned = self.target.owned
            said = oom_cause(owned.cage if owned is not None else None, 0)
            if not said or isinstance(exc, window.KilledForMemory):
                raise
            raise window.KilledForMemory(f"{said}{exc}") from None

    def _repeat(self, name: str, run: Callable[[str], WorkloadResult],
                tag: Callable[[WorkloadResult], WorkloadResult] | None, judged: bool) -> WorkloadResult:
        if self.release is None:
            if judged and self.beside is not None:  # every judged workload, scenarios too
                first, beside = tag or (lambda r: r), self.beside
                tag = lambda r: beside(first(r))  # noqa: E731
            return self._rounds(name, run, tag)
        if not judged:
            owned = self.target.owned
            if (self.release.reference_place is None and owned is not None
                    and owned.build != self.release.candidate):
                self.remount(None, wipe=False, build=self.release.candidate)
            return self.keep((tag or (lambda r: r))(run(name)))
        label = self.unique(name)
        budget = self.budget()  # its share of the session's, where the session has one
        clock = self.state.clock
        nth = 1 + sum(c.kind.is_gate for c in self.comparisons)  # this test's gated workloads
        budget = dataclasses.replace(budget, seconds=clock.share(budget.seconds),
                                     alpha=suite_alpha(clock.tests, nth))
        comparison, mine, theirs = ab.gate(
            self, label, run, self.release, budget, self.tolerance,
            earlier=clock.resume(self.test, label),
            carry=lambda pairs: clock.carry(self.test, label, pairs))
        self.comparisons.append(comparison)
        self.keep(theirs)
        return self.keep((tag or (lambda r: r))(mine))

    def job(self, name: str | None, options: Mapping[str, object], where: str,
            scaled: bool = False) -> tuple[str, dict[str, str]]:
        return fio_run.job(self, name, options, where, scaled)

    def run_fio(self, name: str | None, judged: bool, options: Mapping[str, object], where: str,
                layout: bool = True, scaled: bool = False, per_job: bool = False) -> WorkloadResult:
        return fio_run.run(self, name, judged, options, where, layout, scaled, per_job)

    def measure(self, label: str, judged: bool, job: dict[str, str], layout: bool,
                grouped: bool = True) -> WorkloadResult:
        return fio_run.measure(self, label, judged, job, layout, grouped)

    def layout(self, job: dict[str, str], out: str) -> None:
        fio_run.lay_out(self, job, out)

    def measure_engine(self, label: str, judged: bool, kind: EngineKind, options: dict[str, str],
                       run: Callable[[], OpStats],
                       counter: Callable[[], int] | None = None,
                       before: Callable[[Window], None] | None = None) -> WorkloadResult:
        """counter: the bytes the engine moved so far (default: this process's); before: run
        after the cold start, before the meters start."""
        return window.measure_engine(self, label, judged, kind, options, run, counter, before)

    def measured(self, label: str, counter: Callable[[], int],
                 on_exit: Callable[[], None] | None = None, timed_io: bool = False,
                 peers: int = 0, here: bool = True,
                 spanned: bool = False) -> contextlib.AbstractContextManager[Window]:
        return window.measured(self, label, counter, on_exit, timed_io, peers, here, spanned)

    def record(self, w: Window, cold: tuple[ColdRead, str] | None = None,
               **fields: Any) -> WorkloadResult:
        return window.record(self, w, cold, **fields)
