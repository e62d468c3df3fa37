"""The plugin's OSS endpoint: a bucket of its MinIO behind the translating gateway, in a
process of its own on 127.0.0.1: the Go one (proxy/gateway.go, in the store conditions'
program) where Go builds it, else store/oss_gateway.py (Python: a slower store, its own
ceiling on ossfs and ossfs2)."""

from __future__ import annotations

import json
import os
import secrets
import select
import subprocess
import sys
from dataclasses import dataclass, field

from pytest_fsperf.errors import MeasurementError
from pytest_fsperf.infra import leftovers
from pytest_fsperf.infra.procs import Proc, stop_child
from pytest_fsperf.plan.conditions import StoreConditions
from pytest_fsperf.store import conditioner
from pytest_fsperf.store.minio import S3Server

# Buckets are addressed as BUCKET.DOMAIN through the daemon's HTTP proxy setting: .invalid
# never resolves (RFC 2606), so a daemon that ignored the proxy would fail, not leave loopback.
DOMAIN = "oss.invalid"


@dataclass
class OssServer:
    s3: S3Server
    bucket: str
    access_key: str
    secret_key: str = field(repr=False)
    proc: subprocess.Popen[bytes] | None = None
    port: int = 0
    entry: leftovers.Entry = None
    gateway: conditioner.Conditioned | None = None  # the Go gateway, where Go builds it

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    def config(self) -> dict[str, str]:
        """The values the ossfs and ossfs2 templates use: the proxy carries every request to
        the gateway; crc64 off (MinIO returns no x-oss-hash-crc64ecma); the metrics are
        MinIO's, which serves every request the gateway forwards; s3_endpoint: the gateway as an
        S3 client reaches it, path style (the store ceiling, through the same gateway)."""
        return {"endpoint": f"http://{DOMAIN}", "bucket": self.bucket,
                "access_key": self.access_key, "secret_key": self.secret_key,
                "region": self.s3.region, "http_proxy": f"http://127.0.0.1:{self.port}",
                "crc64": "false", "metrics_endpoint": self.s3.endpoint,
                "s3_endpoint": f"http://127.0.0.1:{self.port}",  # an S3 client's way in
                **self.conditioned()}

    def conditioned(self) -> dict[str, str]:
        """The conditions the Go gateway applies, as ConditionedStore names them."""
        if self.gateway is None or self.gateway.conditions.bare:
            return {}
        return {"store_conditions": self.gateway.conditions.describe(),
                "conditions_proxy": self.gateway.address}

    def served_bytes(self) -> int:
        return self.s3.served_bytes()

    def stop(self) -> None:
        if self.gateway is not None:
            self.gateway.stop()
        elif self.proc is not None:
            stop_child(self.proc)
        if self.entry is not None:
            leftovers.done(self.entry)


def start_oss(s3: S3Server, conditions: StoreConditions | None = None,
              timeout: float = 20.0, python: bool = False) -> OssServer:
    """A new bucket on `s3` and a gateway for it alone, with keys of its own; the Go gateway
    applies `conditions` itself (the Python one, also chosen by `python`, does not: see
    stores.fsperf_oss)."""
    server = OssServer(s3, "fsperf-oss-" + secrets.token_hex(4), "fsperfoss" + secrets.token_hex(16),
                       secrets.token_urlsafe(24))
    s3.make_bucket(server.bucket)
    conf = {"upstream": s3.endpoint, "upstream_access_key": s3.access_key,
            "upstream_secret_key": s3.secret_key, "region": s3.region,
            "access_key": server.access_key, "bucket": server.bucket, "domain": DOMAIN}
    if not python and conditioner.binary()[0] is not None:  # the Go gateway: bodies spliced, no GIL
        gateway = conditioner.start(s3.endpoint.split("//", 1)[1],
                                    conditions or StoreConditions(), "oss",
                                    timeout, gateway={k: v for k, v in conf.items()
                                                      if k != "upstream"})
        server.gateway, server.proc, server.port = gateway, gateway.proc, gateway.port
        return server
    # -I: not the working directory's modules, not PYTHONPATH: only the installed plugin
    proc = subprocess.Popen([sys.executable, "-I", "-m", "pytest_fsperf.store.oss_gateway"],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            start_new_session=True, cwd="/", env=_env())
    server.proc, server.entry = proc, leftovers.note_process(Proc.of(proc.pid))
    assert proc.stdin is not None and proc.stdout is not None
    try:
        proc.stdin.write(json.dumps(conf).encode() + b"\n")
        proc.stdin.close()
        ready, _, _ = select.select([proc.stdout], [], [], timeout)
        line = proc.stdout.readline() if ready else b""
        server.port = int(line.strip() or b"0")
    except (OSError, ValueError):
        server.port = 0
    if not server.port:
        server.stop()
        err = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
        raise MeasurementError("the OSS gateway did not start: "
                               + (err.strip().splitlines() or ["no output"])[-1])
    return server


def _env() -> dict[str, str]:
    keep = ("PATH", "LANG", "LC_ALL", "HOME")
    return {k: v for k, v in os.environ.items() if k in keep}
