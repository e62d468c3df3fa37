"""This machine's side of the hosts: one execnet gateway over SSH per host, running the
agent (agent.py), and one SSH forward per host from a unix socket in this session's 0700
directory to the fio server the agent started on a unix socket in its own 0700 directory.
fio's controller here connects to the local sockets; no one listens on a TCP port, and no
other local user can reach a socket (connect() needs search permission on its directory).

Clocks: each link compares the host's clock with this one over the channel (the reply of
the fastest of PINGS round trips, taken at its midpoint), so every host's meter window is
placed on this machine's clock; how far the windows' starts lay apart is reported."""

from __future__ import annotations

import contextlib
import os
import re
import stat
import subprocess
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from pytest_fsperf.engine.fio_clients import SOCKET_MAX, Server
from pytest_fsperf.errors import MeasurementError, UsageError
from pytest_fsperf.hosts import replies
from pytest_fsperf.hosts.agent import PROTOCOL
from pytest_fsperf.hosts.spec import Host, Pod, SshSettings
from pytest_fsperf.infra import leftovers, trust
from pytest_fsperf.infra.procs import Proc, kill_tree
from pytest_fsperf.result.daemon import DaemonStats, ProcessStats
from pytest_fsperf.version import __version__

PINGS = 5
REMOTE_SOCKET = re.compile(r"/[A-Za-z0-9._/-]{1,200}")
CALL_TIMEOUT = 60.0  # s for one request (a cache drop on a busy host can take a while)
FORWARD_TIMEOUT = 15.0
_AGENT = "from pytest_fsperf.hosts.agent import serve\nserve(channel)\n"


Place = Host | Pod


@dataclass
class Reached:
    """Where a run goes: the clients' links (each with its fio server) and the links that
    measure the daemons (on SSH hosts, the same links; on Kubernetes, a node's measuring pod)."""

    clients: list[Link]
    meters: list[Link]
    meter_of: list[int]  # clients[i]'s daemon is measured by meters[meter_of[i]]
    where: list[str]  # each meter's place, as the rows name it
    how: str  # over SSH, over kubectl exec


def named(place: Place) -> str:
    return f"host {place.shown}" if isinstance(place, Host) else f"pod {place.shown}"


class HostError(MeasurementError):
    """A host could not be reached, refused us, or dropped out: named in the message."""


@dataclass
class Link:
    host: Place
    index: int
    group: Any  # execnet.Group of this link's one gateway: terminate() reaps its ssh
    channel: Any
    offset: float = 0.0  # the host's clock minus ours, s
    rtt: float = 0.0  # the round trip that measured it, s
    hello: dict[str, Any] = field(default_factory=dict)
    server: Server | None = None
    forward: Proc | None = None
    popen: subprocess.Popen[bytes] | None = None  # the forward's, reaped when it is closed
    entry: leftovers.Entry = None  # the forward, in the session's record
    tunnel: Any = None  # a pod's: the fio server's tunnel over the channel (hosts/tunnel.py)

    def send(self, op: str, **args: Any) -> None:
        try:
            self.channel.send({"op": op, "args": args})
        except (OSError, EOFError, ValueError) as exc:  # execnet: a closed channel
            raise self.lost(exc) from None

    def receive(self, op: str, timeout: float = CALL_TIMEOUT) -> Any:
        try:
            reply = self.channel.receive(timeout)
        except Exception as exc:  # execnet raises its own errors, all named
            raise self.lost(exc) from None
        try:
            return replies.answer(op, reply)
        except replies.Failed as exc:
            raise HostError(f"{self.named}: {op} failed there: {exc}") from None
        except replies.BadReply as exc:
            raise HostError(f"{self.named}: its reply was refused: {exc}") from None

    def call(self, op: str, timeout: float = CALL_TIMEOUT, **args: Any) -> Any:
        self.send(op, **args)
        return self.receive(op, timeout)

    def lost(self, exc: BaseException) -> HostError:
        why = str(exc).strip().splitlines()[-1:] or [type(exc).__name__]
        return HostError(f"{self.named} dropped out: {why[0]}")

    @property
    def named(self) -> str:
        return named(self.host)

    def to_ours(self, t: float) -> float:
        """A time of the host's clock on ours."""
        return t - self.offset


def _spec(host: Host, ssh: SshSettings, log: str) -> str:
    """execnet's gateway spec: its ssh options are split on whitespace, parts joined by //.
    ssh writes its errors (a refused host key) to `log` (-E), not to our stderr."""
    args = ssh.args(host)
    config = ""
    if args[:1] == ["-F"]:
        config, args = args[1], args[2:]
    for what, path in (("ssh config", config), ("session's directory", log)):
        if any(c.isspace() for c in path) or "//" in path:
            raise UsageError(f"the {what} path {path!r} holds whitespace or '//'")
    spec = f"ssh={' '.join(['-E', log, *args, host.destination])}//python={ssh.python}"
    return spec + (f"//ssh_config={config}" if config else "")


def _ssh_error(log: str) -> str:
    try:
        with open(log, encoding="utf-8", errors="replace") as f:
            lines = [ln.strip() for ln in f if ln.strip() and not ln.startswith("Warning:")]
    except OSError:
        lines = []
    return lines[-1] if lines else "ssh said nothing"


def connect(host: Host, index: int, ssh: SshSettings, folder: str) -> Link:
    """The gateway and the agent on `host`, its hello checked, its clock compared."""
    log = os.path.join(folder, f"ssh-{index}.log")
    return start(host, index, _spec(host, ssh, log), lambda: _ssh_error(log),
                 ssh.python, "over ssh", {"mount": host.mount})


def start(place: Place, index: int, spec: str, said: Callable[[], str], python: str, how: str,
          hello: dict[str, Any]) -> Link:
    """The agent started by execnet's `spec`, its hello (asked with `hello`) checked, its
    clock compared; `said` is what the transport said when it could not start."""
    try:
        import execnet  # a dependency of the hosts feature only
    except ImportError:
        raise UsageError("--fsperf-hosts and --fsperf-k8s need execnet: pip install "
                         "'pytest-fsperf[hosts]'") from None

    group = execnet.Group()
    try:
        gateway = group.makegateway(spec)
    except Exception as exc:  # execnet's bootstrap errors carry no cause
        group.terminate(timeout=1.0)
        raise HostError(f"{named(place)}: could not start the agent {how}: "
                        f"{said()} ({type(exc).__name__})") from None
    link = Link(place, index, group, gateway.remote_exec(_AGENT))
    try:
        answer = link.call("hello", **hello)
    except HostError as exc:
        link_close(link)
        if "No module named 'pytest_fsperf'" in str(exc):
            raise HostError(f"{named(place)}: pytest-fsperf is not installed there for "
                            f"{python} (pip install pytest-fsperf=={__version__}, or point "
                            "--fsperf-host-python at the Python that has it)") from None
        raise
    if answer.get("version") != __version__ or answer.get("protocol") != PROTOCOL:
        link_close(link)
        raise HostError(f"{named(place)} has pytest-fsperf {answer.get('version')} (protocol "
                        f"{answer.get('protocol')}), this machine {__version__} (protocol "
                        f"{PROTOCOL}): install the same version on every host")
    if not answer.get("mounted"):
        link_close(link)
        raise HostError(f"{named(place)}: {answer.get('note')}")
    link.hello = answer
    best = None
    for _ in range(PINGS):
        t0 = time.time()
        theirs = link.call("clock")
        t1 = time.time()
        if best is None or t1 - t0 < best[0]:
            best = (t1 - t0, theirs - (t0 + t1) / 2)
    assert best is not None
    link.rtt, link.offset = best
    return link


def forward(link: Link, ssh: SshSettings, folder: str) -> Server:
    """The agent's fio server, reached through an SSH forward of a socket of ours."""
    assert isinstance(link.host, Host)
    remote = link.call("serve_fio")
    if not REMOTE_SOCKET.fullmatch(remote):  # it goes into ssh's -L LOCAL:REMOTE as it is
        raise HostError(f"host {link.host.shown}: its fio server socket {remote[:200]!r} is not "
                        "a plain absolute path")
    local = os.path.join(folder, f"host{link.index}-{os.urandom(3).hex()}.sock")
    if len(os.fsencode(local)) > SOCKET_MAX:
        raise HostError(f"socket path {local} is longer than {SOCKET_MAX} bytes: point TMPDIR "
                        "at a shorter directory")
    log = os.path.join(folder, f"forward-{link.index}.log")
    program, why = trust.which("ssh")
    if program is None:
        raise HostError(f"ssh is not run: {why}" if why else "ssh is not installed")
    with open(log, "ab") as err:
        popen = subprocess.Popen(
            [program, *ssh.args(link.host), "-N", "-o", "ExitOnForwardFailure=yes",
             "-o", "StreamLocalBindMask=0177", "-L", f"{local}:{remote}", link.host.destination],
            stdin=subprocess.DEVNULL, stdout=err, stderr=err, start_new_session=True)
    link.forward, link.popen = Proc.of(popen.pid), popen
    link.entry = entry = leftovers.note_process(link.forward)
    deadline = time.monotonic() + FORWARD_TIMEOUT
    while not _is_socket(local):
        if popen.poll() is not None or time.monotonic() > deadline:
            leftovers.done(entry)
            raise HostError(f"host {link.host.shown}: the ssh forward to its fio server did not "
                            f"start: {_ssh_error(log)}")
        time.sleep(0.05)
    link.server = Server("localhost", 0, None, sock=local, shown=f"host {link.host.shown}")
    return link.server


def _is_socket(path: str) -> bool:
    try:
        return stat.S_ISSOCK(os.lstat(path).st_mode)
    except OSError:
        return False


def link_close(link: Link) -> None:
    """Ask the agent to end (it removes what it made), then end our side."""
    with contextlib.suppress(Exception):
        link.channel.send(None)
        link.channel.waitclose(5.0)
    with contextlib.suppress(Exception):
        link.group.terminate(timeout=5.0)  # asks the gateway to exit, then reaps its ssh
    if link.tunnel is not None:
        link.tunnel.close()
    if link.forward is not None:
        kill_tree(link.forward, grace=1.0)
    if link.popen is not None:  # no zombie of ours left in this process
        with contextlib.suppress(subprocess.TimeoutExpired):
            link.popen.wait(timeout=5.0)
    if link.forward is None or link.forward.handle() is None:  # else the watchdog's to end
        leftovers.done(link.entry)
    if link.server is not None and link.server.sock:
        with contextlib.suppress(OSError):
            os.unlink(link.server.sock)


def _open(host: Host, index: int, ssh: SshSettings, folder: str) -> Link:
    made = connect(host, index, ssh, folder)
    try:
        forward(made, ssh, folder)
    except BaseException:
        link_close(made)
        raise
    return made


def _opened(futures: Sequence[Future[Link]]) -> list[Link]:
    """The links that were made, whatever became of the others."""
    return [f.result() for f in futures
            if f.done() and not f.cancelled() and f.exception() is None]


@contextlib.contextmanager
def links(hosts: Sequence[Host], ssh: SshSettings, folder: str) -> Iterator[list[Link]]:
    """A link to each host, its fio server forwarded, all made at once; all closed on the
    way out. One host that cannot be reached fails the whole (the first such, in order)."""
    if not leftovers.is_private(folder):
        raise HostError(f"the hosts' sockets need a private directory: {folder} is not a 0700 "
                        "directory of this user")
    futures: list[Future[Link]] = []
    try:
        with ThreadPoolExecutor(len(hosts), thread_name_prefix="fsperf-host") as pool:
            futures = [pool.submit(_open, h, i, ssh, folder) for i, h in enumerate(hosts)]
        failed = [f.exception() for f in futures if f.exception() is not None]
        if failed:
            raise failed[0]  # type: ignore[misc]
        yield [f.result() for f in futures]
    finally:
        for made in _opened(futures):
            link_close(made)


def dropped(found: Sequence[Link]) -> list[str]:
    """The hosts whose agent's channel closed or whose forward ended: gone from the run."""
    gone = []
    for lk in found:
        closed = bool(lk.channel.isclosed())
        ended = lk.forward is not None and lk.forward.handle() is None
        if closed or ended:
            gone.append(lk.named)
    return gone


def everywhere(found: Sequence[Link], op: str, **args: Any) -> list[Any]:
    """One request to every host at once, then every reply."""
    for link in found:
        link.send(op, **args)
    return [link.receive(op) for link in found]


def daemon_stats(wire: dict[str, Any] | None) -> DaemonStats | None:
    if wire is None:
        return None
    procs = tuple(ProcessStats(**p) for p in wire.get("processes", ()))
    return DaemonStats(**{**wire, "processes": procs})


def skew(starts: Sequence[float]) -> float:
    """How far apart the windows' starts lay, on this machine's clock, s."""
    return max(starts) - min(starts) if starts else 0.0
