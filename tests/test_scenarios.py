"""Scenarios, engines, suites and baselines, through pytester on the embedded default."""

from __future__ import annotations

import errno
import json
import os
import re
import shutil
from pathlib import Path

import pytest

from pytest_fsperf.engine.files import differs, file_names, list_files, run_files, sized
from pytest_fsperf.engine.meta import make_tree, run_meta, tree_paths
from pytest_fsperf.errors import MeasurementError
from pytest_fsperf.result.parts import OpStats
from pytest_fsperf.result.workload import WorkloadResult
from pytest_fsperf.scenarios import SCENARIOS
from pytest_fsperf.scenarios.juicefs import grade
from pytest_fsperf.scenarios.steps import ENGINES
from tests.conftest import need

pytestmark = pytest.mark.usefixtures("need_fio")


@pytest.fixture
def need_fio():
    need("fio")


# the compiled worker (a process: the fio tier) and threads of this process (pure logic)
GENERATORS = [pytest.param(True, marks=pytest.mark.fio, id="native"), pytest.param(False, id="python")]


@pytest.mark.parametrize("compiled", GENERATORS)
def test_small_file_engine_writes_and_reads_every_byte(tmp_path, compiled):
    if compiled:
        need("cc")
    paths = file_names(str(tmp_path), 50)
    w = run_files([(p, 200_000) for p in paths], write=True, threads=8, compiled=compiled)
    assert w.count == 50 and w.io_bytes == 50 * 200_000
    assert w.generator == ("native" if compiled else "python")
    assert all(os.path.getsize(p) == 200_000 for p in paths)
    r = run_files(sized(list_files(str(tmp_path))), write=False, threads=8, compiled=compiled)
    assert r.io_bytes == 50 * 200_000 and r.operation == "read files"
    assert r.bw_bytes == pytest.approx(r.io_bytes / r.seconds)
    ph = r.phases
    assert set(ph) == {"open", "first_byte", "full", "close"}
    assert ph["open"].p50_ns <= ph["first_byte"].p50_ns <= ph["full"].p50_ns
    assert ph["full"].max_ns >= ph["full"].p99_ns >= ph["full"].p50_ns > 0


@pytest.mark.parametrize("compiled", GENERATORS)
def test_small_file_engine_counts_what_failed_and_goes_on(tmp_path, compiled):
    """Issue 72.4: every failed operation counted by operation and errno, the first said
    whole, the other files done (what the application saw, as a figure)."""
    if compiled:
        need("cc")
    good = [(str(tmp_path / f"{i}.dat"), 1000) for i in range(6)]
    for p, size in good:
        Path(p).write_bytes(b"x" * size)
    missing = [(str(tmp_path / f"gone{i}"), 10) for i in range(3)]
    (tmp_path / "adir").mkdir()
    r = run_files([*good[:3], *missing, (str(tmp_path / "adir"), 10), *good[3:]], write=False,
                  threads=2, compiled=compiled)
    assert r.errors == {"open ENOENT": 3, "open EINVAL": 1}, r.errors
    assert r.failed == 4 and r.count == 6 and r.io_bytes == 6000
    assert re.fullmatch(r".*/(gone\d|adir): .+", r.first_error), r.first_error
    assert len(r.phases["open"].__dict__) and r.generator == ("native" if compiled else "python")


@pytest.mark.fio
def test_the_compiled_worker_moves_what_it_lists_and_times_each_file(tmp_path):
    """Short files (read to their end, not past it), the first call's size, a file per
    thread and more threads than files; the worker is built once into a private directory."""
    from pytest_fsperf.engine import native
    from pytest_fsperf.infra import trust

    need("cc")
    found, why = native.worker()
    assert found is not None, why
    assert not trust.untrusted(found.path) and os.stat(native.CACHE).st_mode & 0o077 == 0
    sizes = [0, 1, 4095, 1 << 20, (1 << 20) + 1, 3 << 20]
    files = [(str(tmp_path / f"{i}.dat"), n) for i, n in enumerate(sizes)]
    pattern = os.urandom(1 << 20)
    seconds, moved, times, _failed = native.run(files, pattern, 16, 1 << 20)
    assert moved == sum(sizes) and [os.path.getsize(p) for p, _n in files] == sizes
    assert differs(files, 1 << 20, pattern) is None  # what it wrote, read back
    with open(files[-1][0], "r+b") as f:  # one byte of the last file's second MiB changed
        f.seek((1 << 20) + 7)
        byte = f.read(1)
        f.seek((1 << 20) + 7)
        f.write(bytes([byte[0] ^ 0xFF]))
    assert differs(files, 1 << 20, pattern) == f"{files[-1][0]}: differs from byte {(1 << 20) + 7}"
    assert len(times) == len(files) and all(t[0] <= t[2] and t[1] <= t[2] for t in times)
    listed = [(p, n + 100) for p, n in files]  # listed longer than they are: read to the end
    seen: list[int] = []
    seconds, moved, times, _failed = native.run(listed, None, 3, 1, seen.append)
    assert moved == sum(sizes) and seen and seconds > 0
    # a FIFO at a file's name (a store may present one): said at once, never waited on, by the
    # read-back, the reader and the writer
    os.unlink(files[0][0])
    os.mkfifo(files[0][0])
    assert differs(files, 1 << 20, pattern) == f"{files[0][0]}: not a regular file"
    for writing in (None, pattern):  # counted as what the application saw (issue 72.4)
        # read: opened, then not a regular file; written: no reader behind the FIFO (ENXIO)
        number = errno.ENXIO if writing else errno.EINVAL
        *_, failed = native.run(files[:1], writing, 1, 1 << 20)
        assert [(op, n) for op, n, _said in failed] == [("open", number)], failed
        assert files[0][0] in failed[0][2]
        r = run_files(files[:1], write=writing is not None, threads=1, compiled=False)
        assert r.errors == {f"open {errno.errorcode[number]}": 1}, r.errors  # the Python engine
        assert files[0][0] in r.first_error


def test_without_the_compiled_worker_the_result_says_why(tmp_path, monkeypatch):
    from pytest_fsperf.engine import native

    native.worker.cache_clear()
    monkeypatch.setenv("FSPERF_NATIVE", "0")
    try:
        r = run_files([(str(tmp_path / "a"), 10)], write=True, threads=1)
    finally:
        native.worker.cache_clear()
    assert r.generator == "python (the compiled worker is off (FSPERF_NATIVE=0))"


def test_metadata_engine_counts_entries(tmp_path):
    make_tree(str(tmp_path / "flat"), 120)
    make_tree(str(tmp_path / "deep"), 120, per_dir=50)
    assert run_meta("list", str(tmp_path / "flat")).count == 120
    assert run_meta("list_stat", str(tmp_path / "flat")).count == 120
    assert run_meta("walk", str(tmp_path / "deep")).count == 120 + 3  # files + 3 directories
    st = run_meta("stat", "", tree_paths(str(tmp_path / "deep"), 120, 50))
    assert st.count == 120 and st.phases["op"].p99_ns > 0
    with pytest.raises(ValueError, match="unknown metadata operation"):
        run_meta("du", str(tmp_path))


def test_a_listing_that_misses_laid_out_entries_is_not_a_figure(tmp_path):
    """rclone over MinIO lost 259 of 1000 new empty files across the cold remount (their
    uploads not yet queued when it was stopped) and `ls -l of 1,000 files` was timed on 259.
    A listing that sees fewer entries than were laid out fails, naming the shortfall."""
    from pytest_fsperf.engine.meta import expected_entries

    make_tree(str(tmp_path / "flat"), 10)
    make_tree(str(tmp_path / "deep"), 10, per_dir=4)
    assert [expected_entries(op, 10, 4) for op in ("list", "walk", "stat")] == [3, 13, 10]
    assert run_meta("walk", str(tmp_path / "deep"), expected=13).count == 13
    os.unlink(tmp_path / "flat" / "f3")
    with pytest.raises(MeasurementError, match="list_stat saw 9 of the 10 entries laid out"):
        run_meta("list_stat", str(tmp_path / "flat"), expected=10)


def _ops_result(scenario: str, **ops: object) -> WorkloadResult:
    stats = OpStats(**{"operation": "x", "io_bytes": 0, "bw_bytes": 0.0, "phases": {}, **ops})
    return WorkloadResult(test="t", name=scenario, kind="files", options={}, cache="warm",
                          daemon_cache="warm", read=None, write=None, daemon=None, daemon_note="",
                          wall_seconds=1.0, tool_cpu_percent=0.0, ops=stats)


def test_juicefs_bench_grades_with_its_own_ranges():
    # 1 thread writes one 1 GiB file in 4 s: 256 MiB/s (> 200 green), 4 s/file (< 10 green)
    big = _ops_result("jfs_bench_big_write", count=1, seconds=4.0, per_second=0.25,
                      bw_bytes=2**30 / 4, threads=1, io_bytes=2**30)
    assert grade("jfs_bench_big_write", big) == "juicefs bench: 256.00 MiB/s green, 4.00 s/file green"
    # 4 threads, 400 small files in 5 s: 80 files/s, between 12.5*4 and 20*4 -> yellow;
    # 5000 ms / 100 files per thread = 50 ms/file -> not < 50 -> yellow
    small = _ops_result("jfs_bench_small_write", count=400, seconds=5.0, per_second=80.0, threads=4)
    assert grade("jfs_bench_small_write", small) == (
        "juicefs bench: 80.00 files/s yellow, 50.00 ms/file yellow")
    slow = _ops_result("jfs_bench_stat", count=100, seconds=10.0, per_second=10.0, threads=1)
    assert grade("jfs_bench_stat", slow).endswith("10.00 files/s red, 100.00 ms/file red")


def test_every_scenario_has_a_measured_last_step():
    for sc in SCENARIOS.values():
        assert sc.source and sc.title
        if sc.unavailable:  # its figures ship for reference; running it is one line
            assert not sc.steps, sc.id
            continue
        assert sc.steps[-1].engine in ("fio", *ENGINES), sc.id


def test_a_scenario_one_machine_cannot_measure_says_so(pytester):
    pytester.makepyfile("""
        def test_x(fsperf):
            fsperf.scenario("fluid_cross_node_read")
    """)
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*fsperf.scenario('fluid_cross_node_read'): fluid_cross_node_read "
                                 "cannot run here: the reader must run on another node than the "
                                 "cache; one machine cannot measure it*"])


@pytest.mark.parametrize("suite", ["ossfs2", "fluid", "juicefs_bench", "ossfs1"])
def test_suites_run_on_the_embedded_default(pytester, suite):
    out = pytester.path / "r.json"
    result = pytester.runpytest("-p", "no:cacheprovider", "--pyargs", f"pytest_fsperf.suites.{suite}",
                                "--fsperf-scale=0.0005", f"--fsperf-json={out}")
    assert result.ret == 0, result.stdout.str()
    doc = json.loads(out.read_text())
    judged = [r for r in doc["results"] if r["judged"]]
    assert {r["scenario"] for r in judged} == {r["baseline_key"] for r in judged}
    assert all(r["scenario"] in SCENARIOS for r in judged)
    if suite == "juicefs_bench":
        graded = [r for r in judged if r["scenario"].startswith("jfs_bench")]
        assert len(graded) == 5 and all(r["notes"][0].startswith("juicefs bench: ") for r in graded)
    if suite == "ossfs2":
        (read,) = [r for r in judged if r["scenario"] == "smallfile_read_128t"]
        assert read["ops"]["threads"] == 128 and read["cache"].startswith("cold")
        assert read["ops"]["count"] == 50  # 100,000 x 0.0005


def test_baseline_ratio_shown_then_gated(pytester):
    """A shipped baseline at another scale than the document's (1): labelled in every
    report, neither a pass nor a fail under --fsperf-gate=baseline unless asked."""
    pytester.makepyfile("""
        from pytest_fsperf import fsperf

        @fsperf(baseline="ossfs-2.0.4", tolerance="10%")
        def test_write(fsperf):
            fsperf.scenario("seq_write_1t", rate="20m")  # far below any documented figure
    """)
    result = pytester.runpytest("-p", "no:cacheprovider", "--fsperf-scale=0.0005")
    result.assert_outcomes(passed=1)
    result.stdout.re_match_lines([
        r"baseline ossfs-2.0.4: measured / documented, shown, not gated.*",
        r"\s+ossfs-2.0.4: documented at full scale on ecs.g9i.48xlarge: 192 vCPU.*scale 0.0005.*",
        r"\s+test_write\s+seq_write_1t\s+bw\s+\S+ MB/s\s+2.20 GB/s\s+0\.\d\d\s+"
        r"scale 0.0005, documented at 1: not judged"])
    cpus, kernel = os.cpu_count(), os.uname().release
    result.stdout.fnmatch_lines([f"*ossfs-2.0.4: documented at full scale on *; measured here at "
                                 f"scale 0.0005 ({cpus} CPUs here, 192 vCPU documented; * GiB here, "
                                 f"768 GiB documented; kernel {kernel} here, "
                                 "5.10.134-18.al8.x86_64 documented)*documented with "
                                 "upload_buffer_size=33554432, not seen on this daemon's command "
                                 "line or mount options*"])
    out = {k: pytester.path / f"r.{k}" for k in ("json", "md", "html")}
    gated = ["-p", "no:cacheprovider", "--fsperf-scale=0.0005", "--fsperf-gate=baseline",
             "--fsperf-baseline=goofys-0.24.0", f"--fsperf-json={out['json']}",
             f"--fsperf-markdown={out['md']}", f"--fsperf-html={out['html']}"]
    result = pytester.runpytest(*gated)
    result.assert_outcomes(passed=1)  # not judged: neither passed nor failed on the baseline
    assert "ossfs-2.0.4" not in result.stdout.str()  # the command line's baseline wins
    note = "scale 0.0005, documented at 1: not judged"
    assert note in out["md"].read_text() and note in out["html"].read_text()
    (row,) = json.loads(out["json"].read_text())["results"]
    assert {c["note"] for c in row["baseline_checks"]} == {note}
    assert {c["ok"] for c in row["baseline_checks"]} == {None}
    result = pytester.runpytest(*gated, "--fsperf-baseline-any-scale=1")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*seq_write_1t: bandwidth * < 90% of goofys-0.24.0's 450 MB/s*",
                                 "*seq_write_1t*below; scale 0.0005, documented at 1: judged "
                                 "(--fsperf-baseline-any-scale)*"])


def test_save_a_baseline_then_gate_on_it(pytester):
    pytester.makepyfile("""
        def test_read(fsperf):
            fsperf.scenario("jfs_fio_seq_read")
    """)
    result = pytester.runpytest("-p", "no:cacheprovider", "--fsperf-scale=0.002",
                                "--fsperf-save-baseline=mine")
    result.assert_outcomes(passed=1)
    saved = pytester.path / ".fsperf" / "baselines" / "mine.json"
    result.stdout.fnmatch_lines([f"fsperf baseline saved: {saved}"])
    data = json.loads(saved.read_text())
    assert data["scale"] == 0.002 and data["kernel"] == os.uname().release
    assert set(data["entries"]) == {"jfs_fio_seq_read"}
    bw = data["entries"]["jfs_fio_seq_read"]["bw"]["value"]
    assert bw > 0
    # A later run gates on it: a made-up 1000x better saved figure must fail the gate.
    data["entries"]["jfs_fio_seq_read"]["bw"]["value"] = bw * 1000
    saved.write_text(json.dumps(data))
    result = pytester.runpytest("-p", "no:cacheprovider", "--fsperf-scale=0.002",
                                "--fsperf-baseline=mine", "--fsperf-gate=baseline")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*jfs_fio_seq_read: bandwidth * < 90% of mine's *"])


@pytest.mark.parametrize(("args", "marker", "message"), [
    (["--fsperf-baseline=nope"], "", "*--fsperf-baseline=nope (command line): unknown baseline 'nope'*"),
    (["--fsperf-gate=always"], "", "*--fsperf-gate=always (command line): must be 'none' or 'baseline'*"),
    (["--fsperf-save-baseline=a/b"], "", "*--fsperf-save-baseline=a/b (command line): a name of*"),
    ([], 'tolerance="150%"', "*tolerance must be from 0% to below 100%*"),
])
def test_baseline_usage_errors(pytester, args, marker, message):
    pytester.makepyfile(f"""
        from pytest_fsperf import fsperf

        @fsperf({marker})
        def test_x(fsperf):
            fsperf.scenario("seq_write_1t")
    """)
    result = pytester.runpytest("-p", "no:cacheprovider", "--fsperf-scale=0.0005", *args)
    (result.stderr if args else result.stdout).fnmatch_lines([message])
    assert "Traceback" not in result.stdout.str() + result.stderr.str()


def test_unknown_scenario_and_engine_arguments(pytester):
    pytester.makepyfile("""
        def test_bad_id(fsperf):
            fsperf.scenario("seq_wrte_1t")

        def test_bad_override(fsperf):
            fsperf.scenario("seq_write_1t", colour="red")

        def test_bad_files(fsperf):
            fsperf.files(mode="append")

        def test_bad_meta(fsperf):
            fsperf.meta(colour="red")
    """)
    result = pytester.runpytest("-p", "no:cacheprovider", "--fsperf-scale=0.0005")
    result.assert_outcomes(failed=4)
    result.stdout.fnmatch_lines([
        "*unknown scenario 'seq_wrte_1t' (known: *",
        "*usage error: *'colour' is not a fio job option pytest-fsperf passes on*",
        "*mode='append' must be 'read', 'write' or 'hold'*",
        "*fsperf.meta(): unknown parameter 'colour' (takes op, entries, per_dir)*"])


SYSBENCH_OUT = """
Latency histogram (values are in milliseconds)
       value  ------------- distribution ------------- count
       0.010 |****************************************  90
       0.100 |***                                       9
       2.000 |*                                         1

File operations:
    reads/s:                      60.00
    writes/s:                     40.00
    fsyncs/s:                     0.00

Throughput:
    read, MiB/s:                  0.94
    written, MiB/s:               0.62

General statistics:
    total time:                          1.0000s
    total number of events:              100

Latency (ms):
         min:                                    0.00
         avg:                                    0.04
         max:                                    2.00
         99th percentile:                        2.00
         sum:                                    4.00
"""


def test_sysbench_output_parsed_with_its_histogram():
    from pytest_fsperf.engine.sysbench import parse

    s = parse(SYSBENCH_OUT, "rndrw", 2)
    assert s.count == 100 and s.seconds == 1.0 and s.per_second == 100.0
    assert s.bw_bytes == pytest.approx((0.94 + 0.62) * 2**20)
    op = s.phases["op"]
    assert op.p50_ns == pytest.approx(10_000) and op.p99_ns == pytest.approx(100_000)
    assert op.mean_ns == pytest.approx(40_000) and op.max_ns == pytest.approx(2_000_000)


@pytest.mark.parametrize("installed", [True, False])
def test_sysbench_scenario_or_its_fio_stand_in(pytester, monkeypatch, installed):
    import pytest_fsperf.engine.sysbench as sb

    if installed and shutil.which("sysbench") is None:
        pytest.skip("sysbench is not installed (apt-get install sysbench)")
    if not installed:
        monkeypatch.setattr(sb, "binary", lambda: None)  # the run is in-process
    pytester.makepyfile("""
        def test_rndrw(fsperf):
            r = fsperf.scenario("sysbench_rndrw")
            assert r.scenario == "sysbench_rndrw" and r.cache.startswith("cold")
            print("KIND", r.kind, r.notes)
    """)
    result = pytester.runpytest("-p", "no:cacheprovider", "--fsperf-scale=0.001", "-s")
    result.assert_outcomes(passed=1)
    if installed:
        result.stdout.fnmatch_lines(["*KIND sysbench ()"])
    else:
        result.stdout.fnmatch_lines(
            ["*KIND fio ('sysbench is not installed: run as the equivalent fio job',)"])


def test_time_to_first_byte_is_its_own_figure_and_threshold(pytester, bindfs):
    """ttfb_1k_cold at a tiny scale on bindfs: open + a 1-byte first read per file, then the
    rest; the first byte comes back before the whole MiB does, for every one of the files."""
    m = bindfs()
    pytester.makepyfile("""
        from pytest_fsperf import fsperf

        @fsperf(max_ttfb="10s")
        def test_ttfb(fsperf):
            r = fsperf.scenario("ttfb_1k_cold")
            first, full = r.ops.phases["first_byte"], r.ops.phases["full"]
            assert r.ops.count == 20 and r.ops.io_bytes == 20 * 2**20
            assert first.p50_ns < full.p50_ns and first.p99_ns <= full.p99_ns * 1.5
            assert r.metrics()["ttfb_p99"] == first.p99_ns

        @fsperf(max_ttfb="1ns")
        def test_too_slow(fsperf):
            fsperf.scenario("ttfb_1k_cold")
    """)
    result = pytester.runpytest("-p", "no:cacheprovider", f"--fsperf-mount={m.point}",
                                "--fsperf-scale=0.02")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*ttfb_1k_cold: p99 time to first byte * > max_ttfb 1ns*"])


@pytest.mark.parametrize("where", ["embedded", "bindfs"])
def test_a_checkpoint_is_saved_durably_and_restored_cold(pytester, bindfs, where):
    """checkpoint_save and checkpoint_restore at scale 0.004 (8 shards of 4 MiB): the bytes
    written equal the shards' sizes on disk, under their final names, no temporary left."""
    args = ["--fsperf-scale=0.004"]
    if where == "bindfs":
        args.append(f"--fsperf-mount={bindfs().point}")
    pytester.makepyfile("""
        import os

        def test_ckpt(fsperf):
            saved = fsperf.scenario("checkpoint_save")
            folder = os.path.join(str(fsperf.workdir), "checkpoint")
            names = sorted(os.listdir(folder))
            assert names == [f"shard-{i:05d}-of-00008.bin" for i in range(8)], names
            on_disk = sum(os.path.getsize(os.path.join(folder, n)) for n in names)
            assert saved.ops.io_bytes == on_disk == 8 * int(2**30 * 0.004)
            assert set(saved.ops.phases) == {"write", "fsync", "close", "rename"}
            restored = fsperf.scenario("checkpoint_restore")
            assert restored.ops.io_bytes == on_disk and restored.cache.startswith("cold")
    """)
    result = pytester.runpytest("-p", "no:cacheprovider", *args)
    result.assert_outcomes(passed=1)


@pytest.mark.parametrize("where", ["embedded", "bindfs"])
def test_mdtest_phases_count_what_is_really_there(pytester, bindfs, where):
    """fsperf.mdtest at scale 0.1 (100 files of 4 KiB in directories of 25): each phase is a
    result in ops/s; after create the files are there (counted apart from the engine), after
    rename under their new names, after remove none."""
    args = ["--fsperf-scale=0.1"]
    if where == "bindfs":
        args.append(f"--fsperf-mount={bindfs().point}")
    pytester.makepyfile("""
        import os
        from pytest_fsperf import fsperf

        def count(root):
            return sum(len(fs) for _d, _ds, fs in os.walk(root))

        @fsperf(min_ops=1)
        def test_md(fsperf, monkeypatch):
            from pytest_fsperf.engine import mdtest
            root = os.path.join(str(fsperf.workdir), "mdtest")
            seen = {}
            real = mdtest.phase_run

            def watched(phase, *args):
                run = real(phase, *args)
                def counted():
                    stats = run()
                    seen[phase] = (count(root), sum(f.endswith(".mv") for _d, _ds, fs in os.walk(root) for f in fs))
                    return stats
                return counted

            monkeypatch.setattr(mdtest, "phase_run", watched)
            found = fsperf.mdtest(files=1000, per_dir=25, threads=4, size="4KiB")
            phases = found.phases()
            assert list(phases) == ["create", "stat", "read", "rename", "rename_dir", "remove"]
            assert found.rename_dir is phases["rename_dir"] and found.create is phases["create"]
            assert seen["create"] == (100, 0) and seen["rename"] == (100, 100)
            assert seen["remove"] == (0, 0) and not os.path.exists(root)
            assert phases["create"].ops.count == 100 == phases["stat"].ops.count
            assert phases["read"].ops.io_bytes == 100 * 4096
            assert phases["rename_dir"].ops.count == 4
            assert all(r.ops.per_second > 0 for r in phases.values())
    """)
    result = pytester.runpytest("-p", "no:cacheprovider", *args)
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*mdtest_create*", "*mdtest_remove*"])


def test_ml_scenarios_run_at_a_tiny_scale(pytester, bindfs):
    """ml_epoch_shuffled reads every file once, in an order that is not the listing's;
    ml_shard_random_chunks reads 4 MiB chunks at random offsets (fio's own figures)."""
    m = bindfs()
    pytester.makepyfile("""
        def test_epoch(fsperf):
            r = fsperf.scenario("ml_epoch_shuffled")
            assert r.ops.count == 10 and r.ops.io_bytes == 10 * 128 * 1024
            assert r.options["order"] == "shuffled" and r.cache.startswith("cold")

        def test_chunks(fsperf):
            r = fsperf.scenario("ml_shard_random_chunks")
            assert r.read.total_ios > 0 and r.read.io_bytes == r.read.total_ios * 4 * 2**20
    """)
    result = pytester.runpytest("-p", "no:cacheprovider", f"--fsperf-mount={m.point}",
                                "--fsperf-scale=0.001")
    result.assert_outcomes(passed=2)


@pytest.mark.unit
def test_mdtest_has_no_directory_rename_without_directories():
    from pytest_fsperf.engine import mdtest

    assert "rename_dir" in mdtest.phases(25)
    assert mdtest.phases(0) == ("create", "stat", "read", "rename", "remove")


@pytest.mark.integration
def test_fluid_read_compares_each_job_with_the_documents_per_job_figures(pytester):
    """Document 003's fio commands have no --group_reporting: its "13.1MB/s-13.2MB/s" is the
    min-max of the 8 jobs' own bandwidths. A Fluid suite run on a real mount reports each
    job and compares the slowest and fastest with that range; the total is shown too."""
    need("bindfs")
    need("fio")
    out = pytester.path / "r.json"
    result = pytester.runpytest("-p", "no:cacheprovider", "--pyargs", "pytest_fsperf.suites.fluid",
                                "-k", "fluid_cold_read", "--fsperf-backend=bindfs",
                                "--fsperf-scale=0.001", "--fsperf-baseline=fluid-hpfs-unaccelerated",
                                f"--fsperf-json={out}")
    result.assert_outcomes(passed=1)
    doc = json.loads(out.read_text())
    (row,) = [r for r in doc["results"] if r.get("scenario") == "fluid_cold_read"]
    jobs = row["jobs"]
    assert len(jobs) == 8
    each = [j["read"]["bw_bytes"] for j in jobs]
    assert row["read"]["io_bytes"] == sum(j["read"]["io_bytes"] for j in jobs)
    (bw,) = [c for c in row["baseline_checks"] if c["metric"] == "bw"]
    assert bw["per"] == "job" and bw["measured"] == min(each) and bw["measured_high"] == max(each)
    assert bw["documented"] == 13.1e6 and bw["high"] == 13.2e6
    assert bw["ratio"] == pytest.approx(min(each) / 13.1e6)
    assert any(n.startswith("8 jobs reported apart: per job ") for n in row["notes"])
    result.stdout.re_match_lines([r".*fluid_cold_read\s+bw\s+\S+ [GMk]B/s to \S+ [GMk]B/s per job\s+"
                                  r"13.1 MB/s to 13.2 MB/s per job\s+\d+\.\d\d\s+scale 0.001, "
                                  r"documented at 1: not judged"])


def test_a_condition_that_differs_from_the_documents_is_named_next_to_the_ratio(pytester):
    pytester.makepyfile("""
        def test_default(fsperf):
            fsperf.scenario("jfs_fio_seq_write")

        def test_psync(fsperf):
            fsperf.scenario("jfs_fio_seq_write", ioengine="psync")
    """)
    out = pytester.path / "r.json"
    result = pytester.runpytest("-p", "no:cacheprovider", "--fsperf-scale=0.002",
                                "--fsperf-baseline=juicefs-0.17-dev", f"--fsperf-json={out}")
    result.assert_outcomes(passed=2)
    notes = {r["test"].rsplit("::", 1)[1]: {c["note"] for c in r["baseline_checks"]}
             for r in json.loads(out.read_text())["results"]}
    assert notes["test_default"] == {"scale 0.002, documented at 1: not judged"}
    assert notes["test_psync"] == {"scale 0.002, documented at 1: not judged; measured with "
                                   "psync, documented with libaio"}
    result.stdout.fnmatch_lines(["*test_psync*jfs_fio_seq_write*measured with psync, documented "
                                 "with libaio*"])


def test_the_report_says_how_a_compared_scenario_differs_from_its_document(pytester):
    pytester.makepyfile("""
        def test_small(fsperf):
            fsperf.scenario("smallfile_read_128t")
    """)
    result = pytester.runpytest("-p", "no:cacheprovider", "--fsperf-scale=0.0005",
                                "--fsperf-baseline=ossfs-2.0.4")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*smallfile_read_128t differs: the page cache is dropped and the "
                                 "mount restarted before every round; the document drops caches "
                                 "once, runs 5 times back to back and reports the steady run"])


@pytest.mark.slow
@pytest.mark.integration
def test_an_ab_is_checked_against_a_documented_gain(pytester):
    """Document 002's relative figures (ls with -o readdir_optimize: 74.3% less time, 3.9x)
    ship as a relative baseline; an A/B of the user's own is checked against it. Here B adds
    an option that changes nothing: B/A near 1 is a smaller gain than documented, shown, and
    a failure under --fsperf-gate=baseline."""
    need("bindfs")
    pytester.makepyfile("""
        from pytest_fsperf import fsperf_mount

        @fsperf_mount("bindfs")
        def test_ls(fsperf):
            ab = fsperf.compare(lambda fs: fs.meta(op="list_stat", entries=1000), a=[],
                                b=["--multithreaded"], rounds=3, max_rounds=6,
                                expect="ossfs-1.91-options:readdir_optimize_ls")
            assert ab.expectation.expected > 3.8
            assert ab.expectation.outcome in ("smaller gain than documented", "inconclusive")
    """)
    out = pytester.path / "r.json"
    result = pytester.runpytest("-p", "no:cacheprovider", "--fsperf-settle=off",
                                f"--fsperf-json={out}")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*documented gain ossfs-1.91-options:readdir_optimize_ls: B/A *x*"
                                 "documented 3.89x (74.3% less time, ossfs 1.91+ with -o "
                                 "readdir_optimize against ossfs 1.91+ without -o readdir_optimize)*"])
    (c,) = json.loads(out.read_text())["comparisons"]
    assert c["expectation"]["entry"] == "readdir_optimize_ls"
    if c["expectation"]["outcome"] == "smaller gain than documented":
        result = pytester.runpytest("-p", "no:cacheprovider", "--fsperf-gate=baseline")
        result.assert_outcomes(failed=1)
        result.stdout.fnmatch_lines(["*ossfs-1.91-options:readdir_optimize_ls: B/A *: smaller gain "
                                     "than documented*"])
    pytester.makepyfile(test_bad="""
        from pytest_fsperf import fsperf_mount

        @fsperf_mount("bindfs")
        def test_bad(fsperf):
            fsperf.compare(dict(rw="read", bs="1M", size="1M"), b=["--multithreaded"],
                           expect="ossfs-1.91-options:nope")
    """)
    result = pytester.runpytest("-p", "no:cacheprovider", "test_bad.py")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*expect='ossfs-1.91-options:nope': ossfs-1.91-options has no "
                                 "relative entry 'nope' (has: direct_read, *"])
