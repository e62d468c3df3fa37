"""Issue 72.2, live: s3fs over the plugin's MinIO through the proxy speaking TLS (the
default for S3) and over plain HTTP (the marker's StoreConditions(tls=False)): the daemon's
TLS work shows in its CPU per GB, its endpoint is https, and no key reaches a report."""

from __future__ import annotations

import json

from tests.conftest import need

TIER = "s3"


def test_s3fs_over_tls_costs_its_daemon_more_cpu_per_gb_than_over_http(pytester, minio):
    need("s3fs")
    need("fio")
    pytester.makepyfile("""
        from pytest_fsperf import fsperf, fsperf_mount
        from pytest_fsperf.plan.conditions import StoreConditions

        def work(fsperf):
            fsperf.fio(name="write", rw="write", bs="1M", size="128M", end_fsync=1, judged=False)
            fsperf.cold()
            fsperf.fio(name="read", rw="read", bs="1M", size="128M")

        @fsperf_mount("s3fs")
        @fsperf(rounds=3)
        def test_tls(fsperf):
            work(fsperf)

        @fsperf_mount("s3fs", store=StoreConditions(tls=False))
        @fsperf(rounds=3)
        def test_http(fsperf):
            work(fsperf)
    """)
    out = pytester.path / "fsperf.json"
    result = pytester.runpytest("-p", "no:cacheprovider", f"--fsperf-json={out}")
    result.assert_outcomes(passed=2)
    text = out.read_text()
    doc = json.loads(text)
    rows = {(r["test"].rsplit("::", 1)[1], r["name"]): r for r in doc["results"]}
    tls, http = rows[("test_tls", "read")], rows[("test_http", "read")]
    assert any(a.startswith("url=https://127.0.0.1:") for a in tls["mount"]["command"]), tls["mount"]
    assert any(a.startswith("url=http://127.0.0.1:") for a in http["mount"]["command"])

    def per_gb(row: dict) -> float:
        return row["daemon"]["cpu_seconds"] / (row["read"]["io_bytes"] / 1e9)

    print(f"s3fs CPU-s per GB read: TLS {per_gb(tls):.3f}, HTTP {per_gb(http):.3f}")
    assert per_gb(tls) > 1.1 * per_gb(http), (per_gb(tls), per_gb(http))
    assert "PRIVATE KEY" not in text and "BEGIN CERTIFICATE" not in text
