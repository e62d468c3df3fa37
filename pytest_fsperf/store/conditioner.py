"""The store conditions' proxy (proxy/proxy.go, built by gobuild): started in front of a store
the plugin runs, its endpoint given to the daemons in the store's place; the binary is checked
(owner, mode, bytes) each start."""

from __future__ import annotations

import functools
import json
import os
import re
import secrets
import select
import shutil
import signal
import stat
import subprocess
import time
from collections.abc import Mapping
from dataclasses import dataclass, field

from pytest_fsperf.errors import MeasurementError
from pytest_fsperf.infra import leftovers
from pytest_fsperf.infra.procs import Proc, listening, stop_child
from pytest_fsperf.plan.conditions import StoreConditions
from pytest_fsperf.store import gobuild, tls

NAME = "fsperf-store-proxy"
COUNTED = ("requests", "connections", "throttled", "errors", "resets", "corrupted", "held",
           "retries")
SOURCES = ("proxy.go", "gateway.go", "owner.go", "connect.go", "go.mod")
# the hosts a daemon names itself, reached by CONNECT through the proxy over TLS (connect.go):
# gcsfuse before 0.36 speaks to www.googleapis.com only, and asks its token of a URL
CONNECT_HOSTS = {"gcs": ("www.googleapis.com", "storage.googleapis.com")}


@functools.lru_cache(maxsize=1)
def binary() -> tuple[str | None, str]:
    """The proxy's path (built if need be), or None and why not (once per process)."""
    return gobuild.built("proxy", NAME, SOURCES, "the store conditions' proxy")


RUNNING: dict[str, Conditioned] = {}  # by address: what a measured window reads


def running(address: object) -> Conditioned | None:
    return RUNNING.get(str(address)) if address else None


@dataclass
class Conditioned:
    """A running proxy: its port, the conditions it applies, and its counts."""

    conditions: StoreConditions
    proc: subprocess.Popen[bytes]
    port: int
    stats_path: str
    entries: tuple[leftovers.Entry, ...] = ()
    private: str = ""
    ca: str = ""  # over TLS: the certificate of the CA its daemons are told to trust
    connects: bool = False  # over TLS: CONNECT to the store's own host names taken (connect.go)
    _last: dict[str, object] = field(default_factory=dict)

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    def stats(self, timeout: float = 2.0) -> dict[str, object]:
        """Its counts now (requests, throttled, errors, resets, held, retries, first byte)."""
        before = os.stat(self.stats_path).st_mtime_ns if os.path.exists(self.stats_path) else 0
        if self.proc.poll() is not None:
            return dict(self._last)
        self.proc.send_signal(signal.SIGUSR1)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                if os.stat(self.stats_path).st_mtime_ns != before:
                    with open(self.stats_path, encoding="utf-8") as f:
                        self._last = json.load(f)
                    break
            except (OSError, ValueError):
                pass
            time.sleep(0.01)
        return dict(self._last)

    def window(self, before: Mapping[str, object], after: Mapping[str, object]) -> dict[str, float]:
        """What it did between two stats() (a measured window): its counts, and the time to
        first byte the daemons met there (p50, p99, s)."""
        a, b = before.get("counts") or {}, after.get("counts") or {}
        assert isinstance(a, dict) and isinstance(b, dict)
        out = {k: float(b.get(k, 0) - a.get(k, 0)) for k in COUNTED}
        firsts = after.get("first_byte_ns") or {}
        assert isinstance(firsts, dict)
        for p in ("p50", "p99"):
            if firsts.get(p) is not None and firsts.get("n"):
                out[f"first_byte_{p}"] = firsts[p] / 1e9
        return out

    def stop(self) -> None:
        RUNNING.pop(self.address, None)
        stop_child(self.proc)
        shutil.rmtree(self.private, ignore_errors=True)
        for entry in self.entries:
            leftovers.done(entry)


def start(upstream: str, conditions: StoreConditions, dialect: str,
          timeout: float = 10.0, gateway: Mapping[str, str] | None = None) -> Conditioned:
    """A proxy with `conditions` in front of `upstream` (host:port on this machine), for the
    daemons of root and of this session's user only; with `gateway`, the OSS gateway in
    front of MinIO too (proxy/gateway.go: its keys, bucket and domain)."""
    path, why = binary()
    if path is None:
        raise MeasurementError(f"store conditions ({conditions.describe()}) cannot be applied: {why}")
    _check(path)
    private, dir_entry = leftovers.private_dir("pytest-fsperf-proxy-")
    stats_path = os.path.join(private, "stats.json")
    settings = conditions.settings(upstream, dialect, stats_path, sorted({0, os.geteuid()}),
                                   secrets.randbits(31))
    if gateway is not None:
        settings["gateway"] = dict(gateway)
    ca = ""
    if conditions.tls:  # a CA of its own, in its private dir: key 0600, never on a command line
        hosts = CONNECT_HOSTS.get(dialect, ())
        certs = tls.make(private, hosts=hosts)
        settings.update(tls_cert=certs.cert, tls_key=certs.key,
                        connect=[f"{h}:443" for h in hosts], token=bool(hosts))
        ca = certs.ca
    proc = subprocess.Popen([path], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, start_new_session=True, cwd="/",
                            env={"PATH": "/usr/bin:/bin"})
    entry = leftovers.note_process(Proc.of(proc.pid))
    assert proc.stdin is not None and proc.stdout is not None
    port = 0
    try:
        proc.stdin.write(json.dumps(settings).encode() + b"\n")
        proc.stdin.close()
        ready, _, _ = select.select([proc.stdout], [], [], timeout)
        line = proc.stdout.readline() if ready else b""
        port = int(line.strip()) if re.fullmatch(rb"\d{1,5}\s*", line) else 0
    except OSError:
        port = 0
    found = Conditioned(conditions, proc, port, stats_path, (entry, dir_entry), private, ca,
                        bool(ca and CONNECT_HOSTS.get(dialect)))
    taken = listening(proc.pid, port) if port else "it printed no port"
    if taken is None:
        taken = f"nothing listens on its port {port}"
    if taken:  # not ours alone, or not up: nothing is sent through it
        found.stop()
        raise MeasurementError(f"the store conditions' proxy did not start: {taken}")
    RUNNING[found.address] = found
    return found


def _check(path: str) -> None:
    st = os.lstat(path)
    if not stat.S_ISREG(st.st_mode) or st.st_uid != os.geteuid() or st.st_mode & 0o077:
        raise MeasurementError(f"the store conditions' proxy {path} changed owner or mode: not run")


class ConditionedStore:
    """A store the plugin started, reached through the conditions' proxy: config() gives the
    daemons the proxy's address wherever the store's was (endpoint, proxy setting, S3 client
    endpoint); the request meter still reads the store's own metrics directly."""

    def __init__(self, inner: object, port: int, conditions: StoreConditions, dialect: str,
                 owns: bool = True) -> None:
        self.inner, self.store_port, self.owns = inner, port, owns
        self.proxy = start(f"127.0.0.1:{port}", conditions, dialect)

    def config(self) -> dict[str, str]:
        values = dict(self.inner.config())  # type: ignore[attr-defined]
        values.setdefault("metrics_endpoint", values.get("endpoint", ""))
        theirs, ours = f"127.0.0.1:{self.store_port}", self.proxy.address
        for key, value in values.items():
            if key != "metrics_endpoint" and theirs in value:
                if self.proxy.ca:  # an endpoint URL: https to the proxy
                    value = value.replace(f"http://{theirs}", f"https://{ours}")
                values[key] = value.replace(theirs, ours)
        if self.proxy.ca:
            values["ca_file"] = self.proxy.ca  # each backend tells its daemon to trust it
            if self.proxy.connects:  # for a daemon that names the store's host itself
                values["connect_proxy"] = f"http://{ours}"
                values["auth_url"] = f"https://{ours}/fsperf-token"
            if "use_http" in values:  # blobfuse2's: the scheme follows it, not the URL
                values["use_http"] = "false"
        values["store_conditions"] = self.proxy.conditions.describe()
        values["conditions_proxy"] = self.proxy.address  # its counts, read around each window
        return values

    def __getattr__(self, name: str) -> object:
        return getattr(self.inner, name)

    def stop(self) -> None:
        try:
            self.proxy.stop()
        finally:
            if self.owns:
                self.inner.stop()  # type: ignore[attr-defined]
