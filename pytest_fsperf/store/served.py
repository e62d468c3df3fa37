"""Local stand-ins for cloud stores the peers' daemons need (Azurite for blobfuse2,
fake-gcs-server for gcsfuse): started on 127.0.0.1 in a private directory, noted in the
session's record, stopped by PID."""

from __future__ import annotations

import base64
import email.utils
import functools
import hashlib
import hmac
import json
import os
import secrets
import shutil
import subprocess
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from pytest_fsperf.errors import MeasurementError
from pytest_fsperf.infra import leftovers, trust
from pytest_fsperf.infra.procs import Proc, serving, stop_child
from pytest_fsperf.mounts.spec import STARTS, free_port
from pytest_fsperf.store.minio import CACHE_BIN

AZURITE_INSTALL = "npm install -g azurite@3.35.0 (Node 20; 3.36 and later need Node 21)"
FAKE_GCS_INSTALL = (f"GOBIN={CACHE_BIN} go install github.com/fsouza/fake-gcs-server@v1.56.1")
GCSFUSE_INSTALL = (f"GOTOOLCHAIN=go1.27.3 GOBIN={CACHE_BIN} go install "
                   "github.com/googlecloudplatform/gcsfuse/v3@v3.13.0")

NO_METRICS = "{} counts no requests the plugin can read (MinIO's metrics count them for S3 and OSS)"


def find(name: str) -> str | None:
    """`name` on PATH, then in the cache the install commands fill."""
    for candidate in (shutil.which(name), os.path.join(CACHE_BIN, name)):
        if candidate and os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return candidate
    return None


@dataclass
class Served:
    """A store process of the session's, and the values its backends' templates use."""

    name: str
    proc: subprocess.Popen[bytes]
    data_dir: str
    values: Mapping[str, str] = field(repr=False)
    entries: tuple[leftovers.Entry, ...] = ()

    @property
    def pid(self) -> int:
        return self.proc.pid

    def config(self) -> dict[str, str]:
        return dict(self.values)

    def stop(self) -> None:
        stop_child(self.proc)
        shutil.rmtree(self.data_dir, ignore_errors=True)
        for entry in self.entries:
            leftovers.done(entry)


def _start(name: str, argv: Callable[[int, str], list[str]], env: Mapping[str, str],
           ready: str, timeout: float = 60.0) -> tuple[subprocess.Popen[bytes], str, int,
                                                         tuple[leftovers.Entry, ...]]:
    data_dir, dir_entry = leftovers.private_dir(f"pytest-fsperf-{name}-")
    log_path = os.path.join(data_dir, "log")
    command = argv(0, data_dir)  # the program, resolved once and checked: what runs as root
    prefix, why = trust.program(command[0])
    if why:
        shutil.rmtree(data_dir, ignore_errors=True)
        leftovers.done(dir_entry)
        raise MeasurementError(f"{name} is not run: {why}; it would run as you")
    impostor = ""
    for _attempt in range(STARTS):  # a free port may be taken between probe and bind
        port = free_port()
        if why := trust.again(prefix):  # each exec, not only the first
            raise MeasurementError(f"{name} is not run: {why}; it would run as you")
        with open(log_path, "wb") as log:
            proc = subprocess.Popen([*prefix, *argv(port, data_dir)[1:]],
                                    stdin=subprocess.DEVNULL, stdout=log, stderr=log,
                                    env={**_base_env(), **env}, cwd=data_dir,
                                    start_new_session=True)
        entry = leftovers.note_process(Proc.of(proc.pid))
        # ours, by socket inode, before anything is sent to it
        taken = serving(proc, port, functools.partial(_answers, ready.format(port=port)),
                        time.monotonic() + timeout, 0.2)
        if taken == "":
            return proc, data_dir, port, (entry, dir_entry)
        impostor = taken or impostor
        if proc.poll() is None:
            proc.kill()
        proc.wait()
        leftovers.done(entry)
    with open(log_path, encoding="utf-8", errors="replace") as f:
        last = " | ".join(f.read().strip().split("\n")[-3:])
    shutil.rmtree(data_dir, ignore_errors=True)
    leftovers.done(dir_entry)
    raise MeasurementError(f"{name} did not start: {impostor or last or 'no output'}")


def _base_env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k in ("PATH", "LANG", "LC_ALL", "HOME")}


def _answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=1):
            return True
    except urllib.error.HTTPError:
        return True  # it answers, if not with 200
    except OSError:
        return False


def start_azurite(binary: str) -> Served:
    """Azurite's blob service with an account of this session (a random key: not the
    published development key, which every local user knows) and one container."""
    account = "fsperf" + secrets.token_hex(4)
    key = base64.b64encode(secrets.token_bytes(32)).decode()
    proc, data_dir, port, entries = _start(
        "azurite", lambda port, d: [binary, "--blobHost", "127.0.0.1", "--blobPort", str(port),
                                    "--location", d, "--silent", "--skipApiVersionCheck",
                                    "--disableTelemetry"],
        {"AZURITE_ACCOUNTS": f"{account}:{key}"}, "http://127.0.0.1:{port}/")
    container = "fsperf-" + secrets.token_hex(4)
    endpoint = f"http://127.0.0.1:{port}/{account}"
    served = Served("azurite", proc, data_dir, {"endpoint": endpoint, "account": account,
                                                  "account_key": key, "bucket": container,
                                                  "use_http": "true", "metrics_endpoint": "",
                                                  "no_metrics": NO_METRICS.format("Azurite")},
                    entries)
    try:
        status = str(_shared_key_put(f"{endpoint}/{container}?restype=container", account, key))
    except OSError as exc:
        status = str(exc)
    if status != "201":
        served.stop()
        raise MeasurementError(f"Azurite: creating container {container}: {status}")
    return served


def _shared_key_put(url: str, account: str, key: str) -> int:
    """One PUT with an empty body, signed with Shared Key (the Blob service's scheme)."""
    parsed = urllib.parse.urlsplit(url)
    headers = {"x-ms-date": email.utils.formatdate(usegmt=True), "x-ms-version": "2021-08-06"}
    canon_headers = "".join(f"{k}:{v}\n" for k, v in sorted(headers.items()))
    query = sorted(urllib.parse.parse_qsl(parsed.query))
    resource = f"/{account}{parsed.path}" + "".join(f"\n{k}:{v}" for k, v in query)
    kind = "application/octet-stream"  # urllib would add one of its own, unsigned
    to_sign = "PUT\n" + "\n" * 4 + kind + "\n" * 7 + canon_headers + resource
    sig = base64.b64encode(hmac.new(base64.b64decode(key), to_sign.encode(),
                                    hashlib.sha256).digest()).decode()
    req = urllib.request.Request(url, data=b"", method="PUT",
                                 headers={**headers, "Content-Type": kind,
                                          "Authorization": f"SharedKey {account}:{sig}"})
    try:
        with urllib.request.urlopen(req, timeout=10) as resp:
            return int(resp.status)
    except urllib.error.HTTPError as exc:
        return int(exc.code)


def start_fake_gcs(binary: str) -> Served:
    """fake-gcs-server in memory (its filesystem backend read a file back as a directory
    after a remount here) with one bucket. It has no authentication: on a shared machine
    another local user could read and change the test's objects while the session runs."""
    proc, data_dir, port, entries = _start(
        "fake-gcs", lambda port, d: [binary, "-scheme", "http", "-host", "127.0.0.1", "-port",
                                     str(port), "-backend", "memory", "-log-level", "error",
                                     "-public-host", "127.0.0.1"],
        {}, "http://127.0.0.1:{port}/storage/v1/b")
    bucket = "fsperf-" + secrets.token_hex(4)
    endpoint = f"http://127.0.0.1:{port}"
    # any closed loopback port: gcsfuse looks for GCE metadata otherwise (even anonymous)
    served = Served("fake-gcs", proc, data_dir, {"endpoint": endpoint, "bucket": bucket,
                                                  "anonymous": "true",
                                                  "metadata_host": "127.0.0.1:9",
                                                  "metrics_endpoint": "",
                                                  "no_metrics": NO_METRICS.format("fake-gcs-server")},
                    entries)
    req = urllib.request.Request(f"{endpoint}/storage/v1/b?project=fsperf", method="POST",
                                 data=json.dumps({"name": bucket}).encode(),
                                 headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=10) as resp:
            status = int(resp.status)
    except urllib.error.HTTPError as exc:
        status = int(exc.code)
    except OSError as exc:
        served.stop()
        raise MeasurementError(f"fake-gcs-server: creating bucket {bucket}: {exc}") from None
    if status != 200:
        served.stop()
        raise MeasurementError(f"fake-gcs-server: creating bucket {bucket}: HTTP {status}")
    return served
