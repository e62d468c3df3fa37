"""A pod's fio server reached over the agent's own connection (`kubectl exec` has no
forward of a unix socket, and a pod's port is reachable by anyone in its network).

A unix socket in this session's 0700 directory stands for the server: each connection to
it opens one more execnet channel to the pod, where a few lines connect to the agent's fio
server socket and pass bytes both ways. fio's controller reaches it only through the frame
checking relay (engine/fio_relay.py), as it reaches an SSH-forwarded host: a pod is a place
the plugin does not control. An empty bytes object says one side ended."""

from __future__ import annotations

import contextlib
import os
import socket
import threading
from typing import Any

from pytest_fsperf.engine.fio_clients import SOCKET_MAX, Server
from pytest_fsperf.engine.fio_relay import private_listener
from pytest_fsperf.errors import MeasurementError

CHUNK = 65536
MAX_BYTES = 64 << 20  # from the pod on one connection: a benchmark's fio server sends far less
_REMOTE = """\
import socket, threading
path = channel.receive()
sock = socket.socket(socket.AF_UNIX)
sock.connect(path)
def up():
    try:
        while True:
            data = sock.recv(65536)
            channel.send(data)
            if not data:
                break
    except (OSError, EOFError, ValueError):
        pass
sender = threading.Thread(target=up, daemon=True)
sender.start()
try:
    while True:
        data = channel.receive()
        if not data:
            break
        sock.sendall(data)
except (OSError, EOFError):
    pass
try:
    sock.shutdown(socket.SHUT_WR)
except OSError:
    pass
sender.join(600)
sock.close()
"""


class Tunnel:
    """The local end: `path` is given to fio's controller (through its relay)."""

    def __init__(self, gateway: Any, remote: str, path: str, shown: str) -> None:
        self.gateway, self.remote, self.path, self.shown = gateway, remote, path, shown
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self._open: list[socket.socket] = []
        self._channels: list[Any] = []
        self.refused: list[str] = []  # why a connection was ended here
        if len(os.fsencode(path)) > SOCKET_MAX:
            raise MeasurementError(f"socket path {path} is longer than {SOCKET_MAX} bytes: "
                                   "point TMPDIR at a shorter directory")
        self._listener = private_listener(path)
        self._spawn(self._accept)

    @property
    def server(self) -> Server:
        return Server("localhost", 0, None, sock=self.path, shown=self.shown)

    def _spawn(self, target: Any, *args: Any) -> None:
        t = threading.Thread(target=target, args=args, daemon=True, name="fsperf-tunnel")
        t.start()
        self._threads.append(t)

    def _accept(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self._listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            try:
                channel = self.gateway.remote_exec(_REMOTE)
                channel.send(self.remote)
            except Exception:  # the pod's connection is gone: the controller sees a closed socket
                conn.close()
                continue
            self._open.append(conn)
            self._channels.append(channel)
            self._spawn(self._out, conn, channel)
            self._spawn(self._in, channel, conn)

    @staticmethod
    def _out(conn: socket.socket, channel: Any) -> None:
        with contextlib.suppress(Exception):
            while data := conn.recv(CHUNK):
                channel.send(data)
        with contextlib.suppress(Exception):
            channel.send(b"")

    def _in(self, channel: Any, conn: socket.socket) -> None:
        got = 0
        with contextlib.suppress(Exception):
            while True:
                data = channel.receive()
                if not isinstance(data, bytes) or not data:
                    break
                got += len(data)
                if got > MAX_BYTES:
                    self.refused.append(f"{self.shown} sent more than {MAX_BYTES >> 20} MiB on "
                                        "one fio connection: ended")
                    conn.shutdown(socket.SHUT_RDWR)
                    channel.close()
                    return
                conn.sendall(data)
        with contextlib.suppress(OSError):
            conn.shutdown(socket.SHUT_WR)

    def close(self) -> None:
        self._stop.set()
        for s in [*self._open, self._listener]:
            with contextlib.suppress(OSError):
                s.shutdown(socket.SHUT_RDWR)
            s.close()
        for ch in self._channels:
            with contextlib.suppress(Exception):
                ch.close()
        for t in self._threads:
            t.join(timeout=5.0)
        with contextlib.suppress(OSError):
            os.unlink(self.path)
