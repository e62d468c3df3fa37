"""This machine's TCP sockets and their owners, from /proc/net/tcp and tcp6: who listens on
a port, and whose socket is the other end of a loopback connection (an owner check for
servers that hold no secret a local user lacks)."""

from __future__ import annotations

from collections.abc import Iterator


def _tcp_sockets(proc: str = "/proc") -> Iterator[tuple[int, int, str, int]]:
    """(local port, remote port, state, owner uid) of this machine's TCP sockets."""
    for name in ("tcp", "tcp6"):
        try:
            with open(f"{proc}/net/{name}", encoding="ascii") as f:
                lines = f.read().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            if len(fields) > 7:
                yield (int(fields[1].rsplit(":", 1)[1], 16), int(fields[2].rsplit(":", 1)[1], 16),
                       fields[3], int(fields[7]))


def listener_uids(port: int, proc: str = "/proc") -> set[int]:
    """The users whose sockets listen on TCP `port` on this machine (/proc/net/tcp, tcp6)."""
    return {uid for local, _r, state, uid in _tcp_sockets(proc) if state == "0A" and local == port}


def peer_uids(ours: int, port: int, proc: str = "/proc") -> set[int]:
    """The owners of the server's end of our connection from local port `ours` to `port`
    on this machine (an accepted socket belongs to its listener's user)."""
    return {uid for local, remote, state, uid in _tcp_sockets(proc)
            if state == "01" and local == port and remote == ours}
