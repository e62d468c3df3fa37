"""Nothing the plugin starts outlives its session, whatever ends it.

Each pytest process keeps a record (JSON lines, in a 0700 state directory of its user, where
no other user can create it first: see state_dir) of
every process, mount and directory it creates, and marks each one done when it removed it
itself. A watchdog, in a session of its own, waits on a pipe that only pytest holds open:
when pytest dies (SIGKILL too) the pipe closes and the watchdog removes what the record still
lists. At start, a session removes what the record of any dead session still lists (the
watchdog may have died with it) and names each thing it removed.

Removal never goes beyond the record: a process only while its PID still has the recorded
start time; a directory only if it has a name the plugin gives (pytest-fsperf-KIND-<hex>,
fsperf-work-<hex>), is the very directory made (its device and inode, recorded once made;
held by descriptor while it is emptied) and has no mount inside; a mount is
detached (lazily, after aborting a connection that does not answer); a tracefs instance
only by the name the plugin gives it (instances/fsperf-<hex>), a network namespace by its
(fsperf-<hex>-<n>, the test suite's hosts).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import pwd
import re
import stat
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from pytest_fsperf.errors import UsageError
from pytest_fsperf.infra import removal, trust
from pytest_fsperf.infra.mountinfo import read_mounts
from pytest_fsperf.infra.probe import abort_connection
from pytest_fsperf.infra.procs import Proc, empty_cgroup, kill_tree


class StateDirError(UsageError):
    """The state directory exists but is not a private directory of this user."""


RUN_DIR = "/run"  # root's: only root can create entries in it


def state_dir() -> str:
    """Where this user's records live, in a place only this user can create it: for root
    /run/pytest-fsperf; otherwise $XDG_RUNTIME_DIR/pytest-fsperf (that directory is the
    user's own, 0700); else $TMPDIR/pytest-fsperf.state-UID. Made 0700; StateDirError if it
    exists and is not a private directory of this user (another user made it first)."""
    uid = os.geteuid()
    runtime = os.environ.get("XDG_RUNTIME_DIR", "")
    if uid == 0 and is_private(RUN_DIR, 0o022):
        path = os.path.join(RUN_DIR, "pytest-fsperf")
    elif runtime and os.path.isabs(runtime) and is_private(runtime):
        path = os.path.join(runtime, "pytest-fsperf")
    else:
        path = os.path.join(tempfile.gettempdir(), f"pytest-fsperf.state-{uid}")
    with contextlib.suppress(FileExistsError):
        os.mkdir(path, 0o700)
    if not is_private(path):
        try:
            owner = os.lstat(path).st_uid
        except OSError as exc:
            raise StateDirError(f"cannot use the state directory {path}: {exc.strerror}") from None
        who = "you" if owner == uid else f"user {_user(owner)}"
        raise StateDirError(f"the state directory {path} is not a 0700 directory of yours (it "
                            f"belongs to {who}): remove it, or set TMPDIR to a directory of "
                            "your own")
    return path


def is_private(path: str, others: int = 0o077) -> bool:
    """A real, writable directory of this user in which others have none of the
    permissions `others` (0o077: they cannot even enter it)."""
    try:
        st = os.lstat(path)
    except OSError:
        return False
    return (stat.S_ISDIR(st.st_mode) and st.st_uid == os.geteuid()
            and not stat.S_IMODE(st.st_mode) & others and os.access(path, os.W_OK))


def _user(uid: int) -> str:
    try:
        return f"{pwd.getpwuid(uid).pw_name} (uid {uid})"
    except KeyError:
        return f"uid {uid}"


_WRITING = threading.Lock()  # hosts are linked from threads: one line at a time


@dataclass
class Record:
    """The record of this process: append-only lines {"id", "kind", ...} and {"done": id}."""

    path: str
    _next: int = 0
    _open: set[int] | None = None

    @classmethod
    def create(cls, folder: str | None = None) -> Record:
        me = Proc.of(os.getpid())
        assert me is not None
        path = os.path.join(folder or state_dir(), f"{me.pid}-{os.urandom(4).hex()}.jsonl")
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        os.close(fd)
        record = cls(path, 0, set())
        record._write({"owner": me.pid, "started": me.started})
        return record

    def _write(self, entry: dict[str, Any]) -> None:
        with open(self.path, "a", encoding="utf-8") as f:
            f.write(json.dumps(entry) + "\n")

    def add(self, kind: str, **data: Any) -> int:
        with _WRITING:
            self._next += 1
            assert self._open is not None
            self._open.add(self._next)
            self._write({"id": self._next, "kind": kind, **data})
            return self._next

    def same(self, entry: int, **data: Any) -> None:
        """More of what an open entry is (a directory's identity once made): its line again."""
        with _WRITING:
            if self._open is not None and entry in self._open:
                self._write({"id": entry, **data})

    def done(self, entry: int) -> None:
        with _WRITING:
            if self._open is not None and entry in self._open:
                self._open.discard(entry)
                self._write({"done": entry})

    def close(self) -> None:
        """At a normal end: forget the record if everything in it was removed."""
        if not self._open:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(self.path)


# The records of this process, innermost last: a pytest session (pytester runs one inside
# another) or a benchmark keeps one; the core notes into the innermost.
_records: list[Record] = []


def start(folder: str | None = None) -> Record:
    record = Record.create(folder)
    _records.append(record)
    return record


def stop(record: Record) -> None:
    record.close()
    if record in _records:
        _records.remove(record)


# An entry of a record: marked done in the record that holds it, also after a nested
# session ended.
Entry = tuple[Record, int] | None


def _note(kind: str, **data: Any) -> Entry:
    return (_records[-1], _records[-1].add(kind, **data)) if _records else None


def note_process(proc: Proc | None) -> Entry:
    return _note("process", pid=proc.pid, started=proc.started) if proc else None


def note_mount(path: str) -> Entry:
    return _note("mount", path=path)


def note_dir(path: str) -> Entry:
    return _note("dir", path=path)


def note_trace(path: str) -> Entry:
    """A tracefs instance (measure/fusetrace.py)."""
    return _note("trace", path=path)


def note_cgroup(path: str) -> Entry:
    """A daemon's memory cgroup (infra/cgroup.py)."""
    return _note("cgroup", path=path)


def note_netns(name: str) -> Entry:
    """A network namespace (a test's hosts): `ip netns del` takes its veth pairs with it."""
    return _note("netns", name=name)


def done(entry: Entry) -> None:
    if entry is not None:
        entry[0].done(entry[1])


def made_dir(entry: Entry, path: str, fd: int | None = None) -> None:
    """The directory a note_dir entry names now exists: its identity (device, inode) joins
    the entry, so that only that directory is ever removed by it, not what another user
    may later move to its name."""
    if entry is None:
        return
    st = os.fstat(fd) if fd is not None else os.lstat(path)
    entry[0].same(entry[1], kind="dir", path=path, dev=st.st_dev, ino=st.st_ino)


def private_dir(prefix: str, base: str | None = None) -> tuple[str, Entry]:
    """A new 0700 directory under `base` (the temp dir), noted in the record before it
    exists (so no kill can fall between making it and noting it)."""
    base = base or tempfile.gettempdir()
    for _ in range(100):
        path = os.path.join(base, prefix + os.urandom(6).hex())
        entry = note_dir(path)
        try:
            os.mkdir(path, 0o700)
        except FileExistsError:
            done(entry)
            continue
        made_dir(entry, path)
        return path, entry
    raise FileExistsError(f"no free name for {prefix}* in {base}")


# -- removal ------------------------------------------------------------------------------

def _entries(path: str) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    owner: dict[str, Any] = {}
    entries: dict[int, dict[str, Any]] = {}
    with open(path, encoding="utf-8") as f:
        for line in f:
            try:
                item = json.loads(line)
            except ValueError:
                continue  # a line cut short by the kill
            if "owner" in item:
                owner = item
            elif "done" in item:
                entries.pop(item["done"], None)
            elif "id" in item:
                entries[item["id"]] = item
    return owner, list(entries.values())


def _mounts() -> dict[str, int]:
    """mount point -> device minor, from /proc/self/mountinfo (never touching a mount)."""
    return {m.mount_point: m.minor for m in read_mounts()}


def _detach(point: str, minor: int) -> str:
    helper = trust.which("fusermount3", "fusermount")[0]
    try:
        if helper:
            subprocess.run([helper, "-u", point], capture_output=True, timeout=5, check=False)
    except subprocess.TimeoutExpired:
        pass
    if point not in _mounts():
        return f"unmounted {point}"
    abort_connection(minor)  # a daemon that does not answer: fail its requests
    subprocess.run([helper, "-uz", point] if helper else ["umount", "-l", point],
                   capture_output=True, timeout=10, check=False)
    return f"unmounted {point} (lazily)" if point not in _mounts() else f"could not unmount {point}"


# The only directories a record may make the plugin delete: its private dirs and its work
# roots, by the names it gives them. A record is the plugin's own file in a 0700 directory,
# but a path of any other name (a bug, a tampered file) is refused, never removed.
_OURS = re.compile(r"^(pytest-fsperf-[A-Za-z0-9_.+-]+-[0-9a-f]{12}|fsperf-work-[0-9a-f]{8})$")


_NETNS = re.compile(r"fsperf-[0-9a-f]{4}-[0-9]{1,3}")  # the test hosts' (tests/netns_hosts.py)
_TRACE = re.compile(r"^/sys/kernel/tracing/instances/fsperf-[0-9a-f]{12}$")
_CGROUP = re.compile(r"^/sys/fs/cgroup/(memory/)?([^/.][^/]*/)*fsperf-mem-[0-9a-f]{12}$")  # after its daemon
_CLUSTER = re.compile(r"^/sys/fs/cgroup/[a-z_,]+/fsperf-k8s-[0-9]{1,3}$")  # a test cluster's pods (tests/k8s)


def _ours(path: str) -> bool:
    return (os.path.isabs(path) and os.path.normpath(path) == path
            and bool(_OURS.fullmatch(os.path.basename(path))))


def _remove_dir(path: str, ident: tuple[int, int] | None = None) -> str | None:
    if not _ours(path):
        return f"kept {path} (not a directory the plugin makes)"
    inside = [m for m in _mounts() if m == path or m.startswith(path.rstrip("/") + "/")]
    if inside:
        return f"kept {path} (still mounted: {inside[0]})"
    try:
        which = [str(n) for n in ident] if ident else []
        out = subprocess.run([sys.executable, "-I", "-S", "-c", removal.SCRIPT, path, *which],
                             capture_output=True,
                             text=True, timeout=120, check=False, start_new_session=True, cwd="/")
    except subprocess.TimeoutExpired:
        return f"kept {path} (removal did not finish in 120 s)"
    return out.stdout.strip() or None


def clean(entries: list[dict[str, Any]]) -> list[str]:
    """Remove what the entries name: mounts first, then processes, then directories.
    Never raises for one entry: what could not be removed is said instead."""
    done: list[str] = []
    mounts = _mounts()
    order = {"mount": 0, "process": 1, "dir": 2}
    ranked = sorted(entries, key=lambda e: (order.get(e.get("kind", ""), 3), -len(e.get("path", ""))))
    for e in ranked:
        try:
            note = _clean_one(e, mounts)
        except (OSError, ValueError, KeyError, TypeError, subprocess.SubprocessError) as exc:
            note = f"could not remove {e.get('kind')} {e.get('path') or e.get('pid')} ({exc})"
        if note:
            done.append(note)
    return done


def _clean_one(e: dict[str, Any], mounts: dict[str, int]) -> str | None:
    if e["kind"] == "mount":
        return _detach(e["path"], mounts[e["path"]]) if e["path"] in mounts else None
    if e["kind"] == "process":
        root = Proc(int(e["pid"]), float(e["started"]))
        alive = root.handle() is not None
        pids = kill_tree(root, grace=3.0)  # nothing when it is gone (its PID may be reused)
        if not alive:
            return None
        return f"stopped process {e['pid']}" + (f" and {len(pids) - 1} more" if len(pids) > 1 else "")
    if e["kind"] == "dir":
        ident = (int(e["dev"]), int(e["ino"])) if "dev" in e and "ino" in e else None
        return _remove_dir(e["path"], ident)
    if e["kind"] in ("trace", "cgroup"):
        return _remove_made(e["path"], e["kind"])
    if e["kind"] == "netns":
        name = str(e["name"])
        if not _NETNS.fullmatch(name) or not os.path.lexists(f"/run/netns/{name}"):
            return None
        ip = trust.which("ip")[0]  # root runs it: resolved and checked as any program
        if ip is None:
            return f"kept the network namespace {name} (no ip command root may run)"
        subprocess.run([ip, "netns", "del", name], capture_output=True, timeout=30, check=False)
        return f"removed the network namespace {name}"
    return None


def _remove_made(path: str, kind: str) -> str | None:
    """A tracefs instance or a memory cgroup the plugin made (by its name): rmdir stops the
    tracing and frees its buffers, or drops the (by now empty: its daemon was stopped)
    cgroup; the kernel refuses it while in use."""
    if kind == "cgroup" and _CLUSTER.fullmatch(path):
        return remove_cgroup_tree(path)
    made, what, gone = ((_TRACE, "tracefs instance", "trace instance") if kind == "trace"
                        else (_CGROUP, "memory cgroup", "memory cgroup"))
    if not made.fullmatch(path):
        return f"kept {path} (not a {what} the plugin makes)"
    stopped = empty_cgroup(path) if kind == "cgroup" else ""
    try:
        os.rmdir(path)
    except FileNotFoundError:
        return stopped or None
    return f"{stopped}; removed the {gone} {path}" if stopped else f"removed the {gone} {path}"


def remove_cgroup_tree(path: str) -> str | None:
    """A test cluster's cgroup parent and its pods' cgroups under it, deepest first, each
    emptied of what a killed cluster left in it."""
    if not os.path.isdir(path):
        return None
    for here, _dirs, _files in sorted(os.walk(path), key=lambda w: -w[0].count("/")):
        empty_cgroup(here)
        with contextlib.suppress(OSError):
            os.rmdir(here)
    return f"kept the cgroup {path} (in use)" if os.path.isdir(path) else f"removed the cgroup {path}"


@contextlib.contextmanager
def _locked(path: str) -> Iterator[bool]:
    """Hold the record's lock while removing its entries; False if someone else holds it."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError:
        yield False
        return
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(fd)
        yield False
        return
    try:
        yield True
    finally:
        os.close(fd)


def settle(path: str) -> list[str]:
    """Remove what a dead owner's record still lists, then the record."""
    with _locked(path) as mine:
        if not mine or not os.path.exists(path):
            return []
        _owner, entries = _entries(path)
        done = clean(entries)
        os.unlink(path)
        return done


def sweep(folder: str | None = None) -> list[str]:
    """At session start: settle the records of every session that is no longer running."""
    folder = folder or state_dir()
    report = []
    for name in sorted(os.listdir(folder)):
        path = os.path.join(folder, name)
        if not name.endswith(".jsonl"):
            continue
        try:
            owner, _ = _entries(path)
        except (OSError, ValueError):
            continue
        if owner and Proc(int(owner["owner"]), float(owner["started"])).handle() is not None:
            continue  # a session still running
        done = settle(path)
        if done:
            report.append(f"session {owner.get('owner', '?')}: " + "; ".join(done))
    return report
