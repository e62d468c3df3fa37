"""Many clients on fio's own client/server mode, not a runner of our own: one `fio --server`
per client (or servers the user started elsewhere), one controller that sends each client
its own job file (its own directory: its own mount) and collects one JSON with every
client's figures and the aggregate ("All clients"). The controller prints text lines before
the JSON; a server that is gone fails the run naming it.

A fio server runs any job any client sends it (`exec_prerun` included), as its user: the
servers the plugin starts as root listen only on a unix socket in a 0700 directory of the
plugin's, never on a TCP port, so no other local user can reach them."""

from __future__ import annotations

import dataclasses
import json
import os
import re
import socket
import subprocess
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass

from pytest_fsperf.engine import fio_relay
from pytest_fsperf.engine.fio import _direction, fio_binary
from pytest_fsperf.engine.fio_options import control
from pytest_fsperf.errors import MeasurementError
from pytest_fsperf.infra import leftovers
from pytest_fsperf.infra.procs import Proc, kill_tree
from pytest_fsperf.result.parts import IoStats

AGGREGATE = "All clients"


SOCKET_MAX = 107  # bytes of a unix socket path (sun_path holds 108 with its NUL)


@dataclass(frozen=True)
class Server:
    host: str
    port: int
    proc: Proc | None = None  # None: a server the user started
    # a server the user started: its mount of the bucket, where that is not the path of
    # the plugin's own mount (None: the same path)
    directory: str | None = None
    sock: str | None = None  # a server of the plugin's: its unix socket (host and port unused)
    shown: str = ""  # how it is named where not by host:port or socket (a host over SSH)

    @property
    def address(self) -> str:
        """host:port, the name of a server's socket in the session's directory, or `shown`"""
        if self.shown:
            return self.shown
        return os.path.basename(self.sock) if self.sock else f"{self.host}:{self.port}"

    @property
    def client_arg(self) -> str:
        return f"--client=sock:{self.sock}" if self.sock else f"--client=ip:{self.host},{self.port}"


@dataclass(frozen=True)
class ClientResult:
    server: str  # host:port
    read: IoStats | None
    write: IoStats | None
    cpu_seconds: float = 0.0  # fio's own CPU on that client: (usr + sys)% of its job runtime


def _private(folder: str) -> None:
    """The servers' sockets go only into a directory of this user that no one else can
    enter: connect() on a unix socket needs search permission on its directory."""
    if not leftovers.is_private(folder):
        raise MeasurementError(f"fio servers' sockets need a private directory: {folder} is not "
                               "a 0700 directory of this user")


def _listening(path: str) -> bool:
    with socket.socket(socket.AF_UNIX) as s:
        s.settimeout(0.2)
        return s.connect_ex(path) == 0


@contextmanager
def local_servers(n: int, folder: str, timeout: float = 10.0) -> Iterator[list[Server]]:
    """n fio servers, each on a unix socket in `folder` (a 0700 directory of the plugin's)
    and in its own session, noted in the session's record (a crash leaves nothing the next
    session does not remove); stopped on the way out."""
    _private(folder)
    servers: list[Server] = []
    entries: list[leftovers.Entry] = []
    try:
        for i in range(n):
            path = os.path.join(folder, f"fio-{i}-{os.urandom(3).hex()}.sock")
            if len(os.fsencode(path)) > SOCKET_MAX:
                raise MeasurementError(f"fio server socket path {path} is longer than "
                                       f"{SOCKET_MAX} bytes: point TMPDIR at a shorter directory")
            with open(os.path.join(folder, f"fio-server-{i}.log"), "ab") as log:
                popen = subprocess.Popen([fio_binary(), f"--server=sock:{path}"],
                                         stdin=subprocess.DEVNULL, stdout=log, stderr=log,
                                         start_new_session=True, cwd=folder)
            proc = Proc.of(popen.pid)
            entries.append(leftovers.note_process(proc))
            servers.append(Server("localhost", 0, proc, sock=path))
            deadline = time.monotonic() + timeout
            while not _listening(path):
                if popen.poll() is not None or time.monotonic() > deadline:
                    raise MeasurementError(f"fio server {i} on {path} did not start "
                                           f"(see {log.name})")
                time.sleep(0.05)
        yield servers
    finally:
        for server, entry in zip(servers, entries, strict=False):
            if server.proc is not None:
                kill_tree(server.proc, grace=2.0)
                if server.proc.handle() is not None:  # not dead yet: the watchdog's to end
                    continue
            leftovers.done(entry)


def parse_servers(text: str) -> tuple[Server, ...]:
    """'HOST:PORT[:DIR],...' (fio servers the user started, each with its own mount of the
    bucket under test at DIR). ValueError says what is wrong."""
    found = []
    for entry in (e.strip() for e in text.split(",")):
        if not entry:
            continue
        host, _, rest = entry.partition(":")
        port_text, _, directory = rest.partition(":")
        if (not re.fullmatch(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,252}", host)
                or not re.fullmatch(r"[0-9]{1,5}", port_text) or not 0 < int(port_text) < 65536):
            raise ValueError(f"{entry[:60]!r} is not HOST:PORT[:DIR] (PORT a number from 1 to "
                             "65535, HOST a name or address)")
        if directory and (not directory.startswith("/")
                          or any(ord(c) < 32 or ord(c) == 127 for c in directory)):
            raise ValueError(f"{entry[:60]!r}: DIR must be an absolute path without "
                             "control characters")
        found.append(Server(host, int(port_text), None, directory or None))
    if not found:
        raise ValueError("no servers given")
    if len({s.address for s in found}) < len(found):
        raise ValueError("a server is named twice")
    return tuple(found)


def job_file(path: str, directory: str, options: dict[str, str]) -> str:
    """A job file of one section. Values come from build_job, which refuses control
    characters (a newline would start an option of the caller's choosing) and `${`."""
    lines = ["[fsperf]", f"directory={directory.replace(':', chr(92) + ':')}"]
    for key, value in options.items():
        if control(key + value):
            raise MeasurementError(f"fio option {key!r} holds a control character")
        if key != "name":
            lines.append(f"{key}={value}")
    with open(path, "w", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")
    return path


def parse(text: str, servers: Sequence[Server]) -> tuple[list[ClientResult], ClientResult]:
    """Every client's figures, in the order of `servers`, and the aggregate."""
    try:
        data = json.loads(text[text.index("\n{") + 1 if not text.startswith("{") else 0:])
        stats = data["client_stats"]
    except (ValueError, KeyError) as exc:
        raise MeasurementError(f"fio's controller wrote no readable client JSON: {exc}") from None
    by_port: dict[str, dict[str, object]] = {}
    aggregate = None
    sockets = {s.sock for s in servers if s.sock}
    for block in stats:
        if block.get("jobname") == AGGREGATE:
            aggregate = block
        elif block.get("hostname") in sockets:  # a unix socket: fio names its path
            by_port[str(block["hostname"])] = block
        else:
            by_port[f"{block.get('hostname')}:{block.get('port')}"] = block
    missing = [s.address for s in servers if (s.sock or s.address) not in by_port]
    if missing or (aggregate is None and len(servers) > 1):
        raise MeasurementError(f"fio reported no figures for client {', '.join(missing) or '?'}")

    def one(address: str, block: dict[str, object]) -> ClientResult:
        if block.get("error"):
            raise MeasurementError(f"fio on client {address} failed with error {block['error']}")
        rd, wr = block["read"], block["write"]
        assert isinstance(rd, dict) and isinstance(wr, dict)
        cpu = (float(str(block.get("usr_cpu", 0))) + float(str(block.get("sys_cpu", 0)))) / 100
        return ClientResult(address, _direction(rd) if rd["total_ios"] else None,
                            _direction(wr) if wr["total_ios"] else None,
                            cpu * float(str(block.get("job_runtime", 0))) / 1000)

    clients = [one(s.address, by_port[s.sock or s.address]) for s in servers]
    return clients, one(AGGREGATE, aggregate or by_port[servers[0].sock or servers[0].address])


class Controller:
    """fio's controller: each server runs its job file. A server gone or unreachable fails
    the run, naming it; stop() (a daemon that died, a hang) ends it at once."""

    def __init__(self, servers: Sequence[Server], job_files: Sequence[str], output: str) -> None:
        self.servers, self.output, self.job_files = list(servers), output, list(job_files)
        self.proc: subprocess.Popen[str] | None = None

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()

    def run(self, timeout: float) -> tuple[list[ClientResult], ClientResult]:
        """Servers the plugin did not start are reached through relays (fio_relay.py): what
        such a server asks beyond a benchmark's needs ends its connection, and is named."""
        folder = os.path.dirname(os.path.abspath(self.output))
        relays = [fio_relay.Relay(fio_relay.upstream_of(s.host, s.port, s.sock),
                                  os.path.join(folder, f"relay-{i}-{os.urandom(3).hex()}.sock"),
                                  s.address)
                  for i, s in enumerate(self.servers) if s.proc is None]
        if relays:
            _private(folder)
        with fio_relay.relayed(relays):
            try:
                return self._run(timeout, relays)
            except MeasurementError:
                refused = [f"fio server {r.shown} {why}" for r in relays for why in r.refused]
                if refused:
                    raise MeasurementError("; ".join(refused)) from None
                raise

    def _run(self, timeout: float, relays: list[fio_relay.Relay]
             ) -> tuple[list[ClientResult], ClientResult]:
        by_server = iter(relays)
        through = [s if s.proc is not None else
                   dataclasses.replace(s, sock=next(by_server).path, shown=s.address)
                   for s in self.servers]
        argv = [fio_binary(), "--output-format=json", f"--output={self.output}"]
        argv += [a for s, path in zip(through, self.job_files, strict=True)
                 for a in (s.client_arg, path)]
        self.proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                     stderr=subprocess.STDOUT, text=True, start_new_session=True)
        try:
            said, _ = self.proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.communicate()
            raise MeasurementError(f"fio's controller did not finish within {timeout:g} s") from None
        gone = [s.address for s in self.servers if s.proc is not None and not _alive(s.proc)]
        if gone:
            raise MeasurementError(f"fio server {', '.join(gone)} died during the run")
        try:
            with open(self.output, encoding="utf-8", errors="replace") as f:
                text = f.read()
        except OSError:
            text = ""
        code = self.proc.returncode
        if code != 0 or "client_stats" not in text:
            unreachable = [s.address for s in self.servers if not _reachable(s)]
            lines = [ln.strip() for ln in (said or "").splitlines() if ln.strip()]
            why = (f"fio server {', '.join(unreachable)} not reachable" if unreachable else
                   " | ".join(lines[-2:]) or "no output")
            named = ", ".join(s.address for s in self.servers)
            raise MeasurementError(f"fio's controller failed (exit {code}) with fio server "
                                   f"{named}: {why[:300]}")
        try:
            return parse(text, through)
        except MeasurementError:
            unreachable = [s.address for s in self.servers if not _reachable(s)]
            if unreachable:
                raise MeasurementError(f"fio server {', '.join(unreachable)} not reachable: "
                                       "it ran no job") from None
            raise


def run(servers: Sequence[Server], job_files: Sequence[str], output: str,
        timeout: float) -> tuple[list[ClientResult], ClientResult]:
    """The controller, run once (see Controller)."""
    return Controller(servers, job_files, output).run(timeout)


def _alive(proc: Proc) -> bool:
    return proc.handle() is not None  # not gone, not a zombie


def _reachable(server: Server) -> bool:
    if server.sock:
        return _listening(server.sock)
    with socket.socket() as s:
        s.settimeout(1.0)
        return s.connect_ex((server.host, server.port)) == 0
