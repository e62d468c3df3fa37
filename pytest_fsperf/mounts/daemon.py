"""Find the FUSE daemon serving a mount, from /proc only.

Every FUSE daemon holds an fd on /dev/fuse; on recent kernels its fdinfo carries
`fuse_connection: N`, where N is the mount's device minor. Older kernels lack the
line: then the /dev/fuse holder whose command line names the mount point is taken.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, replace

from pytest_fsperf.infra.mountinfo import Mount

HELPERS = frozenset({"fusermount", "fusermount3"})  # hold /dev/fuse for auto_unmount


@dataclass(frozen=True)
class Member:
    """Another process serving the same FUSE connection (a worker under a supervisor)."""

    pid: int
    start_time: int
    cmdline: tuple[str, ...]


@dataclass(frozen=True)
class Daemon:
    pid: int  # the first process of the connection (a supervisor, where there are several)
    start_time: int  # /proc/PID/stat field 22: tells a live daemon from a reused PID
    cmdline: tuple[str, ...]
    found_by: str
    others: tuple[Member, ...] = ()  # the rest holding the connection: all are measured

    @property
    def members(self) -> tuple[Member, ...]:
        return (Member(self.pid, self.start_time, self.cmdline), *self.others)

    def role(self, pid: int) -> str:
        if not self.others:
            return "daemon"
        return "supervisor" if pid == self.pid else "worker"


@dataclass(frozen=True)
class Lookup:
    daemon: Daemon | None
    note: str  # how it was found, or why there is none
    fuse: bool = True  # False: not a FUSE mount, so there is no daemon to find


def _read(path: str) -> str | None:
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return f.read()
    except OSError:
        return None


def stat_fields(pid: int, proc: str = "/proc") -> list[str] | None:
    """Fields of /proc/PID/stat after the command name; index 0 is field 3 (state)."""
    text = _read(f"{proc}/{pid}/stat")
    if text is None:
        return None
    return text[text.rindex(")") + 2 :].split()


def start_time(pid: int, proc: str = "/proc") -> int | None:
    fields = stat_fields(pid, proc)
    return int(fields[19]) if fields else None


def cmdline(pid: int, proc: str = "/proc") -> tuple[str, ...]:
    text = _read(f"{proc}/{pid}/cmdline") or ""
    return tuple(arg for arg in text.split("\0") if arg)


def parse_fdinfo_connection(text: str) -> int | None:
    for line in text.splitlines():
        key, _, value = line.partition(":")
        if key.strip() == "fuse_connection":
            try:
                return int(value.strip())
            except ValueError:
                return None
    return None


def fuse_holders(proc: str = "/proc") -> list[tuple[int, int | None]]:
    """(pid, fuse_connection or None) for every fd on /dev/fuse we may read."""
    holders = []
    for entry in os.listdir(proc):
        if not entry.isdigit():
            continue
        fd_dir = f"{proc}/{entry}/fd"
        try:
            fds = os.listdir(fd_dir)
        except OSError:
            continue
        for fd in fds:
            try:
                if os.readlink(f"{fd_dir}/{fd}") != "/dev/fuse":
                    continue
            except OSError:
                continue
            info = _read(f"{proc}/{entry}/fdinfo/{fd}") or ""
            holders.append((int(entry), parse_fdinfo_connection(info)))
    return holders


def _parent(pid: int, proc: str) -> int | None:
    fields = stat_fields(pid, proc)
    return int(fields[1]) if fields else None


def _names_mount_point(args: tuple[str, ...], mount_point: str) -> bool:
    return any(os.path.normpath(a) == mount_point for a in args[1:] if a.startswith("/"))


def _is_helper(pid: int, proc: str) -> bool:
    args = cmdline(pid, proc)
    return bool(args) and os.path.basename(args[0]) in HELPERS


def _pick(pids: set[int], proc: str, how: str) -> Lookup:
    """One process tree holding the connection: its root, and the others (JuiceFS's
    `mount -d` keeps a supervisor and a worker on one connection; the worker does the
    work). Several trees: not guessed."""
    pids = {p for p in pids if not _is_helper(p, proc)}
    roots = sorted(p for p in pids if _parent(p, proc) not in pids)
    if len(roots) == 1:
        found = describe(roots[0], how, proc)
        others = tuple(Member(p, t, cmdline(p, proc)) for p in sorted(pids - {roots[0]})
                       if (t := start_time(p, proc)) is not None)
        if found.daemon is None or not others:
            return found
        daemon = replace(found.daemon, others=others)
        return Lookup(daemon, f"found by {how}; {len(others) + 1} processes serve it "
                              f"(supervisor {daemon.pid}, workers "
                              f"{', '.join(str(m.pid) for m in others)}): all are measured")
    if not roots:
        return Lookup(None, f"daemon not found: no process holds this FUSE connection ({how})")
    listed = ", ".join(map(str, roots))
    return Lookup(None, f"daemon not found: several processes ({listed}) match ({how}); "
                        "pass --fsperf-daemon-pid")


def describe(pid: int, found_by: str, proc: str = "/proc") -> Lookup:
    started = start_time(pid, proc)
    if started is None:
        return Lookup(None, f"daemon not found: PID {pid} does not exist")
    return Lookup(Daemon(pid, started, cmdline(pid, proc), found_by), f"found by {found_by}")


def find_daemon(mount: Mount, proc: str = "/proc") -> Lookup:
    if not mount.is_fuse:
        return Lookup(None, f"no daemon: {mount.fstype} is not a FUSE filesystem", fuse=False)
    holders = fuse_holders(proc)
    if not holders:
        return Lookup(None, "daemon not found: no readable /dev/fuse holder (run as root?)")
    by_conn = {pid for pid, conn in holders if conn == mount.minor}
    if by_conn:
        return _pick(by_conn, proc, "fdinfo fuse_connection")
    if any(conn is not None for _, conn in holders):
        return Lookup(None, f"daemon not found: no /dev/fuse holder serves connection {mount.minor}")
    named = {pid for pid, _ in holders if _names_mount_point(cmdline(pid, proc), mount.mount_point)}
    return _pick(named, proc, "command line names the mount point")
