"""Mount a backend, wait until it is up, remount it cold, and always unmount it.

The daemon runs in its own session (Ctrl-C in the terminal does not reach it) with its
output in a private log. Unmount is `fusermount -u`, retried while busy, then a lazy
unmount, then the daemon is killed: a session never leaves a stale mount behind.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import shutil
import subprocess
import time
from collections.abc import Mapping
from dataclasses import dataclass, field

from pytest_fsperf.errors import MountError
from pytest_fsperf.infra import cgroup, leftovers, nofollow, trust
from pytest_fsperf.infra.mountinfo import Mount, read_mounts
from pytest_fsperf.infra.probe import NoAnswer, abort_connection, probe
from pytest_fsperf.infra.procs import Proc, kill, kill_tree, tree
from pytest_fsperf.infra.redact import mask, redact_args, redact_text
from pytest_fsperf.mounts.daemon import Lookup, describe, find_daemon, start_time, stat_fields
from pytest_fsperf.mounts.spec import Backend, Rendered, render
from pytest_fsperf.result.machine import Mounted

MOUNT_TIMEOUT = 30.0
DIR_FIELDS = ("source", "cache_dir", "cache", "use_cache")


class BinaryMissing(Exception):
    """The backend's program is not installed: tests that need it are skipped."""


def require_binary(backend: Backend) -> None:
    if backend.has_daemon and shutil.which(backend.binary) is None:
        raise BinaryMissing(f"backend {backend.name!r}: {backend.binary} is not installed "
                            f"({backend.install})")


HOLD = 0.3  # s a first mount must stay up after it answered (_answers)


@dataclass(frozen=True)
class MountPlan:
    """What to mount: frozen, so a remount repeats it exactly."""

    backend: Backend
    options: tuple[str, ...] = ()
    config: Mapping[str, str] = field(default_factory=dict)
    timeout: float = MOUNT_TIMEOUT
    origin: str = ""  # where the request came from, for messages
    memory_limit: int | None = None  # bytes: every process of the daemon in a cgroup this big


def fusermount() -> list[str]:
    """The unmount command, its program's real path checked (a setuid helper found on PATH)."""
    found = trust.which("fusermount3", "fusermount")[0]
    return [found, "-u"] if found else [trust.which("umount")[0] or "/bin/umount"]


def _mounted(point: str) -> Mount | None:
    for m in read_mounts():
        if m.mount_point == point:
            return m
    return None


def _tail(path: str, n: int = 3) -> str:
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            lines = [ln.strip() for ln in f.read().splitlines() if ln.strip()]
    except OSError:
        return ""
    return " | ".join(lines[-n:])


def _empty_dir(path: str) -> bool:
    """Remove what is inside path (not path itself); False if there was nothing."""
    if not os.path.isdir(path) or os.path.islink(path):
        return False
    entries = os.listdir(path)
    for name in entries:
        full = os.path.join(path, name)
        if os.path.isdir(full) and not os.path.islink(full):
            shutil.rmtree(full, ignore_errors=True)
        else:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(full)
    return bool(entries)


class MountedFs:
    """One mount the plugin owns. Its mount point stays the same across remounts."""

    def __init__(self, plan: MountPlan) -> None:
        self.plan = plan
        self.options = plan.options
        self.backend = plan.backend
        require_binary(self.backend)
        self.build = self.backend.binary  # the daemon's binary: on PATH, or a build's path
        self.private, self._dir_entry = leftovers.private_dir(f"pytest-fsperf-{self.backend.name}-")
        self._run_entries: list[leftovers.Entry] = []  # this mount's daemon and mount point
        try:
            self.rendered: Rendered = self._render(self.options)
        except BaseException:  # a config error: leave no private dir behind
            shutil.rmtree(self.private, ignore_errors=True)
            leftovers.done(self._dir_entry)
            raise
        local = self.plan.config.get("source") or os.path.join(self.private, "source")
        self.mountpoint = (os.path.join(self.private, "mnt") if self.backend.has_daemon
                           else os.path.realpath(local))
        self.log = os.path.join(self.private, "daemon.log")
        self.proc: subprocess.Popen[bytes] | None = None
        self.daemon: Lookup | None = None
        self.started: Proc | None = None  # the process the plugin started
        self.left: str | None = None  # what close() had to leave behind, and why
        self.wiped_caches: tuple[str, ...] = ()  # cache dirs the last cold start emptied
        self.kept_caches: tuple[str, ...] = ()  # those it did not wipe, with the reason
        self._prepared = False  # the backend's prepare step (a volume formatted) is done
        self._held = False  # a first mount was seen to stay up (_answers' hold)
        self.cage: cgroup.MemoryCage | None = None  # the daemon's memory limit, while it runs

    def _render(self, options: tuple[str, ...]) -> Rendered:
        rendered = render(self.backend, self.plan.config, options,
                          os.path.join(self.private, "mnt"), self.private)
        if self.build == self.backend.binary:
            return rendered
        return dataclasses.replace(rendered, argv=(self.build, *rendered.argv[1:]))

    def can_build(self) -> str:
        """Why another build of the daemon cannot be mounted here, or ""."""
        if not self.backend.has_daemon:
            return f"backend {self.backend.name!r} has no daemon"
        if not self.backend.command or self.backend.command[0] != self.backend.binary:
            return (f"backend {self.backend.name!r}: its command does not start with its binary "
                    f"({self.backend.binary}), so a build cannot take its place")
        return ""

    def redact(self, text: str) -> str:
        """Configured secrets and anything that looks like one masked (the user's own
        options and the daemon's log may hold secrets the config does not name)."""
        return redact_text(str(mask(text, self.rendered.secrets)))

    def shown(self, args: tuple[str, ...]) -> list[str]:
        """Arguments as a report may show them: secret-looking and configured secrets masked."""
        return [self.redact(a) for a in redact_args(args)]

    def describe(self) -> Mounted:
        return Mounted(self.backend.name, tuple(self.shown(self.options)),
                       tuple(self.shown(self.rendered.argv)),
                       self.plan.config.get("store_conditions", ""))

    # -- lifecycle -----------------------------------------------------------

    def start(self) -> None:
        """Mount; on any failure nothing is left mounted or running."""
        if not self.backend.has_daemon:
            os.makedirs(self.mountpoint, exist_ok=True)
            self.daemon = Lookup(None, "no daemon: backend 'local' is a plain directory", fuse=False)
            return
        if _mounted(self.mountpoint):
            raise MountError(f"{self.mountpoint} is already mounted")
        r = self.rendered
        os.makedirs(self.mountpoint, mode=0o700, exist_ok=True)
        for name in DIR_FIELDS:  # directories of this mount's own: create them
            path = str(r.fields.get(name, ""))
            if path.startswith(self.private + os.sep):
                os.makedirs(path, mode=0o700, exist_ok=True)
        for path, content in r.files.items():
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                f.write(content)
        env = service_env(os.environ, r.unset_env)
        env.update(r.env)
        if self.backend.prepare is not None and not self._prepared:
            self.backend.prepare(r, env)  # raises MountError, its output redacted by the caller
            self._prepared = True
        prefix = self._executable(r.argv[0])  # run by the real path checked; its argv[0] as named
        exe, named = prefix[0], (list(r.argv) if len(prefix) == 1 else [*prefix, *r.argv[1:]])
        if self.plan.memory_limit is not None:
            try:
                self.cage = cgroup.MemoryCage(self.plan.memory_limit)
            except OSError as exc:
                raise MountError(f"{self.backend.name}: no memory limit for its daemon: "
                                 f"{exc.strerror or exc}") from None
        with open(self.log, "ab") as log:
            try:
                argv = (named if self.cage is None
                        else cgroup.launcher(self.cage, [exe, *named[1:]]))
                self.proc = subprocess.Popen(argv, executable=exe if self.cage is None else None,
                                             stdin=subprocess.DEVNULL, stdout=log,
                                             stderr=log, env=env, start_new_session=True)
                self.started = Proc.of(self.proc.pid)
                self._run_entries = [leftovers.note_process(self.started),
                                     leftovers.note_mount(self.mountpoint)]
            except OSError as exc:
                if self.cage is not None:
                    self.cage.close(0.0)
                    self.cage = None
                raise MountError(f"{self.backend.name}: cannot start {r.argv[0]}: "
                                 f"{exc.strerror or exc}") from None
        try:
            self._wait_ready()
        except BaseException:
            self.stop()
            raise

    def _executable(self, name: str) -> list[str]:
        """The daemon's program as root runs it: found on PATH once, resolved, and checked with
        every directory above it, its RUNPATH and its interpreter (one another user can change
        would be their program as you); what was checked is executed, not PATH's answer a
        moment later. A script: its interpreter, then the script's real path."""
        found = name if os.sep in name else shutil.which(name)
        if found is None:
            raise MountError(f"{self.backend.name}: {name} is not installed ({self.backend.install})")
        argv, why = trust.program(found)
        if why:
            raise MountError(f"{self.backend.name}: {why}; it would run as you")
        return argv

    def _wait_ready(self) -> None:
        assert self.proc is not None
        deadline = time.monotonic() + self.plan.timeout
        exited: float | None = None
        while True:
            mount = _mounted(self.mountpoint)
            if mount is not None and not self._answers(deadline):
                code = self._exit_code(2.0)  # its code and last words, where it is going
                raise MountError(f"{self.backend.name} mount failed (exit {code}): "
                                 f"{self.redact(_tail(self.log)) or 'no output'}")
            if mount is not None:
                no_links = nofollow.forbid_links(self.mountpoint)
                if no_links and os.geteuid() == 0 and "(Linux >= 5.12)" not in no_links:
                    raise MountError(f"{self.backend.name}: {no_links}")
                lookup = find_daemon(mount)
                if lookup.daemon is None and self.proc.poll() is None:
                    lookup = describe(self.proc.pid, "started by the plugin")
                self.daemon = lookup
                return
            code = self.proc.poll()
            if code is not None and exited is None:
                exited = time.monotonic()
            # Exit 0 may be a daemon forking into the background: give its child a moment.
            if code not in (None, 0) or (exited is not None and time.monotonic() - exited > 3):
                raise MountError(f"{self.backend.name} mount failed (exit {code}): "
                                 f"{self.redact(_tail(self.log)) or 'no output'}")
            if time.monotonic() > deadline:
                raise MountError(f"{self.backend.name}: not mounted within {self.plan.timeout:g} s: "
                                 f"{self.redact(_tail(self.log)) or 'no output'}")
            time.sleep(0.05)

    def _answers(self, deadline: float) -> bool:
        """The mount, once it appears, answers a look at its root (from a helper: the FUSE
        INIT is done, where a daemon checks its store) and is still there: s3fs with a wrong
        key mounts, fails its store check in INIT and goes (over TLS that takes long enough
        to be seen mounted). A daemon that forked away (its launcher exited 0) still counts."""
        try:
            probe(self.mountpoint, max(1.0, min(30.0, deadline - time.monotonic())))
        except NoAnswer:
            return False
        # the first mount is held a moment: s3fs answers once its INIT is done, then goes
        # (seen under load: a wrong key counted as mounted); remounts keep their credentials
        until = time.monotonic() + (0.0 if self._held else HOLD)
        while True:
            code = self.proc.poll() if self.proc is not None else None
            if _mounted(self.mountpoint) is None or code not in (None, 0):
                return False
            if time.monotonic() >= until:
                self._held = True
                return True
            time.sleep(0.05)

    def _exit_code(self, wait: float) -> int | None:
        """The daemon's exit code, waiting up to `wait` s for one that is exiting."""
        try:
            return self.proc.wait(wait) if self.proc is not None else None
        except subprocess.TimeoutExpired:
            return None

    def last_words(self) -> str:
        """The end of the daemon's log (redacted), for a message about its death."""
        return self.redact(_tail(self.log))

    def alive(self) -> bool:
        """Mounted and the daemon still runs (a killed child stays a zombie until reaped)."""
        if not self.backend.has_daemon:
            return True
        if self.daemon is None or not _mounted(self.mountpoint):
            return False
        d = self.daemon.daemon
        return d is None or (start_time(d.pid) == d.start_time and self._running(d.pid))

    def stop(self) -> list[str]:
        """Unmount and make sure the daemon is gone. Returns the steps taken."""
        steps: list[str] = []
        if not self.backend.has_daemon:
            return steps
        was_mounted = _mounted(self.mountpoint) is not None
        if was_mounted:
            if self.backend.settle is not None and self.alive():
                note = self.backend.settle(self.rendered)
                if note:
                    steps.append(note)
            self._unmount(steps)
        self._reap(steps, 10.0 if was_mounted else 0.0)
        if self.cage is not None:  # what is still in it is the daemon's: it forked away
            strays = [h for p in map(Proc.of, self.cage.pids()) if p and (h := p.handle())]
            if strays:
                steps.append(f"stopped what was left in its cgroup: {', '.join(map(str, kill(strays)))}")
            left = self.cage.close()
            steps += [left] if left else []
            self.cage = None
        if not _mounted(self.mountpoint):
            for entry in self._run_entries:
                leftovers.done(entry)
        self.daemon = None
        return steps

    def abort(self) -> str:
        """Abort this mount's FUSE connection: every request waiting on a daemon that no
        longer answers fails with ENOTCONN. Returns what was done, for the message."""
        mount = _mounted(self.mountpoint)
        if mount is None or not mount.is_fuse:
            return ""
        if abort_connection(mount.minor):
            return f"; aborted its FUSE connection {mount.minor}"
        # No fusectl here: a killed daemon closes /dev/fuse, which aborts the connection too.
        killed = [pid for p in (self.started, self._daemon_proc()) if p for pid in kill_tree(p, 1.0)]
        return f"; killed its daemon {killed[0]} (it is the plugin's)" if killed else ""

    def _unmount(self, steps: list[str]) -> None:
        cmd = fusermount()
        deadline = time.monotonic() + 5
        while _mounted(self.mountpoint):
            try:
                subprocess.run([*cmd, self.mountpoint], capture_output=True, check=False, timeout=10)
            except subprocess.TimeoutExpired:
                steps.append("unmount did not return in 10 s" + self.abort())
            if not _mounted(self.mountpoint):
                steps.append("unmount")
                return
            if time.monotonic() > deadline:
                break
            time.sleep(0.2)  # busy: a process still has a file open
        subprocess.run([cmd[0], "-uz" if cmd[0] != "umount" else "-l", self.mountpoint],
                       capture_output=True, check=False, timeout=10)
        steps.append("lazy unmount (mount was busy)")

    def _reap(self, steps: list[str], wait: float) -> None:
        """Wait for the daemon to exit after an unmount, then stop what is left of its
        process tree (it, helpers it started, its process group), by start time."""
        roots = [p for p in (self.started, self._daemon_proc()) if p is not None]
        # its helpers, found while it is alive: once it exits they are no longer provably ours
        found = {p.pid: p for r in roots for p in tree(r)}
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline and any(r.handle() is not None for r in roots):
            if self.proc is not None:
                self.proc.poll()
            time.sleep(0.05)
        if wait and any(r.handle() is not None for r in roots):
            steps.append(f"daemon did not exit within {wait:g} s; killed it")
        found.update((p.pid, p) for r in roots for p in tree(r))
        left = sorted(kill(list(found.values())))
        if left:
            steps.append(f"stopped its processes {', '.join(map(str, left))}")
        if self.proc is not None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.proc.wait(timeout=1)

    def _daemon_proc(self) -> Proc | None:
        d = self.daemon.daemon if self.daemon else None
        if d is None or (self.started is not None and d.pid == self.started.pid):
            return None
        return Proc.of(d.pid) if start_time(d.pid) == d.start_time else None

    def _running(self, pid: int) -> bool:
        if self.proc is not None and pid == self.proc.pid:
            return self.proc.poll() is None
        fields = stat_fields(pid)
        return fields is not None and fields[0] != "Z"  # a zombie has exited

    def wipe_cache(self) -> list[str]:
        """Empty the daemon's disk cache directories (only while unmounted), where they are
        provably this mount's own; the others are kept and named in `self.kept_caches`."""
        wiped, kept = [], []
        for path in self.rendered.cache_dirs:
            why = self._not_ours(path)
            if why:
                kept.append(f"{path} ({why})")
            elif _empty_dir(path):
                wiped.append(path)
        self.wiped_caches, self.kept_caches = tuple(wiped), tuple(kept)
        return [f"wiped {w}" for w in wiped] + [f"kept {k}" for k in kept]

    def _not_ours(self, path: str) -> str:
        """Why the plugin may not empty this cache directory, or "" if it may."""
        if not os.path.isabs(path) or os.path.realpath(path) != os.path.normpath(path):
            return "not a plain absolute path: it is relative or passes through a symlink"
        if path.startswith(self.private + os.sep):
            return ""  # created by the plugin for this mount
        if self.backend.cache_scoped:  # the daemon's own part of a shared directory, by its
            # layout: emptied only where no one else can swap what is there
            why = trust.untrusted(path, exists=os.path.lexists(path))
            return f"another user could change what is there: {why}" if why else ""
        return "a directory you named: the plugin deletes only what it created"

    def remount(self, options: tuple[str, ...] | None = None, wipe: bool = True,
                build: str | None = None) -> list[str]:
        """Unmount, wipe the daemon's cache, mount again (with other options, or another
        build of the daemon, if given)."""
        steps = self.stop()
        if wipe:
            steps += self.wipe_cache()
        changed = options is not None and options != self.options
        if build is not None and build != self.build:
            self.build, changed = build, True
        if changed:
            self.options = self.options if options is None else options
            self.rendered = self._render(self.options)
        self.start()
        steps.append("mount")
        return steps

    def close(self) -> list[str]:
        """Unmount for good and remove the private dir; what could not be is in `left`."""
        steps = self.stop()
        if _mounted(self.mountpoint):  # never delete through a mount that is still there
            self.left = f"still mounted; left {self.private} in place"
            steps.append(self.left)
        else:
            shutil.rmtree(self.private, ignore_errors=True)
            leftovers.done(self._dir_entry)
        return steps


# What a service manager or a CSI driver gives a daemon (issue 72.3): stdin /dev/null, no
# terminal, a session of its own (start()), and an environment of these alone, plus what the
# backend sets (its credentials, its endpoint's CA): never the test run's (PYTEST_*, a
# developer's shell settings), which a deployed daemon does not see.
SERVICE_ENV = ("PATH", "HOME", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "TMPDIR", "USER", "LOGNAME")


def service_env(environ: Mapping[str, str], unset: tuple[str, ...] = ()) -> dict[str, str]:
    return {k: environ[k] for k in SERVICE_ENV if k in environ and k not in unset}
