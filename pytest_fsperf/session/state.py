"""State of one pytest session: where tests work, the mounts it owns, what was measured."""

from __future__ import annotations

import os
import re
import secrets
import shutil
import stat
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .. import baselines, units
from ..baselines import Baseline
from ..errors import MeasurementError
from ..judge import history, runs
from ..measure import canary
from ..mounts.daemon import Lookup, describe, find_daemon
from ..mounts.mounter import MountedFs, MountPlan
from ..mounts.mountinfo import Mount, find_mount, read_mounts
from ..mounts.probe import NoAnswer, probe
from ..options.config import Settings
from ..report import jsonout
from ..report.environment import environment
from ..report.redact import mask
from ..store import juicefs
from ..store import requests as store_requests
from ..store.requests import Meter
from . import leftovers

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

    def describe(self) -> dict[str, Any] | None:
        return self.owned.describe() if self.owned is not None else None

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
                endpoint = self.owned.rendered.fields.get("endpoint")
                meter, why = store_requests.probe(str(endpoint) if endpoint else None)
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
                if self.owned is None and not leftovers.closed(os.stat(self.path), sticky_ok=True):
                    self._root_fd = _held(root)
            self._count += 1
            name = f"{safe_name(test_name)}-{self._count}"
            if self._root_fd is not None:
                os.mkdir(name, 0o755, dir_fd=self._root_fd)
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
    """A descriptor of the work root just made, checked to be ours (a directory of another
    user put in its place before it was opened is refused)."""
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    st = os.fstat(fd)
    if st.st_uid != os.geteuid() or stat.S_IMODE(st.st_mode) != 0o700:
        os.close(fd)
        raise MeasurementError(f"the work root {root} was replaced as it was made (owner uid "
                               f"{st.st_uid}); another user can change {os.path.dirname(root)}")
    return fd


class FsperfSession:
    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.results: list[dict[str, Any]] = []  # every measured workload, as reported
        self.comparisons: list[dict[str, Any]] = []  # every A/B comparison, as reported
        self.leftovers: list[str] = []  # work dirs or mounts that could not be removed
        self.swept: list[str] = []  # what earlier, killed sessions left, removed at the start
        self.failed_tests: list[dict[str, Any]] = []  # every test that failed or errored
        self.usage_errors = False  # a test failed on bad input: the session exits 4
        self.unrecorded: str | None = None  # why this session keeps no record (no watchdog)
        self._default: Target | None = None
        self._reference: Target | None = None
        self._targets: list[Target] = []
        self._local: str | None = None
        self._local_entry: leftovers.Entry = None
        self._env: dict[str, Any] | None = None
        self._baselines: dict[str, Baseline] = {}
        self.saved_baseline: str | None = None  # where --fsperf-save-baseline wrote
        self.saved_run: str | None = None  # where --fsperf-save wrote
        # --fsperf-compare: TEST::WORKLOAD -> [(run, its result)], newest run first
        self.earlier: dict[str, list[tuple[str, dict[str, Any]]]] = {}
        self.earlier_name = ""
        self.canary: list[float] = []  # machine canary scores, this session (canary.py)
        self._history: list[history.Run] | None = None  # saved runs, read once when asked
        # a live line, on a terminal: (write, pytest's cursor column)
        self.progress_write: tuple[Callable[[str], None], Callable[[], int]] | None = None

    def load_earlier(self) -> None:
        s = self.settings
        if s.compare is None:
            return
        folder = runs.storage(s.root, s.storage)
        found = runs.load(folder, s.compare, s.where("compare"))
        self.earlier_name = found[0][0] if s.compare != "latest" else "latest"
        for name, doc in found:
            for r in doc.get("results", []):
                self.earlier.setdefault(f"{r['test']}::{r['name']}", []).append((name, r))

    def history_runs(self) -> list[history.Run]:
        """The saved runs in the storage dir, oldest first, without one of this run's own
        name (it is replaced at the end): the series --fsperf-history-gate extends."""
        if self._history is None:
            s = self.settings
            found, _skipped = history.read_folder(runs.storage(s.root, s.storage))
            self._history = [r for r in found if r.name != s.save]
        return self._history

    @property
    def canary_wanted(self) -> bool:
        """A run that is saved or compared carries machine canary readings."""
        s = self.settings
        return s.save is not None or s.compare is not None

    def read_canary(self) -> float:
        score = canary.measure(self.local_dir()).score
        self.canary.append(score)
        return score

    @property
    def env(self) -> dict[str, Any]:
        return self._env or {}

    def baseline(self, name: str, where: str) -> Baseline:
        if name not in self._baselines:
            self._baselines[name] = baselines.load(name, self.settings.root, where)
        return self._baselines[name]

    def save_baseline(self, env: dict[str, Any]) -> None:
        """This run's figures, per scenario (or test:workload), in the baseline format."""
        name = self.settings.save_baseline
        if name is None:
            return
        entries = {r["baseline_key"]: r["baseline_entry"] for r in self.results
                   if r.get("judged") and r.get("baseline_entry")}
        mounts = sorted({" ".join(r["mount"]["options"]) for r in self.results if r.get("mount")})
        m = env.get("mount") or {}
        data = {
            "name": name, "system": m.get("fstype", ""), "version": "",
            "hardware": f"{env['machine']['cpu_model']}, {env['machine']['cpus']} CPUs, "
                        f"{units.format_size(env['machine']['mem_total_bytes'])} RAM",
            "os": env.get("os") or "", "kernel": env["kernel"], "source": "saved run",
            "number_format": "en", "mount_options": "; ".join(mounts) or m.get("options", ""),
            "scale": self.settings.scale, "environment": env, "entries": entries,
        }
        path = baselines.saved_dir(self.settings.root) / f"{name}.json"
        jsonout.write(path, data, streams=False)
        self.saved_baseline = str(path)

    @property
    def embedded(self) -> bool:
        return self.settings.mount is None and self.settings.backend is None

    def default_target(self) -> Target:
        """--fsperf-mount, or the embedded default (a fresh temp dir)."""
        if self._default is None:
            s = self.settings
            if s.mount is not None:
                self._default = Target(str(s.mount), daemon_pid=s.daemon_pid, timeout=s.mount_timeout)
            else:
                path, entry = leftovers.private_dir("pytest-fsperf-mount-")
                self._default = Target(path, temp=True, entry=entry, timeout=s.mount_timeout)
            self._targets.append(self._default)
        return self._default

    def reference_target(self) -> Target:
        """--fsperf-reference-mount: the reference side of a gate between two mounts."""
        if self._reference is None:
            s = self.settings
            assert s.reference_mount is not None
            self._reference = Target(str(s.reference_mount), timeout=s.mount_timeout)
            self._targets.append(self._reference)
        return self._reference

    def open_target(self, plan: MountPlan) -> Target:
        """Mount a backend; it stays until close_target (or the session's end)."""
        owned = MountedFs(plan)
        try:
            owned.start()
        except BaseException:
            owned.close()
            raise
        target = Target(owned.mountpoint, owned, timeout=plan.timeout)
        self._targets.append(target)
        return target

    def close_target(self, target: Target) -> None:
        if target in self._targets:
            self._targets.remove(target)
            self.leftovers += target.close()

    def environment(self, target: Target) -> dict[str, Any]:
        """The run's environment, read once (on first use, while the mount is up)."""
        if self._env is None:
            mount: Mount | None = None
            lookup: Lookup | None = None
            try:
                mount = target.mount()
                lookup = target.lookup_daemon()
            except (OSError, LookupError):
                pass
            env = environment(target.path, mount, lookup, self.settings.scale,
                              self.embedded and target.owned is None, self.settings.build_id)
            price = self.settings.price_list
            if price is not None:  # what request costs are priced at
                env["price"] = {k: getattr(price, k) for k in (
                    "name", "title", "currency", "source", "checked", "origin")}
            if target.owned:
                env["backend"] = target.owned.backend.name
                env["source_note"] = _source_note(target.owned)
            self._env = mask(env, target.owned.rendered.secrets) if target.owned else env
        return self._env

    def final_environment(self) -> dict[str, Any]:
        env = self._env if self._env is not None else self.environment(self.default_target())
        return {**env, "canary": list(self.canary)} if self.canary else env

    def local_dir(self) -> str:
        """A private local directory for fio's output files (never on the mount)."""
        if self._local is None:
            self._local, self._local_entry = leftovers.private_dir("pytest-fsperf-out-")
        return self._local

    def close(self) -> None:
        for target in list(reversed(self._targets)):
            self.close_target(target)
        self._default = self._reference = None
        if self._local is not None:
            shutil.rmtree(self._local, ignore_errors=True)
            leftovers.done(self._local_entry)
            self._local = None


def _source_note(owned: MountedFs) -> str:
    """What an owned mount measures when its backend can reach a bucket but was given none."""
    wants_bucket = any("{bucket}" in d for choices in owned.backend.defaults.values() for d in choices)
    if wants_bucket and not owned.rendered.fields.get("bucket"):
        return (f"a local directory, not object storage: {owned.backend.name} was given no bucket "
                "and endpoint (set them in --fsperf-backend-config to measure a bucket)")
    return ""
