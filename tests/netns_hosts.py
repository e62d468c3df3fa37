"""Hosts for the --fsperf-hosts tests without other machines: each host a network namespace
made here (a veth pair on a private test subnet), with an sshd of its own started here that
takes only a key made for the test; each host's FUSE mount an s3fs of one bucket on a MinIO
the test started (or a JuiceFS volume on it: `juicefs_volume`). The namespaces share this machine's processes and mounts, so the tests can
read each host's daemon from /proc to check the figures the agent sent."""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import socket
import subprocess
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import psutil

from pytest_fsperf.infra import leftovers
from pytest_fsperf.infra.procs import Proc
from pytest_fsperf.store.minio import S3Server

SSHD = "/usr/sbin/sshd"


@dataclass
class SshHost:
    index: int
    netns: str
    address: str
    alias: str  # its Host entry in the ssh config
    mount: Path
    sshd: subprocess.Popen[bytes] | None = None

    def kill(self) -> None:
        """The host drops out: its sshd and every session under it killed."""
        if self.sshd is None:
            return
        with contextlib.suppress(psutil.NoSuchProcess):
            procs = [psutil.Process(self.sshd.pid), *psutil.Process(self.sshd.pid).children(True)]
            for p in procs:
                with contextlib.suppress(psutil.NoSuchProcess):
                    p.kill()
        self.sshd.wait()


@dataclass
class Hosts:
    root: Path
    config: Path
    known_hosts: Path
    hosts: list[SshHost] = field(default_factory=list)

    def option(self, n: int | None = None) -> str:
        return ",".join(f"root@{h.alias}:{h.mount}" for h in self.hosts[:n])

    def args(self, python: str) -> list[str]:
        return [f"--fsperf-hosts={self.option()}", f"--fsperf-ssh-config={self.config}",
                f"--fsperf-host-python={python}"]


def _run(*args: str) -> None:
    subprocess.run(args, check=True, capture_output=True, timeout=30)


def _keygen(path: Path) -> str:
    _run("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "fsperf-test", "-f", str(path))
    return path.with_suffix(".pub").read_text().strip()


def _listening(address: str, port: int = 22) -> bool:
    with socket.socket() as s:
        s.settimeout(0.2)
        return s.connect_ex((address, port)) == 0


def s3fs_mount(server: S3Server, point: Path, passwd: Path) -> None:
    point.mkdir()
    _run("s3fs", server.bucket, str(point), "-o", f"url={server.endpoint}",
         "-o", f"passwd_file={passwd}", "-o", "use_path_request_style")
    deadline = time.monotonic() + 15
    while not os.path.ismount(point):
        assert time.monotonic() < deadline, f"s3fs did not mount {point}"
        time.sleep(0.05)


def unmount(point: Path) -> None:
    if os.path.ismount(point):
        subprocess.run(["umount", "-l", str(point)], capture_output=True, timeout=30)


@dataclass(frozen=True)
class Volume:
    """How the test mounts the bucket at a point, and unmounts it."""

    mount: Callable[[Path], None]
    unmount: Callable[[Path], None]


def juicefs_volume(server: S3Server, root: Path) -> Volume:
    """A JuiceFS volume formatted on the server's bucket (sqlite metadata under root, which
    every mount of it shares); each mount a `juicefs mount -d` of its own."""
    binary = shutil.which("juicefs")
    assert binary is not None
    meta = f"sqlite3://{root}/jfs.db"
    env = dict(os.environ, ACCESS_KEY=server.access_key, SECRET_KEY=server.secret_key)
    _run_env(env, binary, "format", "--storage", "minio", "--bucket",
             f"{server.endpoint}/{server.bucket}", meta, "vol")

    def mount(point: Path) -> None:
        point.mkdir()
        tag = f"{point.parent.name}-{point.name}"
        _run_env(dict(os.environ), binary, "mount", "-d", meta, str(point), "--cache-dir",
                 str(root / f"cache-{tag}"), "--log", str(root / f"jfs-{tag}.log"))

    def unmount(point: Path) -> None:
        if os.path.ismount(point):
            subprocess.run([binary, "umount", "--force", str(point)], capture_output=True,
                           timeout=60)

    return Volume(mount, unmount)


def _run_env(env: dict[str, str], *args: str) -> None:
    subprocess.run(args, env=env, check=True, capture_output=True, timeout=60)


@contextlib.contextmanager
def ssh_hosts(root: Path, n: int, server: S3Server, volume: Volume | None = None
              ) -> Iterator[Hosts]:
    """n hosts, each a namespace with its sshd and a mount of the server's bucket (s3fs,
    unless `volume` says how)."""
    tag = secrets.token_hex(2)
    root.mkdir(mode=0o700)
    client_key = root / "client_key"
    client_pub = _keygen(client_key)
    authorized = root / "authorized_keys"
    authorized.write_text(client_pub + "\n")
    authorized.chmod(0o600)
    passwd = root / "passwd"
    passwd.write_text(f"{server.access_key}:{server.secret_key}\n")
    passwd.chmod(0o600)
    os.makedirs("/run/sshd", mode=0o755, exist_ok=True)  # sshd's privilege separation dir
    found = Hosts(root, root / "ssh_config", root / "known_hosts")
    config, known = [], []
    base = 64 + secrets.randbelow(128)
    entries: list[leftovers.Entry] = []
    try:
        for i in range(n):
            here = root / f"host{i}"
            here.mkdir()
            ns, outside, inside = f"fsperf-{tag}-{i}", f"vf{tag}{i}", f"vp{tag}{i}"
            address = f"10.213.{base}.{4 * i + 2}"
            host = SshHost(i, ns, address, f"fsperf-host{i}", here / "mnt")
            found.hosts.append(host)
            # in the session's record before it exists: a SIGKILLed run's watchdog removes
            # the namespace (its veth pair with it), the sshd and the mount
            entries.append(leftovers.note_netns(ns))
            _run("ip", "netns", "add", ns)
            _run("ip", "link", "add", outside, "type", "veth", "peer", "name", inside)
            _run("ip", "link", "set", inside, "netns", ns)
            _run("ip", "addr", "add", f"10.213.{base}.{4 * i + 1}/30", "dev", outside)
            _run("ip", "link", "set", outside, "up")
            for cmd in (("ip", "addr", "add", f"{address}/30", "dev", inside),
                        ("ip", "link", "set", inside, "up"), ("ip", "link", "set", "lo", "up")):
                _run("ip", "netns", "exec", ns, *cmd)
            host_pub = _keygen(here / "host_key")
            known.append(f"{address} {host_pub}")
            (here / "sshd_config").write_text(
                f"ListenAddress {address}\nPort 22\nHostKey {here / 'host_key'}\n"
                f"PidFile {here / 'sshd.pid'}\nAuthorizedKeysFile {authorized}\n"
                "PermitRootLogin prohibit-password\nPasswordAuthentication no\n"
                "KbdInteractiveAuthentication no\nUsePAM no\nStrictModes no\n"
                "AllowStreamLocalForwarding local\nAllowTcpForwarding local\nX11Forwarding no\n")
            # nsenter, not `ip netns exec`: that one also makes a mount namespace of its
            # own, where the mounts made after it (the hosts' s3fs) would not show
            host.sshd = subprocess.Popen(["nsenter", f"--net=/run/netns/{ns}", SSHD, "-D", "-e",
                                          "-f", str(here / "sshd_config")],
                                         stdout=subprocess.DEVNULL,
                                         stderr=open(here / "sshd.log", "wb"))  # noqa: SIM115
            entries.append(leftovers.note_process(Proc.of(host.sshd.pid)))
            entries.append(leftovers.note_mount(str(host.mount)))
            config.append(f"Host {host.alias}\n  HostName {address}\n  User root\n"
                          f"  IdentityFile {client_key}\n  IdentitiesOnly yes\n"
                          f"  UserKnownHostsFile {found.known_hosts}\n  LogLevel ERROR\n")
            if volume is None:
                s3fs_mount(server, host.mount, passwd)
            else:
                volume.mount(host.mount)
        found.config.write_text("".join(config))
        found.known_hosts.write_text("\n".join(known) + "\n")
        deadline = time.monotonic() + 15
        for host in found.hosts:
            while not _listening(host.address):
                assert time.monotonic() < deadline, f"sshd of {host.netns} did not start"
                time.sleep(0.05)
        yield found
    finally:
        for host in found.hosts:
            host.kill()
            (volume.unmount if volume else unmount)(host.mount)
            subprocess.run(["ip", "netns", "del", host.netns], capture_output=True, timeout=30)
        for entry in entries:
            leftovers.done(entry)


def wrong_key(hosts: Hosts, index: int) -> None:
    """The known host key of one host replaced by another key: ssh must refuse it."""
    other = _keygen(hosts.root / f"impostor{index}")
    lines = hosts.known_hosts.read_text().splitlines()
    lines[index] = f"{hosts.hosts[index].address} {other}"
    hosts.known_hosts.write_text("\n".join(lines) + "\n")


def daemon_cpu_ticks(point: Path) -> int:
    """CPU ticks (utime + stime) of the s3fs daemon serving `point`, read from /proc."""
    from pytest_fsperf.infra.mountinfo import read_mounts
    from pytest_fsperf.measure.meters import cpu_ticks
    from pytest_fsperf.mounts.daemon import find_daemon

    (mount,) = [m for m in read_mounts() if m.mount_point == str(point)]
    lookup = find_daemon(mount)
    assert lookup.daemon is not None, lookup.note
    ticks = cpu_ticks(lookup.daemon.pid)
    assert ticks is not None
    return ticks
