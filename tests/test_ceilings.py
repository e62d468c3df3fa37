"""Ceilings (issue 28): the object store read straight by obstore over the embedded MinIO,
and FUSE with nothing behind it (bindfs over tmpfs), measured for a workload's shape."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path as FsPath
from typing import Any

import pytest

from pytest_fsperf.ceilings import fuse as fuse_ceiling
from pytest_fsperf.ceilings.store import MIB, Op, Shape, shape_of, store_ceiling
from pytest_fsperf.mounts.mounter import MountPlan
from pytest_fsperf.mounts.registry import Registry
from pytest_fsperf.options.config import Settings
from pytest_fsperf.result.ceiling import CeilingPath
from pytest_fsperf.runner.workspace import Workspace
from pytest_fsperf.session.state import FsperfSession
from pytest_fsperf.store.minio import S3Server, find_minio, start_minio
from pytest_fsperf.store.requests import probe
from tests.conftest import need, ours

READ = {"rw": "read", "bs": "1M", "size": "128M", "direct": "1"}


@pytest.mark.unit
@pytest.mark.parametrize(("job", "expected"), [
    (READ, Shape(Op.GET, 1, 128 * MIB, 8 * MIB)),
    ({"rw": "read", "bs": "1M", "size": "1G", "numjobs": "4"}, Shape(Op.GET, 4, 64 * MIB, 8 * MIB)),
    ({"rw": "randread", "bs": "4k", "size": "16M", "numjobs": "2", "iodepth": "4"},
     Shape(Op.GET, 8, 16 * MIB, 4096)),
    ({"rw": "write", "bs": "16M", "size": "64M"}, Shape(Op.PUT, 1, 64 * MIB, 16 * MIB)),
    ({"rw": "randrw", "bs": "4k", "size": "16M"}, None),
])
def test_a_fio_job_becomes_the_store_transfer_behind_it(job, expected):
    assert shape_of(job) == expected


@pytest.mark.unit
def test_the_fuse_ceiling_says_why_not_where_there_is_no_tmpfs(tmp_path):
    assert fuse_ceiling.why_not(READ, str(tmp_path)).endswith("is not a tmpfs here "
                                                             f"({_fstype(tmp_path)} at /)")
    huge = {**READ, "size": "100T"}
    if os.path.ismount("/dev/shm"):
        assert "do not fit in /dev/shm" in fuse_ceiling.why_not(huge)


def _fstype(path: FsPath) -> str:
    from pytest_fsperf.infra.mountinfo import find_mount, read_mounts

    return find_mount(str(path), read_mounts()).fstype


@pytest.mark.unit
def test_no_store_no_ceiling_and_it_says_why():
    c = store_ceiling(None, Shape(Op.GET, 1, MIB, MIB))
    assert c.path == CeilingPath.STORE and c.bw_bytes == 0
    assert c.unavailable.startswith("no object store behind this mount known to the plugin")


@pytest.fixture
def server() -> Iterator[S3Server]:
    need("fio")
    binary = find_minio()
    if binary is None:
        pytest.skip("MinIO is not installed")
    s = start_minio(binary)
    try:
        yield s
    finally:
        s.stop()


def _cold_read(backend: str, config: dict[str, str]) -> float:
    need(backend)
    session = FsperfSession(Settings())
    try:
        target = session.open_target(MountPlan(Registry().get(backend, "test"), (), config))
        ws = Workspace(session, target, "ceiling::t", target.new_workdir("t"))
        _base, job = ws.job("read", READ, "t")
        ws.cold_start()
        return ws.measure(ws.unique("read"), True, job, layout=True).bw_bytes
    finally:
        session.close()


@pytest.mark.s3
def test_the_store_ceiling_is_above_what_s3fs_rclone_and_juicefs_read_and_minio_counts_its_gets(server):
    """The same read straight from the store is at least what the best FUSE client made of
    it, and MinIO's own counters saw exactly the GETs the ceiling says it sent."""
    best = max(_cold_read(backend, server.config()) for backend in ("s3fs", "rclone", "juicefs"))
    shape = shape_of(READ)
    assert shape is not None
    meter, why = probe(server.endpoint)
    assert meter is not None, why
    meter.start()
    c = store_ceiling(server.config(), shape)
    seen = meter.stop()
    assert not c.unavailable and not c.note, c
    assert c.bw_bytes >= best, (c, best)
    assert seen.by_kind.get("GET") == c.requests > 0, (seen, c)
    assert c.how == "obstore, GET 1 stream of 8 MiB parts (128 MiB objects)"
    assert _keys(server) == []  # nothing of the ceiling's is left in the bucket


def _keys(server: S3Server) -> list[str]:
    import obstore

    from pytest_fsperf.ceilings.store import Store

    store = Store(server.config()).store
    return [m["path"] for batch in obstore.list(store, "fsperf-ceiling-") for m in batch]


@pytest.mark.fuse
def test_the_fuse_ceiling_over_tmpfs_is_above_bindfs_over_a_disk(tmp_path):
    """bindfs over tmpfs, cold, reads at least what bindfs over the machine's disk does;
    tmpfs itself more still. Nothing is left in /dev/shm."""
    if fuse_ceiling.why_not(READ):
        pytest.skip(fuse_ceiling.why_not(READ))
    before = set(os.listdir("/dev/shm"))
    session = FsperfSession(Settings())
    try:
        tmpfs, fuse = fuse_ceiling.fuse_ceilings(session, READ)
    finally:
        session.close()
    assert not tmpfs.unavailable and not fuse.unavailable, (tmpfs, fuse)
    (tmp_path / "src").mkdir()  # on the machine's disk
    on_disk = _cold_read("bindfs", {"source": str(tmp_path / "src")})
    assert fuse.bw_bytes >= on_disk, (fuse, on_disk)
    assert tmpfs.bw_bytes >= fuse.bw_bytes, (tmpfs, fuse)
    assert fuse.how.startswith("bindfs over tmpfs, fio rw=read bs=1M") and fuse.how.endswith("cold")
    assert fuse.requests == 128 and tmpfs.requests == 128
    assert set(os.listdir("/dev/shm")) == before
    assert ours() == ([], [])


@pytest.mark.fuse
def test_fsperf_ceilings_puts_each_fio_workload_beside_its_ceilings(pytester):
    """--fsperf-ceilings=on: a judged fio workload on bindfs gets its job's ceilings (once
    per shape), in the JSON and as fractions in the report; bindfs has no store, and says so."""
    import json

    need("bindfs")
    need("fio")
    pytester.makepyfile("""
        def test_read(fsperf):
            fsperf.fio(name="lay", rw="write", bs="1M", size="32M", judged=False)
            fsperf.cold()
            fsperf.fio(name="read", rw="read", bs="1M", size="32M")
            fsperf.cold()
            fsperf.fio(name="again", rw="read", bs="1M", size="32M")

        def test_scenario(fsperf):  # a shipped suite's scenario gets them too
            fsperf.scenario("seq_read_1t")
    """)
    out, page = pytester.path / "r.json", pytester.path / "r.html"
    result = pytester.runpytest("-p", "no:cacheprovider", "--fsperf-backend=bindfs",
                                "--fsperf-ceilings=on", f"--fsperf-json={out}",
                                f"--fsperf-html={page}", "--fsperf-scale=0.0003")
    result.assert_outcomes(passed=2)
    scenario = next(r for r in json.loads(out.read_text())["results"] if r["name"] == "seq_read_1t")
    assert [c["path"] for c in scenario["ceilings"]] == ["tmpfs", "bindfs over tmpfs", "store"]
    chart = page.read_text().split('aria-label="Share of each ceiling', 1)[1].split("</svg>")[0]
    # a bar per workload and measured ceiling (tmpfs, FUSE; no store), each with its tick
    assert chart.count('<rect class="mark"') == 6 and chart.count('class="limit"') == 6
    assert "test_read read: of the bindfs over tmpfs" in chart
    doc = json.loads(out.read_text())
    rows = {r["name"]: r for r in doc["results"]}
    assert rows["lay"]["ceilings"] == []  # not judged: preparation, no ceilings
    read, again = rows["read"]["ceilings"], rows["again"]["ceilings"]
    assert [c["path"] for c in read] == ["tmpfs", "bindfs over tmpfs", "store"]
    assert read == again  # measured once for the shape, reused
    assert read[2]["unavailable"].startswith("no object store behind this mount")
    assert read[1]["bw_bytes"] > 0 and read[1]["how"].startswith("bindfs over tmpfs")
    result.stdout.fnmatch_lines([
        "*Ceilings: the same job straight to the store*",
        "*store: not measured: no object store behind this mount*",
        "*read*% of *B/s*% of *B/s*"])
    assert ours() == ([], [])


@pytest.mark.fuse
def test_a_killed_ceilings_run_leaves_nothing(tmp_path):
    """As found: `fsperf bench --ceilings` killed with SIGKILL left its /dev/shm directory,
    fio and MinIO running (it kept no record and had no watchdog). Now its watchdog removes
    them at once."""
    import signal
    import subprocess
    import sys

    need("bindfs")
    need("fio")
    before = set(os.listdir("/dev/shm"))
    t0 = _now()
    proc = subprocess.Popen([sys.executable, "-m", "pytest_fsperf", "bench", "--ceilings",
                             "--scale", "0.01", "-k", "seq_read_4t"], cwd=tmp_path,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    made: set[str] = set()
    while not made and time.monotonic() < deadline and proc.poll() is None:
        made = {n for n in set(os.listdir("/dev/shm")) - before if n.startswith("pytest-fsperf-")}
        time.sleep(0.1)
    assert made, "the ceilings run made no directory in /dev/shm"
    time.sleep(1.0)  # into its fio run
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    # the watchdog's helpers remove what it left, one after another: what it started is
    # stopped at once; its removals may take long on a loaded machine (the output directory's
    # was still running after 40 s in CI), so wait for the watchdog itself to end
    deadline = time.monotonic() + 40
    while time.monotonic() < deadline and _started(t0, helpers=False):
        time.sleep(0.2)
    assert _started(t0, helpers=False) == []  # fio, bindfs and MinIO: orphans, not our children
    for watchdog in _watchdogs(t0):
        watchdog.wait(timeout=150)  # its removal helper's own limit is 120 s
    assert not set(os.listdir("/dev/shm")) & made
    assert _started(t0) == []


def _now() -> float:
    """Now on psutil's clock: its start times are the boot time /proc/stat gives, whole
    seconds, plus ticks since boot, so up to 1 s before time.time() (found in session 84: the
    watchdog, started 0.5 s after a time.time(), read as started before it and was not
    waited for)."""
    import psutil

    return psutil.boot_time() + time.clock_gettime(time.CLOCK_BOOTTIME) - 0.02  # a tick's rounding


def _watchdogs(since: float) -> list[Any]:
    import psutil

    return [p for p in psutil.process_iter(["cmdline", "create_time"])
            if p.info["create_time"] >= since and "sys.stdin.buffer.read()" in " ".join(p.info["cmdline"] or ())]


def _started(since: float, helpers: bool = True) -> list[str]:
    """The plugin's processes (by their pytest-fsperf paths) started since `since`; with
    `helpers` False, not the watchdog's removal helpers (a Python child and its rm)."""
    import psutil

    found = []
    for p in psutil.process_iter(["cmdline", "create_time"]):
        cmd = " ".join(p.info["cmdline"] or ())
        helper = "-I -S -c" in cmd or cmd.startswith("rm -rf --one-file-system")
        if (p.info["create_time"] >= since and "pytest-fsperf-" in cmd
                and "sys.stdin.buffer.read()" not in cmd and "pytest" not in cmd.split()[0:3]
                and (helpers or not helper)):
            found.append(cmd)
    return found


@pytest.mark.unit
def test_min_efficiency_is_a_share_of_the_store_or_of_each_ceiling_named():
    from pytest_fsperf.errors import UsageError
    from pytest_fsperf.plan.marker import build_plan

    plan = build_plan("t", [((), {"min_efficiency": "50%"})])
    (t,) = plan.thresholds
    assert plan.wants_ceilings and t.spec.metric == "efficiency" and t.limit == 50.0
    per = build_plan("t", [((), {"min_efficiency": {"store": "50%", "fuse": "40%"}})]).thresholds
    assert [(x.named, x.spec.metric, x.spec.label) for x in per] == [
        ("min_efficiency", "efficiency", "share of the store's ceiling"),
        ('min_efficiency["fuse"]', "efficiency:fuse", "share of the bindfs over tmpfs ceiling")]
    assert not build_plan("t", [((), {"min_bw": "1MB/s"})]).wants_ceilings
    with pytest.raises(UsageError, match=r"^t: fsperf marker min_efficiency: 'disk' is not a "
                                         r"ceiling \(known: store, fuse, tmpfs\)$"):
        build_plan("t", [((), {"min_efficiency": {"disk": "50%"}})])
    with pytest.raises(UsageError, match=r"min_efficiency\['fuse'\]: '0.4' must be a "
                                         r"percentage such as '50%'"):
        build_plan("t", [((), {"min_efficiency": {"fuse": "0.4"}})])


@pytest.mark.unit
def test_shares_of_each_ceiling_per_round_and_why_one_is_missing():
    import dataclasses

    from pytest_fsperf.judge.thresholds import judge
    from pytest_fsperf.plan.marker import build_plan
    from pytest_fsperf.result.ceiling import Ceiling, missing
    from tests.test_rounds import result

    r = dataclasses.replace(result(200e6), rounds=({"bw": 150e6}, {"bw": 200e6}, {"bw": 250e6}),
                            ceilings=(Ceiling(CeilingPath.TMPFS, "tmpfs", 4e9),
                                      Ceiling(CeilingPath.FUSE, "bindfs over tmpfs", 1e9),
                                      missing(CeilingPath.STORE, "no object store behind this mount")))
    m = r.metrics()
    assert m["efficiency:fuse"] == pytest.approx(20.0) and m["efficiency:tmpfs"] == pytest.approx(5.0)
    assert m["efficiency"] is None
    assert r.values("efficiency:fuse") == pytest.approx([15.0, 20.0, 25.0])
    plan = build_plan("t", [((), {"min_efficiency": {"store": "50%", "fuse": "30%"}})])
    v = judge(plan, [r])
    assert v.failures == ["read: share of the bindfs over tmpfs ceiling 20% < "
                          'min_efficiency["fuse"] 30% (median of 3 rounds, 95% interval 15% to 25%)']
    assert v.notes == ["read: min_efficiency not judged (the store ceiling was not measured: no "
                       "object store behind this mount)"]
    bare = dataclasses.replace(r, ceilings=())
    assert judge(build_plan("t", [((), {"min_efficiency": "50%"})]), [bare]).notes == [
        "read: min_efficiency not judged (no ceilings were measured for it)"]


@pytest.mark.fuse
def test_min_efficiency_measures_the_ceilings_it_needs_and_judges_against_them(pytester):
    """A test with min_efficiency gets its ceilings without --fsperf-ceilings: bindfs over a
    disk reads well above 1% of the bindfs over tmpfs ceiling and below 10x tmpfs; the store
    share of bindfs is not judged (no store), and the report says why."""
    need("bindfs")
    need("fio")
    pytester.makepyfile("""
        from pytest_fsperf import fsperf

        @fsperf(min_efficiency={"store": "10%", "fuse": "1%"})
        def test_headroom(fsperf):
            fsperf.fio(name="lay", rw="write", bs="1M", size="32M", judged=False)
            fsperf.cold()
            fsperf.fio(name="read", rw="read", bs="1M", size="32M", direct=1)

        @fsperf(min_efficiency={"tmpfs": "1000%"})
        def test_faster_than_tmpfs(fsperf):
            fsperf.fio(name="lay", rw="write", bs="1M", size="32M", judged=False)
            fsperf.cold()
            fsperf.fio(name="read", rw="read", bs="1M", size="32M", direct=1)
    """)
    import json

    out = pytester.path / "r.json"
    result = pytester.runpytest("-p", "no:cacheprovider", "--fsperf-backend=bindfs",
                                f"--fsperf-json={out}")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(['read: share of the tmpfs ceiling *% < min_efficiency?"tmpfs"? 1000%'])
    rows = {(r["test"].split("::")[-1], r["name"]): r for r in json.loads(out.read_text())["results"]}
    headroom = rows[("test_headroom", "read")]
    assert headroom["verdict"] == "partial"
    assert headroom["not_judged"] == ["min_efficiency not judged (the store ceiling was not "
                                      "measured: no object store behind this mount known to the "
                                      "plugin (an endpoint and bucket))"]
    fuse = next(c for c in headroom["ceilings"] if c["path"] == "bindfs over tmpfs")
    assert headroom["stats"]["efficiency:fuse"]["median"] == pytest.approx(
        100 * headroom["total"]["bw_bytes"] / fuse["bw_bytes"])
    assert ours() == ([], [])


@pytest.mark.s3
def test_small_files_and_a_listing_on_s3fs_get_the_stores_ceilings_of_their_shape(pytester):
    """The small-file engine's ceiling: GETs of whole objects of its file size, its threads
    at once, straight to the MinIO behind the s3fs mount; fio's other ceilings are said to be
    for fio jobs only. The metadata engine's: a listing of as many objects as it lists, in
    entries per second. min_efficiency judges the store share of each."""
    import json

    need("s3fs")
    if find_minio() is None:
        pytest.skip("MinIO is not installed")
    pytester.makepyfile("""
        from pytest_fsperf import fsperf, fsperf_mount

        @fsperf_mount("s3fs")
        @fsperf(min_efficiency="1%")
        def test_files(fsperf, fsperf_s3):
            fsperf.files(name="read", mode="read", count=40, size="128KiB", threads=4)
            fsperf.meta(name="ls", op="list_stat", entries=200)
    """)
    out = pytester.path / "r.json"
    result = pytester.runpytest("-p", "no:cacheprovider", f"--fsperf-json={out}")
    result.assert_outcomes(passed=1)
    rows = {r["name"]: r for r in json.loads(out.read_text())["results"]}
    ls = rows["ls"]  # a listing's ceiling: the store's, in entries per second
    listing = ls["ceilings"][2]
    assert listing["how"] == ("obstore, LIST of a prefix of 200 objects, 1 listing at a time: "
                              "entries per second") and listing["bw_bytes"] == 0
    assert listing["ops"] > ls["total"]["ops_per_second"] > 0, (listing, ls["total"])
    assert ls["stats"]["efficiency"]["median"] == pytest.approx(
        100 * ls["total"]["ops_per_second"] / listing["ops"])
    row = rows["read"]
    tmpfs, fuse, store = row["ceilings"]
    assert tmpfs["unavailable"].startswith("measured for fio jobs only") and fuse["unavailable"]
    assert store["how"] == "obstore, GET 4 streams of 128 KiB parts (128 KiB objects)", store
    assert store["bw_bytes"] > row["total"]["bw_bytes"] > 0, (store, row["total"])
    assert row["stats"]["efficiency"]["median"] == pytest.approx(
        100 * row["total"]["bw_bytes"] / store["bw_bytes"])
    assert ours() == ([], [])


@pytest.mark.unit
def test_published_figures_are_scaled_to_this_store_only_where_the_document_states_its_network():
    from pytest_fsperf.ceilings.published import network_of, project
    from pytest_fsperf.result.ceiling import Ceiling

    assert network_of("ecs.g9i.48xlarge: 192 vCPU, 768 GiB, 64 Gbps") == 8e9
    assert network_of("ecs.g7.32xlarge: 128 vCPU, 512 GiB") is None
    found = {p.baseline: p for p in project("seq_read_1t", [Ceiling(CeilingPath.STORE, "obstore", 700e6)])}
    # document 001 (ossfs 2.0.4: 4.3 GB/s on 64 Gbps) is scaled; document 000 (2.0.0beta) is not
    assert found["ossfs-2.0.4"].here == pytest.approx(4.3e9 / 8e9 * 700e6)
    assert found["ossfs-2.0.4"].said() == (
        "ossfs-2.0.4: 4.30 GB/s documented = 54% of its 64 Gbps network; the same share of "
        "this store's ceiling: 376 MB/s here")
    assert found["ossfs-2.0.0beta"].said() == ("ossfs-2.0.0beta: 3.00 GB/s documented; not "
                                               "scaled: its document states no network bandwidth")
    assert project("seq_read_1t", [])[0].here is None  # no store ceiling: nothing to scale


@pytest.mark.unit
def test_a_listings_share_is_of_entries_per_second_not_of_bytes():
    import dataclasses

    from pytest_fsperf.result.ceiling import Ceiling
    from pytest_fsperf.result.parts import OpStats
    from tests.test_rounds import result

    listing = dataclasses.replace(
        result(0.0), kind="meta", read=None,
        ops=OpStats("list+stat", 1000, 0, 0.5, 2000.0, 0.0, 1, {}),
        ceilings=(Ceiling(CeilingPath.STORE, "obstore, LIST", 0.0, ops=8000.0),))
    assert listing.metrics()["efficiency"] == pytest.approx(25.0)  # 2000 of 8000 entries/s
    assert listing.values("efficiency") == pytest.approx([25.0])


@pytest.mark.unit
def test_the_fuse_ceiling_keeps_the_machines_memory_free_not_only_the_tmpfs(monkeypatch):
    """As found: /dev/shm's free space is all of RAM (24 GiB); a 20 GiB layout there took
    the machine into the OOM killer. A job that fits the tmpfs but not the memory available
    less its headroom is refused (the machine's memory stood in for: the rule, not RAM)."""
    import collections

    if not os.path.ismount("/dev/shm"):
        pytest.skip("no /dev/shm here")
    memory = collections.namedtuple("memory", "total available")
    monkeypatch.setattr(fuse_ceiling.psutil, "virtual_memory",
                        lambda: memory(total=24 << 30, available=20 << 30))
    assert fuse_ceiling.why_not({**READ, "size": "64M"}) == ""
    why = fuse_ceiling.why_not({**READ, "size": "1G", "numjobs": "15"})
    if "do not fit in /dev/shm" not in why:  # a tmpfs of 15 GiB or more: the memory speaks
        assert why == ("the job's files (15360 MiB) would take the machine's memory: "
                       "20480 MiB available, 6144 MiB kept free")
    assert "would take the machine's memory" in fuse_ceiling.why_not({**READ, "size": "15G"}) or \
        "do not fit" in fuse_ceiling.why_not({**READ, "size": "15G"})
