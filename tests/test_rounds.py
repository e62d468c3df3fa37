"""Rounds: medians, spread, and verdicts that say inconclusive instead of guessing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_fsperf.judge import judge
from pytest_fsperf.plan.marker import build_plan
from pytest_fsperf.result.parts import IoStats
from pytest_fsperf.result.workload import WorkloadResult
from pytest_fsperf.vocab import Outcome
from tests.conftest import need

FAIL, INCONCLUSIVE, PASS = Outcome.FAIL, Outcome.INCONCLUSIVE, Outcome.PASS


def io(bw: float) -> IoStats:
    return IoStats(io_bytes=1, bw_bytes=bw, iops=1.0, total_ios=1, runtime_ms=1, lat_mean_ns=1.0,
                   lat_p50_ns=1.0, lat_p99_ns=1.0, lat_p999_ns=1.0, lat_kind="clat")


def result(*bws: float) -> WorkloadResult:
    rounds = tuple({"bw": b, "iops": 1.0, "daemon_cpu": None, "daemon_rss": None} for b in bws)
    return WorkloadResult(test="t", name="read", kind="fio", options={}, cache="warm",
                          daemon_cache="warm", read=io(sorted(bws)[len(bws) // 2]), write=None,
                          daemon=None, daemon_note="no daemon", wall_seconds=1.0,
                          tool_cpu_percent=0.0, rounds=rounds if len(bws) > 1 else ())


@pytest.mark.parametrize(("limit", "expected"), [("50MB/s", PASS), ("150MB/s", INCONCLUSIVE),
                                                 ("400MB/s", FAIL)])
def test_a_limit_inside_the_spread_is_inconclusive(limit, expected):
    r = result(100e6, 200e6, 300e6)
    assert r.metrics()["bw"] == 200e6
    v = judge(build_plan("t", [((), {"min_bw": limit})]), [r])
    assert v.per_workload["read"] == expected
    if expected == INCONCLUSIVE:
        (msg,) = v.inconclusive
        assert msg.startswith("read: min_bw 150MB/s inconclusive: bandwidth 200 MB/s (median of 3")
        assert not v.failures
    if expected == FAIL:
        assert "(median of 3 rounds, 95% interval 100 MB/s to 300 MB/s)" in v.failures[0]


def test_one_round_decides_on_its_value():
    v = judge(build_plan("t", [((), {"min_bw": "150MB/s"})]), [result(140e6)])
    assert v.per_workload["read"] == FAIL and not v.inconclusive


def test_stats_in_the_json_view():
    data = result(100e6, 200e6, 300e6).to_dict()
    st = data["stats"]["bw"]
    assert st["n"] == 3 and st["median"] == 200e6 and st["mad"] == 100e6
    assert st["ci_low"] == 100e6 and st["ci_high"] == 300e6
    assert data["total"]["bw_bytes"] == 200e6


@pytest.mark.parametrize("mode", ["fail", "warn"])
def test_inconclusive_fails_or_warns(pytester, mode):
    pytester.makepyfile("""
        from pytest_fsperf import fsperf
        from tests_helper import result

        @fsperf(min_bw="150MB/s")
        def test_x(fsperf):
            fsperf.results.append(result(100e6, 200e6, 300e6))
    """)
    pytester.makepyfile(tests_helper=Path(__file__).read_text())
    r = pytester.runpytest("-p", "no:cacheprovider", f"--fsperf-inconclusive={mode}")
    if mode == "fail":
        r.assert_outcomes(failed=1)
        r.stdout.fnmatch_lines(["*read: min_bw 150MB/s inconclusive: bandwidth 200 MB/s*"])
    else:
        r.assert_outcomes(passed=1, warnings=1)
        r.stdout.fnmatch_lines(["*PytestWarning: fsperf: read: min_bw 150MB/s inconclusive*"])
    r.stdout.re_match_lines([r"\S+\s+read\s+200 MB/s \[100-300 MB/s\].*INCONCLUSIVE"])


def test_rounds_and_warmup_on_a_real_run(pytester):
    need("fio")
    pytester.makepyfile("""
        import json

        def test_read(fsperf):
            fsperf.cold()
            r = fsperf.fio(rw="read", bs="1M", size="8M", direct=1)
            assert r.name == "read" and len(r.rounds) == 3
            assert "warm-up round run first and discarded (read.warmup)" in r.notes
            # the median round is a real fio run: its figures are fio's own
            fio_bw = json.load(open(r.output_file))["jobs"][0]["read"]["bw_bytes"]
            assert r.metrics()["bw"] == fio_bw == r.read.bw_bytes
            assert [x.name for x in fsperf.results] == ["read"]
    """)
    r = pytester.runpytest("-p", "no:cacheprovider", "--fsperf-rounds=3", "--fsperf-warmup=1")
    r.assert_outcomes(passed=1)
    r.stdout.fnmatch_lines(["*over 3 rounds: figures are medians*"])
    bad = pytester.runpytest("-p", "no:cacheprovider", "--fsperf-rounds=0")
    bad.stderr.fnmatch_lines(["*--fsperf-rounds=0 (command line): must be from 1 to 1000*"])


def test_ab_outcomes_follow_the_direction_of_each_figure():
    from pytest_fsperf.judge.comparison import compare, judge_metric
    from pytest_fsperf.vocab import Difference

    a = [result(100e6), result(101e6), result(99e6)]
    b = [result(50e6), result(51e6), result(49e6)]
    c = compare("t", "read", "rclone", (), ("--bwlimit", "50M"), a, b, "ABBAAB", 0.10)
    assert c.metrics["bw"].outcome == Difference.B_WORSE and c.metrics["bw"].ci_high < 1
    assert c.decided_by == "bw" and c.outcome == Difference.B_WORSE
    cpu = judge_metric("daemon_cpu_per_gb", [5.0, 5.1, 4.9], [8.0, 8.1, 7.9], 0.10)
    assert cpu.outcome == Difference.B_WORSE  # more CPU per GB is worse
    same = compare("t", "read", "rclone", (), (), a, a, "ABBAAB", 0.10)
    assert same.metrics["bw"].outcome == Difference.SAME
    assert same.to_dict()["metrics"]["bw"]["outcome"] == "same"  # plain words in JSON


@pytest.mark.unit
def test_a_cpu_figure_not_measured_is_null_with_its_reason_in_the_json():
    """As found: a read whose I/O ran under 0.5 s stored "cpu_percent": 0.0 beside
    "cpu_seconds": 0.07 (the table rightly showed '-'); a dashboard plots that as 0%."""
    import dataclasses

    import jsonschema

    from pytest_fsperf.report import jsonout
    from pytest_fsperf.result.daemon import DaemonStats

    daemon = DaemonStats(pid=7, wall_seconds=0.3, cpu_seconds=0.07, cpu_percent=0.0,
                         peak_rss_bytes=5 << 20, peak_rss_method="VmHWM", read_bytes=None,
                         write_bytes=None, cpu_window="I/O", cpu_window_seconds=0.3)
    short = dataclasses.replace(result(100e6), daemon=daemon).to_dict()
    assert short["daemon"]["cpu_percent"] is None
    assert short["daemon"]["cpu_percent_note"] == (
        "not measured: the I/O ran 0.3 s, under the 0.5 s that CPU time counted in 10 ms "
        "ticks needs")
    assert short["daemon"]["cpu_seconds"] == 0.07  # what was read stays
    long = dataclasses.replace(daemon, wall_seconds=3.0, cpu_window_seconds=3.0, cpu_percent=12.5)
    kept = dataclasses.replace(result(100e6), daemon=long).to_dict()
    assert kept["daemon"]["cpu_percent"] == 12.5 and "cpu_percent_note" not in kept["daemon"]
    whole = jsonout.schema()
    jsonschema.validate(json.loads(json.dumps(short["daemon"])), {**whole["$defs"]["DaemonStats"], "$defs": whole["$defs"]})


@pytest.mark.unit
def test_a_memory_bound_failed_on_what_the_daemon_held_before_says_so():
    """Issue 74.1: on a mount the plugin did not start (no fresh daemon), the failure line
    says what the daemon held as the window started and offers the window's own bound."""
    import dataclasses

    from pytest_fsperf.result.daemon import DaemonStats

    daemon = DaemonStats(pid=7, wall_seconds=3.0, cpu_seconds=0.3, cpu_percent=10.0,
                         peak_rss_bytes=574_000_000, peak_rss_method="VmHWM", read_bytes=None,
                         write_bytes=None, start_rss_bytes=562_000_000)
    r = dataclasses.replace(result(100e6), daemon=daemon)
    (said,) = judge(build_plan("t", [((), {"max_rss": "300MB"})]), [r]).failures
    assert said.startswith("read: daemon peak memory 574 MB > max_rss 300MB")
    assert "the daemon held 562 MB as the window started" in said and "max_rss_growth" in said
    fresh = dataclasses.replace(r, daemon=dataclasses.replace(daemon, start_rss_bytes=20_000_000))
    (plain,) = judge(build_plan("t", [((), {"max_rss": "300MB"})]), [fresh]).failures
    assert "held" not in plain
