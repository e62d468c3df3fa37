"""The plugin as a user meets it, through pytester, on the embedded default (local disk)."""

from __future__ import annotations

import itertools
import json
import re

import jsonschema
import pytest

from pytest_fsperf.report.jsonout import schema
from tests.results import reads_back

pytestmark = pytest.mark.usefixtures("need_fio")


@pytest.fixture
def need_fio():
    from tests.conftest import need

    need("fio")


SMALL = 'rw="write", bs="1M", size="8M", direct=1'


def test_marker_registered_and_importable(pytester):
    result = pytester.runpytest("--markers")
    result.stdout.fnmatch_lines(["@pytest.mark.fsperf(**thresholds)*min_bw*"])
    from pytest_fsperf import fsperf

    assert fsperf.name == "fsperf"


def test_pass_and_fail_verdicts_in_the_test_and_the_summary(pytester):
    pytester.makepyfile(f"""
        from pytest_fsperf import fsperf

        @fsperf(min_bw="1kB/s")
        def test_ok(fsperf):
            r = fsperf.fio(name="seq_write", {SMALL})
            assert r.write.io_bytes == 8 * 2**20 and r.read is None

        @fsperf(min_bw="1000TB/s", max_p99="1ns")
        def test_too_slow(fsperf):
            fsperf.fio(name="seq_write", {SMALL})
    """)
    result = pytester.runpytest()
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.re_match_lines([
        r"seq_write: bandwidth [\d.]+ [GM]B/s < min_bw 1000TB/s",
        r"seq_write: p99 latency [\d.]+ \w+ > max_p99 1ns",
        r"=+ fsperf =+",
        r"test\s+workload\s+bandwidth\s+per second\s+IOPS or ops\s+p99 lat\s+daemon CPU\s+daemon peak mem\s+cache\s+verdict",
        r"test_ok\s+seq_write\s+[\d.]+ [GM]B/s .* no daemon\s+no daemon\s+-\s+pass",
        r"test_too_slow\s+seq_write .* FAIL",
        r"daemon figures missing: no daemon: \w+ is not a FUSE filesystem",
    ])
    assert "Traceback" not in result.stdout.str()


def test_json_follows_schema_and_matches_fio(pytester, tmp_path):
    pytester.makepyfile(f"""
        import json
        from pytest_fsperf import fsperf

        @fsperf(min_bw="1kB/s")
        def test_rw(fsperf):
            fsperf.fio(name="w", {SMALL})
            fsperf.cold()
            r = fsperf.fio(name="r", rw="read", bs="1M", size="8M", direct=1)
            fio_own = json.load(open(r.output_file))["jobs"][0]["read"]["bw_bytes"]
            assert r.read.bw_bytes == fio_own
    """)
    out = tmp_path / "res.json"
    result = pytester.runpytest(f"--fsperf-json={out}", "--junitxml=junit.xml")
    result.assert_outcomes(passed=1)
    doc = json.loads(out.read_text())
    jsonschema.validate(doc, schema())
    reads_back(doc)
    w, r = doc["results"]
    assert (w["name"], r["name"], r["cache"], w["cache"]) == ("w", "r", "cold: drop_caches", "warm")
    assert r["total"]["bw_bytes"] == r["raw"]["job"]["read"]["bw_bytes"]
    assert doc["environment"]["embedded_default"] is True
    junit = (pytester.path / "junit.xml").read_text()
    assert 'name="fsperf.r.bw_bytes"' in junit and 'name="fsperf.r.cache" value="cold: drop_caches"' in junit


def test_work_dir_is_removed_after_a_failing_test(pytester, tmp_path):
    mount = tmp_path / "mnt"
    mount.mkdir()
    (mount / "keep.txt").write_text("user data")
    pytester.makepyfile(f"""
        def test_fails(fsperf):
            fsperf.fio({SMALL})
            assert fsperf.workdir.parent.parent == __import__("pathlib").Path("{mount}")
            assert False, "boom"
    """)
    result = pytester.runpytest(f"--fsperf-mount={mount}", "--fsperf-plain-dir=1")
    result.assert_outcomes(failed=1)
    assert sorted(p.name for p in mount.iterdir()) == ["keep.txt"]
    assert (mount / "keep.txt").read_text() == "user data"


def test_scale_option_shrinks_sizes(pytester, tmp_path):
    pytester.makepyfile("""
        def test_scaled(fsperf):
            r = fsperf.fio(rw="write", bs="1M", size="1G", direct=1)
            assert r.options["size"] == str(16 * 2**20)
            assert r.write.io_bytes == 16 * 2**20
    """)
    pytester.makeini("[pytest]\nfsperf_scale = 0.015625\n")
    pytester.runpytest().assert_outcomes(passed=1)


@pytest.mark.parametrize(
    ("args", "ini", "message"),
    [
        (["--fsperf-scale=abc"], "", "--fsperf-scale=abc (command line): not a number"),
        ([], "fsperf_scale = -1", "fsperf_scale = -1 (ini file {ini}): must be a positive number"),
        (["--fsperf-mount=/no/such/dir"], "", "--fsperf-mount=/no/such/dir (command line): no such directory"),
        (["--fsperf-mount=/etc/hostname"], "", "(command line): not a directory"),
        (["--fsperf-daemon-pid=x"], "", "--fsperf-daemon-pid=x (command line): not a process ID"),
        (["--fsperf-daemon-pid=999999999"], "", "(command line): no such process"),
        (["--fsperf-json=/no/such/dir/r.json"], "", "directory /no/such/dir does not exist"),
    ],
)
def test_option_errors_name_their_source(pytester, args, ini, message):
    ini_path = pytester.makeini(f"[pytest]\n{ini}\n")
    pytester.makepyfile("def test_x(): pass")
    result = pytester.runpytest(*args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    (line,) = [ln for ln in result.stderr.lines if "pytest-fsperf:" in ln]
    assert line.startswith("ERROR: pytest-fsperf: --fsperf-") or line.startswith(
        "ERROR: pytest-fsperf: fsperf_")
    assert message.format(ini=ini_path) in line
    assert "Traceback" not in result.stderr.str()


@pytest.mark.parametrize(
    ("marker", "body", "message"),
    [
        ('min_bandwidth="1GB/s"', SMALL, "fsperf marker: unknown keyword 'min_bandwidth'"),
        ('max_rss="lots"', SMALL, "fsperf marker max_rss: 'lots' is not a number with a unit"),
        ('min_ops=100', SMALL, "fsperf marker min_ops: fio workloads do not measure ops/s"),
        ('min_bw="1kB/s"', None, "has fsperf thresholds but measured no judged workload"),
    ],
)
def test_marker_errors_name_test_and_keyword(pytester, marker, body, message):
    call = f"fsperf.fio({body})" if body else "pass"
    pytester.makepyfile(f"""
        import pytest

        @pytest.mark.fsperf({marker})
        def test_marked(fsperf):
            {call}
    """)
    result = pytester.runpytest()
    result.assert_outcomes(**({"errors": 1} if "unknown" in message or "lots" in message
                              else {"failed": 1}))
    result.stdout.re_match_lines([rf".*usage error: test_marker_errors_name_test_and_keyword\.py::test_marked: {re.escape(message)}"])
    assert "Traceback" not in result.stdout.str()


def test_fio_option_errors_fail_the_test_in_one_line(pytester):
    pytester.makepyfile("""
        def test_bad(fsperf):
            fsperf.fio(rw="read", filename="/etc/passwd")
    """)
    result = pytester.runpytest()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*fsperf.fio(): filename='/etc/passwd' would leave the test's work directory*"])


def test_fio_missing_is_one_line(pytester, monkeypatch, tmp_path):
    pytester.makepyfile("""
        def test_needs_fio(fsperf):
            fsperf.fio(rw="write", size="1M")

        def test_other():
            pass
    """)
    monkeypatch.setenv("PATH", str(tmp_path))
    result = pytester.runpytest()
    result.assert_outcomes(failed=1, passed=1)
    result.stdout.fnmatch_lines(["*fio is not installed: install the 'fio' package*"])
    assert "Traceback" not in result.stdout.str()


def test_thresholds_apply_to_every_judged_workload(pytester):
    pytester.makepyfile(f"""
        from pytest_fsperf import fsperf

        @fsperf(max_bw="1kB/s")
        def test_x(fsperf):
            fsperf.fio(name="prep", {SMALL}, judged=False)
            fsperf.fio(name="measured", {SMALL})
    """)
    result = pytester.runpytest()
    result.assert_outcomes(failed=1)
    text = result.stdout.str()
    assert "measured: bandwidth" in text and "prep: bandwidth" not in text


def test_xdist_never_overlaps_measured_tests(pytester, tmp_path):
    pytest.importorskip("xdist")
    log = tmp_path / "windows.txt"
    pytester.makepyfile(f"""
        import time
        import pytest

        @pytest.mark.parametrize("i", range(4))
        def test_measured(fsperf, i):
            t0 = time.monotonic()
            fsperf.fio(rw="write", bs="1M", size="4M")
            time.sleep(0.3)
            with open("{log}", "a") as f:
                f.write(f"{{t0}} {{time.monotonic()}}\\n")
    """)
    out = tmp_path / "r.json"
    result = pytester.runpytest("-n", "2", f"--fsperf-json={out}")
    result.assert_outcomes(passed=4)
    windows = sorted(tuple(map(float, line.split())) for line in log.read_text().splitlines())
    assert all(a_end <= b_start for (_, a_end), (b_start, _) in itertools.pairwise(windows))
    assert len(json.loads(out.read_text())["results"]) == 4
    result.stdout.re_match_lines([r"test_measured\[\d\]\s+write"])


def test_one_process_hands_its_rows_on_as_types(pytester, monkeypatch, tmp_path):
    """Marker to report in one pass: without xdist, no result is written to JSON and read
    back into its types (ResultRow.of) on the way to the reports; the file is still whole.
    With xdist (above) the worker's rows travel as JSON and are read on arrival."""
    from pytest_fsperf.result.document import ResultRow

    def refused(cls, doc):
        raise AssertionError("a result of this process was read back from its JSON")

    monkeypatch.setattr(ResultRow, "of", classmethod(refused))
    pytester.makepyfile("""
        from pytest_fsperf import fsperf

        @fsperf(min_bw="1B/s", tolerance="7%")
        def test_w(fsperf):
            fsperf.fio(rw="write", bs="1M", size="4M")
    """)
    out = tmp_path / "r.json"
    result = pytester.runpytest_inprocess(f"--fsperf-json={out}")
    result.assert_outcomes(passed=1)
    (row,) = json.loads(out.read_text())["results"]
    assert row["verdict"] == "pass" and row["limits"]["bw"]["text"] == "min_bw 1B/s"


@pytest.mark.parametrize(("marker", "decision"), [
    ("", "fsperf decision: NOTHING JUDGED: 1 workload: 0 failing, 0 inconclusive, 0 passed, "
         "1 not judged"),
    ('@fsperf(max_cpu="250%")', "fsperf decision: PARTIAL (max_cpu not judged (*)): 1 workload: "
                                "0 failing, 0 inconclusive, 0 passed, 1 passed in part, 0 not judged"),
    ('@fsperf(min_bw="1B/s")', "fsperf decision: PASS: 1 workload: 0 failing, 0 inconclusive, "
                               "1 passed, 0 not judged"),
])
def test_the_decision_says_what_was_decided(pytester, marker, decision):
    """As found: PASS when nothing was judged, and max_cpu on a directory without a FUSE
    daemon gave no message and counted as passed; then PARTIAL beside "1 passed, 0 not
    judged" (a bound not judged, counted as passed: the counts did not add up to it)."""
    pytester.makepyfile(f"""
        from pytest_fsperf import fsperf

        {marker}
        def test_w(fsperf):
            fsperf.fio(rw="write", bs="4k", size="64k")
    """)
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines([decision])
