"""What the OSS path costs against MinIO's own S3: a fast client (obstore, SigV4, which the
gateway takes as it takes ossfs's OSS signatures) reading MinIO directly and through the OSS
gateway, alternating, five rounds; medians of the per-round ratios (gateway / direct) and the
CPU each process spent over the gateway's runs, in cores (warm: the objects are in MinIO's
page cache).

    python3 -m benchmarks.oss_gateway [--python]    # --python: the Python gateway (no Go)
"""

from __future__ import annotations

import os
import statistics
import sys
import time
from collections.abc import Callable

import obstore
import psutil
from obstore.store import S3Store

from benchmarks.store_conditions import threads
from pytest_fsperf.infra import leftovers
from pytest_fsperf.store.minio import find_minio, start_minio
from pytest_fsperf.store.oss import start_oss

BIG, SMALL, ROUNDS = 256 << 20, 128 << 10, 5


def main() -> None:
    record = leftovers.start()
    s3 = start_minio(find_minio() or "minio")
    oss = start_oss(s3, python="--python" in sys.argv[1:])
    try:
        direct = S3Store(oss.bucket, endpoint=s3.endpoint, access_key_id=s3.access_key,
                         secret_access_key=s3.secret_key, region=s3.region,
                         client_options={"allow_http": True}, virtual_hosted_style_request=False)
        gateway = S3Store(oss.bucket, endpoint=f"http://127.0.0.1:{oss.port}",
                          access_key_id=oss.access_key, secret_access_key=oss.secret_key,
                          region=s3.region, client_options={"allow_http": True},
                          virtual_hosted_style_request=False)
        obstore.put(direct, "big", os.urandom(BIG))
        for i in range(512):
            obstore.put(direct, f"s/{i}", os.urandom(SMALL))
        cases: dict[str, Callable[[S3Store], float]] = {
            "one 256 MiB object, 1 stream": lambda st: BIG / threads(
                1, lambda _i: obstore.get(st, "big").bytes()),
            "the same, 4 streams": lambda st: 4 * BIG / threads(
                4, lambda _i: obstore.get(st, "big").bytes()),
            "128 KiB objects, 128 threads": lambda st: 512 * SMALL / threads(128, lambda k: [
                obstore.get(st, f"s/{i}").bytes() for i in range(k, 512, 128)]),
        }
        procs = {"MinIO": psutil.Process(s3.pid), "gateway": psutil.Process(oss.pid),
                 "client": psutil.Process()}
        print(f"{ROUNDS} rounds each, through the OSS gateway / MinIO direct (median, range);"
              " CPU in cores")
        for name, case in cases.items():
            ratios, rates, cpu = [], [], {k: 0.0 for k in procs}
            for _ in range(ROUNDS):
                a = case(direct)
                before = {k: sum(p.cpu_times()[:2]) for k, p in procs.items()}
                t0 = time.perf_counter()
                b = case(gateway)
                took = time.perf_counter() - t0
                for k, p in procs.items():
                    cpu[k] += (sum(p.cpu_times()[:2]) - before[k]) / took / ROUNDS
                ratios.append(b / a)
                rates.append((a, b))
            print(f"{name}: {statistics.median(ratios):.2f} ({min(ratios):.2f}-{max(ratios):.2f});"
                  f" direct {statistics.median(r[0] for r in rates) / 1e6:.0f} MB/s, gateway "
                  f"{statistics.median(r[1] for r in rates) / 1e6:.0f} MB/s; over the gateway's runs: "
                  + ", ".join(f"{k} {v:.2f}" for k, v in cpu.items()))
    finally:
        oss.stop()
        s3.stop()
        leftovers.stop(record)


if __name__ == "__main__":
    main()
