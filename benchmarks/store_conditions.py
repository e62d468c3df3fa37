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
from pytest_fsperf.plan.conditions import StoreConditions
from pytest_fsperf.store import conditioner
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


def reads(direct: S3Store, big: int, small: int, files: int, threads_n: int
          ) -> dict[str, Callable[[S3Store], float]]:
    """The cases: one object of `big` bytes by 1 and 4 streams, `files` objects of `small`
    bytes by `threads_n` threads (put through `direct` first); each gives bytes/s."""
    obstore.put(direct, "big", os.urandom(big))
    for i in range(files):
        obstore.put(direct, f"s/{i}", os.urandom(small))
    return {
        f"one {big >> 20} MiB object, 1 stream": lambda st: big / threads(
            1, lambda _i: obstore.get(st, "big").bytes()),
        "the same, 4 streams": lambda st: 4 * big / threads(
            4, lambda _i: obstore.get(st, "big").bytes()),
        f"{small >> 10} KiB objects, {threads_n} threads": lambda st: files * small / threads(
            threads_n, lambda k: [obstore.get(st, f"s/{i}").bytes()
                                  for i in range(k, files, threads_n)]),
    }


def alternate(cases: dict[str, Callable[[S3Store], float]], direct: S3Store, other: S3Store,
              procs: dict[str, psutil.Process], rounds: int = ROUNDS
              ) -> dict[str, tuple[list[tuple[float, float]], dict[str, float]]]:
    """Each case direct then through `other`, `rounds` times: per case the (direct, other)
    rates of each round, and the CPU each process spent over the runs through `other` (cores)."""
    out = {}
    for name, case in cases.items():
        rates, cpu = [], dict.fromkeys(procs, 0.0)
        for _ in range(rounds):
            a = case(direct)
            before = {k: sum(p.cpu_times()[:2]) for k, p in procs.items()}
            t0 = time.perf_counter()
            b = case(other)
            took = time.perf_counter() - t0
            for k, p in procs.items():
                cpu[k] += (sum(p.cpu_times()[:2]) - before[k]) / took / rounds
            rates.append((a, b))
        out[name] = (rates, cpu)
    return out


def ratios(rates: list[tuple[float, float]]) -> str:
    """'0.82 (0.77-0.97)': the median of the per-round ratios, and their range."""
    r = [b / a for a, b in rates]
    return f"{statistics.median(r):.2f} ({min(r):.2f}-{max(r):.2f})"


def main() -> None:
    record = leftovers.start()
    s3 = start_minio(find_minio() or "minio")
    proxy = conditioner.start(s3.endpoint.split("//")[1], StoreConditions(), "s3")
    try:
        direct, through = store(s3, s3.endpoint), store(s3, f"http://{proxy.address}")
        cases = reads(direct, BIG, SMALL, 64, 16)
        procs = {"MinIO": psutil.Process(s3.pid), "proxy": psutil.Process(proxy.proc.pid),
                 "client": psutil.Process()}
        print(f"{ROUNDS} rounds each, through the proxy / direct (median, range); CPU in cores")
        for name, (rates, cpu) in alternate(cases, direct, through, procs).items():
            print(f"{name}: {ratios(rates)}; through the proxy: "
                  + ", ".join(f"{k} {v:.2f}" for k, v in cpu.items()))
    finally:
        proxy.stop()
        s3.stop()
        leftovers.stop(record)


if __name__ == "__main__":
    main()
