"""Which tools measure the ceilings (issue 28): the faster S3 client, obstore or awscrt (the
AWS Common Runtime, what mountpoint-s3 is built on), and the faster packaged passthrough FUSE
daemon over tmpfs (bindfs, fuse-overlayfs, rclone over a local directory).

Clients: a fresh MinIO on 127.0.0.1; each client GETs the same objects (1 and 4 streams, 8
MiB parts: obstore sequential ranged GETs per stream, the CRT one GET_OBJECT per stream
split into 8 MiB parts with at most `streams` connections) and PUTs objects of 8 MiB, in
interleaved rounds; the median MB/s of each.
Passthrough: fio reads 128 MiB at 1 MiB (direct) through each daemon over one tmpfs,
after a remount and a page-cache drop, interleaved rounds; the median MB/s.

    python3 -m benchmarks.ceiling_choices [--rounds 5] [--skip-clients] [--skip-fuse]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from pytest_fsperf.ceilings.store import MIB, Store
from pytest_fsperf.measure import cache
from pytest_fsperf.store.minio import S3Server, find_minio, start_minio

PART = 8 * MIB
OBJECT = 128 * MIB


def obstore_get(store: Store, streams: int) -> float:
    def one(i: int) -> int:
        return sum(store.get(f"o{i}", s, s + PART) for s in range(0, OBJECT, PART))
    t = time.monotonic()
    with ThreadPoolExecutor(streams) as pool:
        moved = sum(pool.map(one, range(streams)))
    return moved / (time.monotonic() - t)


def crt_client(server: S3Server, streams: int) -> Callable[[str, int], int]:
    from awscrt.auth import AwsCredentialsProvider
    from awscrt.http import HttpHeaders, HttpRequest
    from awscrt.io import ClientBootstrap, DefaultHostResolver, EventLoopGroup
    from awscrt.s3 import S3Client, S3RequestTlsMode, S3RequestType

    elg = EventLoopGroup()
    client = S3Client(bootstrap=ClientBootstrap(elg, DefaultHostResolver(elg)),
                      region=server.region, tls_mode=S3RequestTlsMode.DISABLED,
                      credential_provider=AwsCredentialsProvider.new_static(
                          server.access_key, server.secret_key),
                      part_size=PART, throughput_target_gbps=100.0,
                      max_active_connections_override=streams)
    host = server.endpoint.removeprefix("http://")

    def get(key: str, _size: int) -> int:
        got = [0]

        def body(chunk: bytes, offset: int, **_kw: object) -> None:
            got[0] += len(chunk)
        req = HttpRequest("GET", f"/{server.bucket}/{key}", HttpHeaders([("host", host)]))
        client.make_request(type=S3RequestType.GET_OBJECT, request=req,
                            on_body=body).finished_future.result(120)
        return got[0]
    return get


def crt_get(get: Callable[[str, int], int], prefix: str, streams: int) -> float:
    t = time.monotonic()
    with ThreadPoolExecutor(streams) as pool:
        moved = sum(pool.map(lambda i: get(f"{prefix}o{i}", OBJECT), range(streams)))
    return moved / (time.monotonic() - t)


def clients(rounds: int) -> None:
    binary = find_minio()
    if binary is None:
        print("clients: MinIO is not installed")
        return
    server = start_minio(binary)
    try:
        store = Store(server.config())
        data = os.urandom(OBJECT)
        for i in range(4):
            store.put(f"o{i}", data)
        for streams in (1, 4):
            get = crt_client(server, streams)
            found: dict[str, list[float]] = {"obstore": [], "awscrt": []}
            for _ in range(rounds):
                found["obstore"].append(obstore_get(store, streams))
                found["awscrt"].append(crt_get(get, store.prefix, streams))
            for name, values in found.items():
                print(f"GET {streams} stream(s), 8 MiB parts, {name}: median "
                      f"{statistics.median(values) / 1e6:.0f} MB/s "
                      f"({', '.join(f'{v / 1e6:.0f}' for v in values)})", flush=True)
        store.remove()
    finally:
        server.stop()


def passthroughs(rounds: int) -> None:
    scratch = Path(tempfile.mkdtemp(prefix="fsperf-ceiling-choice-"))
    src = scratch / "src"
    src.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=512m", "tmpfs", str(src)], check=True)
    daemons = {
        "bindfs": lambda m: ["bindfs", "-f", str(src), str(m)],
        "fuse-overlayfs": lambda m: ["fuse-overlayfs", "-f", "-o", f"lowerdir={src}", str(m)],
        "rclone": lambda m: ["rclone", "mount", str(src), str(m)],
    }
    try:
        subprocess.run(["fio", "--name=lay", f"--directory={src}", "--rw=write", "--bs=1M",
                        "--size=128M", "--output=/dev/null"], check=True)
        found: dict[str, list[float]] = {name: [] for name in daemons if shutil.which(name)}
        for _ in range(rounds):
            for name in found:
                found[name].append(_read_through(daemons[name], scratch / f"m-{name}"))
        for name, values in found.items():
            print(f"fio read 128 MiB, bs 1M, direct, through {name} over tmpfs: median "
                  f"{statistics.median(values) / 1e6:.0f} MB/s "
                  f"({', '.join(f'{v / 1e6:.0f}' for v in values)})", flush=True)
    finally:
        subprocess.run(["umount", "-l", str(src)], check=False)
        shutil.rmtree(scratch, ignore_errors=True)


def _read_through(command: Callable[[Path], list[str]], point: Path) -> float:
    import json

    point.mkdir(exist_ok=True)
    proc = subprocess.Popen(command(point), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 10
        while not os.path.ismount(point) and time.monotonic() < deadline:
            time.sleep(0.05)
        cache.make_cold(str(point), True)
        out = subprocess.run(["fio", "--name=lay", f"--directory={point}", "--rw=read",
                              "--bs=1M", "--size=128M", "--direct=1", "--output-format=json"],
                             capture_output=True, text=True, check=True).stdout
        return float(json.loads(out)["jobs"][0]["read"]["bw_bytes"])
    finally:
        subprocess.run(["fusermount3", "-u", str(point)], check=False)
        proc.wait(timeout=10)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--skip-clients", action="store_true")
    ap.add_argument("--skip-fuse", action="store_true")
    a = ap.parse_args()
    if not a.skip_clients:
        clients(a.rounds)
    if not a.skip_fuse:
        passthroughs(a.rounds)


if __name__ == "__main__":
    main()
