"""The environment a run measured in: enough to tell whether two runs compare."""

from __future__ import annotations

import functools
import hashlib
import os
import platform
import socket
import time
from importlib import metadata

from pytest_fsperf.engine.fio import fio_version
from pytest_fsperf.infra.mountinfo import Mount, read_mounts
from pytest_fsperf.infra.redact import redact_args, redact_options
from pytest_fsperf.mounts.daemon import Lookup
from pytest_fsperf.result.environment import (
    Build,
    DaemonFacts,
    Environment,
    FuseKernel,
    Machine,
    MountFacts,
)


def _cpu_model() -> str | None:
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return None


def _os_name() -> str | None:
    try:
        return platform.freedesktop_os_release().get("PRETTY_NAME")
    except OSError:
        return None


def _mem_total() -> int | None:
    try:
        with open("/proc/meminfo", encoding="ascii") as f:
            for line in f:
                if line.startswith("MemTotal:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError):
        pass
    return None


def mount_facts(path: str, mount: Mount) -> MountFacts:
    return MountFacts(path, mount.mount_point, redact_options(mount.source), mount.fstype,
                      redact_options(mount.mount_options), redact_options(mount.super_options))


MAX_HASHED = 1 << 30  # bytes: a larger daemon binary is named, not hashed (time)
BUILD_ENV = ("GIT_COMMIT", "GITHUB_SHA", "CI_COMMIT_SHA")  # a CI's commit, where none is given


def build_of(build_id: str | None, daemon_pid: int | None) -> Build:
    return Build(**build_dict(build_id, daemon_pid))


def build_dict(build_id: str | None, daemon_pid: int | None) -> dict[str, str]:
    """What a saved run records of the build it measured: the id given (--fsperf-build-id,
    else the CI's commit) and the daemon binary's path and SHA-256 (from /proc/PID/exe)."""
    found: dict[str, str] = {}
    given = build_id or next((os.environ[k] for k in BUILD_ENV if os.environ.get(k)), "")
    if given:
        found["id"] = given
    if daemon_pid is not None:
        exe = f"/proc/{daemon_pid}/exe"
        try:
            found["daemon_exe"] = path = os.readlink(exe)
            if not on_plain_disk(daemon_pid, path):  # a FUSE daemon may never answer the read
                return found
            with open(exe, "rb") as f:  # the binary the daemon runs, even if since replaced
                if os.fstat(f.fileno()).st_size <= MAX_HASHED:
                    h = hashlib.sha256()
                    for block in iter(lambda: f.read(1 << 20), b""):
                        h.update(block)
                    found["daemon_sha256"] = h.hexdigest()
        except OSError:
            pass
    return found


def binary_device(pid: int, path: str, proc: str = "/proc") -> tuple[int, int] | None:
    """The device (major, minor) the process's binary is mapped from, by /proc/PID/maps (the
    mapping names the file; its device field says where it really lies, also when the mount
    was lazily detached and the path names something else now); None where not found."""
    name = path.removesuffix(" (deleted)")
    try:
        with open(f"{proc}/{pid}/maps", encoding="utf-8", errors="replace") as f:
            for line in f:
                fields = line.split(maxsplit=5)
                if len(fields) == 6 and fields[5].rstrip("\n").removesuffix(" (deleted)") == name:
                    major, minor = fields[3].split(":")
                    return int(major, 16), int(minor, 16)
    except (OSError, ValueError):
        return None
    return None


def on_plain_disk(pid: int, path: str) -> bool:
    """Whether the daemon's binary lies on a mount of this mount table that is not FUSE (so
    reading it cannot wait on a daemon); False where that cannot be told."""
    device = binary_device(pid, path)
    if device is None:
        return False
    try:
        mounts = [m for m in read_mounts() if (m.major, m.minor) == device]
    except OSError:
        return False
    return bool(mounts) and not any(m.is_fuse for m in mounts)


def daemon_facts(lookup: Lookup) -> DaemonFacts | None:
    d = lookup.daemon
    if d is None:
        return None
    return DaemonFacts(d.pid, tuple(redact_args(d.cmdline)), d.found_by)


def _read(path: str) -> str | None:
    try:
        with open(path, encoding="ascii", errors="replace") as f:
            return f.read().strip()
    except OSError:
        return None


def _has_symbol(names: tuple[str, ...], kallsyms: str = "/proc/kallsyms") -> bool | None:
    """Whether the running kernel has a function of one of these names (None: unreadable)."""
    try:
        with open(kallsyms, encoding="ascii", errors="replace") as f:
            for line in f:  # "address type name[\t[module]]"
                fields = line.split(None, 3)
                if len(fields) > 2 and fields[2] in names:
                    return True
    except OSError:
        return None
    return False


@functools.cache
def fuse_kernel(proc: str = "/proc", sys: str = "/sys") -> FuseKernel:
    """What this kernel's FUSE allows, which bounds every FUSE figure: the largest request in
    pages (fs.fuse.max_pages_limit; a daemon asks for up to it), FUSE over io_uring (its
    module parameter, Linux 6.14+) and FUSE_PASSTHROUGH (Linux 6.9+, built in or not: its
    functions are in the kernel's symbols)."""
    pages = _read(f"{proc}/sys/fs/fuse/max_pages_limit")
    uring = _read(f"{sys}/module/fuse/parameters/enable_uring")
    passthrough = _has_symbol(("fuse_passthrough_open", "fuse_passthrough_read_iter"),
                              f"{proc}/kallsyms")
    return FuseKernel(
        int(pages) if pages and pages.isdigit() else None,
        ("unknown (the fuse module is not loaded)" if not os.path.isdir(f"{sys}/module/fuse") else
         "not in this kernel" if uring is None else
         "enabled" if uring.upper().startswith("Y") else "built, off (fuse.enable_uring=N)"),
        ("unknown (kernel symbols unreadable)" if passthrough is None else
         "built in" if passthrough else "not in this kernel"))


def environment(path: str, mount: Mount | None, lookup: Lookup | None,
                scale: float, embedded: bool, build_id: str | None = None) -> Environment:
    from pytest_fsperf.version import __version__

    return Environment(
        platform.release(),
        Machine(socket.gethostname(), platform.machine(), os.cpu_count(), _cpu_model(), _mem_total()),
        platform.python_version(), metadata.version("pytest"), __version__, fio_version(), scale,
        embedded, mount_facts(path, mount) if mount else None,
        daemon_facts(lookup) if lookup else None,
        lookup.note if lookup else "not looked up",
        date=time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()), os=_os_name(),
        fuse_kernel=fuse_kernel(),  # the kernel's, read once (10 MB of symbols)
        build=build_of(build_id, lookup.daemon.pid if lookup and lookup.daemon else None))
