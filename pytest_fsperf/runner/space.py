"""A test's place on the filesystem under test and its state there: the work dir, the pending
cold state, rounds, the results, an A/B's flags. What the window, a fio workload and the A/B
pairs work on (window.py, fio_run.py, ab.py); workspace.py adds the release gate on top."""

from __future__ import annotations

import contextlib
import dataclasses
import enum
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import psutil

from pytest_fsperf.engine import fio as fio_engine
from pytest_fsperf.infra.probe import NoAnswer, probe
from pytest_fsperf.judge.deciding import BY_DEFAULT, Deciding
from pytest_fsperf.judge.paired import Budget
from pytest_fsperf.measure import balloon, cache, pagecache
from pytest_fsperf.result.comparison import Comparison
from pytest_fsperf.result.machine import Mounted
from pytest_fsperf.result.workload import WorkloadResult, median_round
from pytest_fsperf.runner.running import Running
from pytest_fsperf.runner.target import Session, Target, safe_name
from pytest_fsperf.vocab import DaemonCache, PageCache, StoreCache


class Pending(enum.Enum):
    """What the pending cold state was made by, and is made again by before each round."""

    COLD_START = "cold()"  # remount (wiping the daemon's cache where owned), drop the page cache
    PAGE_DROP = "drop_page_cache()"  # the page cache only


@dataclass(frozen=True)
class Release:
    """A release gate: the reference build (or mount) against the candidate."""

    reference: str  # as shown: the build's binary or the mount point
    candidate: str
    reference_place: tuple[Target, str] | None = None


@dataclass(frozen=True)
class PerTest:
    """One test's settings, each resolved once by the one precedence rule (the plugin's
    session/per_test.py) and then fixed for the test."""

    rounds: int = 1  # each workload call runs this often; its figures are the medians
    warmup: bool = False  # and first once more, unjudged and discarded
    tolerance: float = 0.10
    rss_settle: float = 0.0  # s after each window before the daemon's RSS is read again
    page_cache: pagecache.Counting = pagecache.Counting.AUTO  # the page cache its files hold
    notes: tuple[str, ...] = ()  # added to every result kept (e.g. an overridden setting)
    release: Release | None = None  # under a release gate
    deciding: Deciding = BY_DEFAULT  # the figures its A/Bs decide on together


class Space:
    """One test's measuring state on one target: its work dir, the pending cold start, the
    rounds and the results."""

    def __init__(self, state: Session, target: Target, test: str, workdir: str,
                 config: PerTest = PerTest(),
                 beside: Callable[[Space], Callable[[WorkloadResult], WorkloadResult]] | None = None,
                 ) -> None:
        self.state = state
        self.target = target
        self.test = test
        self.workdir = Path(workdir)
        self.config = config
        self.results: list[WorkloadResult] = []
        self._cold: PageCache | None = None  # page cache state for the next workload
        self._daemon_cold: DaemonCache | None = None
        self._cold_steps: tuple[str, ...] = ()
        self._cold_kind = Pending.COLD_START  # what a pending cold state re-applies each round
        #: Directories whose peak disk use is sampled during each workload: the daemon's disk
        #: cache of a mount the plugin owns; add your daemon's (e.g. ossfs's use_cache) here.
        self.cache_dirs: list[str] = []
        self._fuse = True
        #: Other mounts of the same backend, one per extra client of a many-client run
        #: (runner/clients.py): a cold start covers them too; closed with close_peers().
        self.peers: list[Target] = []
        #: In an interleaved A/B (inside pairing()): --fsperf-cpus "auto" pins each run.
        self.paired = False
        #: Set by settle_from_now() in an A/B whose runs looked unstable: --fsperf-settle
        #: "auto" waits out each cache drop from then on, until the pairing ends.
        self.unsteady = False
        self.profiled = False  # inside profiling(): each window profiles the daemon
        #: What each read job's layout left (work dir, job -> its files): found again
        #: unchanged, the layout (and the cold start it makes again) is not repeated.
        self.laid_out: dict[tuple[str, tuple[tuple[str, str], ...]], dict[str, tuple[int, int]]] = {}
        self.comparisons: list[Comparison] = []  # every A/B of the test, gate pairs included
        #: Each judged result finished (--fsperf-ceilings: the ceilings of its shape beside it)
        self.beside = beside(self) if beside is not None else None
        self.place(target, workdir)

    # the test's settings (PerTest), read where the runner needs them
    @property
    def rounds(self) -> int:
        return self.config.rounds

    @property
    def warmup(self) -> bool:
        return self.config.warmup

    @property
    def tolerance(self) -> float:
        return self.config.tolerance

    @property
    def rss_settle(self) -> float:
        return self.config.rss_settle

    @property
    def page_cache(self) -> pagecache.Counting:
        return self.config.page_cache

    @property
    def release(self) -> Release | None:
        return self.config.release

    @property
    def notes(self) -> tuple[str, ...]:
        return self.config.notes

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
        s = self.running
        return Budget(min(3, s.ab_max_rounds), s.ab_max_rounds, s.ab_seconds)

    @property
    def running(self) -> Running:
        """What it reads of the session's settings (resolved once)."""
        return self.state.running

    @property
    def scale(self) -> float:
        return self.running.scale

    @property
    def mount(self) -> Mounted | None:
        """The backend the plugin mounted for this test (options redacted), or None."""
        return self.target.describe()

    # -- cold ----------------------------------------------------------------

    def store_cache(self) -> StoreCache:
        """--fsperf-store-cache, with auto resolved: keep in a release gate between two
        builds of a daemon the plugin mounts (every cold start remounts it), drop otherwise."""
        chosen = self.running.store_cache
        if chosen is not StoreCache.AUTO:
            return chosen
        owned = self.target.owned
        gate = (self.release is not None and self.release.reference_place is None
                and owned is not None and owned.backend.has_daemon)
        return StoreCache.AUTO if gate else StoreCache.DROP

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
        self._cold = cache.make_cold(str(self.workdir), self._fuse, store=self.store_cache())
        self._keep_workdir()
        self._cold_steps = (*steps, self._cold.method, *self._settled())
        self._cold_kind = Pending.COLD_START
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
        if (self.running.settle != balloon.Settle.AUTO or not self.paired or self.unsteady
                or balloon.reports() is None):
            return ""
        self.unsteady = True
        return ("from here on each cache drop waits out the VM's free page reporting "
                "(--fsperf-settle=auto)")

    def profiling(self) -> contextlib.AbstractContextManager[None]:
        """Windows measured inside profile the daemon (perf record -g): an A/B's extra pair."""
        return _raised(self, "profiled")

    def _settled(self) -> tuple[str, ...]:
        """After a cache drop, in an A/B: wait out the VM's free page reporting (balloon.py)."""
        if (self._cold != PageCache.DROPPED
                or not self.running.settle.wanted(self.paired, self.unsteady)):
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

    def _rounds(self, name: str, run: Callable[[str], WorkloadResult],
                tag: Callable[[WorkloadResult], WorkloadResult] | None = None) -> WorkloadResult:
        """Run a workload `rounds` times (after an unjudged warm-up round, if asked), each
        round after the same cold start or page-cache drop that was pending for the first.
        The result is the median round, carrying every round's figures; `tag` finishes it
        (a scenario's id and notes) before it is kept."""
        finish = tag or (lambda r: r)
        readings: list[float] = []
        if self.state.canary_wanted:  # the machine, read between rounds (canary.py)
            original, finish = finish, lambda r: original(dataclasses.replace(
                r, canary=(*readings, self.state.read_canary())))
        if self.rounds == 1 and not self.warmup:
            if self.state.canary_wanted:
                readings.append(self.state.read_canary())
            return self.keep(finish(run(name)))
        label = self.unique(name)
        kind = self._cold_kind if self._cold is not None else None
        runs: list[WorkloadResult] = []
        total = self.rounds + (1 if self.warmup else 0)
        try:
            for i in range(total):
                if i and kind is Pending.COLD_START:
                    self.cold_start()
                elif i and kind is Pending.PAGE_DROP:
                    self.drop_pages()
                warm = self.warmup and i == 0
                if self.state.canary_wanted and not warm:
                    readings.append(self.state.read_canary())
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
            self.peers.append(self.state.open_target(owned.plan))
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
                self.state.leftovers.append(problem)
            self.state.close_target(peer)

    def remount(self, options: tuple[str, ...] | None, wipe: bool,
                build: str | None = None) -> list[str]:
        owned = self.target.owned
        assert owned is not None
        steps = owned.remount(options, wipe=wipe, build=build)
        # An object store keeps no empty directories: a fresh daemon may not know the work dir.
        os.makedirs(self.workdir, exist_ok=True)
        return steps

    def _keep_workdir(self) -> None:
        """Where an empty directory lives only while the kernel remembers it (mount-s3:
        Limits.keeps_empty_dirs), a cache drop forgets the work dir: make it again."""
        owned = self.target.owned
        if owned is not None and not owned.backend.limits.keeps_empty_dirs:
            os.makedirs(self.workdir, exist_ok=True)

    def take_cold(self) -> tuple[PageCache | None, DaemonCache | None, tuple[str, ...]]:
        """The pending cold state, for the window about to be measured (none pending after)."""
        taken = (self._cold, self._daemon_cold, self._cold_steps)
        self._cold, self._daemon_cold, self._cold_steps = None, None, ()
        return taken

    def unique(self, name: str) -> str:
        taken = {r.name for r in self.results}
        if name not in taken:
            return name
        n = 2
        while f"{name}#{n}" in taken:
            n += 1
        return f"{name}#{n}"

    def local_dir(self) -> str:
        """The session's private local directory (fio's output files; never on the mount)."""
        return self.state.local_dir()

    def output(self, label: str) -> str:
        return os.path.join(self.state.local_dir(), f"{safe_name(self.test)}-{safe_name(label)}")

    def deadline(self, job: dict[str, str]) -> float:
        return self.running.workload_timeout or fio_engine.deadline(job)

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
        try:  # a mount that still answers is not simply blamed: the job may ask for the time
            probe(str(self.target.path), 2.0)
            answers = True
        except NoAnswer:
            answers = False
        if self.target.owned is not None:
            told += self.target.owned.abort()  # either way: nothing stays stuck on it
        if answers:
            return (": the mount still answers (statfs within 2 s), so the job may have asked "
                    "for more time than that (its size, loops, thinktime, rate or runtime), or "
                    "one request of it is stuck" + told)
        self.target.hung = "the filesystem stopped answering during a workload" + told
        return ": the filesystem stopped answering" + told

    # -- scenarios ------------------------------------------------------------

    def drop_pages(self, after: tuple[str, ...] = ()) -> PageCache:
        self._cold = cache.make_cold(str(self.workdir), self._fuse, store=self.store_cache())
        self._keep_workdir()
        self._daemon_cold = DaemonCache.PAGE_ONLY
        self._cold_steps = (*after, self._cold.method, *self._settled())
        self._cold_kind = Pending.PAGE_DROP
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
        if self._cold_kind is Pending.PAGE_DROP:
            self.drop_pages(after)
        else:
            self.cold_start(after=after)


@contextlib.contextmanager
def _raised(owner: object, flag: str, value: bool = True) -> Iterator[None]:
    """owner.flag is `value` for the body, False after it, however it ends."""
    setattr(owner, flag, value)
    try:
        yield
    finally:
        setattr(owner, flag, False)


