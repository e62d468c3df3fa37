"""A relay between root's fio controller and a fio server the plugin did not start.

fio's client obeys its server: a server may ask it to send any file (SENDFILE: /etc/shadow,
the controller's SSH key), to write an I/O log it supplies to `<name>.<server>` following
symlinks (IOLOG), or to save verify state and run a trigger (VTRIGGER). A server the plugin
does not control (a host's agent may be hostile; a local user may listen first on a loopback
port named in --fsperf-fio-servers) is reached only through this relay: the controller
connects to a unix socket in the session's 0700 directory, the relay connects on to the
server and passes the server's frames back only where they are what a benchmark needs
(fio's server.h: text, job start and stop, statistics, probe and ETA replies). Anything
else, or a frame that is not fio's protocol, ends the connection, and why is kept for the
failure's message. Each frame is held until it is whole and checked as fio's client will
read it (fio_frames.py: sizes, offsets, counts, strings, units). What the controller sends is
passed on as it is.
"""

from __future__ import annotations

import contextlib
import ipaddress
import os
import socket
import struct
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field

import psutil

from pytest_fsperf.engine.fio_frames import Seen
from pytest_fsperf.errors import MeasurementError
from pytest_fsperf.infra.tcp import listener_uids, owner

HEADER = struct.Struct("<HHIQIHH")  # version, opcode, flags, tag, pdu_len, cmd_crc16, pdu_crc16
VERSION = 97  # FIO_SERVER_VER of fio 3.33
MAX_PDU = 1024  # FIO_SERVER_MAX_FRAGMENT_PDU: larger frames are not fio's
# server-to-client opcodes a benchmark needs (fio 3.33's client.c handles these)
# (not UPDATE_JOB: an answer to a request the controller never makes; fio 3.33 calls a NULL
# handler for one it did not ask for)
PASSED = {1: "QUIT", 5: "TEXT", 6: "TS", 7: "GS", 9: "ETA", 10: "PROBE", 11: "START",
          12: "STOP", 13: "DU", 14: "SERVER_START", 15: "ADD_JOB", 22: "JOB_OPT"}
REFUSED = {17: "IOLOG: write an I/O log of its choosing", 18: "UPDATE_JOB, unasked",
           19: "LOAD_FILE",
           20: "VTRIGGER: save verify state and run a trigger",
           21: "SENDFILE: send it a file of this machine"}


@dataclass
class Relay:
    """One server's relay: `path` is the socket the controller is given."""

    upstream: tuple[int, object]  # (family, address) of the real server
    path: str
    shown: str  # the server as the user named it
    refused: list[str] = field(default_factory=list)  # why a connection was ended
    _listener: socket.socket | None = None
    _threads: list[threading.Thread] = field(default_factory=list)
    _open: list[socket.socket] = field(default_factory=list)
    _stop: threading.Event = field(default_factory=threading.Event)

    def start(self) -> None:
        self._listener = private_listener(self.path)
        self._spawn(self._accept)

    def _spawn(self, target: object, *args: object) -> None:
        t = threading.Thread(target=target, args=args, daemon=True,  # type: ignore[arg-type]
                             name="fsperf-fio-relay")
        t.start()
        self._threads.append(t)

    def _accept(self) -> None:
        assert self._listener is not None
        while not self._stop.is_set():
            try:
                inner, _ = self._listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            outer = socket.socket(self.upstream[0])
            try:
                outer.settimeout(10.0)
                outer.connect(self.upstream[1])  # type: ignore[arg-type]
                outer.settimeout(None)
                why = self._stranger(outer)
            except OSError as exc:
                why = f"not reachable ({exc.strerror or exc})"
            if why:
                self.refused.append(why)
                inner.close()
                outer.close()
                continue
            self._open += [inner, outer]
            self._spawn(self._to_server, inner, outer)
            self._spawn(self._to_client, outer, inner)

    def _stranger(self, outer: socket.socket) -> str:
        """Why the loopback server that took the connection is not the one meant (another
        user's, listening since the check before the run), or ""."""
        family, address = self.upstream
        if family == socket.AF_UNIX or not local(address):
            return ""
        uid = owner(outer.getpeername(), outer.getsockname())  # the server's end, exactly
        if uid is None:
            return "its server's socket is not known to the kernel: not the server you meant"
        return (f"was answered as uid {uid}, not root or you: not the server you meant"
                if uid not in (0, os.geteuid()) else "")

    @staticmethod
    def _to_server(inner: socket.socket, outer: socket.socket) -> None:
        with contextlib.suppress(OSError):
            while data := inner.recv(65536):
                outer.sendall(data)
        with contextlib.suppress(OSError):
            outer.shutdown(socket.SHUT_WR)

    def _to_client(self, outer: socket.socket, inner: socket.socket) -> None:
        seen = Seen()
        try:
            while True:
                head = _exactly(outer, HEADER.size)
                if head is None:
                    break
                version, opcode, flags, _tag, pdu_len, _c, _p = HEADER.unpack(head)
                why = _refusal(version, opcode, pdu_len)
                payload = _exactly(outer, pdu_len) if pdu_len and not why else b""
                if payload is None:
                    break
                why = why or seen.frame(opcode, flags, payload, head + payload)
                if why:
                    self.refused.append(why)
                    break
                while seen.ready:
                    inner.sendall(seen.ready.pop(0))
        except OSError:
            pass
        for s in (inner, outer):
            with contextlib.suppress(OSError):
                s.shutdown(socket.SHUT_RDWR)

    def close(self) -> None:
        self._stop.set()
        for s in [*self._open, *([self._listener] if self._listener else [])]:
            with contextlib.suppress(OSError):
                s.shutdown(socket.SHUT_RDWR)
            s.close()
        for t in self._threads:
            t.join(timeout=5.0)
        with contextlib.suppress(OSError):
            os.unlink(self.path)


def private_listener(path: str) -> socket.socket:
    """A unix socket listening at `path`, bound 0600 (in a 0700 directory of the caller's),
    accepting with a short timeout so that its loop sees a stop."""
    listener = socket.socket(socket.AF_UNIX)
    old = os.umask(0o177)
    try:
        listener.bind(path)
    finally:
        os.umask(old)
    listener.listen(4)
    listener.settimeout(0.2)
    return listener


def _refusal(version: int, opcode: int, pdu_len: int) -> str:
    if version != VERSION:
        return f"spoke fio's protocol {version}, not {VERSION} (is it fio 3.33's server?)"
    if pdu_len > MAX_PDU:
        return f"sent a frame of {pdu_len} bytes (fio's are at most {MAX_PDU})"
    if opcode not in PASSED:
        return f"asked the controller to {REFUSED.get(opcode, f'obey command {opcode}')}: refused"
    return ""


def _exactly(s: socket.socket, n: int) -> bytes | None:
    """n bytes, or None where the connection ended first."""
    got = bytearray()
    while len(got) < n:
        chunk = s.recv(n - len(got))
        if not chunk:
            return None
        got += chunk
    return bytes(got)


def local(address: object) -> bool:
    """The address is this machine's: loopback, unspecified, or one of its interfaces' (a
    local user may listen on any of them first)."""
    text = address[0] if isinstance(address, tuple) else ""
    try:
        ip = ipaddress.ip_address(str(text).split("%", 1)[0])
    except ValueError:
        return False
    if ip.is_loopback or ip.is_unspecified:
        return True
    mapped = getattr(ip, "ipv4_mapped", None)
    own = {a.address.split("%", 1)[0] for addrs in psutil.net_if_addrs().values() for a in addrs}
    return str(ip) in own or (mapped is not None and str(mapped) in own)


def check_identity(host: str, port: int, address: object) -> None:
    """A server on this machine's loopback must be root's or ours: any local user may
    listen on a loopback port first and take the controller's connection. Checked before
    the run (this line) and again on each connection (Relay: who accepted it)."""
    if not local(address):
        return
    others = sorted(u for u in listener_uids(port) if u not in (0, os.geteuid()))
    if others:
        raise MeasurementError(f"fio server {host}:{port} is listening as uid "
                               f"{', '.join(map(str, others))}, not root or you: not the server "
                               "you meant (any local user may listen on a port of this machine)")


def upstream_of(host: str, port: int, sock: str | None) -> tuple[int, object]:
    """The (family, address) to connect to: a unix socket, or the host's first address."""
    if sock:
        return socket.AF_UNIX, sock
    try:
        family, _t, _p, _c, address = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0]
    except OSError as exc:
        raise MeasurementError(f"fio server {host}:{port}: cannot resolve: {exc}") from None
    check_identity(host, port, address)
    return family, address


@contextlib.contextmanager
def relayed(relays: list[Relay]) -> Iterator[list[Relay]]:
    try:
        for r in relays:
            r.start()
        yield relays
    finally:
        for r in relays:
            r.close()
