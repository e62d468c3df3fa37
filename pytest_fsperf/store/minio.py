"""Start MinIO on 127.0.0.1 with per-session credentials and a fresh bucket; stop it by PID."""

from __future__ import annotations

import functools
import os
import pwd
import secrets
import shutil
import subprocess
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field

from pytest_fsperf.errors import MeasurementError
from pytest_fsperf.infra import leftovers, trust
from pytest_fsperf.infra.procs import Proc, io_counters, serving, stop_child
from pytest_fsperf.mounts.spec import STARTS, free_port
from pytest_fsperf.store.sigv4 import signed_request

MINIO_VERSION = "v0.0.0-20260212201848-7aac2a2c5b7c"
# the effective user's own home, never $HOME (`sudo -E` keeps the caller's: their binaries)
CACHE_BIN = os.path.join(pwd.getpwuid(os.geteuid()).pw_dir, ".cache", "fsperf-bin")
INSTALL = f"GOBIN={CACHE_BIN} go install github.com/minio/minio@{MINIO_VERSION}"


def find_minio() -> str | None:
    """$FSPERF_MINIO, then `minio` on PATH, then the cache the install command fills."""
    for candidate in (os.environ.get("FSPERF_MINIO"), shutil.which("minio"),
                      os.path.join(CACHE_BIN, "minio")):
        if candidate and os.access(candidate, os.X_OK) and os.path.isfile(candidate):
            return candidate
    return None


@dataclass
class S3Server:
    endpoint: str
    bucket: str
    access_key: str
    secret_key: str = field(repr=False)  # never in a repr (pytest -vv prints fixtures)
    region: str
    proc: subprocess.Popen[bytes]
    data_dir: str
    entries: tuple[leftovers.Entry, ...] = ()  # in the session's record of what to remove

    @property
    def pid(self) -> int:
        return self.proc.pid

    def config(self) -> dict[str, str]:
        """The values backend templates use (s3fs, rclone, mountpoint-s3 ...)."""
        return {"endpoint": self.endpoint, "bucket": self.bucket, "access_key": self.access_key,
                "secret_key": self.secret_key, "region": self.region}

    def served_bytes(self) -> int:
        """Bytes MinIO has written, to clients and to its disk (/proc/PID/io wchar).
        Around a read-only workload, the growth is what the server sent back."""
        io = io_counters(self.pid)
        if io is None:
            raise MeasurementError(f"cannot read /proc/{self.pid}/io of MinIO")
        return io[1]

    def request(self, method: str, path: str) -> int:
        url = f"{self.endpoint}/{path.lstrip('/')}"
        req = signed_request(method, url, self.access_key, self.secret_key, self.region)
        try:
            with urllib.request.urlopen(req, timeout=10) as resp:
                return int(resp.status)
        except urllib.error.HTTPError as exc:
            return int(exc.code)

    def make_bucket(self, name: str, timeout: float = 15.0) -> None:
        """Create a bucket. Just after /minio/health/live answers, MinIO may still answer
        503 (not initialized) for a moment (1 start in 25 here): retry that."""
        deadline = time.monotonic() + timeout
        while (status := self.request("PUT", name)) == 503 and time.monotonic() < deadline:
            time.sleep(0.2)
        if status != 200:
            raise MeasurementError(f"MinIO: creating bucket {name} answered HTTP {status}")

    def stop(self) -> None:
        stop_child(self.proc)
        shutil.rmtree(self.data_dir, ignore_errors=True)
        for entry in self.entries:
            leftovers.done(entry)


def _live(endpoint: str) -> bool:
    try:
        with urllib.request.urlopen(f"{endpoint}/minio/health/live", timeout=1) as resp:
            return bool(resp.status == 200)
    except (OSError, urllib.error.URLError):
        return False


def start_minio(binary: str, timeout: float = 30.0) -> S3Server:
    argv, why = trust.program(binary)  # resolved once and checked: what runs as root
    if why:
        raise MeasurementError(f"MinIO is not run: {why}; it would run as you")
    data_dir, dir_entry = leftovers.private_dir("pytest-fsperf-minio-")
    access_key = "fsperf" + secrets.token_hex(6)
    secret_key = secrets.token_urlsafe(24)
    env = {k: v for k, v in os.environ.items() if not k.startswith("MINIO_")}
    # Metrics readable without a token: per-API request counters for the request meter
    # (a session's own server on 127.0.0.1; its objects still need the credentials).
    env.update(MINIO_ROOT_USER=access_key, MINIO_ROOT_PASSWORD=secret_key, MINIO_BROWSER="off",
               MINIO_PROMETHEUS_AUTH_TYPE="public")
    log_path = os.path.join(data_dir, "minio.log")
    last = ""
    for _attempt in range(STARTS):  # a free port may be taken between probe and bind
        port, console = free_port(), free_port()
        endpoint = f"http://127.0.0.1:{port}"
        if why := trust.again(argv):  # each exec, not only the first
            raise MeasurementError(f"MinIO is not run: {why}; it would run as you")
        with open(log_path, "wb") as log:
            proc = subprocess.Popen(
                [*argv, "server", "--quiet", "--address", f"127.0.0.1:{port}",
                 "--console-address", f"127.0.0.1:{console}", os.path.join(data_dir, "data")],
                stdin=subprocess.DEVNULL, stdout=log, stderr=log, env=env, start_new_session=True)
        entry = leftovers.note_process(Proc.of(proc.pid))
        # the listener ours (by socket inode) before anything, signed or not, is sent to it
        taken = serving(proc, port, functools.partial(_live, endpoint), time.monotonic() + timeout)
        server = S3Server(endpoint, "fsperf-" + secrets.token_hex(4), access_key, secret_key,
                          "us-east-1", proc, data_dir, (entry, dir_entry))
        if taken == "":
            try:
                server.make_bucket(server.bucket)
            except BaseException:
                server.stop()
                raise
            return server
        if taken:
            last = taken
        else:
            with open(log_path, encoding="utf-8", errors="replace") as f:
                last = " | ".join(f.read().split("\n")[-4:]).strip()
        if proc.poll() is None:
            proc.kill()
        proc.wait()
        leftovers.done(entry)
    shutil.rmtree(data_dir, ignore_errors=True)
    leftovers.done(dir_entry)
    raise MeasurementError(f"MinIO did not start: {last.replace(secret_key, '***') or 'no output'}")
