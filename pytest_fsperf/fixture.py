"""The `fsperf` fixture object: what a test author calls, one method per engine, over the
runner's Workspace (runner/workspace.py), which it holds and does not expose."""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from pytest_fsperf import units
from pytest_fsperf.baselines import Baseline
from pytest_fsperf.baselines.check import scale_mismatch
from pytest_fsperf.baselines.relative import Expected, RelativeEntry
from pytest_fsperf.baselines.relative import check as check_relative
from pytest_fsperf.baselines.relative import find as find_relative
from pytest_fsperf.engine import jobfile as jobfile_engine
from pytest_fsperf.errors import UsageError
from pytest_fsperf.mounts.daemon import Lookup
from pytest_fsperf.options.config import Settings
from pytest_fsperf.result.comparison import Comparison
from pytest_fsperf.result.phases import MdtestResult
from pytest_fsperf.result.workload import WorkloadResult
from pytest_fsperf.runner import clients as many
from pytest_fsperf.runner import on_hosts
from pytest_fsperf.runner.ab import Workload, run_compare
from pytest_fsperf.runner.workspace import Workspace
from pytest_fsperf.scenarios import steps
from pytest_fsperf.scenarios.runner import run_scenario
from pytest_fsperf.vocab import PageCache


class Fsperf:
    """Given to a test as `fsperf`. Everything it writes stays in `workdir`."""

    def __init__(self, runner: Workspace, settings: Settings) -> None:
        self._runner = runner
        self._settings = settings  # the session's (baselines: where they live, at what scale)

    @property
    def workdir(self) -> Path:
        """The test's own directory inside the mount; removed after the test."""
        return self._runner.workdir

    @property
    def daemon(self) -> Lookup:
        """The FUSE daemon serving the work dir now (after any remount), or why there is none."""
        return self._runner.target.lookup_daemon()

    @property
    def cache_dirs(self) -> list[str]:
        """Directories whose peak disk use is sampled during each workload (the daemon's disk
        cache of a mount the plugin owns); append your daemon's (e.g. ossfs's use_cache)."""
        return self._runner.cache_dirs

    @property
    def results(self) -> list[WorkloadResult]:
        """This test's results so far, in the order they were measured."""
        return self._runner.results

    def cold(self) -> PageCache:
        """Make the next workload cold. On a mount the plugin owns: unmount, wipe the
        daemon's disk cache, mount again; always: sync and drop the page cache. If the
        workload must first lay out its files, this is repeated after the layout."""
        return self._runner.cold_start()

    def drop_page_cache(self) -> PageCache:
        """Drop only the kernel page cache; the daemon and its cache stay as they are."""
        return self._runner.drop_pages()

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
        client's figures and daemon in `clients` (runner/clients.py).

        With --fsperf-hosts: on every host at once (clients=N: the first N), each host's
        daemon measured there (runner/on_hosts.py)."""
        where = f"{self._runner.test}: fsperf.fio()"
        _named(name, where)
        if jobfile is not None:
            if not isinstance(jobfile, str | os.PathLike) or "\0" in os.fspath(jobfile):
                raise UsageError(f"{where}: jobfile={str(jobfile)[:40]!r} must be a file's path")
            if name is not None:
                raise UsageError(f"{where}: name={name!r} with jobfile: its sections name the "
                                 "workloads")
            sections = jobfile_engine.read(jobfile, where)
            for sec in sections:  # every section checked before any runs
                self._runner.job(sec.name, {**sec.options, **options},
                         f"{where}: job file {os.fspath(jobfile)!r} [{sec.name}]")
            found = None
            for sec in sections:
                note = (f"{sec.name}: from job file {os.fspath(jobfile)}"
                        + (f"; run in the work dir, not {'; '.join(sec.dropped)}" if sec.dropped
                           else ""))
                config = self._runner.config
                self._runner.config = dataclasses.replace(config, notes=(*config.notes, note))
                try:
                    found = self._fio(sec.name, judged, clients, per_job,
                                      {**sec.options, **options})
                finally:
                    self._runner.config = config
            assert found is not None  # read() returns at least one section
            return found
        return self._fio(name, judged, clients, per_job, options)

    def _fio(self, name: str | None, judged: bool, clients: int | None, per_job: bool,
             options: dict[str, object]) -> WorkloadResult:
        where = f"{self._runner.test}: fsperf.fio()"
        rw = str(options.get("rw", "read"))
        ws = self._runner
        _base, job = ws.job(name, options, where)  # every option checked before anything runs
        hosts = on_hosts.places(ws)
        if clients is None and not hosts:
            return ws.repeat(name or rw, lambda n: ws.run_fio(n, judged, options, where,
                                                              per_job=per_job),
                             judged=judged)
        if per_job:
            raise UsageError(f"{where}: per_job with clients or --fsperf-hosts: fio's clients "
                             "report per client")
        n = many.count(len(hosts) if clients is None else clients, where)
        base, job = ws.job(name, options, where)
        if hosts:
            return ws.repeat(base, lambda label: on_hosts.measure(
                ws, ws.unique(label), judged, job, n, where), judged=judged)
        return ws.repeat(base, lambda label: many.measure(ws, ws.unique(label), judged, job, n,
                                                          where), judged=judged)

    def files(self, name: str | None = None, *, judged: bool = True,
              **params: object) -> WorkloadResult:
        """The small-file engine; parameters and defaults: `scenarios.steps.FilesJob` (mode, count,
        size, threads, subdir, first, order, hold). Reading lays the files out first,
        unmeasured. `count` is shrunk by --fsperf-scale; the file size is not, unless one file
        is left. mode="hold": each file opened and its `first` bytes read after a cold start
        (made by itself where the test made none: warm, the daemon fills no buffer), then
        all held open and idle for `hold` seconds, the window: what idle open
        handles cost the daemon (daemon_rss_per_handle, its CPU while idle)."""
        where = f"{self._runner.test}: fsperf.files()"
        _named(name, where)
        job = steps.job(steps.FilesJob, params, where, name)
        return self._runner.repeat(name or f"files_{job.mode}",
                           lambda n: steps.files_step(self._runner, n, job, judged, where),
                           judged=judged)

    def meta(self, name: str | None = None, *, judged: bool = True,
             **params: object) -> WorkloadResult:
        """The metadata engine; parameters and defaults: `scenarios.steps.MetaJob` (op, entries,
        per_dir). The files are laid out first, unmeasured; `entries` is shrunk by --fsperf-scale."""
        where = f"{self._runner.test}: fsperf.meta()"
        _named(name, where)
        job = steps.job(steps.MetaJob, params, where, name)
        return self._runner.repeat(name or f"meta_{job.op}",
                           lambda n: steps.meta_step(self._runner, n, job, judged, where),
                           judged=judged)

    def checkpoint(self, name: str | None = None, *, judged: bool = True,
                   **params: object) -> WorkloadResult:
        """A sharded checkpoint saved durably (mode="save": temporary name, large writes,
        fsync, close, rename, directory fsync) or restored (mode="restore": read back whole);
        parameters and defaults: `scenarios.steps.CheckpointJob` (mode, shards, size, threads,
        subdir). The shard size is shrunk by --fsperf-scale, the shard count is not."""
        where = f"{self._runner.test}: fsperf.checkpoint()"
        _named(name, where)
        job = steps.job(steps.CheckpointJob, params, where, name)
        return self._runner.repeat(name or f"checkpoint_{job.mode}",
                           lambda n: steps.checkpoint_step(self._runner, n, job, judged, where),
                           judged=judged)

    def mdtest(self, name: str | None = None, *, judged: bool = True,
               **params: object) -> MdtestResult:
        """Metadata rates as mdtest measures them, one result per phase (create, stat, read,
        rename, rename_dir, remove; ops/s and per-op latency); parameters and defaults:
        `scenarios.steps.MdtestJob` (files, per_dir, threads, size, subdir)."""
        where = f"{self._runner.test}: fsperf.mdtest()"
        _named(name, where)
        job = steps.job(steps.MdtestJob, params, where, name)
        found = steps.mdtest_steps(self._runner, name, job, judged, where)
        for r in found.phases().values():
            self._runner.keep(r)
        return found

    def sysbench(self, name: str | None = None, *, judged: bool = True,
                 **params: object) -> WorkloadResult:
        """sysbench fileio (prepare unmeasured, then run); parameters and defaults:
        `scenarios.steps.SysbenchJob` (mode, files, block, total, threads, seconds). Without
        sysbench installed, the same shape as a fio job, noted in the result. `total` and
        `seconds` (not below 5 s) shrink with --fsperf-scale."""
        where = f"{self._runner.test}: fsperf.sysbench()"
        _named(name, where)
        job = steps.job(steps.SysbenchJob, params, where, name)
        return self._runner.repeat(name or f"sysbench_{job.mode}",
                           lambda n: steps.sysbench_step(self._runner, n, job, judged, where),
                           judged=judged)

    def scenario(self, scenario_id: str, **overrides: object) -> WorkloadResult:
        """Run a built-in scenario (pytest_fsperf.scenarios) by id; its last step is the
        measured, judged workload, named after the scenario. `overrides` change that step's
        parameters (e.g. threads=4 for the juicefs bench rows)."""
        where = f"{self._runner.test}: fsperf.scenario({scenario_id!r})"
        return run_scenario(self._runner, scenario_id, overrides, where)

    def compare(self, workload: Mapping[str, object] | Callable[[Fsperf], WorkloadResult],
                a: Sequence[str] | str = (), b: Sequence[str] | str = (),
                rounds: int = 3, name: str | None = None, tolerance: object = None,
                max_rounds: int | None = None, seconds: float | None = None,
                a_build: str | None = None, b_build: str | None = None,
                expect: Expected | str | None = None) -> Comparison:
        """Run the same workload with mount options (or builds of the daemon) A and B in
        interleaved pairs, A B then B A, each run after a cold remount; at least `rounds`
        pairs, more while the outcome is undecided, up to `max_rounds` pairs or `seconds`
        (--fsperf-ab-max-rounds, --fsperf-ab-seconds). Returns per-pair figures, medians,
        B/A (geometric mean of the pairs) with its interval, and per figure "B better",
        "B worse", "same" or "inconclusive" (paired.py says how). `workload` is fio options
        (a dict) or a function taking this fixture; `a_build`/`b_build` an executable used
        in place of the backend's binary. `tolerance` (default --fsperf-tolerance, 10%).
        `expect=Expected("ossfs-1.91-options", "readdir_optimize_ls")` (or the text
        "ossfs-1.91-options:readdir_optimize_ls"): a relative baseline's documented gain of B
        over A, checked against this B/A. B better or worse is the test's to assert; a
        comparison left inconclusive fails the test as an undecided release gate does
        (--fsperf-inconclusive=warn: a warning)."""
        where = f"{self._runner.test}: fsperf.compare()"
        tol = self._runner.tolerance
        if tolerance is not None:
            try:
                tol = units.parse_tolerance(tolerance)
            except ValueError as exc:
                raise UsageError(f"{where}: tolerance: {exc}") from None
            if not 0 <= tol < 1:
                raise UsageError(f"{where}: tolerance={str(tolerance)[:20]!r} must be from 0% to "
                                 "below 100%")
        relative = (None if expect is None else
                    find_relative(Expected.of(expect), self._settings.root, where))
        run: Workload
        if isinstance(workload, Mapping):
            run = workload
        elif callable(workload):  # the test's function is given this fixture, not the runner
            given = workload
            name = name or str(getattr(given, "__name__", "workload"))
            run = lambda _runner: given(self)  # noqa: E731
        else:
            raise UsageError(f"{where}: workload must be fio options (a dict) or a function")
        outcome = run_compare(self._runner, run, a, b, rounds, name, where, tol, max_rounds,
                              seconds, a_build, b_build)
        if relative is not None:
            outcome = self._expected(outcome, *relative, tol)
        self._runner.comparisons.append(outcome)
        return outcome

    def _expected(self, outcome: Comparison, baseline: Baseline, entry: RelativeEntry,
                  tolerance: float) -> Comparison:
        """The comparison with the documented gain checked against its deciding figure (a
        rate: B/A is the speedup), under the scale rule of every shipped baseline."""
        s = self._settings
        rule = scale_mismatch(baseline, s.scale, s.baseline_any_scale)
        m = outcome.metrics.get(outcome.decided_by)
        ratio, low, high = (m.ratio, m.ci_low, m.ci_high) if m else (None, None, None)
        found = check_relative(baseline, entry, ratio, low, high, tolerance, rule.note, rule.judged)
        return dataclasses.replace(outcome, expectation=found)


def _named(name: object, where: str) -> None:
    """A workload's name is text (a number passed first was a TypeError in the engine)."""
    if name is not None and not isinstance(name, str):
        raise UsageError(f"{where}: name={str(name)[:40]!r} must be text (the workload's name; "
                         "options are keywords)")

