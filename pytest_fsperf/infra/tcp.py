"""This machine's TCP sockets and their owners: who listens on a port (/proc/net/tcp, tcp6),
and whose socket is the other end of a loopback connection, asked of the kernel by the exact
4-tuple (sock_diag: SO_PEERCRED does not exist for TCP). An owner check for servers that
hold no secret a local user lacks; one netlink round trip a connection, bounded in time."""

from __future__ import annotations

import socket
import struct
from collections.abc import Iterator

SOCK_DIAG_BY_FAMILY = 20
NETLINK_SOCK_DIAG = 4
ESTABLISHED = 1
_HEADER = struct.Struct("=IHHII")  # nlmsghdr
_REQUEST = struct.Struct("=BBBBI")  # inet_diag_req_v2 before its sockid
_MESSAGE = struct.Struct("=BBBB48sIIIII")  # inet_diag_msg


def _tcp_sockets(proc: str = "/proc") -> Iterator[tuple[int, str, int]]:
    """(local port, state, owner uid) of this machine's TCP sockets."""
    for name in ("tcp", "tcp6"):
        try:
            with open(f"{proc}/net/{name}", encoding="ascii") as f:
                lines = f.read().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            if len(fields) > 7:
                yield int(fields[1].rsplit(":", 1)[1], 16), fields[3], int(fields[7])


def listener_uids(port: int, proc: str = "/proc") -> set[int]:
    """The users whose sockets listen on TCP `port` on this machine (/proc/net/tcp, tcp6)."""
    return {uid for local, state, uid in _tcp_sockets(proc) if state == "0A" and local == port}


def _sockid(family: int, local: tuple[str, int], remote: tuple[str, int]) -> bytes:
    def packed(host: str) -> bytes:
        return socket.inet_pton(family, host.split("%", 1)[0]).ljust(16, b"\0")
    return (struct.pack("!HH", local[1], remote[1]) + packed(local[0]) + packed(remote[0])
            + struct.pack("=III", 0, 0xFFFFFFFF, 0xFFFFFFFF))


def owner(local: tuple[str, int], remote: tuple[str, int], timeout: float = 0.2) -> int | None:
    """The uid owning the established TCP socket whose own address is `local` and whose peer
    is `remote` (both host, port), or None where the kernel knows no such socket."""
    family = socket.AF_INET6 if ":" in local[0] else socket.AF_INET
    try:
        sockid = _sockid(family, local[:2], remote[:2])
    except OSError:
        return None
    request = _REQUEST.pack(family, socket.IPPROTO_TCP, 0, 0, 1 << ESTABLISHED) + sockid
    try:
        with socket.socket(socket.AF_NETLINK, socket.SOCK_DGRAM, NETLINK_SOCK_DIAG) as nl:
            nl.settimeout(timeout)
            nl.send(_HEADER.pack(_HEADER.size + len(request), SOCK_DIAG_BY_FAMILY, 1, 1, 0)
                    + request)
            data = nl.recv(4096)
    except TimeoutError:
        return None
    except OSError:  # no sock_diag here: the table, by the whole 4-tuple
        return _from_table(family, sockid)
    if len(data) < _HEADER.size + _MESSAGE.size or _HEADER.unpack_from(data)[1] != SOCK_DIAG_BY_FAMILY:
        return None  # NLMSG_ERROR: no such socket
    fam, state, _t, _r, found, _e, _rq, _wq, uid, _inode = _MESSAGE.unpack_from(data, _HEADER.size)
    if fam != family or state != ESTABLISHED or found[:36] != sockid[:36]:
        return None
    return int(uid)


def _from_table(family: int, sockid: bytes) -> int | None:
    """Where the kernel has no sock_diag: the established row of /proc/net/tcp(6) whose local
    and remote addresses and ports are all the socket's (never its ports alone)."""
    size = 4 if family == socket.AF_INET else 16

    def hexed(raw: bytes, port: bytes) -> str:  # the table's words: native-endian u32s
        words = "".join(f"{w:08X}" for w in struct.unpack(f"={size // 4}I", raw[:size]))
        return f"{words}:{int.from_bytes(port, 'big'):04X}"
    local, remote = hexed(sockid[4:20], sockid[0:2]), hexed(sockid[20:36], sockid[2:4])
    name = "tcp" if family == socket.AF_INET else "tcp6"
    try:
        with open(f"/proc/net/{name}", encoding="ascii") as f:
            for line in f:
                fields = line.split()
                if len(fields) > 7 and fields[3] == "01" and fields[1] == local and fields[2] == remote:
                    return int(fields[7])
    except OSError:
        return None
    return None
