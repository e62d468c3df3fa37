"""The `fsperf` fixture object: the test-facing API over a Workspace, one method per engine."""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Sequence

from pytest_fsperf import units
from pytest_fsperf.baselines import Baseline
from pytest_fsperf.baselines.check import scale_mismatch
from pytest_fsperf.baselines.relative import RelativeEntry
from pytest_fsperf.baselines.relative import check as check_relative
from pytest_fsperf.baselines.relative import find as find_relative
from pytest_fsperf.ceilings.cache import Ceilings, store_config
from pytest_fsperf.engine import jobfile as jobfile_engine
from pytest_fsperf.errors import UsageError
from pytest_fsperf.judge.comparison import Comparison
from pytest_fsperf.mounts.daemon import Lookup
from pytest_fsperf.result.workload import WorkloadResult
from pytest_fsperf.runner import clients as many
from pytest_fsperf.runner import on_hosts
from pytest_fsperf.runner.ab import Release, Workload, gate, run_compare
from pytest_fsperf.runner.target import Target
from pytest_fsperf.runner.workspace import Workspace
from pytest_fsperf.scenarios import steps
from pytest_fsperf.scenarios.runner import run_scenario
from pytest_fsperf.session.state import FsperfSession


class Fsperf(Workspace):
    """Given to a test as `fsperf`. Everything it writes stays in `workdir`."""

    def __init__(self, state: FsperfSession, target: Target, test: str, workdir: str,
                 rounds: int = 1, warmup: bool = False) -> None:
        super().__init__(state, target, test, workdir, rounds, warmup)
        self.comparisons: list[Comparison] = []
        self.tolerance = 0.10  # by the one precedence rule (config.py), set by the plugin
        self.release: Release | None = None  # under a release gate
        self.ceilings: Ceilings | None = None  # --fsperf-ceilings: the session's, by shape

    @property
    def daemon(self) -> Lookup:
        """The FUSE daemon serving the work dir now (after any remount), or why there is none."""
        return self.target.lookup_daemon()

    def cold(self) -> str:
        """Make the next workload cold. On a mount the plugin owns: unmount, wipe the
        daemon's disk cache, mount again; always: sync and drop the page cache. If the
        workload must first lay out its files, this is repeated after the layout."""
        return self.cold_start()

    def drop_page_cache(self) -> str:
        """Drop only the kernel page cache; the daemon and its cache stay as they are."""
        return self.drop_pages()

    def fio(self, name: str | None = None, *, judged: bool = True, clients: int | None = None,
            per_job: bool = False, jobfile: str | os.PathLike[str] | None = None,
            **options: object) -> WorkloadResult:
        """Run one fio job in the work directory and measure it with the daemon.

        jobfile="seq-read.fio": your own fio job file instead (relative to the current
        directory): each job section a workload named after it, run one after another with
        [global] under each and `options` over both; `directory=` is the work dir's. Returns
        the last section's result (every section's is kept and judged).

        per_job=True: fio reports each job apart (no group_reporting), as a command line
        without it prints: `result.jobs` holds each job's figures, read/write their sum.

        clients=N: on N mounts of the backend at once (the test's own and N-1 more of the same
        bucket), each with its own daemon and `fio --server`, driven by fio's controller; or on
        the first N of --fsperf-fio-servers. The result is fio's "All clients" with each
        client's figures and daemon in `clients` (measure/clients.py).

        With --fsperf-hosts: on every host at once (clients=N: the first N), each host's
        daemon measured there (measure/on_hosts.py)."""
        where = f"{self.test}: fsperf.fio()"
        if jobfile is not None:
            if name is not None:
                raise UsageError(f"{where}: name={name!r} with jobfile: its sections name the "
                                 "workloads")
            sections = jobfile_engine.read(jobfile, where)
            for sec in sections:  # every section checked before any runs
                self.job(sec.name, {**sec.options, **options},
                         f"{where}: job file {os.fspath(jobfile)!r} [{sec.name}]")
            found = None
            for sec in sections:
                note = (f"{sec.name}: from job file {os.fspath(jobfile)}"
                        + (f"; run in the work dir, not {'; '.join(sec.dropped)}" if sec.dropped
                           else ""))
                before, self.notes = self.notes, (*self.notes, note)
                try:
                    found = self._fio(sec.name, judged, clients, per_job,
                                      {**sec.options, **options})
                finally:
                    self.notes = before
            assert found is not None  # read() returns at least one section
            return found
        return self._fio(name, judged, clients, per_job, options)

    def _fio(self, name: str | None, judged: bool, clients: int | None, per_job: bool,
             options: dict[str, object]) -> WorkloadResult:
        where = f"{self.test}: fsperf.fio()"
        rw = str(options.get("rw", "read"))
        _base, job = self.job(name, options, where)  # every option checked before anything runs
        hosts = self.settings.hosts
        if clients is None and not hosts:
            return self.repeat(name or rw, lambda n: self.run_fio(n, judged, options, where,
                                                                 per_job=per_job),
                               judged=judged)
        if per_job:
            raise UsageError(f"{where}: per_job with clients or --fsperf-hosts: fio's clients "
                             "report per client")
        n = many.count(len(hosts) if clients is None else clients, where)
        base, job = self.job(name, options, where)
        if hosts:
            return self.repeat(base, lambda label: on_hosts.measure(
                self, self.unique(label), judged, job, n, where), judged=judged)
        return self.repeat(base, lambda label: many.measure(self, self.unique(label), judged, job,
                                                            n, where), judged=judged)

    def _beside(self, r: WorkloadResult) -> WorkloadResult:
        """With --fsperf-ceilings (or a min_efficiency threshold): a finished judged result
        gets the ceilings of its shape, measured after it (never inside its window or its
        cold start): a fio job's three; the small-file and metadata engines' store's."""
        found = self.ceilings
        if found is None or r.clients:  # many clients: no one client's shape bounds them all
            return r
        store = store_config(self.target)
        wrote = ((r.write is not None and r.write.io_bytes > 0)
                 or (r.ops is not None and r.ops.operation == "write files"))
        if store is not None and wrote:  # the store's ceiling must not share the store with
            self.target.settle_uploads()  # the daemon's upload backlog (rclone)
        if r.kind == "fio":
            return dataclasses.replace(r, ceilings=found.for_job(r.options, store))
        if r.kind == "files":
            return dataclasses.replace(r, ceilings=found.for_files(r.options, store))
        if r.kind == "meta":
            return dataclasses.replace(r, ceilings=found.for_listing(int(r.options["entries"]), store))
        return r

    def files(self, name: str | None = None, *, judged: bool = True,
              **params: object) -> WorkloadResult:
        """The small-file engine; parameters and defaults: `engine.steps.FilesJob` (mode, count,
        size, threads, subdir). Reading lays the files out first, unmeasured. `count` is
        shrunk by --fsperf-scale; the file size is not, unless one file is left."""
        where = f"{self.test}: fsperf.files()"
        job = steps.job(steps.FilesJob, params, where, name)
        return self.repeat(name or f"files_{job.mode}",
                           lambda n: steps.files_step(self, n, job, judged, where),
                           judged=judged)

    def meta(self, name: str | None = None, *, judged: bool = True,
             **params: object) -> WorkloadResult:
        """The metadata engine; parameters and defaults: `engine.steps.MetaJob` (op, entries,
        per_dir). The files are laid out first, unmeasured; `entries` is shrunk by --fsperf-scale."""
        where = f"{self.test}: fsperf.meta()"
        job = steps.job(steps.MetaJob, params, where, name)
        return self.repeat(name or f"meta_{job.op}",
                           lambda n: steps.meta_step(self, n, job, judged, where),
                           judged=judged)

    def checkpoint(self, name: str | None = None, *, judged: bool = True,
                   **params: object) -> WorkloadResult:
        """A sharded checkpoint saved durably (mode="save": temporary name, large writes,
        fsync, close, rename, directory fsync) or restored (mode="restore": read back whole);
        parameters and defaults: `engine.steps.CheckpointJob` (mode, shards, size, threads,
        subdir). The shard size is shrunk by --fsperf-scale, the shard count is not."""
        where = f"{self.test}: fsperf.checkpoint()"
        job = steps.job(steps.CheckpointJob, params, where, name)
        return self.repeat(name or f"checkpoint_{job.mode}",
                           lambda n: steps.checkpoint_step(self, n, job, judged, where),
                           judged=judged)

    def mdtest(self, name: str | None = None, *, judged: bool = True,
               **params: object) -> dict[str, WorkloadResult]:
        """Metadata rates as mdtest measures them, one result per phase (create, stat, read,
        rename, rename_dir, remove; ops/s and per-op latency); parameters and defaults:
        `engine.steps.MdtestJob` (files, per_dir, threads, size, subdir)."""
        where = f"{self.test}: fsperf.mdtest()"
        job = steps.job(steps.MdtestJob, params, where, name)
        found = steps.mdtest_steps(self, name, job, judged, where)
        for r in found.values():
            self.keep(r)
        return found

    def sysbench(self, name: str | None = None, *, judged: bool = True,
                 **params: object) -> WorkloadResult:
        """sysbench fileio (prepare unmeasured, then run); parameters and defaults:
        `engine.steps.SysbenchJob` (mode, files, block, total, threads, seconds). Without
        sysbench installed, the same shape as a fio job, noted in the result. `total` and
        `seconds` (not below 5 s) shrink with --fsperf-scale."""
        where = f"{self.test}: fsperf.sysbench()"
        job = steps.job(steps.SysbenchJob, params, where, name)
        return self.repeat(name or f"sysbench_{job.mode}",
                           lambda n: steps.sysbench_step(self, n, job, judged, where),
                           judged=judged)

    def scenario(self, scenario_id: str, **overrides: object) -> WorkloadResult:
        """Run a built-in scenario (pytest_fsperf.scenarios) by id; its last step is the
        measured, judged workload, named after the scenario. `overrides` change that step's
        parameters (e.g. threads=4 for the juicefs bench rows)."""
        where = f"{self.test}: fsperf.scenario({scenario_id!r})"
        return run_scenario(self, scenario_id, overrides, where)

    def compare(self, workload: Workload, a: Sequence[str] | str = (), b: Sequence[str] | str = (),
                rounds: int = 3, name: str | None = None, tolerance: object = None,
                max_rounds: int | None = None, seconds: float | None = None,
                a_build: str | None = None, b_build: str | None = None,
                expect: str | None = None) -> Comparison:
        """Run the same workload with mount options (or builds of the daemon) A and B in
        interleaved pairs, A B then B A, each run after a cold remount; at least `rounds`
        pairs, more while the outcome is undecided, up to `max_rounds` pairs or `seconds`
        (--fsperf-ab-max-rounds, --fsperf-ab-seconds). Returns per-pair figures, medians,
        B/A (geometric mean of the pairs) with its interval, and per figure "B better",
        "B worse", "same" or "inconclusive" (paired.py says how). `workload` is fio options
        (a dict) or a function taking this fixture; `a_build`/`b_build` an executable used
        in place of the backend's binary. `tolerance` (default --fsperf-tolerance, 10%).
        `expect="NAME:ENTRY"`: a relative baseline's documented gain of B over A (e.g.
        "ossfs-1.91-options:readdir_optimize_ls"), checked against this B/A."""
        where = f"{self.test}: fsperf.compare()"
        tol = self.tolerance
        if tolerance is not None:
            try:
                tol = units.parse_tolerance(tolerance)
            except ValueError as exc:
                raise UsageError(f"{where}: tolerance: {exc}") from None
        relative = (None if expect is None else
                    find_relative(str(expect), self.state.settings.root, where))
        outcome = run_compare(self, workload, a, b, rounds, name, where, tol, max_rounds, seconds,
                              a_build, b_build)
        if relative is not None:
            outcome = self._expected(outcome, *relative, tol)
        self.comparisons.append(outcome)
        return outcome

    def _expected(self, outcome: Comparison, baseline: Baseline, entry: RelativeEntry,
                  tolerance: float) -> Comparison:
        """The comparison with the documented gain checked against its deciding figure (a
        rate: B/A is the speedup), under the scale rule of every shipped baseline."""
        s = self.state.settings
        rule = scale_mismatch(baseline, s.scale, s.baseline_any_scale)
        m = outcome.metrics.get(outcome.decided_by)
        ratio, low, high = (m.ratio, m.ci_low, m.ci_high) if m else (None, None, None)
        found = check_relative(baseline, entry, ratio, low, high, tolerance, rule.note, rule.judged)
        return dataclasses.replace(outcome, expectation=found)

    def repeat(self, name: str, run: Callable[[str], WorkloadResult],
               tag: Callable[[WorkloadResult], WorkloadResult] | None = None,
               judged: bool = True) -> WorkloadResult:
        """Under a release gate (--fsperf-reference, --fsperf-reference-mount), every judged
        workload runs on the reference and the candidate in interleaved pairs instead of
        rounds; an unjudged one (judged=False: preparation) runs once, on the candidate."""
        if self.release is None:
            if judged and self.ceilings is not None:  # every judged workload, scenarios too
                first = tag or (lambda r: r)
                tag = lambda r: self._beside(first(r))  # noqa: E731
            return super().repeat(name, run, tag)
        if not judged:
            owned = self.target.owned
            if (self.release.reference_place is None and owned is not None
                    and owned.build != self.release.candidate):
                self.remount(None, wipe=False, build=self.release.candidate)
            return self.keep((tag or (lambda r: r))(run(name)))
        label = self.unique(name)
        comparison, mine, theirs = gate(self, label, run, self.release, self.budget(),
                                        self.tolerance)
        self.comparisons.append(comparison)
        self.keep(theirs)
        return self.keep((tag or (lambda r: r))(mine))
