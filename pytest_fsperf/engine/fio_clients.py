"""Many clients on fio's own client/server mode, not a runner of our own: one `fio --server`
per client on a loopback port (or servers the user started elsewhere), one controller that
sends each client its own job file (its own directory: its own mount) and collects one JSON
with every client's figures and the aggregate ("All clients"). The controller prints text
lines before the JSON; a server that is gone fails the run naming it."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass

from .. import leftovers
from ..errors import MeasurementError
from ..mounts.spec import free_port
from ..procs import Proc, kill_tree
from ..result import IoStats
from .fio import _direction, fio_binary

AGGREGATE = "All clients"


@dataclass(frozen=True)
class Server:
    host: str
    port: int
    proc: Proc | None = None  # None: a server the user started
    # a server the user started: its mount of the bucket, where that is not the path of
    # the plugin's own mount (None: the same path)
    directory: str | None = None

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"


@dataclass(frozen=True)
class ClientResult:
    server: str  # host:port
    read: IoStats | None
    write: IoStats | None
    cpu_seconds: float = 0.0  # fio's own CPU on that client: (usr + sys)% of its job runtime


def _listening(port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(0.2)
        return s.connect_ex(("127.0.0.1", port)) == 0


@contextmanager
def local_servers(n: int, log_dir: str, timeout: float = 10.0) -> Iterator[list[Server]]:
    """n fio servers on 127.0.0.1, each in its own session, noted in the session's record
    (a crash leaves nothing the next session does not remove); stopped on the way out."""
    servers: list[Server] = []
    entries: list[leftovers.Entry] = []
    try:
        for i in range(n):
            port = free_port()
            with open(os.path.join(log_dir, f"fio-server-{i}.log"), "ab") as log:
                popen = subprocess.Popen([fio_binary(), f"--server=ip:127.0.0.1,{port}"],
                                         stdin=subprocess.DEVNULL, stdout=log, stderr=log,
                                         start_new_session=True)
            proc = Proc.of(popen.pid)
            entries.append(leftovers.note_process(proc))
            servers.append(Server("127.0.0.1", port, proc))
            deadline = time.monotonic() + timeout
            while not _listening(port):
                if popen.poll() is not None or time.monotonic() > deadline:
                    raise MeasurementError(f"fio server {i} on 127.0.0.1:{port} did not start "
                                           f"(see {log.name})")
                time.sleep(0.05)
        yield servers
    finally:
        for server, entry in zip(servers, entries, strict=False):
            if server.proc is not None:
                kill_tree(server.proc, grace=2.0)
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
        if not host or not port_text.isdigit() or not 0 < int(port_text) < 65536:
            raise ValueError(f"{entry!r} is not HOST:PORT[:DIR] (PORT a number from 1 to 65535)")
        if directory and not directory.startswith("/"):
            raise ValueError(f"{entry!r}: DIR must be an absolute path")
        found.append(Server(host, int(port_text), None, directory or None))
    if not found:
        raise ValueError("no servers given")
    if len({s.address for s in found}) < len(found):
        raise ValueError("a server is named twice")
    return tuple(found)


def job_file(path: str, directory: str, options: dict[str, str]) -> str:
    lines = ["[fsperf]", f"directory={directory.replace(':', chr(92) + ':')}"]
    lines += [f"{k}={v}" for k, v in options.items() if k != "name"]
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
    for block in stats:
        if block.get("jobname") == AGGREGATE:
            aggregate = block
        else:
            by_port[f"{block.get('hostname')}:{block.get('port')}"] = block
    missing = [s.address for s in servers if s.address not in by_port]
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

    clients = [one(s.address, by_port[s.address]) for s in servers]
    return clients, one(AGGREGATE, aggregate or by_port[servers[0].address])


class Controller:
    """fio's controller: each server runs its job file. A server gone or unreachable fails
    the run, naming it; stop() (a daemon that died, a hang) ends it at once."""

    def __init__(self, servers: Sequence[Server], job_files: Sequence[str], output: str) -> None:
        self.servers, self.output = list(servers), output
        self.argv = [fio_binary(), "--output-format=json", f"--output={output}"]
        for server, path in zip(servers, job_files, strict=True):
            self.argv += [f"--client=ip:{server.host},{server.port}", path]
        self.proc: subprocess.Popen[str] | None = None

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()

    def run(self, timeout: float) -> tuple[list[ClientResult], ClientResult]:
        self.proc = subprocess.Popen(self.argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
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
            raise MeasurementError(f"fio's controller failed (exit {code}): {why}")
        try:
            return parse(text, self.servers)
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
    with socket.socket() as s:
        s.settimeout(1.0)
        return s.connect_ex((server.host, server.port)) == 0
