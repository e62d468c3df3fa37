"""The FUSE path's ceiling: the same fio job on tmpfs itself and on a passthrough FUSE daemon
(bindfs) over that tmpfs - what this kernel's FUSE and page cache allow at that block size
and job count with no storage and no network behind them.

The tmpfs is /dev/shm (a private 0700 directory of the session's own there, noted for the
sweep before it exists): no mount to make, none to leave behind. The bindfs run is cold (a
remount and a page-cache drop before it, as the plugin's own cold starts); the tmpfs run
cannot be: its files are memory.
"""

from __future__ import annotations

import os
import shutil
import time

import psutil

from pytest_fsperf.engine.fiosize import job_bytes
from pytest_fsperf.errors import MeasurementError
from pytest_fsperf.infra import leftovers
from pytest_fsperf.infra.mountinfo import find_mount, read_mounts
from pytest_fsperf.mounts.mounter import BinaryMissing, MountPlan
from pytest_fsperf.mounts.registry import Registry
from pytest_fsperf.result.ceiling import Ceiling, CeilingPath, missing
from pytest_fsperf.result.workload import WorkloadResult
from pytest_fsperf.runner.target import Session, Target
from pytest_fsperf.runner.workspace import Workspace
from pytest_fsperf.units import format_size

SHM = "/dev/shm"
HEADROOM = 1 << 30  # bytes of available memory a tmpfs layout leaves, at least ...
HEADROOM_SHARE = 0.25  # ... or this share of the machine's memory
PASSTHROUGH = "bindfs"  # measured against rclone's local mount here: see docs/how-to/ceilings.md


def why_not(job: dict[str, str], shm: str = SHM) -> str:
    """Why the FUSE ceiling cannot be measured for this job here ("" where it can)."""
    try:
        m = find_mount(shm, read_mounts())
    except (OSError, LookupError):
        return f"{shm} is not mounted"
    if m.fstype != "tmpfs" or m.mount_point != shm:
        return f"{shm} is not a tmpfs here ({m.fstype} at {m.mount_point})"
    need = job_bytes(job) or 0  # laid out once: bindfs serves the tmpfs run's files
    free = shutil.disk_usage(shm).free
    if need > free:
        return f"the job's files ({need >> 20} MiB) do not fit in {shm} ({free >> 20} MiB free)"
    # a tmpfs is sized by the machine's RAM, not by what is free of it: its free space said
    # 24 GiB where a 20 GiB job took the machine into the OOM killer (MinIO, pytest killed)
    memory = psutil.virtual_memory()
    keep = max(HEADROOM, int(HEADROOM_SHARE * memory.total))
    if need > memory.available - keep:
        return (f"the job's files ({need >> 20} MiB) would take the machine's memory: "
                f"{memory.available >> 20} MiB available, {keep >> 20} MiB kept free")
    return ""


def _run(ws: Workspace, label: str, job: dict[str, str], cold: bool) -> WorkloadResult:
    if cold:
        ws.cold_start()
    return ws.measure(ws.unique(label), False, job, layout=True)


def _ios(r: WorkloadResult) -> int:
    return sum(d.total_ios for d in r.directions)


def _shape(job: dict[str, str]) -> str:
    keys = ("rw", "bs", "numjobs", "iodepth", "direct", "size", "runtime")
    shown = ({**job, "size": format_size(job_bytes({"size": job["size"]}) or 0)} if "size" in job
             else job)
    return "fio " + " ".join(f"{k}={shown[k]}" for k in keys if k in shown)


def fuse_ceilings(session: Session, job: dict[str, str]) -> tuple[Ceiling, Ceiling]:
    """The job on tmpfs, then on bindfs over that tmpfs (cold): (tmpfs, bindfs over tmpfs).
    bindfs serves the very files the tmpfs run laid out: nothing is written through FUSE
    (4 GiB of layout through bindfs took minutes here and starved the machine)."""
    why = why_not(job)
    if why:
        return missing(CeilingPath.TMPFS, why), missing(CeilingPath.FUSE, why)
    t0 = time.monotonic()
    root, entry = leftovers.private_dir("pytest-fsperf-ceiling-", SHM)
    plain_target: Target | None = None
    try:
        plain = os.path.join(root, "plain")
        os.mkdir(plain, 0o700)
        plain_target = Target(plain)
        workdir = plain_target.new_workdir("tmpfs")
        ws = Workspace(session, plain_target, "ceiling::tmpfs", workdir)
        try:
            on_tmpfs = _run(ws, "tmpfs", job, cold=False)
        except MeasurementError as exc:
            why = f"fio failed on tmpfs: {exc}"
            return missing(CeilingPath.TMPFS, why), missing(CeilingPath.FUSE, why)
        tmpfs = Ceiling(CeilingPath.TMPFS, f"{SHM}, {_shape(job)}", on_tmpfs.bw_bytes, on_tmpfs.iops,
                        _ios(on_tmpfs), time.monotonic() - t0)
        return tmpfs, _through_bindfs(session, plain, os.path.relpath(workdir, plain), job)
    finally:
        if plain_target is not None:
            plain_target.close()
        shutil.rmtree(root, ignore_errors=True)
        leftovers.done(entry)


def _through_bindfs(session: Session, source: str, workdir: str,
                    job: dict[str, str]) -> Ceiling:
    t0 = time.monotonic()
    try:
        plan = MountPlan(Registry().get(PASSTHROUGH, "ceilings"), (), {"source": source})
        mounted = session.open_target(plan)
    except (BinaryMissing, MeasurementError) as exc:
        return missing(CeilingPath.FUSE, f"{PASSTHROUGH} could not be mounted: {exc}")
    try:
        ws = Workspace(session, mounted, "ceiling::fuse", os.path.join(mounted.path, workdir))
        r = _run(ws, "fuse", job, cold=True)
        return Ceiling(CeilingPath.FUSE, f"{PASSTHROUGH} over tmpfs, {_shape(job)}, cold", r.bw_bytes,
                       r.iops, _ios(r), time.monotonic() - t0)
    except MeasurementError as exc:
        return missing(CeilingPath.FUSE, f"fio failed on {PASSTHROUGH} over tmpfs: {exc}")
    finally:
        session.close_target(mounted)
