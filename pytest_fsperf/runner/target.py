"""Where workloads run: a directory, the mount the plugin owns there, its work root; and
what the runner asks of the session that opens and closes them."""

from __future__ import annotations

import contextlib
import os
import re
import secrets
import shutil
import stat
from collections.abc import Callable
from pathlib import Path
from typing import Protocol

from pytest_fsperf.errors import MeasurementError
from pytest_fsperf.infra import leftovers, trust
from pytest_fsperf.infra.mountinfo import Mount, find_mount, read_mounts
from pytest_fsperf.infra.probe import NoAnswer, probe
from pytest_fsperf.mounts.daemon import Lookup, describe, find_daemon
from pytest_fsperf.mounts.mounter import MountedFs, MountPlan
from pytest_fsperf.result.machine import Mounted
from pytest_fsperf.runner.budget import SessionClock
from pytest_fsperf.runner.running import Running
from pytest_fsperf.store import conditioner, juicefs
from pytest_fsperf.store import requests as store_requests
from pytest_fsperf.store.requests import Meter

_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]+")


def safe_name(text: str, limit: int = 60) -> str:
    return _UNSAFE.sub("_", text).strip("_")[:limit] or "test"


class Target:
    """Where workloads run: a directory, and the mount the plugin owns there, if any.
    Everything written goes under one fsperf-work-XXXX directory of its own."""

    def __init__(self, path: str, owned: MountedFs | None = None,
                 daemon_pid: int | None = None, temp: bool = False,
                 entry: leftovers.Entry = None, timeout: float = 30.0) -> None:
        self.path = path
        self.owned = owned
        self.daemon_pid = daemon_pid
        self._temp = temp  # the embedded default: remove the directory itself at the end
        self._root: str | None = None
        self._root_entry: leftovers.Entry = None
        self._root_fd: int | None = None  # the work root, held where others could rename it
        self._path_entry = entry  # the embedded default's temp dir
        self.timeout = timeout  # how long a touch of the mount may take
        self.hung: str | None = None  # why the mount stopped answering, once it did
        self._count = 0
        self._requests: tuple[Meter | None, str] | None = None

    def mount(self) -> Mount:
        return find_mount(self.path, read_mounts())

    def juicefs_stats(self) -> Path | None:
        """The mount root, where it is a JuiceFS mount with its .stats file (decided by the
        mount table first: no stat() on any other mount)."""
        try:
            mount = self.mount()
        except (OSError, LookupError):
            return None
        return juicefs.stats_root(mount.mount_point, mount.fstype)

    def lookup_daemon(self) -> Lookup:
        if self.daemon_pid is not None:
            return describe(self.daemon_pid, "--fsperf-daemon-pid")
        if self.owned is not None and self.owned.daemon is not None:
            return self.owned.daemon
        return find_daemon(self.mount())

    def describe(self) -> Mounted | None:
        return self.owned.describe() if self.owned is not None else None

    def conditions_proxy(self) -> conditioner.Conditioned | None:
        """The store conditions' proxy (or Go OSS gateway) between this mount's daemon and
        its store, where the plugin mounted it under conditions."""
        fields = self.owned.rendered.fields if self.owned is not None else {}
        return conditioner.running(fields.get("conditions_proxy"))

    def faulty(self) -> bool:
        """Mounted under store conditions that fail, cut or corrupt requests: what a workload
        writes is read back and checked."""
        proxy = self.conditions_proxy()
        return proxy is not None and proxy.conditions.faulty

    def request_meter(self) -> tuple[Meter | None, str]:
        """The object requests behind this mount (probed once): the store's own counters
        where the plugin mounted it over a store whose metrics it reads, else the daemon's
        own (JuiceFS's .stats), else None and why not."""
        if self._requests is None:
            meter: Meter | None = None
            why = ("an existing mount: its object store is not known to the plugin, and its daemon "
                   "keeps no request counters the plugin reads (JuiceFS's .stats is read where "
                   "present; rclone counts transfers, not requests; mountpoint-s3 logs its "
                   "metrics)")
            if self.owned is not None:
                # metrics_endpoint: MinIO behind the OSS gateway; "" for a store that counts
                # nothing the plugin reads (Azurite, fake-gcs-server: no_metrics says so)
                fields = self.owned.rendered.fields
                endpoint = fields.get("metrics_endpoint", fields.get("endpoint"))
                meter, why = store_requests.probe(str(endpoint) if endpoint else None)
                why = str(fields.get("no_metrics", "")) or why
            if meter is None and (root := self.juicefs_stats()) is not None:
                meter, why = juicefs.StatsMeter(root), ""
            self._requests = (meter, why)
        return self._requests

    def answers(self) -> None:
        """Raise MeasurementError, naming the hang, if the mount does not answer a first
        touch from a helper process in time; a mount the plugin owns has its FUSE connection
        aborted then, so that nothing waiting on it stays stuck."""
        if self.hung is None:
            try:
                probe(self.path, self.timeout)
                return
            except NoAnswer as exc:
                self.hung = str(exc)
                if self.owned is not None:
                    self.hung += self.owned.abort()
        raise MeasurementError(self.hung)

    def new_workdir(self, test_name: str) -> str:
        """A new work directory for a test, under the session's work root (0700: no other
        user reaches in). Where another user can rename entries in the mount's directory
        (JuiceFS's root is 0777), they could swap the work root for one of symlinks: it is
        then reached through the descriptor it was made with (/proc/PID/fd/N), which a
        rename does not move."""
        self.answers()
        try:
            if self._root is None:
                root = os.path.join(self.path, f"fsperf-work-{secrets.token_hex(4)}")
                if self.owned is None:  # on an owned mount, its private dir holds it
                    self._root_entry = leftovers.note_dir(root)
                os.mkdir(root, 0o700)
                self._root = root
                # (a mount of the plugin's lies in its private directory: no one else reaches it)
                if self.owned is None:
                    fd = _held(root)  # what was made, by its identity, in the record
                    leftovers.made_dir(self._root_entry, root, fd)
                    if trust.closed(os.stat(self.path), sticky_ok=True):
                        os.close(fd)
                    else:
                        self._root_fd = fd
            self._count += 1
            name = f"{safe_name(test_name)}-{self._count}"
            if self._root_fd is not None:
                os.mkdir(name, 0o755, dir_fd=self._root_fd)
            elif self.owned is not None:  # in its private dir; an empty root may be forgotten
                os.makedirs(os.path.join(self._root, name), 0o755)  # (Limits.keeps_empty_dirs)
            else:
                os.mkdir(os.path.join(self._root, name), 0o755)
        except OSError as exc:
            raise MeasurementError(f"cannot create a work directory in {self.path}: "
                                   f"{exc.strerror or exc}") from None
        return os.path.join(self.access_root(), name)

    def access_root(self) -> str:
        """The work root as the engines reach it: its path, or its descriptor's."""
        assert self._root is not None
        return (f"/proc/{os.getpid()}/fd/{self._root_fd}" if self._root_fd is not None
                else self._root)

    def logical(self, path: str) -> str:
        """A work directory's path under the mount, however it is reached."""
        if self._root_fd is not None and self._root is not None:
            access = self.access_root()
            if path == access or path.startswith(access + "/"):
                return self._root + path[len(access):]
        return path

    def remove(self, path: str) -> str | None:
        """Remove a work directory; returns why it could not be, if so. A dead daemon of
        an owned mount is remounted first, so its files are not left in the bucket."""
        try:
            self.answers()
        except MeasurementError as exc:
            return f"{path} ({exc})"
        if self.owned is not None and not self.owned.alive():
            try:
                self.owned.remount(wipe=False)
            except MeasurementError as exc:
                return f"{path} ({exc})"
        for attempt in (1, 2):
            try:
                shutil.rmtree(path)
                return None
            except FileNotFoundError:
                return None
            except OSError as exc:
                # rclone refuses (EIO) to delete a file it is still uploading: wait for its
                # uploads to settle, then try once more.
                if attempt == 2 or not self._settle():
                    return f"{path} ({exc.strerror or exc})"
        return None

    def _remove_held(self) -> str | None:
        """The work root reached by its descriptor: its contents through it, then the root
        by name only if the name is still the directory held (never what was put there)."""
        assert self._root is not None and self._root_fd is not None
        access, root, fd = self.access_root(), self._root, self._root_fd
        try:
            for name in os.listdir(access):
                problem = self.remove(os.path.join(access, name))
                if problem:
                    return problem
            held, named = os.fstat(fd), os.lstat(root)
            if (held.st_dev, held.st_ino) != (named.st_dev, named.st_ino):
                return f"{root} (the name no longer holds the plugin's work root; not removed)"
            os.rmdir(root)
            return None
        except OSError as exc:
            return f"{root} ({exc.strerror or exc})"
        finally:
            os.close(fd)
            self._root_fd = None

    def settle_uploads(self) -> bool:
        """Wait for an owned mount's pending uploads, where its backend can tell (rclone):
        whether it could."""
        return self._settle()

    def _settle(self) -> bool:
        """Wait for an owned mount's pending uploads, where its backend can tell."""
        owned = self.owned
        if owned is None or owned.backend.settle is None or not owned.alive():
            return False
        owned.backend.settle(owned.rendered)
        return True

    def close(self) -> list[str]:
        """Remove the work root, then unmount. Returns what was left behind."""
        left = []
        if self._root is not None:
            problem = self.remove(self._root) if self._root_fd is None else self._remove_held()
            if problem:
                left.append(problem)
            else:
                leftovers.done(self._root_entry)
            self._root = None
        if self.owned is not None:
            self.owned.close()
            if self.owned.left:
                left.append(self.owned.left)
        elif self._temp:
            shutil.rmtree(self.path, ignore_errors=True)
            leftovers.done(self._path_entry)
        return left


def _held(root: str) -> int:
    """A descriptor of the work root just made, checked to be ours by what can be done to it:
    our owner, the inode its name holds, and the mode we made it with, where the filesystem
    keeps modes at all (ossfs2 reports every directory 0777 whatever mkdir asked: its modes
    mean nothing, and are not taken for another user's doing)."""
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    st = os.fstat(fd)
    try:
        named = os.lstat(root)
    except OSError:
        named = None
    same = named is not None and (named.st_dev, named.st_ino) == (st.st_dev, st.st_ino)
    if (st.st_uid != os.geteuid() or not same
            or (stat.S_IMODE(st.st_mode) != 0o700 and not _ignores_modes(fd))):
        os.close(fd)
        raise MeasurementError(f"the work root {root} was replaced as it was made (owner uid "
                               f"{st.st_uid}); another user can change {os.path.dirname(root)}")
    why = _open_to_others(root, os.fstat(fd))  # its mode now, after _ignores_modes
    if why:
        with contextlib.suppress(OSError):  # just made and empty; removed only if still ours
            now = os.lstat(root)
            if (now.st_dev, now.st_ino) == (st.st_dev, st.st_ino):
                os.rmdir(root)
        os.close(fd)
        raise MeasurementError(why)
    return fd


def _open_to_others(root: str, st: os.stat_result) -> str:
    """Why other users could write inside the work root, or "": a filesystem whose modes read
    back as group- or world-writable whatever was asked (ossfs2's defaults: every directory
    0777, enforced by the kernel under default_permissions) and that lets other users in (a
    FUSE mount with allow_other; any other filesystem)."""
    if not st.st_mode & 0o022:
        return ""
    try:
        mount = find_mount(os.path.realpath(root), read_mounts())
    except (OSError, LookupError, ValueError):
        mount = None
    if mount is not None and mount.is_fuse and "allow_other" not in mount.super_options.split(","):
        return ""  # the kernel lets no other user into this mount at all
    if mount is not None and _closed_above(mount.mount_point):
        return ""  # a directory above the mount lets no one else through (the plugin's own)
    where = mount.mount_point if mount is not None else os.path.dirname(root)
    return (f"{where} shows the work root as mode {stat.S_IMODE(st.st_mode):o} whatever it is "
            "made with, and lets other users in (allow_other): another user could write inside "
            "it during the run; refused. Mount it without allow_other, or with modes that keep "
            "others out (a umask of 077, or directory mode 0700)")


def _closed_above(point: str) -> bool:
    """Whether a directory above `point` is ours and lets no other user through it."""
    above = os.path.dirname(point)
    while True:
        try:
            st = os.lstat(above)
        except OSError:
            return False
        if st.st_uid == os.geteuid() and not st.st_mode & 0o011:
            return True
        if os.path.dirname(above) == above:
            return False
        above = os.path.dirname(above)


def _ignores_modes(fd: int) -> bool:
    """Whether the filesystem keeps no modes: set 0700 on our own directory, and it still
    reads back as something else."""
    try:
        os.fchmod(fd, 0o700)
    except OSError:
        return True  # (a filesystem that refuses chmod keeps whatever it invents)
    return stat.S_IMODE(os.fstat(fd).st_mode) != 0o700


class Session(Protocol):
    """What the runner asks of the session object (session/state.py's FsperfSession)."""

    running: Running
    leftovers: list[str]
    clock: SessionClock
    progress_write: tuple[Callable[[str], None], Callable[[], int]] | None

    @property
    def canary_wanted(self) -> bool: ...

    def read_canary(self) -> float: ...

    def local_dir(self) -> str: ...

    def open_target(self, plan: MountPlan) -> Target: ...

    def close_target(self, target: Target) -> None: ...
