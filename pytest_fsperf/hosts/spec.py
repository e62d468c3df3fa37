"""Which hosts, and how to reach them: `[USER@]HOST[:PORT]:/MOUNT,...` and the SSH settings
every connection uses. Everything here ends up in an ssh command line, so each part is
checked against a narrow alphabet: nothing that ssh could read as an option or a shell as
more than one word."""

from __future__ import annotations

import re
from dataclasses import dataclass

_USER = re.compile(r"[A-Za-z_][A-Za-z0-9_.-]{0,31}")
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9.-]{0,252}")  # a DNS name or an IPv4 address
_PYTHON = re.compile(r"[A-Za-z0-9_./+-]{1,255}")


@dataclass(frozen=True)
class Host:
    name: str  # as ssh is given it: a DNS name, an address, or a Host alias of the ssh config
    mount: str  # the mount of the filesystem under test there (absolute)
    user: str | None = None  # None: the ssh config's, or the local user's
    port: int | None = None

    @property
    def destination(self) -> str:
        return f"{self.user}@{self.name}" if self.user else self.name

    @property
    def shown(self) -> str:
        port = f":{self.port}" if self.port else ""
        return f"{self.destination}{port}"


@dataclass(frozen=True)
class SshSettings:
    config: str | None = None  # ssh -F FILE (keys, known hosts, jump hosts); None: ~/.ssh/config
    python: str = "python3"  # the Python on the hosts that has pytest-fsperf installed
    connect_timeout: int = 10

    def args(self, host: Host) -> list[str]:
        """ssh's options for `host`, before the destination. Given on the command line, they
        win over any config file: no prompt (a key or nothing), and a host whose key is not
        already known, or differs, is refused."""
        found = ["-F", self.config] if self.config else []
        found += ["-o", "BatchMode=yes", "-o", "StrictHostKeyChecking=yes",
                  "-o", f"ConnectTimeout={self.connect_timeout}", "-o", "ServerAliveInterval=5",
                  "-o", "ServerAliveCountMax=3"]
        return found + (["-p", str(host.port)] if host.port else [])


def parse_host(entry: str) -> Host:
    """One `[USER@]HOST[:PORT]:/MOUNT`; ValueError says what is wrong."""
    head, sep, mount = entry.partition(":/")
    if not sep:
        raise ValueError(f"{entry!r} is not [USER@]HOST[:PORT]:/MOUNT (no absolute mount path)")
    mount = "/" + mount
    user, at, rest = head.rpartition("@")
    name, colon, port_text = rest.partition(":")
    if at and not _USER.fullmatch(user):
        raise ValueError(f"{entry!r}: user {user!r} is not a user name")
    if not _NAME.fullmatch(name):
        raise ValueError(f"{entry!r}: host {name!r} is not a host name or IPv4 address")
    port = None
    if colon:
        if not port_text.isdigit() or not 0 < int(port_text) < 65536:
            raise ValueError(f"{entry!r}: port {port_text!r} is not a number from 1 to 65535")
        port = int(port_text)
    if any(c in mount for c in "\0\n") or "/../" in mount + "/":
        raise ValueError(f"{entry!r}: mount path {mount!r} holds '..' or a control character")
    return Host(name, mount.rstrip("/") or "/", user or None, port)


MAX_HOSTS = 1024


def parse_hosts(text: str) -> tuple[Host, ...]:
    """`[USER@]HOST[:PORT]:/MOUNT,...`; ValueError says what is wrong."""
    entries = [e.strip() for e in text.split(",") if e.strip()]
    if len(entries) > MAX_HOSTS:  # each is a session of ssh: 100,000 were taken without a word
        raise ValueError(f"{len(entries):,} hosts: at most {MAX_HOSTS:,}")
    found = tuple(parse_host(e) for e in entries)
    if not found:
        raise ValueError("no hosts given")
    seen = [(h.shown, h.mount) for h in found]
    if len(set(seen)) < len(seen):
        raise ValueError("a host and mount are named twice")
    return found


def check_python(text: str) -> str:
    """The hosts' Python: a command name or path, one word (it runs in the remote shell)."""
    if not _PYTHON.fullmatch(text) or "//" in text:  # execnet's spec splits on //
        raise ValueError(f"{text!r} is not a command name or path (letters, digits, _ . / + -)")
    if "/" in text and (not text.startswith("/") or ".." in text.split("/")):
        raise ValueError(f"{text[:40]!r}: a command name (python3) or an absolute path without "
                         "'..' (a relative path depends on the remote shell's directory)")
    return text


_LABEL = r"[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?"  # a DNS-1123 label: namespaces, containers
_POD = re.compile(rf"(?:({_LABEL})/)?([a-z0-9](?:[a-z0-9.-]{{0,251}}[a-z0-9])?)(?:/({_LABEL}))?")


@dataclass(frozen=True)
class Pod:
    """A client pod on Kubernetes: `[NAMESPACE/]POD[/CONTAINER]:/MOUNT`, the mount as the
    pod sees it. Every part is a DNS-1123 name: nothing kubectl could read as an option."""

    name: str
    mount: str
    namespace: str = "default"
    container: str | None = None  # None: the pod's default container

    @property
    def shown(self) -> str:
        return f"{self.namespace}/{self.name}" + (f"/{self.container}" if self.container else "")


def parse_pods(text: str) -> tuple[Pod, ...]:
    """`[NAMESPACE/]POD[/CONTAINER]:/MOUNT,...`; ValueError says what is wrong."""
    found = []
    for entry in (e.strip() for e in text.split(",") if e.strip()):
        head, sep, mount = entry.partition(":/")
        match = _POD.fullmatch(head)
        if not sep:
            raise ValueError(f"{entry!r} is not [NAMESPACE/]POD[/CONTAINER]:/MOUNT (no absolute "
                             "mount path)")
        if match is None:
            raise ValueError(f"{entry!r}: {head!r} is not [NAMESPACE/]POD[/CONTAINER] of "
                             "Kubernetes names (lower-case letters, digits, '-', '.')")
        mount = "/" + mount
        if any(c in mount for c in "\0\n") or "/../" in mount + "/":
            raise ValueError(f"{entry!r}: mount path {mount!r} holds '..' or a control character")
        namespace, name, container = match.groups()
        found.append(Pod(name, mount.rstrip("/") or "/", namespace or "default", container))
    if not found:
        raise ValueError("no pods given")
    if len(found) > MAX_HOSTS:
        raise ValueError(f"{len(found):,} pods: at most {MAX_HOSTS:,}")
    if len({(p.shown, p.mount) for p in found}) < len(found):
        raise ValueError("a pod and mount are named twice")
    return tuple(found)
