"""What the store conditions' proxy costs at zero conditions: MinIO read by a fast client
(obstore) directly and through the proxy, alternating, five rounds; medians of the per-round
ratios (through / direct), and the CPU each process spent (warm: the object is in MinIO's page
cache; the proxy started with no condition set).

    python3 -m benchmarks.store_conditions
"""

from __future__ import annotations

import os
import statistics
import threading
import time
from collections.abc import Callable

import obstore
import psutil
from obstore.store import S3Store

from pytest_fsperf.infra import leftovers
from pytest_fsperf.store import conditioner
from pytest_fsperf.store.conditions import StoreConditions
from pytest_fsperf.store.minio import S3Server, find_minio, start_minio

BIG, SMALL, ROUNDS = 128 << 20, 128 << 10, 5


def store(s3: S3Server, endpoint: str) -> S3Store:
    return S3Store(s3.bucket, endpoint=endpoint, access_key_id=s3.access_key,
                   secret_access_key=s3.secret_key, region=s3.region,
                   client_options={"allow_http": True}, virtual_hosted_style_request=False)


def threads(n: int, work: Callable[[int], None]) -> float:
    """Seconds for n threads each doing work(i)."""
    pool = [threading.Thread(target=work, args=(i,)) for i in range(n)]
    began = time.perf_counter()
    for t in pool:
        t.start()
    for t in pool:
        t.join()
    return time.perf_counter() - began


def main() -> None:
    record = leftovers.start()
    s3 = start_minio(find_minio() or "minio")
    proxy = conditioner.start(s3.endpoint.split("//")[1], StoreConditions(), "s3")
    try:
        direct, through = store(s3, s3.endpoint), store(s3, f"http://{proxy.address}")
        obstore.put(direct, "big", os.urandom(BIG))
        for i in range(64):
            obstore.put(direct, f"s/{i}", os.urandom(SMALL))
        cases: dict[str, Callable[[S3Store], float]] = {
            "one 128 MiB object, 1 stream": lambda st: BIG / threads(
                1, lambda _i: obstore.get(st, "big").bytes()),
            "the same, 4 streams": lambda st: 4 * BIG / threads(
                4, lambda _i: obstore.get(st, "big").bytes()),
            "128 KiB objects, 16 threads": lambda st: 64 * SMALL / threads(16, lambda k: [
                obstore.get(st, f"s/{i}").bytes() for i in range(k, 64, 16)]),
        }
        procs = {"MinIO": psutil.Process(s3.pid), "proxy": psutil.Process(proxy.proc.pid),
                 "client": psutil.Process()}
        print(f"{ROUNDS} rounds each, through the proxy / direct (median, range); CPU in cores")
        for name, case in cases.items():
            ratios, cpu = [], {k: 0.0 for k in procs}
            for _ in range(ROUNDS):
                a = case(direct)
                before = {k: sum(p.cpu_times()[:2]) for k, p in procs.items()}
                t0 = time.perf_counter()
                b = case(through)
                took = time.perf_counter() - t0
                for k, p in procs.items():
                    cpu[k] += (sum(p.cpu_times()[:2]) - before[k]) / took / ROUNDS
                ratios.append(b / a)
            print(f"{name}: {statistics.median(ratios):.2f} ({min(ratios):.2f}-{max(ratios):.2f});"
                  " through the proxy: " + ", ".join(f"{k} {v:.2f}" for k, v in cpu.items()))
    finally:
        proxy.stop()
        s3.stop()
        leftovers.stop(record)


if __name__ == "__main__":
    main()
