"""Processes the plugin starts, and how they are stopped: with everything they started.

Each child runs in a session of its own (so a Ctrl-C in the terminal reaches pytest, not
it); stopping it stops its whole tree: its process group and every descendant (fio's job
processes call setsid, a daemon's helpers may too). Only while the process itself is alive,
checked by its start time: a reused PID, or a group of that number, is never hit.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass

import psutil


@dataclass(frozen=True)
class Proc:
    """A process as the plugin knew it: PID and start time (psutil's create_time)."""

    pid: int
    started: float

    @classmethod
    def of(cls, pid: int) -> Proc | None:
        try:
            return cls(pid, psutil.Process(pid).create_time())
        except psutil.Error:
            return None

    def handle(self) -> psutil.Process | None:
        """The live process, or None when it exited (or the PID now names another)."""
        try:
            p = psutil.Process(self.pid)
            if abs(p.create_time() - self.started) > 0.01 or p.status() == psutil.STATUS_ZOMBIE:
                return None
            return p
        except psutil.Error:
            return None


def tree(root: Proc) -> list[psutil.Process]:
    """root, its descendants and the members of its process group, only while root itself
    is alive (its PID with its start time). Once root is gone its PID may name a stranger,
    and a process group of that number may be the stranger's: nothing is taken then."""
    top = root.handle()
    if top is None:
        return []
    found: dict[int, psutil.Process] = {top.pid: top}
    with contextlib.suppress(psutil.Error):
        found.update((c.pid, c) for c in top.children(recursive=True))
    # a group root leads: only root and what it started can be in it (a process joins only
    # a group of its own session); those that left root's tree (reparented) are found here
    for p in psutil.process_iter(["pid", "create_time"]):
        with contextlib.suppress(psutil.Error, OSError):
            if (p.pid not in found and os.getpgid(p.pid) == root.pid
                    and p.info["create_time"] >= root.started - 0.01):
                found[p.pid] = p
                found.update((c.pid, c) for c in p.children(recursive=True))
    found.pop(os.getpid(), None)
    return list(found.values())


def kill_tree(root: Proc, grace: float = 5.0) -> list[int]:
    """SIGTERM the tree, SIGKILL what is left after `grace` s; returns the PIDs signalled."""
    return kill(tree(root), grace)


def kill(procs: list[psutil.Process], grace: float = 5.0) -> list[int]:
    """SIGTERM these processes, SIGKILL what is left after `grace` s; returns the PIDs
    signalled. psutil signals a process only while its PID has the start time it had when
    it was found, so one that exited meanwhile is never mistaken for a new one."""
    procs = [p for p in procs if _running(p)]
    for p in procs:
        with contextlib.suppress(psutil.Error):
            p.send_signal(signal.SIGTERM)
            p.send_signal(signal.SIGCONT)  # a stopped process cannot act on SIGTERM
    _gone, alive = psutil.wait_procs(procs, timeout=grace)
    for p in alive:
        with contextlib.suppress(psutil.Error):
            p.kill()
    psutil.wait_procs(alive, timeout=grace)
    return [p.pid for p in procs]


def _running(p: psutil.Process) -> bool:
    try:
        return p.is_running() and p.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def stop_child(proc: subprocess.Popen[bytes], grace: float = 10.0) -> None:
    """Stop a server this process started (and so reaps: its PID cannot be reused before
    wait()): SIGTERM, then SIGKILL after `grace` seconds."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def empty_cgroup(path: str, wait: float = 5.0) -> str:
    """Kill what is still in a cgroup the plugin made (a daemon's double-forked helper that
    outlived a killed session: in it, so the daemon's), until it is empty: read and killed
    again each round, so a process forked between a read and its kill is not missed."""
    stopped: set[int] = set()
    deadline = time.monotonic() + wait
    while time.monotonic() < deadline:
        try:
            with open(os.path.join(path, "cgroup.procs"), encoding="ascii") as f:
                pids = {int(p) for p in f.read().split()}
        except (FileNotFoundError, NotADirectoryError):
            break
        if not pids:
            break
        for pid in pids - stopped:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        stopped |= pids
        time.sleep(0.05)
    n = len(stopped)
    return f"stopped {n} process{'es' * (n != 1)} left in the memory cgroup {path}" if n else ""


def listening(pid: int, port: int) -> str | None:
    """Whether the TCP listeners on `port` are all the process `pid`'s (or its children's),
    by socket inode: None while none listens yet, "" when only ours does, else who else
    does. A local user who reads the port from the store's command line and binds it first
    would otherwise be sent root's signed requests and its daemons' traffic."""
    try:
        mine = {p.pid for p in [psutil.Process(pid), *psutil.Process(pid).children(recursive=True)]}
        found = [c for c in psutil.net_connections(kind="tcp")
                 if c.status == psutil.CONN_LISTEN and c.laddr and c.laddr.port == port]
    except (psutil.Error, OSError) as exc:
        return f"its listeners cannot be read: {exc}"
    others = [c for c in found if c.pid not in mine]
    if others:
        who = ", ".join(sorted({_owner(c.pid) for c in others}))
        return f"port {port} is also listened on by {who}: refused (it would receive root's requests)"
    return "" if found else None


def serving(proc: subprocess.Popen[bytes], port: int, answers: Callable[[], bool],
            deadline: float, pause: float = 0.1) -> str | None:
    """Wait until the process alone listens on `port` (by socket inode: nothing is sent to a
    listener of another's) and answers(): "" then; who else listens there, where another
    does; None where it exited or the deadline passed first."""
    while proc.poll() is None and time.monotonic() < deadline:
        taken = listening(proc.pid, port)
        if taken:
            return taken
        if taken == "" and answers():
            return ""
        time.sleep(pause)
    return None


def _owner(pid: int | None) -> str:
    if pid is None:
        return "a process of another user"
    try:
        return f"PID {pid} (uid {psutil.Process(pid).uids().real})"
    except psutil.Error:
        return f"PID {pid}"


def proc_io(pid: int, proc: str = "/proc") -> dict[str, int] | None:
    """/proc/PID/io: the whole process's I/O counts, its exited threads included (psutil's
    io_counters has no cancelled_write_bytes); None where it cannot be read."""
    try:
        with open(f"{proc}/{pid}/io", encoding="ascii") as f:
            return {k: int(v) for k, v in (line.split(":", 1) for line in f if ":" in line)}
    except (OSError, ValueError):
        return None


def io_counters(pid: int, proc: str = "/proc") -> tuple[int, int] | None:
    """(rchar, wchar): bytes the process read and wrote through syscalls."""
    found = proc_io(pid, proc)
    return (found["rchar"], found["wchar"]) if found and "rchar" in found and "wchar" in found else None
