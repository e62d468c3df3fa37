"""fsperf.fio(clients=N): N mounts of one bucket, each with its own daemon and fio server,
driven by fio's controller; per-client rows, the aggregate, every daemon measured; a server
killed mid-run is named and nothing is left; servers the user started (--fsperf-fio-servers)."""

from __future__ import annotations

import subprocess
import time

import psutil
import pytest

from pytest_fsperf.mounts.spec import free_port
from tests.conftest import need, ours, run_json

TIER = "fuse"  # every test here, unless one says otherwise (conftest.py)


def servers_left() -> list[str]:
    return [" ".join(p.info["cmdline"]) for p in psutil.process_iter(["cmdline"])
            if p.info["cmdline"] and p.info["cmdline"][0].endswith("fio")
            and "--server=" in " ".join(p.info["cmdline"])]


def bw(direction: dict | None) -> float:
    return direction["bw_bytes"] if direction else 0.0


def check_clients(row: dict, n: int, direction: str) -> None:
    """Per-client figures that add up to fio's aggregate, each from a daemon of its own."""
    clients = row["clients"]
    assert len(clients) == n
    total = row[direction]
    assert total["io_bytes"] == sum(c[direction]["io_bytes"] for c in clients)
    assert total["total_ios"] == sum(c[direction]["total_ios"] for c in clients)
    summed = sum(bw(c[direction]) for c in clients)  # time_based: the same runtime each
    assert abs(total["bw_bytes"] - summed) <= 0.03 * summed, (total["bw_bytes"], summed)
    pids = {c["daemon"]["pid"] for c in clients}
    assert len(pids) == n  # each client its own daemon
    assert len({c["server"] for c in clients}) == n and len({c["directory"] for c in clients}) == n
    for c in clients:
        assert c["daemon"]["cpu_seconds"] > 0 and c["daemon"]["peak_rss_bytes"] > 1e6
    d = row["daemon"]  # the sum over the clients' daemons, each one named
    assert abs(d["cpu_seconds"] - sum(c["daemon"]["cpu_seconds"] for c in clients)) < 1e-6
    assert d["peak_rss_bytes"] == sum(c["daemon"]["peak_rss_bytes"] for c in clients)
    assert {p["pid"] for p in d["processes"]} >= pids
    assert row["tool_cpu_percent"] > 0  # the fio servers' own CPU, with their job processes


def test_two_s3fs_clients_of_one_bucket(pytester, minio):
    need("s3fs")
    pytester.makepyfile("""
        import os
        from pytest_fsperf import fsperf_mount

        @fsperf_mount("s3fs")
        def test_two(fsperf):
            w = fsperf.fio(name="w", clients=2, rw="write", bs="1M", size="24M", direct=1,
                           time_based=1, runtime="3s")
            # client 1 wrote through its own mount: client 0's mount sees it in the bucket
            (name,) = os.listdir(fsperf.workdir / "client1")
            assert name == "fsperf.0.0"
            assert os.path.getsize(fsperf.workdir / "client1" / name) == 24 << 20
            assert w.clients[1].write.io_bytes > 0
            fsperf.cold()
            fsperf.fio(name="r", clients=2, rw="read", bs="1M", size="12M", direct=1,
                       time_based=1, runtime="3s", numjobs=2)  # each client's jobs summed
            one = fsperf.fio(name="one", clients=1, rw="read", bs="1M", size="24M")  # fewer later
            assert len(one.clients) == 1 and one.daemon.pid == fsperf.daemon.daemon.pid
    """)
    result, doc = run_json(pytester, "-s")
    result.assert_outcomes(passed=1)
    rows = {r["name"]: r for r in doc["results"]}
    check_clients(rows["w"], 2, "write")
    check_clients(rows["r"], 2, "read")
    assert rows["r"]["cold_read"] == "verified", rows["r"]["cold_evidence"]
    assert rows["r"]["requests"]["by_kind"]["GET"] >= 2  # both clients read from the store
    result.stdout.fnmatch_lines(["Clients", "*test_two r: imbalance *% (the slowest client*",
                                 "*test_two*r*all 2*", "*fio-0-*.sock*pytest-fsperf-s3fs-*",
                                 "*fio-1-*.sock*pytest-fsperf-s3fs-*"])
    assert ours() == ([], []) and servers_left() == []


@pytest.mark.slow
def test_four_rclone_clients_read_cold(pytester, minio):
    need("rclone")
    pytester.makepyfile("""
        from pytest_fsperf import fsperf_mount

        @fsperf_mount("rclone", config="fsperf_s3")
        def test_four(fsperf):
            fsperf.cold()
            fsperf.fio(name="r", clients=4, rw="read", bs="1M", size="8M", time_based=1,
                       runtime="2s")
    """)
    result, doc = run_json(pytester)
    result.assert_outcomes(passed=1)
    (row,) = doc["results"]
    check_clients(row, 4, "read")
    assert row["daemon_cache"].startswith("cold")  # every mount remounted, not only the first
    assert ours() == ([], []) and servers_left() == []


def test_a_client_server_killed_mid_run_is_named_and_nothing_is_left(pytester, minio):
    need("s3fs")
    pytester.makepyfile("""
        import os, signal, threading, time
        import psutil
        from pytest_fsperf import fsperf_mount

        def kill_one_server():
            me = psutil.Process()
            found = []
            for _ in range(600):  # the servers start after the mounts (MinIO first)
                found = [p for p in me.children()
                         if "--server=" in " ".join(p.cmdline())]
                if len(found) == 2:
                    break
                time.sleep(0.1)
            time.sleep(2.5)  # mid-run
            victim = sorted(found, key=lambda p: p.pid)[-1]
            port = os.path.basename(" ".join(victim.cmdline()).split("--server=sock:", 1)[1])
            with open("victim", "w") as f:
                f.write(port)
            for child in victim.children(recursive=True):
                child.kill()
            victim.kill()

        @fsperf_mount("s3fs")
        def test_killed(fsperf):
            threading.Thread(target=kill_one_server, daemon=True).start()
            fsperf.fio(name="w", clients=2, rw="write", bs="256k", size="64M", time_based=1,
                       runtime="8s")

        def test_next(fsperf):
            fsperf.fio(rw="write", bs="64k", size="1M")
    """)
    result, _doc = run_json(pytester)
    result.assert_outcomes(passed=1, failed=1)  # the session went on
    port = (pytester.path / "victim").read_text().strip()
    result.stdout.fnmatch_lines([f"*fio server {port} died during the run*"])
    assert ours() == ([], []) and servers_left() == []


def test_servers_the_user_started(pytester, tmp_path):
    """--fsperf-fio-servers: the jobs run on the user's servers, in the work dir seen through
    their mounts (here the same directory); no daemon is claimed for them."""
    need("fio")
    ports = [free_port() for _ in range(2)]
    procs = [subprocess.Popen(["fio", f"--server=ip:127.0.0.1,{p}"], stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL) for p in ports]
    try:
        time.sleep(0.5)
        (tmp_path / "mnt").mkdir()
        pytester.makepyfile("""
            def test_remote(fsperf):
                r = fsperf.fio(name="w", clients=2, rw="write", bs="1M", size="8M")
                assert [c.write.io_bytes for c in r.clients] == [8 << 20, 8 << 20]
                assert r.write.io_bytes == 16 << 20
                assert all(c.daemon is None and "one you started" in c.daemon_note for c in r.clients)
        """)
        servers = ",".join(f"127.0.0.1:{p}" for p in ports)
        result, doc = run_json(pytester, f"--fsperf-mount={tmp_path / 'mnt'}", "--fsperf-plain-dir=1",
                               f"--fsperf-fio-servers={servers}")
        result.assert_outcomes(passed=1)
        assert "not measured here" in doc["results"][0]["daemon_note"]
        assert list((tmp_path / "mnt").iterdir()) == []  # the work dir, removed with its files
        # a server that is not there: named, the test fails, the session goes on
        procs[1].kill()
        procs[1].wait()
        result, _doc = run_json(pytester, f"--fsperf-mount={tmp_path / 'mnt'}", "--fsperf-plain-dir=1",
                                f"--fsperf-fio-servers={servers}")
        result.assert_outcomes(failed=1)
        result.stdout.fnmatch_lines([f"*fio server 127.0.0.1:{ports[1]} not reachable*"])
    finally:
        for p in procs:
            p.kill()
            p.wait()


def test_bad_client_settings_are_one_line_errors(pytester):
    pytester.makepyfile("""
        def test_zero(fsperf):
            fsperf.fio(rw="write", size="1M", clients=0)

        def test_no_backend(fsperf):
            fsperf.fio(rw="write", size="1M", clients=2)
    """)
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(failed=2)
    result.stdout.fnmatch_lines([
        "*test_zero: fsperf.fio(): clients=0 must be a whole number from 1 to 64*",
        "*test_no_backend: fsperf.fio(): clients=2 needs a backend the plugin mounts*"])
    result = pytester.runpytest("-p", "no:cacheprovider", "--fsperf-fio-servers=host1:99999")
    result.stderr.fnmatch_lines(["*--fsperf-fio-servers=host1:99999 (command line): 'host1:99999' "
                                 "is not HOST:PORT?:DIR? (PORT a number*"])
    assert result.ret != 0
