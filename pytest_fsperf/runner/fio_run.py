"""A fio workload on the workspace: the job checked and scaled, its files laid out once, fio
run inside the measured window, its reports read."""

from __future__ import annotations

import contextlib
import dataclasses
import os
import re
import time
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from pytest_fsperf import units
from pytest_fsperf.engine import fio as fio_engine
from pytest_fsperf.engine import fio_status, fiosize
from pytest_fsperf.errors import DataLost, MeasurementError, UsageError, WorkloadHung
from pytest_fsperf.infra import cgroup
from pytest_fsperf.measure import pagecache, progress
from pytest_fsperf.measure.pagecache import PageCacheReading
from pytest_fsperf.measure.timeline import TimelineReading
from pytest_fsperf.mounts.daemon import Lookup
from pytest_fsperf.mounts.spec import Need
from pytest_fsperf.result.parts import JobStats
from pytest_fsperf.result.workload import WorkloadResult
from pytest_fsperf.runner import window
from pytest_fsperf.runner.readings import Window
from pytest_fsperf.vocab import EngineKind

if TYPE_CHECKING:
    from pytest_fsperf.runner.space import Space

WRITES = frozenset({"write", "randwrite", "rw", "readwrite", "randrw", "trimwrite"})
CHECKED = frozenset({"write", "randwrite"})  # what fio's verify_only can read back
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


def refuse(ws: Space, needs: Mapping[Need, str], where: str) -> None:
    """A workload the mounted backend cannot run (its Limits), in one line, before it starts."""
    owned = ws.target.owned
    why = owned.backend.limits.refusal(owned.backend.name, needs) if owned is not None else ""
    if why:
        raise UsageError(f"{where}: {why}")


def job(ws: Space, name: str | None, options: Mapping[str, object], where: str,
         scaled: bool = False) -> tuple[str, dict[str, str]]:
    """scaled: the options are already shrunk by --fsperf-scale (do not shrink again)."""
    if name is not None and not fio_engine.valid_name(name):
        raise UsageError(f"{where}: name={name!r} must be letters, digits, '_', '.', '-'")
    job = fio_engine.build_job(dict(options), 1.0 if scaled else ws.scale, where)
    refuse(ws, fio_engine.needs(job), where)
    if ws.target.owned is not None:  # how the filesystem makes files, unless the test chose
        job = {**ws.target.owned.backend.limits.fio, **job}
    return name or job.get("rw", "read"), job


def run(ws: Space, name: str | None, judged: bool, options: Mapping[str, object], where: str,
         layout: bool = True, scaled: bool = False, per_job: bool = False) -> WorkloadResult:
    """per_job: each of fio's jobs reported apart (fsperf.fio(per_job=True))."""
    if not isinstance(per_job, bool):
        raise UsageError(f"{where}: per_job={per_job!r} must be True or False")
    base, spec = job(ws, name, options, where, scaled)
    return measure(ws, ws.unique(base), judged, spec, layout, grouped=not per_job)


# The options that name a read job's files and size them; a layout job keeps only these.
SHAPE = ("size", "filesize", "nrfiles", "numjobs", "offset", "offset_increment", "filename",
         "filename_format", "unique_filename", "thread", "kb_base", "allow_file_create",
         "create_on_open", "fallocate")  # (the last two: how a file is made, per Limits.fio)
LAYOUT_BLOCK = 1 << 20


def lay_out(ws: Space, job: dict[str, str], out: str) -> None:
    """Create the files a read job needs, unmeasured; keep a pending cold() cold. First as a
    write job of the same files in direct 1 MiB writes (fio's own layout writes through the
    page cache: see docs/reference/fixture.md for what each took), then fio's
    create_only, which finds them in place (or lays out whatever the first did not make:
    a filesystem that refuses O_DIRECT, a shape the write job did not match). Only into an
    empty work dir: files an earlier workload of the test left (a write, then its read) are
    fio's to check, never rewritten (a daemon's cache of them is what the test reads)."""
    fast = layout_job(job) if not _files(ws.workdir) else None  # files there: fio's own pass
    if fast is not None:
        try:
            fio_engine.run_fio(fio_engine.command(fast, "fsperf", str(ws.workdir),
                                                  out + ".prewrite.json"),
                               out + ".prewrite.json", ws.deadline(job), ws.on_hang)
        except WorkloadHung:
            raise
        except MeasurementError:
            pass  # fio's own layout below does it the slow way
    # (create_on_open would leave every missing file to a job's open: create_only makes none)
    spec = {**{k: v for k, v in job.items() if k != "create_on_open"}, "create_only": "1"}
    fio_engine.run_fio(fio_engine.command(spec, "fsperf", str(ws.workdir), out + ".layout.json"),
                       out + ".layout.json", ws.deadline(job), ws.on_hang)
    ws.recold()


def layout_job(job: dict[str, str]) -> dict[str, str] | None:
    """The read job's files as a sequential write job in direct 1 MiB writes, or None where
    a file's size or offset is not whole MiB (direct writes need whole blocks) or unknown."""
    shape = {k: v for k, v in job.items() if k in SHAPE}
    try:
        base, files = int(shape.get("kb_base", "1024")), max(1, int(shape.get("nrfiles", "1")))
        sizes = {key: fiosize.parse_fio_size(shape[key], base)
                 for key in ("size", "filesize", "offset") if key in shape}
    except ValueError:
        return None
    if not sizes.keys() & {"size", "filesize"}:
        return None
    if "filesize" not in sizes:  # the job's size is split among its files
        each, rest = divmod(sizes["size"], files)
        if rest:
            return None
        sizes["size"] = each
    if any(n % LAYOUT_BLOCK for n in sizes.values()):
        return None
    return {**shape, "rw": "write", "bs": "1M", "direct": "1", "ioengine": "psync"}


def check_space(ws: Space, job: dict[str, str], before: dict[str, tuple[int, int]],
                where: str) -> None:
    """Refuse a job whose files cannot fit the filesystem's free space (beside the files
    already in the work dir), in one line, rather than fill the disk."""
    need = fiosize.job_bytes(job)
    if need is None:
        return
    need -= sum(size for size, _mtime in before.values())
    try:
        st = os.statvfs(ws.workdir)
    except OSError:
        return
    free = st.f_bavail * st.f_frsize
    if st.f_blocks and need > free:
        raise UsageError(f"{where}: the job's files take {units.format_mb(need)} but "
                         f"{ws.target.path} has {units.format_mb(free)} free; lower its "
                         "size or pass --fsperf-scale")


def measure(ws: Space, label: str, judged: bool, job: dict[str, str], layout: bool,
            grouped: bool = True) -> WorkloadResult:
    out = ws.output(label)
    owned = ws.target.owned
    if owned is not None and Need.REWRITES in owned.backend.limits.cannot and job.get("rw") in WRITES:
        _clear_written(ws.workdir, job)  # it writes new files only: a rerun writes anew
    # One fio job name per test ("fsperf"): a read finds the files a write left.
    before = _files(ws.workdir)
    check_space(ws, job, before, label)
    key = (str(ws.workdir), tuple(sorted(job.items())))
    # Files just as this job's layout left them (sizes, mtimes): laying out is a no-op,
    # and its second cold start (each run of a gate or of rounds paid one) is not needed.
    laid_out = (layout and fio_engine.is_reading(job)
                and not (before and ws.laid_out.get(key) == before))
    if laid_out:
        lay_out(ws, job, out)
        ws.laid_out[key] = _files(ws.workdir)
    fresh = not before or (laid_out and ws.laid_out[key] != before)
    checked = _checked(ws, job)
    if checked == "":  # each block written with its checksum, read back after the window
        # verify_state_save=0: fio would leave local-*-verify.state in the working directory
        job = {**job, "verify": "crc32c", "do_verify": "0", "verify_state_save": "0"}
    # fio's own reports time the I/O and count its bytes, for every ioengine (fio_status)
    spec = fio_status.instrumented(job, out)
    status_args = ([f"--status-interval={fio_status.INTERVAL:g}"]
                   if fio_status.needs_status(job) else [])
    cage, uncounted = pagecache.load_cage(ws.page_cache)  # the page cache fio takes
    with contextlib.ExitStack() as stack:
        if cage is not None:
            stack.callback(cage.close)
        proc = fio_engine.FioProcess(cgroup.launcher(cage, [
            *fio_engine.command(spec, "fsperf", str(ws.workdir), out + ".json", grouped),
            *status_args]), out + ".json.log")
        status = fio_status.Status(out + ".json")
        tree = progress.TreeIo(lambda: proc.proc.pid if proc.proc else None)
        # live: the bytes fio's processes read and wrote (exact, every sample, for engines
        # that move them through read()/write()), or fio's own count where that is more
        # (libaio, io_uring, mmap move none that way; fio reports once a second)
        with window.measured(ws, label, lambda: max(tree(), status()), on_exit=proc.stop_now,
                           spanned=True) as w:
            if cage is not None and w.cache.cold:  # fio's own code back in memory after the drop,
                fio_engine.fio_version()  # charged outside its cgroup: it counts the workload's pages
            try:
                code, fio_cpu = proc.run(ws.deadline(job), ws.on_hang)
            except WorkloadHung as exc:
                raise WorkloadHung(f"{label}: {exc}") from None
            fio_engine.check_exit(code, out + ".json")
            read, write, raw, jobs = fio_engine.parse_output(out + ".json")
            runtime = max((d.runtime_ms for d in (read, write) if d is not None), default=0)
            w.io_span = fio_status.io_span(out, runtime, status)
            if write is not None and write.io_bytes and w.lookup.daemon is not None:
                w.stored = _stored(w, write.io_bytes)  # a daemon's upload after fio's clock
            w.put(PageCacheReading(*pagecache.taken(cage, uncounted)))
        if (line := w.timeline) is not None:
            shown = next((d.lat_kind for d in (read, write) if d is not None), "lat")
            kind, points = fio_engine.read_latency_logs(out, w.started, shown)
            line = dataclasses.replace(line, clat=points, latency_kind=kind)
            total = sum(d.io_bytes for d in (read, write) if d is not None)
            if w.io_span is not None and abs(sum(line.moved) - total) > 0.05 * total:
                # the samples did not see fio's bytes: its reports, placed on its clock
                edges = [w.started + x for x in line.t]
                line = dataclasses.replace(line, moved=fio_status.per_interval(
                    status.series(*w.io_span, total), edges))
            if w.io_span is not None:  # up to the I/O's end, not the window's close
                line = line.until(w.io_span[1] - w.started)
            w.put(TimelineReading(line))
        if checked == "":
            checked = _read_back(ws, job, out, label)
        return window.record(ws, w, name=label, kind=EngineKind.FIO, options=job, read=read, write=write,
                           tool_cpu_percent=100.0 * fio_cpu / w.wall if w.wall > 0 else 0.0,
                           judged=judged, raw=raw, output_file=out + ".json",
                           notes=(_unflushed(job, w.lookup) + _per_job(jobs)
                                  + ((checked,) if checked else ())), jobs=jobs,
                           fresh_files=fresh)


STORED_SHARE = 0.98  # of the bytes written: the store has them (HTTP framing aside)
STORED_STALL = 3.0  # s without growth: the store will not get them all (compression, dedup)


def _stored(w: Window, written: int) -> float | None:
    """When (monotonic s) the store had received what the workload wrote: at once where the
    daemon uploaded within fio's clock, later where it buffered; None where the store is
    not counted here or stopped short of it."""
    last, since = -1.0, time.monotonic()
    while True:
        got = w.received()
        if got is None:
            return None
        now = time.monotonic()
        if got >= STORED_SHARE * written:
            return now
        if got > last:
            last, since = got, now
        elif now - since > STORED_STALL:
            return None
        time.sleep(0.05)


def _checked(ws: Space, job: dict[str, str]) -> str | None:
    """Under a store whose conditions fail or cut requests, what a write job wrote is read
    back and checked: "" where it will be, a note where it cannot be, None where not asked."""
    if not ws.target.faulty() or job.get("rw", "read") not in WRITES:
        return None
    if job.get("rw") not in CHECKED or job.get("time_based", "0") not in ("0", ""):
        return ("written data not checked under the store's faults: fio reads back only "
                "size-based write and randwrite jobs")
    return ""


VERIFY_FAILED = re.compile(r"(?:verify|crc32c)[^\n]*?(?:at file|failed)[^\n]*")


def _read_back(ws: Space, job: dict[str, str], out: str, label: str) -> str:
    """After the window: a cold start (a daemon the plugin started remounted, the page cache
    dropped), then fio reads every block the job wrote and checks its checksum. A block that
    differs fails the test naming the file and offset."""
    ws.cold_start()
    check = {**{k: v for k, v in job.items() if k not in FLUSHES}, "verify_only": "1",
             "do_verify": "1", "verify_state_save": "0"}
    try:
        fio_engine.run_fio(fio_engine.command(check, "fsperf", str(ws.workdir),
                                              out + ".verify.json"),
                           out + ".verify.json", ws.deadline(job), ws.on_hang)
    except WorkloadHung as exc:
        raise WorkloadHung(f"{label}: reading back what it wrote: {exc}") from None
    except MeasurementError as exc:
        said = ""
        with contextlib.suppress(OSError), open(out + ".verify.json.log", encoding="utf-8",
                                                errors="replace") as f:
            said = next((m.group(0) for m in map(VERIFY_FAILED.search, f) if m), "")
        raise DataLost(f"{label}: what it wrote under the store's faults did not read back "
                       f"as written: {(said or str(exc))[:300]}") from None
    return ("written data read back after a cold start, every block's checksum checked "
            "(fio verify=crc32c): intact")


FIO_FILE = re.compile(r"fsperf\.\d+\.\d+")  # fio's names for the files of job "fsperf"


def _clear_written(workdir: Path, job: dict[str, str]) -> None:
    """Remove the files an earlier run of this write job left in the work dir (fio's own
    names for job "fsperf", or the job's filename=), so that it writes new files."""
    named = set(job.get("filename", "").split(":")) - {""}
    for name, _ in _files(workdir).items():
        if FIO_FILE.fullmatch(name) or name in named:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(os.path.join(workdir, name))


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
