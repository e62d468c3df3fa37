"""The small-file, metadata and sysbench workloads: each engine's parameters and defaults
written once (a frozen job), checked, then an unmeasured layout (then the pending cold start
again) and a measured run."""

from __future__ import annotations

import dataclasses
import os
import random
import resource
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from pytest_fsperf import scenarios, units
from pytest_fsperf.engine import checkpoint as checkpoint_engine
from pytest_fsperf.engine import files as files_engine
from pytest_fsperf.engine import fio as fio_engine
from pytest_fsperf.engine import mdtest as mdtest_engine
from pytest_fsperf.engine import meta as meta_engine
from pytest_fsperf.engine import sysbench as sysbench_engine
from pytest_fsperf.engine.fio_options import control
from pytest_fsperf.errors import DataLost, UsageError
from pytest_fsperf.measure import progress
from pytest_fsperf.measure.rss import RssReading, rss_of
from pytest_fsperf.mounts.spec import Need
from pytest_fsperf.result.parts import OpStats
from pytest_fsperf.result.phases import MdtestResult
from pytest_fsperf.result.workload import WorkloadResult
from pytest_fsperf.runner.fio_run import refuse
from pytest_fsperf.runner.readings import Window
from pytest_fsperf.vocab import EngineKind, FilesOp

if TYPE_CHECKING:
    from pytest_fsperf.runner.workspace import Workspace


@dataclass(frozen=True)
class FilesJob:
    """`threads` threads read (or write) `count` files of `size` each, whole, in work dir/subdir."""

    mode: str = "read"  # "read", "write", or "hold" (open, read `first`, hold idle: the window)
    count: int = 100_000  # files; shrunk by --fsperf-scale (one file left: its size shrinks)
    size: object = "128KiB"  # each file's, in the plugin's units ("4KiB", "1MB")
    threads: int = 128  # files moved at once (the compiled worker's threads)
    subdir: str = "files"  # under the work dir; a read finds an earlier write's files there
    first: object = "1MiB"  # the first read or write of each file; "1B" times the first byte
    order: str = "listed"  # or "shuffled": an epoch of a dataloader (seeded: the same each run)
    hold: float = 10.0  # mode "hold": seconds every file is held open and idle (the window)


@dataclass(frozen=True)
class MetaJob:
    """An operation over `entries` files: list (ls -f), list_stat (ls -l), walk (find) or stat."""

    op: str = "list"  # "list" (ls -f), "list_stat" (ls -l), "walk" (find) or "stat"
    entries: int = 1000  # files; shrunk by --fsperf-scale
    per_dir: int = 0  # files per directory (0: all in one)


@dataclass(frozen=True)
class SysbenchJob:
    """sysbench fileio: prepare `files` files of `total` bytes in all, then run `mode`."""

    mode: str = "seqwr"  # sysbench's --file-test-mode: seqwr, seqrd, rndrd, rndwr, rndrw ...
    files: int = 128  # --file-num
    block: object = "16KiB"  # --file-block-size
    total: object = "1GiB"  # --file-total-size; shrunk by --fsperf-scale
    threads: int = 2  # --threads
    seconds: float = 120  # --time; shrunk by --fsperf-scale, not below 5 s


@dataclass(frozen=True)
class CheckpointJob:
    """A sharded checkpoint: `shards` files of `size`, written by `threads` threads (temporary
    name, large writes, fsync, close, rename, then the directory fsync'ed): mode "save"; or
    read back whole: mode "restore" (saved first, unmeasured, if it is not there)."""

    mode: str = "save"  # "save" (durably: temp name, fsync, rename, dir fsync) or "restore"
    shards: int = 8  # files; not shrunk by --fsperf-scale
    size: object = "1GiB"  # each shard's; shrunk by --fsperf-scale
    threads: int = 8  # shards written or read at once
    subdir: str = "checkpoint"  # under the work dir


@dataclass(frozen=True)
class MdtestJob:
    """mdtest's phases over `files` files of `size` bytes in directories of `per_dir`, by
    `threads` threads: create, stat, read, rename, rename_dir, remove (each its own result)."""

    files: int = 1000  # files in all; shrunk by --fsperf-scale
    per_dir: int = 100  # files per directory
    threads: int = 4  # threads, each on its own part of the tree
    size: object = "4KiB"  # bytes written into each file at create, read back in the read phase
    subdir: str = "mdtest"  # under the work dir


Job = TypeVar("Job", FilesJob, MetaJob, SysbenchJob, CheckpointJob, MdtestJob)


def job(kind: type[Job], params: Mapping[str, object], where: str,
        name: str | None = None) -> Job:
    """The engine's job from keyword parameters; one it does not take is the user's mistake,
    and so is a control character in any text (checked before anything runs)."""
    known = [f.name for f in dataclasses.fields(kind)]
    unknown = sorted(set(params) - set(known))
    if unknown:
        raise UsageError(f"{where}: unknown parameter {unknown[0]!r} (takes {', '.join(known)})")
    if name is not None and not fio_engine.valid_name(name):
        raise UsageError(f"{where}: name={name!r} must be letters, digits, '_', '.', '-'")
    for key, value in params.items():
        bad = isinstance(value, str) and control(value)
        if bad:
            raise UsageError(f"{where}: {key}={value!r} holds a control character ({bad})")
    for f in dataclasses.fields(kind):  # each value of its field's type (a wrong one was a
        if f.name not in params:        # TypeError deep in the engine)
            continue
        value, shown = params[f.name], repr(params[f.name])[:40]
        if f.type == "str" and not isinstance(value, str):
            raise UsageError(f"{where}: {f.name}={shown} must be text")
        if f.type == "float" and (isinstance(value, bool) or not isinstance(value, int | float)
                                  or not 0 <= value <= MOST_SECONDS):
            raise UsageError(f"{where}: {f.name}={shown} must be a number of seconds from 0 "
                             f"to {MOST_SECONDS:,}")
    return kind(**params)  # type: ignore[arg-type]  # each step checks the values


MOST = 100_000_000  # files, entries, shards: past it, a typo (10**12 ate memory)
MOST_THREADS = 100_000  # threads started at once (10**8 never finished starting)
MOST_SECONDS = 86_400 * 7  # a duration a step takes


def _whole(where: str, **values: tuple[object, int]) -> None:
    """Each value (name=(value, least)) a whole number from `least` to MOST (MOST_THREADS
    for threads)."""
    for key, (value, least) in values.items():
        most = MOST_THREADS if key == "threads" else MOST
        if isinstance(value, bool) or not isinstance(value, int) or not least <= value <= most:
            shown = repr(value) if len(repr(value)) <= 40 else f"{repr(value)[:37]}..."
            raise UsageError(f"{where}: {key}={shown} must be a whole number from {least} "
                             f"to {most:,}")


def _open_files(where: str, n: int) -> None:
    """Room for n files held open at once: the soft limit raised toward the hard one, or one
    line saying how many it can hold (not EMFILE halfway through)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    need = n + 256  # what the session itself holds open besides
    if need > soft and (hard == resource.RLIM_INFINITY or need <= hard):
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (need, hard))
            soft = need
        except (ValueError, OSError):  # past the kernel's nr_open
            pass
    if need > soft:
        raise UsageError(f"{where}: count={n} files held open at once is past this process's "
                         f"limit of {soft} open files (ulimit -n; its hard limit is {hard})")


def _subdir(where: str, subdir: str) -> None:
    if not fio_engine.valid_name(subdir):
        raise UsageError(f"{where}: subdir={subdir!r} must be letters, digits, '_', '.', '-'")


def files_step(fs: Workspace, name: str | None, j: FilesJob, judged: bool, where: str) -> WorkloadResult:
    mode, count, size, threads, subdir = j.mode, j.count, j.size, j.threads, j.subdir
    if mode not in ("read", "write", "hold"):
        raise UsageError(f"{where}: mode={mode!r} must be 'read', 'write' or 'hold'")
    _whole(where, count=(count, 1), threads=(threads, 1))
    _subdir(where, subdir)
    try:
        nbytes = int(units.parse_bytes(size))
        first = int(units.parse_bytes(j.first))
    except ValueError as exc:
        raise UsageError(f"{where}: size or first: {exc}") from None
    if not 1 <= first <= files_engine.CHUNK:
        raise UsageError(f"{where}: first={j.first!r} must be from 1 byte to 1 MiB")
    n = round(count * fs.scale)
    if n < 1:  # one file left: shrink the file instead (a 1 GiB file at 0.01 is 10 MiB)
        nbytes = max(4096, int(nbytes * count * fs.scale))
        n = 1
    if mode == "hold":  # before any file is laid out
        _open_files(where, n)
        if fs.pending_cold is None:  # warm, the kernel serves the first reads and the daemon
            fs.cold_start()  # holds no buffers: a per-handle figure 13 times too small
    directory = os.path.join(fs.workdir, subdir)
    os.makedirs(directory, exist_ok=True)
    paths = files_engine.file_names(directory, n)
    fresh = True  # a write makes its files; a read finds them or lays them out first
    if mode != "write":
        # What the seed's reader does before its clock starts: walk the dir, stat each file.
        listed = files_engine.list_files(directory)
        fresh = listed != sorted(paths)
        if fresh:
            files_engine.run_files([(p, nbytes) for p in paths], write=True,
                                   threads=min(threads, 16))
            fs.recold()
            listed = files_engine.list_files(directory)
        todo = files_engine.sized(listed)
    else:
        todo = [(p, nbytes) for p in paths]
    if j.order not in ("listed", "shuffled"):
        raise UsageError(f"{where}: order={j.order!r} must be 'listed' or 'shuffled'")
    if j.order == "shuffled":
        todo = list(todo)
        random.Random(len(todo)).shuffle(todo)
    options = {"mode": mode, "count": str(n), "size": str(nbytes), "threads": str(threads)}
    if j.order != "listed":
        options["order"] = j.order
    if first != files_engine.CHUNK:
        options["first"] = str(first)
    label = fs.unique(name or f"files_{mode}")
    if mode == "hold":
        if not 0 < j.hold <= 3600:
            raise UsageError(f"{where}: hold={j.hold!r} must be from 0 to 3600 seconds")
        options["hold"] = f"{j.hold:g}"
        return dataclasses.replace(_hold(fs, label, judged, options, [p for p, _ in todo], first,
                                         j.hold), fresh_files=fresh)
    if mode == "write":
        fresh = not os.path.exists(paths[0])  # else it rewrites what an earlier run left
    # under a store that fails requests, what is written is known, to be read back
    pattern = os.urandom(files_engine.CHUNK) if mode == "write" and fs.target.faulty() else None
    io = progress.WithChild()  # the compiled worker's bytes, live
    found = fs.measure_engine(label, judged, EngineKind.FILES, options, lambda: files_engine.run_files(
        todo, write=mode == "write", threads=threads, first=first, started=io.started,
        pattern=pattern), io)
    notes = found.notes if pattern is None else (*found.notes,
                                                 _read_back(fs, label, todo, first, pattern))
    return dataclasses.replace(found, fresh_files=fresh, notes=notes)


def _read_back(fs: Workspace, label: str, todo: list[tuple[str, int]], first: int,
               pattern: bytes) -> str:
    """After the window: a cold start, then every file read back whole and compared with
    what was written; one that differs fails the test naming it."""
    fs.cold_start()
    wrong = files_engine.differs(todo, first, pattern)
    if wrong is not None:
        raise DataLost(f"{label}: what it wrote under the store's faults did not read back "
                       f"as written: {wrong}")
    return "written files read back after a cold start, each compared whole: intact"


def _hold(fs: Workspace, label: str, judged: bool, options: dict[str, str], paths: list[str],
          first: int, seconds: float) -> WorkloadResult:
    """Each file opened and its first bytes read after the cold start (a dataloader that has
    opened its shards), then all held open and idle: the window is the idle time, its daemon
    figures what idle handles cost."""
    fds: list[int] = []

    def open_all(w: Window) -> None:
        w.put(RssReading(rss_of(w.lookup)))
        for path in paths:
            fds.append(os.open(path, os.O_RDONLY | os.O_CLOEXEC | os.O_NOFOLLOW))
            os.pread(fds[-1], first, 0)

    def idle() -> OpStats:
        time.sleep(seconds)
        return OpStats(str(FilesOp.HOLD), len(fds), 0, seconds, 0.0, 0.0, 1, {})

    try:
        return fs.measure_engine(label, judged, EngineKind.FILES, options, idle, before=open_all)
    finally:
        for fd in fds:
            os.close(fd)


def meta_step(fs: Workspace, name: str | None, j: MetaJob, judged: bool, where: str) -> WorkloadResult:
    op, entries, per_dir = j.op, j.entries, j.per_dir
    if op not in meta_engine.OPERATIONS:
        raise UsageError(f"{where}: op={op!r} is not one of {', '.join(meta_engine.OPERATIONS)}")
    _whole(where, entries=(entries, 1), per_dir=(per_dir, 0))
    n = max(1, round(entries * fs.scale))
    root = os.path.join(fs.workdir, f"meta-{n}-{per_dir}")
    fresh = not os.path.isdir(root)
    if fresh:
        os.makedirs(root)
        meta_engine.make_tree(root, n, per_dir)
        fs.recold()
    paths = meta_engine.tree_paths(root, n, per_dir) if op == "stat" else None
    options = {"op": op, "entries": str(n), "per_dir": str(per_dir)}
    label = fs.unique(name or f"meta_{op}")
    found = fs.measure_engine(label, judged, EngineKind.META, options,
                              lambda: meta_engine.run_meta(op, root, paths,
                                                           meta_engine.expected_entries(op, n, per_dir)))
    return dataclasses.replace(found, fresh_files=fresh)


def sysbench_step(fs: Workspace, name: str | None, j: SysbenchJob, judged: bool,
                  where: str) -> WorkloadResult:
    mode, files, block, total, threads, seconds = j.mode, j.files, j.block, j.total, j.threads, j.seconds
    if mode not in sysbench_engine.MODES:
        raise UsageError(f"{where}: mode={mode!r} is not one of {', '.join(sysbench_engine.MODES)}")
    for key, value in (("files", files), ("threads", threads)):
        if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 1_000_000:
            raise UsageError(f"{where}: {key}={value!r} must be a whole number from 1 to 1000000")
    if isinstance(seconds, bool) or not isinstance(seconds, int | float) or not 0 < seconds <= 86400:
        raise UsageError(f"{where}: seconds={seconds!r} must be a number of seconds, above 0 "
                         "and at most 86400")
    try:
        block_b, total_b = int(units.parse_bytes(block)), int(units.parse_bytes(total))
    except ValueError as exc:
        raise UsageError(f"{where}: {exc}") from None
    if block_b < 1 or total_b < 1:
        raise UsageError(f"{where}: block and total must be at least one byte")
    total_b = max(files * block_b, int(total_b * fs.scale))
    secs = fio_engine.scaled_seconds(float(seconds), fs.scale)
    if mode not in ("seqrd", "rndrd"):
        refuse(fs, {Need.RANDOM_WRITES if mode.startswith("rnd") else Need.REWRITES:
                    f"sysbench {mode} writes into the files it prepared"}, where)
    if sysbench_engine.binary() is None:
        fio_mode: dict[str, object] = scenarios.library.FIO_MODE.get(mode, {"rw": "randrw"})
        job = {**fio_mode, "bs": block_b, "nrfiles": files, "filesize": total_b // files,
               "size": total_b, "numjobs": threads, "thread": 1, "time_based": 1,
               "runtime": f"{secs:g}s", "file_service_type": "random"}
        # The same shape as the sysbench run: sizes and time are scaled already.
        result = fs.run_fio(name or f"sysbench_{mode}", judged, job, where, scaled=True)
        note = "sysbench is not installed: run as the equivalent fio job"
        return dataclasses.replace(result, notes=(*result.notes, note))
    cwd = os.path.join(fs.workdir, "sysbench")
    os.makedirs(cwd, exist_ok=True)
    base = sysbench_engine.args(mode, files, block_b, total_b, threads, secs)
    deadline = (fs.running.workload_timeout
                or fio_engine.HANG_SLACK + secs + total_b / fio_engine.SLOWEST)
    sysbench_engine.prepare(cwd, base, deadline, fs.on_hang)
    fs.recold()
    options = {"mode": mode, "files": str(files), "block": str(block_b), "total": str(total_b),
               "threads": str(threads), "seconds": f"{secs:g}"}
    label = fs.unique(name or f"sysbench_{mode}")
    return fs.measure_engine(label, judged, EngineKind.SYSBENCH, options,
                        lambda: sysbench_engine.run(cwd, base, mode, threads, deadline, fs.on_hang))



@dataclass(frozen=True)
class Engine:
    """An engine as scenarios name it: its job type and its step."""

    kind: type[Any]
    step: Callable[[Workspace, str | None, Any, bool, str], WorkloadResult]

    def check(self, params: Mapping[str, object], where: str) -> Any:
        return job(self.kind, params, where)


def checkpoint_step(fs: Workspace, name: str | None, j: CheckpointJob, judged: bool,
                    where: str) -> WorkloadResult:
    if j.mode not in ("save", "restore"):
        raise UsageError(f"{where}: mode={j.mode!r} must be 'save' or 'restore'")
    _whole(where, shards=(j.shards, 1), threads=(j.threads, 1))
    _subdir(where, j.subdir)
    try:
        size = max(4096, int(units.parse_bytes(j.size) * fs.scale))  # the shard count stays
    except ValueError as exc:
        raise UsageError(f"{where}: size: {exc}") from None
    refuse(fs, {Need.RENAME: "a checkpoint save renames each shard to its final name"}, where)
    directory = os.path.join(fs.workdir, j.subdir)
    os.makedirs(directory, exist_ok=True)
    options = {"mode": j.mode, "shards": str(j.shards), "size": str(size),
               "threads": str(j.threads)}
    label = fs.unique(name or f"checkpoint_{j.mode}")
    if j.mode == "save":
        return fs.measure_engine(label, judged, EngineKind.FILES, options,
                                 lambda: checkpoint_engine.save(directory, j.shards, size, j.threads))
    names = checkpoint_engine.shard_names(directory, j.shards)
    if not all(os.path.isfile(n) and os.path.getsize(n) == size for n in names):
        checkpoint_engine.save(directory, j.shards, size, j.threads)
        fs.recold()
    io = progress.WithChild()
    return fs.measure_engine(label, judged, EngineKind.FILES, options, lambda: files_engine.run_files(
        [(n, size) for n in names], write=False, threads=j.threads, started=io.started), io)


def mdtest_steps(fs: Workspace, name: str | None, j: MdtestJob, judged: bool,
                 where: str) -> MdtestResult:
    """Every phase in order, each measured on its own; `files` shrinks with --fsperf-scale."""
    _whole(where, files=(j.files, 1), per_dir=(j.per_dir, 0), threads=(j.threads, 1))
    _subdir(where, j.subdir)
    try:
        size = int(units.parse_bytes(j.size))
    except ValueError as exc:
        raise UsageError(f"{where}: size: {exc}") from None
    refuse(fs, {Need.RENAME: "mdtest renames every file"}, where)
    n = max(1, round(j.files * fs.scale))
    root = os.path.join(fs.workdir, j.subdir)
    if os.path.exists(root):
        raise UsageError(f"{where}: {root} exists: give each mdtest run its own subdir=")
    os.makedirs(root)
    options = {"files": str(n), "per_dir": str(j.per_dir), "threads": str(j.threads),
               "size": str(size)}
    out = {}
    for phase in mdtest_engine.phases(j.per_dir):
        run = mdtest_engine.phase_run(phase, root, n, j.per_dir, size, j.threads)
        label = fs.unique(f"{name or 'mdtest'}_{phase}")
        out[phase] = fs.measure_engine(label, judged, EngineKind.META, {**options, "phase": phase}, run)
    os.rmdir(root)
    return MdtestResult(out["create"], out["stat"], out["read"], out["rename"],
                        out.get("rename_dir"), out["remove"])


ENGINES = {"files": Engine(FilesJob, files_step), "meta": Engine(MetaJob, meta_step),
           "sysbench": Engine(SysbenchJob, sysbench_step),
           "checkpoint": Engine(CheckpointJob, checkpoint_step)}
