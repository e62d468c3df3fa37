"""A test's workspace on the filesystem under test: work dir, cold state, the measured
window around each workload (daemon meter, cache-disk sampler, progress line), rounds."""

from __future__ import annotations

import contextlib
import dataclasses
import os
import subprocess
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psutil

from pytest_fsperf import units
from pytest_fsperf.engine import fio as fio_engine
from pytest_fsperf.engine import fio_status, fiosize
from pytest_fsperf.errors import MeasurementError, UsageError, WorkloadHung
from pytest_fsperf.judge.paired import Budget
from pytest_fsperf.measure import balloon, cache, fusetrace, profile, progress, timeline
from pytest_fsperf.measure.cache import ColdRead, DaemonCache, PageCache
from pytest_fsperf.measure.diskmeter import DiskMeter
from pytest_fsperf.measure.figures import DaemonStats
from pytest_fsperf.measure.fusetrace import FuseRequests, Trace, Tracing
from pytest_fsperf.measure.meters import DaemonExited, DaemonMeter
from pytest_fsperf.measure.placement import Placement, pinned
from pytest_fsperf.measure.profile import Profile, Profiler
from pytest_fsperf.measure.rest import Rest, RestMeter, own_cpu
from pytest_fsperf.measure.timeline import Timeline
from pytest_fsperf.mounts.daemon import Lookup
from pytest_fsperf.options.config import Settings
from pytest_fsperf.result.workload import JobStats, OpStats, WorkloadResult, check_cold, median_round
from pytest_fsperf.runner.target import Session, Target, safe_name
from pytest_fsperf.store import juicefs
from pytest_fsperf.store.cost import Cost
from pytest_fsperf.store.requests import Requests

WRITES = frozenset({"write", "randwrite", "rw", "readwrite", "randrw", "trimwrite"})
FLUSHES = ("end_fsync", "fsync_on_close", "fsync", "fdatasync", "sync", "write_barrier")
NOT_HERE = "not counted here: this machine's JuiceFS client did not run the workload"


def _unflushed(job: dict[str, str], lookup: Lookup) -> tuple[str, ...]:
    """A FUSE daemon may buffer writes and upload at close or later: say so when the job
    did not make fio wait for it."""
    if lookup.daemon is None or job.get("rw", "read") not in WRITES:
        return ()
    if any(job.get(k, "0") not in ("0", "none", "") for k in FLUSHES):
        return ()
    return ("writes not flushed: the figure may be the daemon's buffer, not the upload; "
            "end_fsync=1 times it",)


def _daemon_cache(lookup: Lookup, page: PageCache | None,
                  daemon_cold: DaemonCache | None) -> DaemonCache:
    if not lookup.fuse:
        return DaemonCache.NO_DAEMON
    if page is None:
        return DaemonCache.WARM
    return daemon_cold or DaemonCache.UNKNOWN


@dataclass
class Window:
    """What a measured window saw around the workload: cache state, daemon, cache disk."""

    lookup: Lookup
    cache: PageCache
    daemon_cache: DaemonCache
    cold_steps: tuple[str, ...]
    wall: float = 0.0
    daemon: DaemonStats | None = None
    disk_peak: int | None = None
    requests: Requests | None = None
    requests_note: str = ""
    timeline: Timeline | None = None
    daemon_counters: dict[str, float] | None = None
    placement: Placement | None = None
    fuse: FuseRequests | None = None  # the kernel's FUSE requests in the window
    fuse_note: str = ""  # why there is no trace, when there is none
    profile: Profile | None = None  # the daemon's CPU profile, inside profiling()
    profile_note: str = ""  # why a profile asked for was not taken
    peers: list[tuple[Lookup, DaemonMeter | None]] = dataclasses.field(default_factory=list)
    peer_stats: list[DaemonStats | None] = dataclasses.field(default_factory=list)
    cache_filled: int | None = None  # how much the machine's page cache grew in the window, bytes
    rest: Rest | None = None  # what the rest of the machine used in the window
    io_span: tuple[float, float] | None = None  # when the I/O ran (monotonic s), if known
    expected: int | None = None  # the bytes the load generator says it moved, if known
    started: float = 0.0  # monotonic s of the timeline's t = 0


class Workspace:
    """One test's measuring state on one target: its work dir, the pending cold start, the
    measured window and rounds, and the results. The engines (engine/steps.py), scenarios
    and A/B runner work through this public API; `Fsperf` is the test-facing face of it."""

    def __init__(self, state: Session, target: Target, test: str, workdir: str,
                 rounds: int = 1, warmup: bool = False) -> None:
        self._state = state
        self.target = target
        self.test = test
        self.workdir = Path(workdir)
        self.results: list[WorkloadResult] = []
        self.notes: tuple[str, ...] = ()  # added to every result kept (e.g. an overridden setting)
        self.rounds = rounds  # each workload call runs this often; its figures are the medians
        self.warmup = warmup  # and first once more, unjudged and discarded
        self._cold: PageCache | None = None  # page cache state for the next workload
        self._daemon_cold: DaemonCache | None = None
        self._cold_steps: tuple[str, ...] = ()
        self._cold_kind = "cold"  # or "drop": what a pending cold start re-applies
        #: Directories whose peak disk use is sampled during each workload: the daemon's disk
        #: cache of a mount the plugin owns; add your daemon's (e.g. ossfs's use_cache) here.
        self.cache_dirs: list[str] = []
        self._fuse = True
        #: Other mounts of the same backend, one per extra client of a many-client run
        #: (measure/clients.py): a cold start covers them too; closed with close_peers().
        self.peers: list[Target] = []
        #: In an interleaved A/B (inside pairing()): --fsperf-cpus "auto" pins each run.
        self.paired = False
        #: Set by settle_from_now() in an A/B whose runs looked unstable: --fsperf-settle
        #: "auto" waits out each cache drop from then on, until the pairing ends.
        self.unsteady = False
        self._profiled = False  # inside profiling(): each window profiles the daemon
        #: What each read job's layout left (work dir, job -> its files): found again
        #: unchanged, the layout (and the cold start it makes again) is not repeated.
        self._laid_out: dict[tuple[str, tuple[tuple[str, str], ...]], dict[str, tuple[int, int]]] = {}
        self.place(target, workdir)

    def place(self, target: Target, workdir: str) -> None:
        """Measure on `target`, in `workdir`, from now on (a gate between two mounts moves
        between the reference's and the candidate's)."""
        self.target, self.workdir = target, Path(workdir)
        owned = target.owned
        self.cache_dirs = list(owned.rendered.cache_dirs) if owned else []
        try:
            self._fuse = target.mount().is_fuse
        except (OSError, LookupError):
            self._fuse = True  # unknown: do not call an fadvise cold

    def budget(self) -> Budget:
        """How long an interleaved A/B may go on (--fsperf-ab-max-rounds, --fsperf-ab-seconds)."""
        s = self._state.settings
        return Budget(min(3, s.ab_max_rounds), s.ab_max_rounds, s.ab_seconds)

    @property
    def settings(self) -> Settings:
        return self._state.settings

    @property
    def scale(self) -> float:
        return self._state.settings.scale

    @property
    def mount(self) -> dict[str, object] | None:
        """The backend the plugin mounted for this test (options redacted), or None."""
        return self.target.describe()

    # -- cold ----------------------------------------------------------------

    def cold_start(self, options: tuple[str, ...] | None = None,
                   after: tuple[str, ...] = (), build: str | None = None) -> PageCache:
        """after: steps already taken for this cold start (a cold() before a layout pass)."""
        steps = list(after)
        owned = self.target.owned
        earlier = self._daemon_cold if after else None  # this cold start's first pass, if any
        self._daemon_cold = None
        if owned is not None and owned.backend.has_daemon:
            steps += self.remount(options, wipe=True, build=build)
            wiped = owned.wiped_caches or earlier == DaemonCache.WIPED
            self._daemon_cold = (DaemonCache.KEPT if owned.kept_caches else
                                 DaemonCache.WIPED if wiped else DaemonCache.REMOUNTED)
        for peer in self.peers:  # every client's mount is cold, not only the first
            if peer.owned is not None and peer.owned.backend.has_daemon:
                peer.owned.remount(options, wipe=True, build=build)
        self._cold = cache.make_cold(str(self.workdir), self._fuse, store=self.settings.store_cache)
        self._cold_steps = (*steps, self._cold.method, *self._settled())
        self._cold_kind = "cold"
        return self._cold

    @contextlib.contextmanager
    def pairing(self) -> Iterator[None]:
        """The runs of an interleaved A/B: each must meet the same machine state."""
        with _raised(self, "paired"), _raised(self, "unsteady", False):
            yield

    def settle_from_now(self) -> str:
        """In an A/B whose runs looked unstable: wait out the VM's free page reporting after
        each cache drop from now on (--fsperf-settle=auto). What was done, or "" where
        nothing can be (not auto, not paired, no free page reporting on this machine)."""
        if (self.settings.settle != balloon.Settle.AUTO or not self.paired or self.unsteady
                or balloon.reports() is None):
            return ""
        self.unsteady = True
        return ("from here on each cache drop waits out the VM's free page reporting "
                "(--fsperf-settle=auto)")

    def profiling(self) -> contextlib.AbstractContextManager[None]:
        """Windows measured inside profile the daemon (perf record -g): an A/B's extra pair."""
        return _raised(self, "_profiled")

    def _settled(self) -> tuple[str, ...]:
        """After a cache drop, in an A/B: wait out the VM's free page reporting (balloon.py)."""
        if (self._cold != PageCache.DROPPED
                or not self.settings.settle.wanted(self.paired, self.unsteady)):
            return ()
        waited = balloon.settle()
        return (balloon.said(waited),) if waited is not None else ()

    def keep(self, result: WorkloadResult) -> WorkloadResult:
        """Add a finished result to the test's results (the measuring calls return theirs
        without keeping them, so nothing kept is ever patched in place)."""
        if self.notes:
            result = dataclasses.replace(result, notes=(*result.notes, *self.notes))
        self.results.append(result)
        return result

    def repeat(self, name: str, run: Callable[[str], WorkloadResult],
               tag: Callable[[WorkloadResult], WorkloadResult] | None = None) -> WorkloadResult:
        """Run a workload `rounds` times (after an unjudged warm-up round, if asked), each
        round after the same cold start or page-cache drop that was pending for the first.
        The result is the median round, carrying every round's figures; `tag` finishes it
        (a scenario's id and notes) before it is kept."""
        finish = tag or (lambda r: r)
        readings: list[float] = []
        if self._state.canary_wanted:  # the machine, read between rounds (canary.py)
            original, finish = finish, lambda r: original(dataclasses.replace(
                r, canary=(*readings, self._state.read_canary())))
        if self.rounds == 1 and not self.warmup:
            if self._state.canary_wanted:
                readings.append(self._state.read_canary())
            return self.keep(finish(run(name)))
        label = self.unique(name)
        kind = self._cold_kind if self._cold is not None else None
        runs: list[WorkloadResult] = []
        total = self.rounds + (1 if self.warmup else 0)
        try:
            for i in range(total):
                if i and kind == "cold":
                    self.cold_start()
                elif i and kind == "drop":
                    self.drop_pages()
                warm = self.warmup and i == 0
                if self._state.canary_wanted and not warm:
                    readings.append(self._state.read_canary())
                runs.append(run(f"{label}.warmup" if warm else f"{label}.r{i + (0 if self.warmup else 1)}"))
        except BaseException:
            for r in runs:  # the rounds measured before the fault are still reported
                self.keep(r)
            raise
        measured = runs[1:] if self.warmup else runs
        result = median_round(measured, label)
        if self.warmup:
            result = dataclasses.replace(result, notes=(
                *result.notes, f"warm-up round run first and discarded ({runs[0].name})"))
        return self.keep(finish(result))

    def open_peers(self, n: int) -> list[Target]:
        """n other mounts of this test's backend, with its plan (the same bucket), kept until
        close_peers(): the other clients of a many-client run."""
        owned = self.target.owned
        assert owned is not None
        while len(self.peers) < n:
            self.peers.append(self._state.open_target(owned.plan))
        return self.peers[:n]

    def close_peers(self) -> None:
        """Remove each other client's directory through its own mount (its pending uploads
        settled), then unmount it; what cannot be removed goes to the session's leftovers."""
        rel = os.path.relpath(self.target.logical(str(self.workdir)), self.target.path)
        while self.peers:
            n = len(self.peers)
            peer = self.peers.pop()
            problem = peer.remove(os.path.join(peer.path, rel, f"client{n}"))
            if problem:
                self._state.leftovers.append(problem)
            self._state.close_target(peer)

    def remount(self, options: tuple[str, ...] | None, wipe: bool,
                build: str | None = None) -> list[str]:
        owned = self.target.owned
        assert owned is not None
        steps = owned.remount(options, wipe=wipe, build=build)
        # An object store keeps no empty directories: a fresh daemon may not know the work dir.
        os.makedirs(self.workdir, exist_ok=True)
        return steps

    def _progress(self, label: str, counter: Callable[[], int],
                  sampler: timeline.Sampler) -> progress.Progress | None:
        terminal = self._state.progress_write
        if terminal is None:
            return None

        def now() -> str:
            bw, rss = sampler.latest()
            return f"; now {bw / 1e6:,.1f} MB/s" + (f", daemon RSS {rss / 1e6:,.0f} MB" if rss else "")

        line = progress.Progress(terminal[0], label, counter, terminal[1], now)
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

    def unique(self, name: str) -> str:
        taken = {r.name for r in self.results}
        if name not in taken:
            return name
        n = 2
        while f"{name}#{n}" in taken:
            n += 1
        return f"{name}#{n}"

    def job(self, name: str | None, options: Mapping[str, object], where: str,
             scaled: bool = False) -> tuple[str, dict[str, str]]:
        """scaled: the options are already shrunk by --fsperf-scale (do not shrink again)."""
        if name is not None and not fio_engine.valid_name(name):
            raise UsageError(f"{where}: name={name!r} must be letters, digits, '_', '.', '-'")
        job = fio_engine.build_job(dict(options), 1.0 if scaled else self.scale, where)
        owned = self.target.owned
        why = owned and owned.backend.sequential_writes and fio_engine.not_sequential(job)
        if owned and why:
            raise UsageError(f"{where}: {owned.backend.name} writes only new files, front to "
                             f"back: {why}")
        return name or job.get("rw", "read"), job

    def run_fio(self, name: str | None, judged: bool, options: Mapping[str, object], where: str,
             layout: bool = True, scaled: bool = False, per_job: bool = False) -> WorkloadResult:
        """per_job: each of fio's jobs reported apart (fsperf.fio(per_job=True))."""
        if not isinstance(per_job, bool):
            raise UsageError(f"{where}: per_job={per_job!r} must be True or False")
        base, job = self.job(name, options, where, scaled)
        return self.measure(self.unique(base), judged, job, layout, grouped=not per_job)

    def local_dir(self) -> str:
        """The session's private local directory (fio's output files; never on the mount)."""
        return self._state.local_dir()

    def output(self, label: str) -> str:
        return os.path.join(self._state.local_dir(), f"{safe_name(self.test)}-{safe_name(label)}")

    def layout(self, job: dict[str, str], out: str) -> None:
        """Create the files a read job needs, unmeasured; keep a pending cold() cold."""
        spec = {**job, "create_only": "1"}
        fio_engine.run_fio(fio_engine.command(spec, "fsperf", str(self.workdir), out + ".layout.json"),
                           out + ".layout.json", self.deadline(job), self.on_hang)
        self.recold()

    def check_space(self, job: dict[str, str], before: dict[str, tuple[int, int]],
                    where: str) -> None:
        """Refuse a job whose files cannot fit the filesystem's free space (beside the files
        already in the work dir), in one line, rather than fill the disk."""
        need = fiosize.job_bytes(job)
        if need is None:
            return
        need -= sum(size for size, _mtime in before.values())
        try:
            st = os.statvfs(self.workdir)
        except OSError:
            return
        free = st.f_bavail * st.f_frsize
        if st.f_blocks and need > free:
            raise UsageError(f"{where}: the job's files take {units.format_mb(need)} but "
                             f"{self.target.path} has {units.format_mb(free)} free; lower its "
                             "size or pass --fsperf-scale")

    def measure(self, label: str, judged: bool, job: dict[str, str], layout: bool,
                grouped: bool = True) -> WorkloadResult:
        out = self.output(label)
        # One fio job name per test ("fsperf"): a read finds the files a write left.
        before = _files(self.workdir)
        self.check_space(job, before, label)
        key = (str(self.workdir), tuple(sorted(job.items())))
        # Files just as this job's layout left them (sizes, mtimes): laying out is a no-op,
        # and its second cold start (each run of a gate or of rounds paid one) is not needed.
        laid_out = (layout and fio_engine.is_reading(job)
                    and not (before and self._laid_out.get(key) == before))
        if laid_out:
            self.layout(job, out)
            self._laid_out[key] = _files(self.workdir)
        fresh = not before or (laid_out and self._laid_out[key] != before)
        # fio's own reports time the I/O and count its bytes, for every ioengine (fio_status)
        run = fio_status.instrumented(job, out)
        status_args = ([f"--status-interval={fio_status.INTERVAL:g}"]
                       if fio_status.needs_status(job) else [])
        proc = fio_engine.FioProcess(
            [*fio_engine.command(run, "fsperf", str(self.workdir), out + ".json", grouped),
             *status_args], out + ".json.log")
        status = fio_status.Status(out + ".json")
        tree = progress.TreeIo(lambda: proc.proc.pid if proc.proc else None)
        # live: the bytes fio's processes read and wrote (exact, every sample, for engines
        # that move them through read()/write()), or fio's own count where that is more
        # (libaio, io_uring, mmap move none that way; fio reports once a second)
        with self.measured(label, lambda: max(tree(), status()), on_exit=proc.stop_now,
                           spanned=True) as w:
            try:
                code, fio_cpu = proc.run(self.deadline(job), self.on_hang)
            except WorkloadHung as exc:
                raise WorkloadHung(f"{label}: {exc}") from None
            fio_engine.check_exit(code, out + ".json")
            read, write, raw, jobs = fio_engine.parse_output(out + ".json")
            runtime = max((d.runtime_ms for d in (read, write) if d is not None), default=0)
            w.io_span = fio_status.io_span(out, runtime, status)
        if w.timeline is not None:
            w.timeline = dataclasses.replace(w.timeline, clat=fio_engine.read_clat_logs(out, w.started))
            total = sum(d.io_bytes for d in (read, write) if d is not None)
            if w.io_span is not None and abs(sum(w.timeline.moved) - total) > 0.05 * total:
                # the samples did not see fio's bytes: its reports, placed on its clock
                edges = [w.started + x for x in w.timeline.t]
                w.timeline = dataclasses.replace(w.timeline, moved=fio_status.per_interval(
                    status.series(*w.io_span, total), edges))
        return self.record(w, name=label, kind="fio", options=job, read=read, write=write,
                           tool_cpu_percent=100.0 * fio_cpu / w.wall if w.wall > 0 else 0.0,
                           judged=judged, raw=raw, output_file=out + ".json",
                           notes=_unflushed(job, w.lookup) + _per_job(jobs), jobs=jobs,
                           fresh_files=fresh)

    def deadline(self, job: dict[str, str]) -> float:
        return self._state.settings.workload_timeout or fio_engine.deadline(job)

    def on_hang(self) -> str:
        """A workload ran past its deadline: name the daemon's state; on a mount the plugin
        owns, abort the FUSE connection so that nothing stays stuck on it."""
        lookup = self.target.lookup_daemon()
        told = ""
        if lookup.daemon is not None:
            try:
                told = f" (daemon PID {lookup.daemon.pid}: {psutil.Process(lookup.daemon.pid).status()})"
            except psutil.Error:
                told = f" (daemon PID {lookup.daemon.pid}: gone)"
        if self.target.owned is not None:
            told += self.target.owned.abort()
        self.target.hung = "the filesystem stopped answering during a workload" + told
        return told

    # -- scenarios ------------------------------------------------------------

    def drop_pages(self, after: tuple[str, ...] = ()) -> PageCache:
        self._cold = cache.make_cold(str(self.workdir), self._fuse, store=self.settings.store_cache)
        self._daemon_cold = DaemonCache.PAGE_ONLY
        self._cold_steps = (*after, self._cold.method, *self._settled())
        self._cold_kind = "drop"
        return self._cold

    @property
    def pending_cold(self) -> PageCache | None:
        """The cold state the next workload takes (None: none is pending; it runs warm)."""
        return self._cold

    def recold(self) -> None:
        """After a layout pass: make a pending cold start (or page-cache drop) true again."""
        if self._cold is None:
            return
        after = (*self._cold_steps, "layout")
        if self._cold_kind == "drop":
            self.drop_pages(after)
        else:
            self.cold_start(after=after)

    # -- small files and metadata -------------------------------------------

    def measure_engine(self, label: str, judged: bool, kind: str, options: dict[str, str],
                run: Callable[[], OpStats]) -> WorkloadResult:
        """Measure an in-process engine with the daemon meter, as fio is measured. Past the
        workload deadline (--fsperf-workload-timeout, else an hour) the hang is handled as for
        fio: on a mount the plugin owns, the aborted connection ends the engine's waits."""
        timeout = self._state.settings.workload_timeout or 3600.0
        fired = threading.Event()
        told: list[str] = []

        def hang() -> None:
            fired.set()  # before the abort, which is what wakes the engine
            told.append(self.on_hang())

        timer = threading.Timer(timeout, hang)
        timer.daemon = True
        with self.measured(label, progress.own_io) as w:
            cpu0 = own_cpu()
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
            cpu = own_cpu() - cpu0
        return self.record(w, name=label, kind=kind, options=options, read=None, write=None,
                           tool_cpu_percent=100.0 * cpu / w.wall if w.wall > 0 else 0.0,
                           judged=judged, ops=ops)

    @contextlib.contextmanager
    def measured(self, label: str, counter: Callable[[], int],
                 on_exit: Callable[[], None] | None = None,
                 timed_io: bool = False, peers: int = 0,
                 here: bool = True, spanned: bool = False) -> Iterator[Window]:
        """Take the pending cold state, then measure the body with the daemon meter, the
        cache-disk sampler and the progress line. A failure because the daemon died is
        reported as the daemon's death. timed_io: the counter counts the workload's bytes
        and nothing else (fio's processes), so the daemon's CPU% is taken over the time
        they moved; an in-process engine's run is its window already. peers: the daemons of
        the first `peers` other clients are measured too (w.peers, in the order of self.peers).
        spanned: the body sets w.io_span, the time the I/O ran as the load generator says
        (fio): the meters sample the daemons' CPU for it. here=False: the workload ran
        elsewhere (hosts): this machine's JuiceFS client's own counts are not taken for it
        (a store's counters are: they count every client)."""
        lookup = self.target.lookup_daemon()  # after any remount
        w = Window(lookup, self._cold or PageCache.WARM,
                   _daemon_cache(lookup, self._cold, self._daemon_cold),
                   self._cold_steps if self._cold else ())
        self._cold, self._daemon_cold, self._cold_steps = None, None, ()
        moved = counter if timed_io else None
        meter = (DaemonMeter(lookup.daemon, on_exit=on_exit, moved=moved, spanned=spanned)
                 if lookup.daemon else None)
        others = [p.lookup_daemon() for p in self.peers[:peers]]
        w.peers = [(o, DaemonMeter(o.daemon, on_exit=on_exit, moved=moved, spanned=spanned)
                    if o.daemon else None) for o in others]
        pids = [m.pid for o in (lookup, *others) if o.daemon for m in o.daemon.members]
        disk = self._disk_meter()
        store, w.requests_note = self.target.request_meter()
        if not here and isinstance(store, juicefs.StatsMeter):
            store, w.requests_note = None, NOT_HERE
        if store is not None:
            try:
                store.start()
            except (OSError, ValueError) as exc:
                store, w.requests_note = None, f"the store's metrics failed: {exc}"
        # JuiceFS's own counters: from the request meter's reads when .stats is that already
        stats_root = (None if isinstance(store, juicefs.StatsMeter) or not here
                      else self.target.juicefs_stats())
        own = juicefs.OwnMeter(stats_root) if stats_root is not None else None
        if own is not None:
            try:
                own.start()
            except (OSError, ValueError):
                own = None
        trace, w.fuse_note = self._trace(lookup)
        profiler = None
        if self._profiled and pids:
            why = profile.refused(pids)
            if why:
                w.profile_note = f"not profiled: {why}"
            else:
                profiler = Profiler(pids, os.path.join(self.local_dir(),
                                                       f"{safe_name(label)}.perf.data"))
        limit = self._state.settings.stall_limit
        sampler = timeline.Sampler(counter, pids,
                                   (lambda: disk.last) if disk else None,
                                   stall_limit=limit if on_exit is not None else None,
                                   on_stall=on_exit)
        sampler.start()
        w.started = sampler.started
        shown = self._progress(label, counter, sampler)
        try:
            for m in (meter, *(m for _o, m in w.peers)):
                if m is not None:
                    m.start()
            w.placement = self.settings.cpus.placement(self.paired)
            try:
                with pinned(w.placement, pids):
                    if profiler is not None:
                        profiler.start()
                    if trace is not None:
                        trace.start()
                    cached = psutil.virtual_memory().cached
                    rest = RestMeter(pids)
                    rest.start()
                    t0 = time.monotonic()  # after the pinning: its cost is not the workload's
                    yield w
            except (DaemonExited, WorkloadHung):  # the cause is named already
                raise
            except MeasurementError:
                # did the workload fail because a daemon died? Then say that.
                for m in (meter, *(m for _o, m in w.peers)):
                    if m is not None:
                        m.stop(label)  # raises DaemonExited if it is gone
                if sampler.stalled is not None:  # stopped by the stall limit: say that
                    raise MeasurementError(_stalled(label, sampler.stalled, limit)) from None
                raise
            w.wall = time.monotonic() - t0
            w.rest = rest.stop()
            w.cache_filled = max(0, psutil.virtual_memory().cached - cached)
            if trace is not None:
                trace.stop()
            if profiler is not None:
                try:
                    w.profile = profiler.stop()
                except (OSError, subprocess.SubprocessError) as exc:
                    w.profile_note = f"the profile failed: {exc}"
            if sampler.stalled is not None:
                raise MeasurementError(_stalled(label, sampler.stalled, limit))
            w.daemon = meter.stop(label, w.io_span, w.expected) if meter else None
            w.peer_stats = [m.stop(label, w.io_span, w.expected) if m else None
                            for _o, m in w.peers]
            if store is not None:
                try:
                    w.requests = store.stop()
                except (OSError, ValueError) as exc:
                    w.requests_note = f"the store's metrics failed: {exc}"
            if own is not None:
                with contextlib.suppress(OSError, ValueError):
                    w.daemon_counters = own.stop()
            elif isinstance(store, juicefs.StatsMeter) and w.requests is not None:
                w.daemon_counters = store.counters
        except DaemonExited as exc:  # the target's own daemon: what its log said last
            owned = self.target.owned
            mine = meter is not None and exc.pid == meter.daemon.pid
            said = owned.last_words() if owned is not None and mine else ""
            if not said:
                raise
            raise DaemonExited(f"{exc}; its log ends: {said}", exc.pid) from None
        finally:
            w.timeline = sampler.stop()
            if trace is not None:
                if w.wall:
                    with contextlib.suppress(OSError, ValueError):
                        w.fuse = trace.summary(t0, t0 + w.wall)
                    if w.timeline is not None and w.fuse is not None:
                        edges = [sampler.started + x for x in w.timeline.t[1:]]
                        w.timeline = dataclasses.replace(w.timeline, fuse_ops=trace.per_interval(
                            sampler.started, edges[-1], edges))
                trace.close()
            if profiler is not None:
                profiler.close()
            if shown:
                shown.stop()
            for m in (meter, *(m for _o, m in w.peers)):
                if m is not None:
                    m.abort()
            w.disk_peak = disk.stop() if disk else None

    def _trace(self, lookup: Lookup) -> tuple[Trace | None, str]:
        """The FUSE request trace of the window (armed, not started), or why there is none."""
        setting = self.settings.fuse_trace
        if not lookup.fuse:
            return None, ""
        if setting == Tracing.OFF:
            return None, "not traced (--fsperf-fuse-trace=off)"
        why = fusetrace.unavailable()
        if why:
            return None, f"not available: {why}"
        try:
            mount = self.target.mount()
        except (OSError, LookupError) as exc:
            return None, f"not available: the mount could not be read ({exc})"
        trace = Trace(fusetrace.connection_id(mount.major, mount.minor))
        try:
            trace.open()
        except OSError as exc:
            trace.close()
            return None, f"not available: tracefs refused the trace ({exc.strerror or exc})"
        return trace, ""

    def _cost(self, q: Requests | None) -> Cost | None:
        price = self._state.settings.price_list
        return price.cost(q) if q is not None and price is not None else None

    def record(self, w: Window, cold: tuple[ColdRead, str] | None = None,
               **fields: Any) -> WorkloadResult:
        """The result of a measured window; cold: the cold-read check, where the caller made
        it (many clients: each client's daemon against its own bytes)."""
        result = WorkloadResult(
            test=self.test, cache=w.cache, daemon_cache=w.daemon_cache, daemon=w.daemon,
            daemon_note=w.lookup.note, wall_seconds=w.wall, mount=self.target.describe(),
            cold_steps=w.cold_steps, cache_disk_peak_bytes=w.disk_peak, requests=w.requests,
            requests_note=w.requests_note, cost=self._cost(w.requests), timeline=w.timeline,
            daemon_counters=w.daemon_counters, placement=w.placement, fuse=w.fuse,
            fuse_note=w.fuse_note, profile=w.profile, profile_note=w.profile_note,
            cache_filled=w.cache_filled, rest=w.rest, **fields)
        found, evidence = cold or check_cold(w.cache, w.daemon, result.read_only_bytes, w.fuse)
        return dataclasses.replace(result, cold_read=found, cold_evidence=evidence)

    # -- A/B -----------------------------------------------------------------


@contextlib.contextmanager
def _raised(owner: object, flag: str, value: bool = True) -> Iterator[None]:
    """owner.flag is `value` for the body, False after it, however it ends."""
    setattr(owner, flag, value)
    try:
        yield
    finally:
        setattr(owner, flag, False)


def _files(workdir: Path) -> dict[str, tuple[int, int]]:
    """The work dir's regular files (fio's): name -> (size, mtime_ns), to tell whether a
    run's files were made for it or found in place."""
    found = {}
    with contextlib.suppress(OSError), os.scandir(workdir) as entries:
        for e in entries:
            with contextlib.suppress(OSError):
                if e.is_file(follow_symlinks=False):
                    st = e.stat(follow_symlinks=False)
                    found[e.name] = (st.st_size, st.st_mtime_ns)
    return found


def _per_job(jobs: tuple[JobStats, ...]) -> tuple[str, ...]:
    """Each job's bandwidth, as fio prints it for jobs reported apart (min-max)."""
    if not jobs:
        return ()
    bws = [j.bw_bytes for j in jobs]
    return (f"{len(jobs)} jobs reported apart: per job {units.format_rate(min(bws))} to "
            f"{units.format_rate(max(bws))}; bandwidth and IOPS are their sum over the longest "
            "job's time, as fio's group line adds them",)


def _stalled(label: str, seconds: float, limit: float | None) -> str:
    return (f"{label}: stopped after {seconds:g} s without progress "
            f"(--fsperf-stall-limit={limit or 0:g})")
