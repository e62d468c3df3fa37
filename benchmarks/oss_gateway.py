"""What the OSS path costs against MinIO's own S3: a fast client (obstore, SigV4, which the
gateway takes as it takes ossfs's OSS signatures) reading MinIO directly and through the OSS
gateway, alternating, five rounds; medians of the per-round ratios (gateway / direct) and the
CPU each process spent over the gateway's runs, in cores (warm: the objects are in MinIO's
page cache).

    python3 -m benchmarks.oss_gateway [--python]    # --python: the Python gateway (no Go)
"""

from __future__ import annotations

import statistics
import sys

import psutil
from obstore.store import S3Store

from benchmarks.store_conditions import alternate, ratios, reads
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
        cases = reads(direct, BIG, SMALL, 512, 128)
        procs = {"MinIO": psutil.Process(s3.pid), "gateway": psutil.Process(oss.pid),
                 "client": psutil.Process()}
        print(f"{ROUNDS} rounds each, through the OSS gateway / MinIO direct (median, range);"
              " CPU in cores")
        for name, (rates, cpu) in alternate(cases, direct, gateway, procs).items():
            print(f"{name}: {ratios(rates)}; direct "
                  f"{statistics.median(a for a, _ in rates) / 1e6:.0f} MB/s, gateway "
                  f"{statistics.median(b for _, b in rates) / 1e6:.0f} MB/s; over the gateway's "
                  "runs: " + ", ".join(f"{k} {v:.2f}" for k, v in cpu.items()))
    finally:
        oss.stop()
        s3.stop()
        leftovers.stop(record)


if __name__ == "__main__":
    main()
