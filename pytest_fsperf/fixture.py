"""The `fsperf` fixture object: a work directory on the mount, cold(), fio(), compare()."""

from __future__ import annotations

import contextlib
import dataclasses
import os
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psutil

from . import cache, progress, units
from .compare import Comparison, Workload, run_compare
from .diskmeter import DiskMeter
from .engine import fio as fio_engine
from .engine import steps
from .errors import MeasurementError, UsageError, WorkloadHung
from .meters import DaemonExited, DaemonMeter
from .mount.daemon import Lookup
from .result import DaemonStats, OpStats, WorkloadResult
from .scenarios.runner import run_scenario
from .session import FsperfSession, Target, safe_name

UNKNOWN_DAEMON_CACHE = "unknown: existing mount, daemon not restarted"


def _cpu() -> float:
    """This process's CPU and that of its reaped children (sysbench), in seconds."""
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


WRITES = frozenset({"write", "randwrite", "rw", "readwrite", "randrw", "trimwrite"})
FLUSHES = ("end_fsync", "fsync_on_close", "fsync", "fdatasync", "sync", "write_barrier")


def _unflushed(job: dict[str, str], lookup: Lookup) -> tuple[str, ...]:
    """A FUSE daemon may buffer writes and upload at close or later: say so when the job
    did not make fio wait for it."""
    if lookup.daemon is None or job.get("rw", "read") not in WRITES:
        return ()
    if any(job.get(k, "0") not in ("0", "none", "") for k in FLUSHES):
        return ()
    return ("writes not flushed: the figure may be the daemon's buffer, not the upload; "
            "end_fsync=1 times it",)


def _daemon_cache(lookup: Lookup, page: str | None, daemon_cold: str | None) -> str:
    if lookup.daemon is None and lookup.note.startswith("no daemon"):
        return "n/a: no daemon"
    if page is None:
        return "warm"
    return daemon_cold or UNKNOWN_DAEMON_CACHE


@dataclass
class _Window:
    """What a measured window saw around the workload: cache state, daemon, cache disk."""

    lookup: Lookup
    cache: str
    daemon_cache: str
    cold_steps: tuple[str, ...]
    wall: float = 0.0
    daemon: DaemonStats | None = None
    disk_peak: int | None = None


class Fsperf:
    """Given to a test as `fsperf`. Everything it writes stays in `workdir`."""

    def __init__(self, state: FsperfSession, target: Target, test: str, workdir: str,
                 rounds: int = 1, warmup: bool = False) -> None:
        self._state = state
        self._target = target
        self.test = test
        self.workdir = Path(workdir)
        self.results: list[WorkloadResult] = []
        self.rounds = rounds  # each workload call runs this often; its figures are the medians
        self.warmup = warmup  # and first once more, unjudged and discarded
        self.comparisons: list[Comparison] = []
        self._cold: str | None = None  # page cache state for the next workload
        self._daemon_cold: str | None = None
        self._cold_steps: tuple[str, ...] = ()
        self._cold_kind = "cold"  # or "drop": what a pending cold start re-applies
        owned = target.owned
        #: Directories whose peak disk use is sampled during each workload: the daemon's disk
        #: cache of a mount the plugin owns; add your daemon's (e.g. ossfs's use_cache) here.
        self.cache_dirs: list[str] = list(owned.rendered.cache_dirs) if owned else []
        try:
            self._fuse = target.mount().is_fuse
        except (OSError, LookupError):
            self._fuse = True  # unknown: do not call an fadvise cold

    @property
    def scale(self) -> float:
        return self._state.settings.scale

    @property
    def mount(self) -> dict[str, object] | None:
        """The backend the plugin mounted for this test (options redacted), or None."""
        return self._target.describe()

    # -- cold ----------------------------------------------------------------

    def cold(self) -> str:
        """Make the next workload cold. On a mount the plugin owns: unmount, wipe the
        daemon's disk cache, mount again; always: sync and drop the page cache. If the
        workload must first lay out its files, this is repeated after the layout."""
        return self._make_cold()

    def _make_cold(self, options: tuple[str, ...] | None = None, after: tuple[str, ...] = ()) -> str:
        """after: steps already taken for this cold start (a cold() before a layout pass)."""
        steps = list(after)
        owned = self._target.owned
        self._daemon_cold = None
        if owned is not None and owned.backend.has_daemon:
            steps += self._remount(options, wipe=True)
            wiped = any(s.startswith("wiped") for s in steps)
            if owned.kept_caches:
                self._daemon_cold = ("not cold: remounted, but its disk cache was kept: "
                                     + "; ".join(owned.kept_caches))
            else:
                self._daemon_cold = "cold: remounted" + (", disk cache wiped" if wiped else "")
        self._cold = cache.make_cold(str(self.workdir), self._fuse)
        self._cold_steps = (*steps, self._cold.removeprefix("cold: "))
        self._cold_kind = "cold"
        return self._cold

    def _repeat(self, name: str, run: Callable[[str], WorkloadResult]) -> WorkloadResult:
        """Run a workload `rounds` times (after an unjudged warm-up round, if asked), each
        round after the same cold start or page-cache drop that was pending for the first.
        The result is the median round, carrying every round's figures."""
        if self.rounds == 1 and not self.warmup:
            return run(name)
        label = self._unique(name)
        kind = self._cold_kind if self._cold is not None else None
        runs: list[WorkloadResult] = []
        total = self.rounds + (1 if self.warmup else 0)
        for i in range(total):
            if i and kind == "cold":
                self._make_cold()
            elif i and kind == "drop":
                self._drop()
            warm = self.warmup and i == 0
            runs.append(run(f"{label}.warmup" if warm else f"{label}.r{i + (0 if self.warmup else 1)}"))
        for r in runs:
            self.results.remove(r)
        measured = runs[1:] if self.warmup else runs
        key = "bw" if measured[0].io_bytes else "ops"
        ordered = sorted(measured, key=lambda r: r.single_metrics().get(key) or 0.0)
        base = ordered[(len(ordered) - 1) // 2]
        notes = (f"warm-up round run first and discarded ({runs[0].name})",) if self.warmup else ()
        result = dataclasses.replace(
            base, name=label,
            rounds=tuple({**r.single_metrics(), "seconds": r.wall_seconds} for r in measured),
            notes=(*base.notes, *notes))
        self.results.append(result)
        return result

    def _remount(self, options: tuple[str, ...] | None, wipe: bool) -> list[str]:
        owned = self._target.owned
        assert owned is not None
        steps = owned.remount(options, wipe=wipe)
        # An object store keeps no empty directories: a fresh daemon may not know the work dir.
        os.makedirs(self.workdir, exist_ok=True)
        return steps

    def _progress(self, label: str, counter: Callable[[], int]) -> progress.Progress | None:
        terminal = self._state.progress_write
        if terminal is None:
            return None
        line = progress.Progress(terminal[0], label, counter, terminal[1])
        line.start()
        return line

    def _disk_meter(self) -> DiskMeter | None:
        paths = [p for p in self.cache_dirs if os.path.isdir(p)]
        if not paths:
            return None
        meter = DiskMeter(paths)
        meter.start()
        return meter

    # -- fio -----------------------------------------------------------------

    def _unique(self, name: str) -> str:
        taken = {r.name for r in self.results}
        if name not in taken:
            return name
        n = 2
        while f"{name}#{n}" in taken:
            n += 1
        return f"{name}#{n}"

    def fio(self, name: str | None = None, *, judged: bool = True,
            **options: object) -> WorkloadResult:
        """Run one fio job in the work directory and measure it with the daemon."""
        where = f"{self.test}: fsperf.fio()"
        rw = str(options.get("rw", "read"))
        return self._repeat(name or rw, lambda n: self._fio(n, judged, options, where))

    def _job(self, name: str | None, options: Mapping[str, object], where: str,
             scaled: bool = False) -> tuple[str, dict[str, str]]:
        """scaled: the options are already shrunk by --fsperf-scale (do not shrink again)."""
        if name is not None and not fio_engine.valid_name(name):
            raise UsageError(f"{where}: name={name!r} must be letters, digits, '_', '.', '-'")
        job = fio_engine.build_job(dict(options), 1.0 if scaled else self.scale, where)
        return name or job.get("rw", "read"), job

    def _fio(self, name: str | None, judged: bool, options: Mapping[str, object], where: str,
             layout: bool = True, scaled: bool = False) -> WorkloadResult:
        base, job = self._job(name, options, where, scaled)
        return self._measure(self._unique(base), judged, job, layout)

    def _output(self, label: str) -> str:
        return os.path.join(self._state.local_dir(), f"{safe_name(self.test)}-{safe_name(label)}")

    def _layout(self, job: dict[str, str], out: str) -> None:
        """Create the files a read job needs, unmeasured; keep a pending cold() cold."""
        spec = {**job, "create_only": "1"}
        fio_engine.run_fio(fio_engine.command(spec, "fsperf", str(self.workdir), out + ".layout.json"),
                           out + ".layout.json", self._deadline(job), self._on_hang)
        self._recold()

    def _measure(self, label: str, judged: bool, job: dict[str, str], layout: bool) -> WorkloadResult:
        out = self._output(label)
        # One fio job name per test ("fsperf"): a read finds the files a write left.
        if layout and fio_engine.is_reading(job):
            self._layout(job, out)
        proc = fio_engine.FioProcess(
            fio_engine.command(job, "fsperf", str(self.workdir), out + ".json"), out + ".json.log")

        def fio_io() -> int:
            return progress.tree_io(proc.proc.pid) if proc.proc else 0

        with self._window(label, fio_io, on_exit=proc.stop_now) as w:
            proc.start()
            try:
                code, fio_cpu = proc.wait(self._deadline(job), self._on_hang)
            except WorkloadHung as exc:
                raise WorkloadHung(f"{label}: {exc}") from None
            fio_engine.check_exit(code, out + ".json")
        read, write, raw = fio_engine.parse_output(out + ".json")
        return self._record(w, name=label, kind="fio", options=job, read=read, write=write,
                            tool_cpu_percent=100.0 * fio_cpu / w.wall if w.wall > 0 else 0.0,
                            judged=judged, raw=raw, output_file=out + ".json",
                            notes=_unflushed(job, w.lookup))

    def _deadline(self, job: dict[str, str]) -> float:
        return self._state.settings.workload_timeout or fio_engine.deadline(job)

    def _on_hang(self) -> str:
        """A workload ran past its deadline: name the daemon's state; on a mount the plugin
        owns, abort the FUSE connection so that nothing stays stuck on it."""
        lookup = self._target.lookup_daemon()
        told = ""
        if lookup.daemon is not None:
            try:
                told = f" (daemon PID {lookup.daemon.pid}: {psutil.Process(lookup.daemon.pid).status()})"
            except psutil.Error:
                told = f" (daemon PID {lookup.daemon.pid}: gone)"
        if self._target.owned is not None:
            told += self._target.owned.abort()
        self._target.hung = "the filesystem stopped answering during a workload" + told
        return told

    # -- scenarios ------------------------------------------------------------

    def drop_page_cache(self) -> str:
        """Drop only the kernel page cache; the daemon and its cache stay as they are."""
        return self._drop()

    def _drop(self, after: tuple[str, ...] = ()) -> str:
        self._cold = cache.make_cold(str(self.workdir), self._fuse)
        self._daemon_cold = "kept: only the page cache was dropped"
        self._cold_steps = (*after, self._cold.removeprefix("cold: "))
        self._cold_kind = "drop"
        return self._cold

    def _recold(self) -> None:
        """After a layout pass: make a pending cold start (or page-cache drop) true again."""
        if self._cold is None:
            return
        after = (*self._cold_steps, "layout")
        if self._cold_kind == "drop":
            self._drop(after)
        else:
            self._make_cold(after=after)

    def scenario(self, scenario_id: str, **overrides: object) -> WorkloadResult:
        """Run a built-in scenario (pytest_fsperf.scenarios) by id; its last step is the
        measured, judged workload, named after the scenario. `overrides` change that step's
        parameters (e.g. threads=4 for the juicefs bench rows)."""
        where = f"{self.test}: fsperf.scenario({scenario_id!r})"
        return run_scenario(self, scenario_id, overrides, where)

    # -- small files and metadata -------------------------------------------

    def files(self, name: str | None = None, *, mode: str = "read", count: int = 100_000,
              size: object = "128KiB", threads: int = 128, judged: bool = True,
              subdir: str = "files") -> WorkloadResult:
        """The small-file engine: `threads` threads read (or write) `count` files of `size`
        each, whole, in work dir/subdir. Reading lays the files out first, unmeasured.
        `count` is shrunk by --fsperf-scale; the file size is not, unless one file is left."""
        where = f"{self.test}: fsperf.files()"
        return self._repeat(name or f"files_{mode}", lambda n: self._files(
            n, mode, count, size, threads, judged, subdir, where))

    def _files(self, name: str | None, mode: str = "read", count: int = 100_000,
               size: object = "128KiB", threads: int = 128, judged: bool = True,
               subdir: str = "files", where: str = "fsperf.files()") -> WorkloadResult:
        return steps.files_step(self, name, mode, count, size, threads, judged, subdir, where)

    def meta(self, name: str | None = None, *, op: str = "list", entries: int = 1000,
             per_dir: int = 0, judged: bool = True) -> WorkloadResult:
        """The metadata engine over `entries` files (laid out first, unmeasured, in a
        directory of this size): op is list (ls -f), list_stat (ls -l), walk (find) or stat.
        `entries` is shrunk by --fsperf-scale."""
        where = f"{self.test}: fsperf.meta()"
        return self._repeat(name or f"meta_{op}", lambda n: self._meta(
            n, op, entries, per_dir, judged, where))

    def _meta(self, name: str | None, op: str = "list", entries: int = 1000, per_dir: int = 0,
              judged: bool = True, where: str = "fsperf.meta()") -> WorkloadResult:
        return steps.meta_step(self, name, op, entries, per_dir, judged, where)

    def sysbench(self, name: str | None = None, *, mode: str = "seqwr", files: int = 128,
                 block: object = "16KiB", total: object = "1GiB", threads: int = 2,
                 seconds: float = 120, judged: bool = True) -> WorkloadResult:
        """sysbench fileio (prepare unmeasured, then run); without sysbench installed, the
        same shape as a fio job, noted in the result. `total` and `seconds` (not below 5 s)
        shrink with --fsperf-scale."""
        where = f"{self.test}: fsperf.sysbench()"
        return self._repeat(name or f"sysbench_{mode}", lambda n: self._sysbench(
            n, mode, files, block, total, threads, seconds, judged, where))

    def _sysbench(self, name: str | None, mode: str = "seqwr", files: int = 128,
                  block: object = "16KiB", total: object = "1GiB", threads: int = 2,
                  seconds: float = 120, judged: bool = True,
                  where: str = "fsperf.sysbench()") -> WorkloadResult:
        return steps.sysbench_step(self, name, mode, files, block, total, threads, seconds, judged,
                                   where)

    def _engine(self, label: str, judged: bool, kind: str, options: dict[str, str],
                run: Callable[[], OpStats]) -> WorkloadResult:
        """Measure an in-process engine with the daemon meter, as fio is measured. Past the
        workload deadline (--fsperf-workload-timeout, else an hour) the hang is handled as for
        fio: on a mount the plugin owns, the aborted connection ends the engine's waits."""
        timeout = self._state.settings.workload_timeout or 3600.0
        fired = threading.Event()
        told: list[str] = []

        def hang() -> None:
            fired.set()  # before the abort, which is what wakes the engine
            told.append(self._on_hang())

        timer = threading.Timer(timeout, hang)
        timer.daemon = True
        with self._window(label, progress.own_io) as w:
            cpu0 = _cpu()
            timer.start()
            try:
                ops = run()
            except (MeasurementError, OSError):
                if not fired.is_set():  # failed for a reason of its own
                    raise
            finally:
                timer.cancel()
            if fired.is_set():
                timer.join()
                raise WorkloadHung(f"{label}: did not finish within {timeout:g} s: the filesystem "
                                   f"stopped answering{told[0]}")
            cpu = _cpu() - cpu0
        return self._record(w, name=label, kind=kind, options=options, read=None, write=None,
                            tool_cpu_percent=100.0 * cpu / w.wall if w.wall > 0 else 0.0,
                            judged=judged, ops=ops)

    @contextlib.contextmanager
    def _window(self, label: str, counter: Callable[[], int],
                on_exit: Callable[[], None] | None = None) -> Iterator[_Window]:
        """Take the pending cold state, then measure the body with the daemon meter, the
        cache-disk sampler and the progress line. A failure because the daemon died is
        reported as the daemon's death."""
        lookup = self._target.lookup_daemon()  # after any remount
        w = _Window(lookup, self._cold or cache.WARM,
                    _daemon_cache(lookup, self._cold, self._daemon_cold),
                    self._cold_steps if self._cold else ())
        self._cold, self._daemon_cold, self._cold_steps = None, None, ()
        meter = DaemonMeter(lookup.daemon, on_exit=on_exit) if lookup.daemon else None
        disk = self._disk_meter()
        shown = self._progress(label, counter)
        try:
            if meter:
                meter.start()
            t0 = time.monotonic()
            try:
                yield w
            except (DaemonExited, WorkloadHung):  # the cause is named already
                raise
            except MeasurementError:
                if meter:  # did the workload fail because the daemon died? Then say that.
                    meter.stop(label)  # raises DaemonExited if it is gone
                raise
            w.wall = time.monotonic() - t0
            w.daemon = meter.stop(label) if meter else None
        finally:
            if shown:
                shown.stop()
            if meter:
                meter.abort()
            w.disk_peak = disk.stop() if disk else None

    def _record(self, w: _Window, **fields: Any) -> WorkloadResult:
        result = WorkloadResult(
            test=self.test, cache=w.cache, daemon_cache=w.daemon_cache, daemon=w.daemon,
            daemon_note=w.lookup.note, wall_seconds=w.wall, mount=self._target.describe(),
            cold_steps=w.cold_steps, cache_disk_peak_bytes=w.disk_peak, **fields)
        self.results.append(result)
        return result

    # -- A/B -----------------------------------------------------------------

    def compare(self, workload: Workload, a: Sequence[str] | str = (), b: Sequence[str] | str = (),
                rounds: int = 3, name: str | None = None, tolerance: object = "10%") -> Comparison:
        """Run the same workload with mount options A and B, interleaved A B A B ..., each
        round after a cold remount; returns per-round figures, medians, B/A ratios with
        their 95% interval, and per figure "B better", "B worse", "same" or "inconclusive"
        (a difference must pass `tolerance` and be significant).
        `workload` is fio options (a dict) or a function taking this fixture."""
        where = f"{self.test}: fsperf.compare()"

        def go() -> Comparison:
            try:
                tol = units.parse_percent(tolerance) / 100
            except ValueError as exc:
                raise UsageError(f"{where}: tolerance: {exc}") from None
            return run_compare(self, workload, a, b, rounds, name, where, tol)

        return go()
