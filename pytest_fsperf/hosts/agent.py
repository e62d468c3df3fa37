"""What runs on each host, started over SSH by execnet (link.py sends `serve(channel)`):
the pytest-free measuring core, driven by requests on the channel. It finds the daemon of
the host's mount, drops the host's caches, starts a fio server on a unix socket in a
0700 directory of its own, and brackets each run with the daemon meter.

Everything it makes is noted in a record of this host's, under a watchdog (session/
leftovers.py): when the controller's connection drops (the controller killed, the network
gone) the channel ends, the agent removes what it made; if the agent itself is killed, its
watchdog does, and the next agent on the host sweeps what a dead one left.

On Kubernetes (hosts/pods.py) the same agent plays two parts: in a client pod it serves fio on
the pod's mount; in the node's measuring pod (privileged, the node's PIDs) it is given the
FUSE connection the clients' mount is served by, finds that mount in the node's mount table
(/proc/1/mountinfo) and its daemon in the node's /proc, drops the node's caches and meters
the daemon, and keeps its pod's lease fresh while the controller is there."""

from __future__ import annotations

import contextlib
import dataclasses
import os
import socket
import threading
import time
from typing import Any

from pytest_fsperf.engine import fio_clients
from pytest_fsperf.infra import leftovers, watchdog
from pytest_fsperf.infra.mountinfo import Mount, read_mounts
from pytest_fsperf.measure import progress
from pytest_fsperf.measure.cache import make_cold
from pytest_fsperf.measure.meters import DaemonExited, DaemonMeter
from pytest_fsperf.mounts.daemon import Lookup, find_daemon
from pytest_fsperf.store import juicefs
from pytest_fsperf.version import __version__

PROTOCOL = 4  # bumped when a request or a reply changes shape (hosts/replies.py)

NODE = "/proc/1"  # the node's first process, seen from a pod that shares the node's PIDs
LEASE_EVERY = 5.0  # s between touches of a measuring pod's lease

NOT_COUNTED = ("its daemon keeps no count of its object requests (JuiceFS's .stats does); "
               "the store's own counters, where readable, count all hosts together")


class Agent:
    def __init__(self, stack: contextlib.ExitStack, swept: list[str]) -> None:
        self.stack = stack
        self.swept = swept
        self.mount = ""
        self.connection: int | None = None  # a measuring pod's: the clients' FUSE connection
        self.lookup: Lookup | None = None
        self.server: fio_clients.Server | None = None
        self.meter: DaemonMeter | None = None
        self.counter: juicefs.StatsMeter | None = None
        self.counter_note = ""
        self.started = 0.0

    def hello(self, mount: str = "", connection: int | None = None) -> dict[str, Any]:
        """Who and what this host is; the mount must be a mount point here, or (a measuring
        pod) the FUSE connection must be mounted on the node."""
        self.mount, self.connection = mount, connection
        found = self._mounted()
        if found is not None and connection is not None:
            self.mount = NODE + "/root" + found.mount_point  # the node's mount, from here
        self.lookup = find_daemon(found) if found else None
        missing = (f"FUSE connection {connection} is not mounted on this node"
                   if connection is not None else f"{mount} is not a mount point")
        return {"version": __version__, "protocol": PROTOCOL, "host": socket.gethostname(),
                "uid": os.geteuid(), "time": time.time(), "swept": self.swept,
                "mounted": found is not None,
                "fstype": found.fstype if found else "",
                "daemon": self.lookup.daemon.pid if self.lookup and self.lookup.daemon else None,
                "note": self.lookup.note if self.lookup else missing,
                "connection": found.minor if found and found.is_fuse and not found.major else None}

    def clock(self) -> float:
        return time.time()

    def hold(self, path: str) -> bool:
        """Touch a measuring pod's lease (its first process ends the pod when it goes stale)
        until this agent ends."""
        stop = threading.Event()
        self.stack.callback(stop.set)

        def touch() -> None:
            while not stop.wait(LEASE_EVERY):
                with contextlib.suppress(OSError):
                    os.utime(path)
        with contextlib.suppress(OSError):
            os.utime(path)
        threading.Thread(target=touch, daemon=True, name="fsperf-lease").start()
        return True

    def serve_fio(self) -> str:
        """A fio server on a unix socket in a new 0700 directory; its socket's path."""
        folder, entry = leftovers.private_dir("pytest-fsperf-host-")
        self.stack.callback(_remove, folder, entry)
        (self.server,) = self.stack.enter_context(fio_clients.local_servers(1, folder))
        assert self.server.sock is not None
        return self.server.sock

    def cold(self) -> str:
        """Sync and drop this host's page cache (the daemon's own cache stays: it is not
        ours to restart here)."""
        return make_cold(self.mount, fuse=True).value

    def start(self) -> float:
        """Bracket the next run: the request counter and the daemon meter started; this
        host's clock at its start."""
        self.lookup = self._find()
        found = self._mounted()
        if found is not None and self.connection is not None:
            found = dataclasses.replace(found, mount_point=self.mount)
        self.counter, self.counter_note = _counter(found)
        if self.lookup.daemon is None:
            self.meter = None
            return time.time()
        server = self.server
        tree = progress.TreeIo(lambda: server.proc.pid if server and server.proc else None)
        self.meter = DaemonMeter(self.lookup.daemon, moved=tree)
        self.meter.start()
        self.started = time.time()
        return self.started

    def stop(self) -> dict[str, Any]:
        """The daemon's figures over the run, this host's clock at the end, and why there
        are none where there are none."""
        meter, self.meter = self.meter, None
        lookup = self.lookup or Lookup(None, "no run was started")
        if meter is None:
            return {"daemon": None, "note": lookup.note, "time": time.time(), **self._counted()}
        try:
            stats = meter.stop("the run")
        except DaemonExited as exc:
            return {"daemon": None, "note": str(exc), "exited": True, "time": time.time()}
        return {"daemon": dataclasses.asdict(stats), "note": lookup.note, "time": time.time(),
                "started": self.started, **self._counted(),
                "command": " ".join(lookup.daemon.cmdline)[:200] if lookup.daemon else ""}

    def _counted(self) -> dict[str, Any]:
        """The run's object requests as this host's daemon counted them, or why not."""
        counter, self.counter = self.counter, None
        if counter is None:
            return {"requests": None, "requests_note": self.counter_note}
        try:
            return {"requests": dataclasses.asdict(counter.stop()), "requests_note": ""}
        except (OSError, ValueError) as exc:
            return {"requests": None, "requests_note": f"JuiceFS .stats failed: {exc}"}

    def _mounted(self) -> Mount | None:
        if self.connection is not None:  # the node's mount of that connection
            found = [m for m in read_mounts(NODE + "/mountinfo")
                     if m.is_fuse and not m.major and m.minor == self.connection]
            return found[0] if found else None
        return {m.mount_point: m for m in read_mounts()}.get(os.path.realpath(self.mount))

    def _find(self) -> Lookup:
        found = self._mounted()
        if found is None:
            return Lookup(None, f"{self.mount} is no longer a mount point on this host")
        return find_daemon(found)


def _counter(mount: Mount | None) -> tuple[juicefs.StatsMeter | None, str]:
    """A JuiceFS mount's own request counter, started; else None and why."""
    root = juicefs.stats_root(mount.mount_point, mount.fstype) if mount else None
    if root is None:
        return None, NOT_COUNTED
    counter = juicefs.StatsMeter(root)
    try:
        counter.start()
    except (OSError, ValueError) as exc:
        return None, f"JuiceFS .stats failed: {exc}"
    return counter, ""


def _remove(folder: str, entry: leftovers.Entry) -> None:
    with contextlib.suppress(OSError):
        for name in os.listdir(folder):
            os.unlink(os.path.join(folder, name))
        os.rmdir(folder)
    if not os.path.lexists(folder):  # else the watchdog removes it
        leftovers.done(entry)


def serve(channel: Any) -> None:
    """Answer {"op": name, "args": {...}} with {"ok": value} or {"error": text} until the
    controller sends None or the channel ends; then remove everything made."""
    with watchdog.recorded() as swept, contextlib.ExitStack() as stack:
        agent = Agent(stack, swept)
        while True:
            try:
                request = channel.receive()
            except EOFError:
                break
            if request is None:
                break
            op = request.get("op")
            if op not in ("hello", "clock", "hold", "serve_fio", "cold", "start", "stop"):
                channel.send({"error": f"unknown request {op!r}"})
                continue
            try:
                channel.send({"ok": getattr(agent, op)(**request.get("args", {}))})
            except Exception as exc:  # the controller names the host and fails the test
                channel.send({"error": f"{type(exc).__name__}: {exc}"})
        if agent.meter is not None:
            agent.meter.abort()
