"""Saved runs and comparisons: fingerprints, outcomes with their statistics."""

from __future__ import annotations

import json
import math
import os
import random

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pytest_fsperf.judge import runs
from pytest_fsperf.saved.runs import SavedResult
from pytest_fsperf.vocab import RunOutcome
from tests.conftest import need


def res(values, **fp):
    fingerprint = {"workload": "w", "scale": 1.0, "fs": "fuse", "mount_options": "x", "kernel": "k",
                   "machine": "m", **fp}
    return {"test": "t", "name": "w", "total": {"io_bytes": 1, "bw_bytes": sorted(values)[len(values) // 2]},
            "rounds": [{"bw": v} for v in values] if len(values) > 1 else [],
            "fingerprint": fingerprint}


OLD = [100.0, 101.0, 99.0, 100.5, 99.5]


def compare(run, key, old, new, tolerance, history=None):
    """runs.compare of saved results given as their JSON (read into their type here)."""
    return runs.compare(run, key, SavedResult.of(old), SavedResult.of(new), tolerance,
                        [(n, SavedResult.of(r)) for n, r in history] if history else None)


@pytest.mark.parametrize(("new", "outcome"), [
    ([89.0, 90.0, 91.0, 90.5, 89.5], RunOutcome.REGRESSION),      # 10% slower, tight: significant
    ([111.0, 112.0, 110.0, 111.5, 110.5], RunOutcome.IMPROVEMENT),
    ([99.0, 100.0, 101.0, 100.2, 99.8], RunOutcome.PASS),
    ([60.0, 140.0, 95.0, 70.0, 130.0], RunOutcome.INCONCLUSIVE),  # too noisy to tell
])
def test_outcomes(new, outcome):
    c = compare("base", "t::w", res(OLD), res(new), 0.05)
    assert c.outcome == outcome, c
    assert c.ratio == pytest.approx(sorted(new)[2] / 100.0)


def test_one_round_is_never_a_significant_regression():
    c = compare("base", "t::w", res([100.0]), res([50.0]), 0.05)
    assert c.outcome == RunOutcome.INCONCLUSIVE and c.ci_low is None


def test_a_changed_fingerprint_is_refused():
    c = compare("base", "t::w", res(OLD), res(OLD, mount_options="y", kernel="k2"), 0.05)
    assert c.outcome == RunOutcome.INCOMPARABLE and c.differs == ["mount_options", "kernel"]
    assert c.message(0.05) == "t::w: not compared with run 'base': the mount_options, kernel differ"


def test_a_changed_machine_is_named_not_blamed_on_the_filesystem():
    old = {**res(OLD), "canary": [100.0, 101.0, 99.0]}
    slower = [89.0, 90.0, 91.0, 90.5, 89.5]
    busy = compare("base", "t::w", old, {**res(slower), "canary": [80.0, 81.0]}, 0.05)
    assert busy.outcome == RunOutcome.MACHINE_CHANGED and busy.canary == pytest.approx(80.5 / 100)
    assert "the machine changed since run 'base': its canary ran 0.805x as fast" in busy.message(0.05)
    steady = compare("base", "t::w", old, {**res(slower), "canary": [99.0, 100.5]}, 0.05)
    assert steady.outcome == RunOutcome.REGRESSION  # the machine is the same: the filesystem is slower


def test_against_several_runs_their_run_to_run_spread_counts():
    new = res([94.0, 94.5, 95.0, 94.2, 94.8])
    newest = ("r3", res([100.0, 100.2, 99.8]))
    alone = compare("r3", "t::w", newest[1], new, 0.03)
    assert alone.outcome == RunOutcome.REGRESSION  # one tight run: a 5% drop is significant
    history = [newest, ("r2", res([91.0, 91.2, 90.8])), ("r1", res([104.0, 104.3, 103.9]))]
    spread = compare("r3", "t::w", newest[1], new, 0.03, history)
    assert spread.outcome == RunOutcome.INCONCLUSIVE and spread.old == [100.0, 91.0, 104.0]
    assert "against the last 3 matching runs (r3, r2, r1)" in spread.message(0.03)


def test_one_round_says_what_it_cannot_show_and_what_would():
    c = compare("base", "t::w", res([100.0]), res([50.0]), 0.05)
    assert "one round cannot show a difference" in c.note
    assert f"--fsperf-rounds={runs.rounds_needed(0.10, 0.05)}" in c.message(0.05)
    c = compare("base", "t::w", res([100.0]), res([90.0, 110.0, 100.0]), 0.05)
    assert "at the spread seen here (10% per round)" in c.note
    assert runs.rounds_needed(0.10, 0.05) > runs.rounds_needed(0.02, 0.05) >= 2


def test_latest_is_the_newest_run_whose_fingerprint_matches(pytester):
    need("fio")
    pytester.makepyfile("""
        def test_w(fsperf):
            fsperf.fio(name="w", rw="write", bs="64k", size="1M")
    """)
    args = ("-p", "no:cacheprovider", "--fsperf-rounds=2")
    pytester.runpytest(*args, "--fsperf-save=full").assert_outcomes(passed=1)
    pytester.runpytest(*args, "--fsperf-save=half", "--fsperf-scale=0.5").assert_outcomes(passed=1)
    out = pytester.path / "r.json"
    r = pytester.runpytest(*args, "--fsperf-compare=latest", "--fsperf-inconclusive=warn",
                           f"--fsperf-json={out}")
    r.assert_outcomes(passed=1)
    (row,) = json.loads(out.read_text())["results"]
    assert row["run_comparison"]["run"] == "full" and row["run_comparison"]["outcome"] != "incomparable"
    assert len(row["canary"]) == 3  # the machine, read before each round and after the last
    r = pytester.runpytest(*args, "--fsperf-compare=full", "--fsperf-compare-last=2")
    r.stderr.fnmatch_lines(["*--fsperf-compare-last=2 (command line): needs --fsperf-compare=latest*"])


def test_save_then_compare(pytester):
    need("fio")
    pytester.makepyfile("""
        def test_w(fsperf):
            fsperf.fio(name="w", rw="write", bs="1M", size="4M", direct=1)
    """)
    r = pytester.runpytest("-p", "no:cacheprovider", "--fsperf-rounds=3", "--fsperf-save=base")
    r.assert_outcomes(passed=1)
    path = pytester.path / ".fsperf" / "runs" / "base.json"
    doc = json.loads(path.read_text())
    (w,) = doc["results"]
    assert len(w["rounds"]) == 3 and w["fingerprint"]["scale"] == 1.0
    # The saved run was 1000x faster: a significant regression now. Its machine canary is
    # dropped: this test is about the filesystem's verdict, and a busy CI box may move the
    # canary between the two runs (that case is test_a_changed_machine_is_named_...).
    assert len(w["canary"]) == 4
    del w["canary"]
    for rnd in w["rounds"]:
        rnd["bw"] *= 1000
    path.write_text(json.dumps(doc))
    r = pytester.runpytest("-p", "no:cacheprovider", "--fsperf-rounds=3", "--fsperf-compare=latest")
    r.assert_outcomes(failed=1)
    r.stdout.fnmatch_lines(["*w: regression against run 'base': bw 0.00*x (3 vs 3 rounds, 95% interval*",
                            "*against saved run 'base'*"])
    # A changed scale is refused, not compared.
    r = pytester.runpytest("-p", "no:cacheprovider", "--fsperf-rounds=3", "--fsperf-compare=base",
                           "--fsperf-scale=0.5", "--fsperf-inconclusive=warn")
    r.assert_outcomes(passed=1, warnings=1)
    r.stdout.fnmatch_lines(["*incomparable (workload, scale differ)*"])
    # The warning points at the test, not at the plugin's source.
    r.stdout.fnmatch_lines(["*/test_save_then_compare.py:1: PytestWarning: fsperf: w: not compared*"])
    assert "judging.py" not in r.stdout.str() and "plugin.py" not in r.stdout.str()
    r = pytester.runpytest("-p", "no:cacheprovider", "--fsperf-compare=nope")
    r.stderr.fnmatch_lines(["*--fsperf-compare=nope (command line): no saved run 'nope' in * (have: base)*"])


def test_markdown_summary_and_benchmark_action_files(pytester):
    need("fio")
    pytester.makepyfile("""
        from pytest_fsperf import fsperf

        @fsperf(min_bw="1kB/s")
        def test_w(fsperf):
            fsperf.fio(name="w", rw="write", bs="1M", size="4M", direct=1)
            fsperf.files(mode="read", count=20, size="64KiB", threads=4)
    """)
    r = pytester.runpytest("-p", "no:cacheprovider", "--fsperf-markdown=summary.md",
                           "--fsperf-benchmark-action=gab")
    r.assert_outcomes(passed=1)
    md = (pytester.path / "summary.md").read_text()
    assert md.startswith("## pytest-fsperf\n")
    assert "**PASS: 2 workloads: 0 failing, 0 inconclusive, 2 passed, 0 not judged**" in md
    assert "| test | workload | bandwidth | per second | IOPS or ops |" in md
    assert "| test_w | w |" in md and "files/s" in md
    bigger = json.loads((pytester.path / "gab-bigger.json").read_text())
    smaller = json.loads((pytester.path / "gab-smaller.json").read_text())
    names = {b["name"] for b in bigger}
    assert "test_markdown_summary_and_benchmark_action_files.py::test_w::w bandwidth" in names
    assert any(n.endswith("::files_read ops") for n in names)
    assert all(set(b) == {"name", "unit", "value"} for b in bigger + smaller)
    assert any(s["unit"] == "ms" for s in smaller)


def test_pytest_benchmark_json_and_its_compare(pytester):
    pytest.importorskip("pytest_benchmark")
    need("fio")
    pytester.makepyfile("""
        def test_w(fsperf):
            fsperf.fio(name="w", rw="write", bs="1M", size="4M", direct=1)

        def test_timed(benchmark):
            benchmark(sum, range(100))
    """)
    r = pytester.runpytest("-p", "no:cacheprovider", "--fsperf-rounds=3",
                           "--fsperf-benchmark-json=fsperf.json", "--benchmark-json=bench.json")
    r.assert_outcomes(passed=2)
    ours = json.loads((pytester.path / "fsperf.json").read_text())
    (w,) = ours["benchmarks"]
    assert w["name"] == "test_w::w" and w["stats"]["rounds"] == 3 and len(w["stats"]["data"]) == 3
    assert w["extra_info"]["bw_bytes"] > 0
    theirs = json.loads((pytester.path / "bench.json").read_text())  # pytest-benchmark's own file
    assert {b["name"] for b in theirs["benchmarks"]} == {"test_timed", "test_w::w"}
    import subprocess
    import sys

    code = "import sys; from pytest_benchmark.cli import main; sys.argv[0] = 'pytest-benchmark'; main()"
    out = subprocess.run([sys.executable, "-c", code, "compare", str(pytester.path / "fsperf.json"),
                          str(pytester.path / "bench.json")], capture_output=True, text=True, check=False)
    assert out.returncode == 0, out.stderr
    assert "test_w::w" in out.stdout


@pytest.mark.unit
def test_more_requests_at_the_same_speed_is_a_regression_in_cost():
    def with_requests(bw, reqs):
        r = res(bw)
        r["rounds"] = [{"bw": v, "req_total": n} for v, n in zip(bw, reqs, strict=True)]
        return r

    old = with_requests(OLD, [1004] * 5)
    same_speed = [99.0, 100.0, 101.0, 100.2, 99.8]
    c = compare("base", "t::w", old, with_requests(same_speed, [2008, 2006, 2008, 2010, 2008]), 0.05)
    assert c.outcome == RunOutcome.REGRESSION and c.metric == "req_total" and c.ratio == pytest.approx(2.0)
    assert "object-store requests 1004 -> 2008" in c.message(0.05)
    noisy = compare("base", "t::w", old, with_requests(same_speed, [1004, 1005, 1004, 1003, 1004]), 0.05)
    assert noisy.outcome == RunOutcome.PASS and noisy.metric == "bw"
    fewer = compare("base", "t::w", old, with_requests(same_speed, [2] * 5), 0.05)
    assert fewer.outcome == RunOutcome.PASS  # fewer requests never fail a run



@pytest.mark.unit
def test_the_counts_a_saved_run_judges_are_the_registrys():
    """judge/runs.SAVED is made from figures.METRICS (Metric.saved): the FUSE requests too,
    named by the registry's label."""
    from pytest_fsperf.figures import METRICS
    from pytest_fsperf.judge.runs import SAVED

    assert tuple(k for k, m in METRICS.items() if m.saved) == SAVED and "fuse_requests" in SAVED
    old = res(OLD)
    old["rounds"] = [{"bw": v, "fuse_requests": 300} for v in OLD]
    new = res(OLD)
    new["rounds"] = [{"bw": v, "fuse_requests": 900} for v in OLD]
    c = compare("base", "t::w", old, new, 0.05)
    assert c.outcome == RunOutcome.REGRESSION and c.metric == "fuse_requests"
    assert "FUSE requests 300 -> 900, more in every round" in c.message(0.05)

def _runs(rng, k, rounds, run_sd, round_sd, level=100.0):
    """k runs of `rounds` rounds: each run's level drifts (the machine, the day), rounds
    scatter around it."""
    out = []
    for _ in range(k):
        centre = level * math.exp(rng.gauss(0, run_sd))
        out.append([centre * math.exp(rng.gauss(0, round_sd)) for _ in range(rounds)])
    return out


def test_against_history_false_alarms_stay_rare_when_runs_differ_more_than_rounds():
    """A/A: runs differ by 4% from each other while rounds agree to 1%; the old rule (run
    medians against this run's rounds) blamed the filesystem often; the prediction interval
    of one more run keeps false alarms near its 5% level or under."""
    rng = random.Random(7)
    flagged = 0
    trials = 400
    for _ in range(trials):
        *history, new = _runs(rng, 4, 5, 0.04, 0.01)
        c = compare("r0", "t::w", res(history[0]), res(new), 0.05,
                         [(f"r{i}", res(h)) for i, h in enumerate(history)])
        flagged += c.outcome in (RunOutcome.REGRESSION, RunOutcome.IMPROVEMENT)
    assert flagged / trials <= 0.05, flagged


def test_against_history_a_real_slowdown_of_steady_runs_is_caught():
    rng = random.Random(3)
    caught = 0
    for _ in range(100):
        *history, new = _runs(rng, 6, 5, 0.01, 0.01)
        c = compare("r0", "t::w", res(history[0]), res([v * 0.8 for v in new]), 0.05,
                         [(f"r{i}", res(h)) for i, h in enumerate(history)])
        caught += c.outcome == RunOutcome.REGRESSION
    assert caught >= 95, caught


@given(st.lists(st.floats(50, 200), min_size=2, max_size=8), st.lists(st.floats(50, 200),
       min_size=1, max_size=7), st.floats(0.01, 0.3))
def test_prediction_interval_holds_its_ratio_and_widens_with_fewer_runs(medians, new, tol):
    ratio, lo, hi, direction = runs.predicted(new, medians, tol)
    assert lo is not None and hi is not None and lo <= ratio <= hi
    if direction == "down":
        assert ratio < 1 - tol and hi < 1
    if direction == "same":
        assert lo >= 1 - tol and hi <= 1 + tol
    three = runs.predicted(new, medians[:2] * 2, tol)  # the same spread, more runs: narrower
    two = runs.predicted(new, medians[:2], tol)
    assert (three[2] or 0) / (three[1] or 1) <= (two[2] or 0) / (two[1] or 1) + 1e-9


def test_a_canary_moved_past_the_whole_tolerance_is_a_changed_machine_however_noisy():
    from pytest_fsperf.measure import canary
    assert canary.changed([60.0, 100.0, 75.0, 78.0, 99.0, 70.0], [100.0, 101.0, 99.0], 0.05)
    assert not canary.changed([97.0, 101.0, 99.5], [100.0, 101.0, 99.0], 0.05)


def test_a_changed_machine_fails_or_warns_as_asked(pytester):
    """As found: saved-run compares on a busy box mostly ended `machine changed`, exit 1,
    with no way to let that warn while a real inconclusive still fails."""
    need("fio")
    pytester.makepyfile("""
        def test_w(fsperf):
            fsperf.fio(name="w", rw="write", bs="64k", size="1M")
    """)
    args = ("-p", "no:cacheprovider", "--fsperf-rounds=3")
    pytester.runpytest(*args, "--fsperf-save=base").assert_outcomes(passed=1)
    path = pytester.path / ".fsperf" / "runs" / "base.json"
    doc = json.loads(path.read_text())
    doc["results"][0]["canary"] = [10 * c for c in doc["results"][0]["canary"]]  # a 10x machine
    path.write_text(json.dumps(doc))
    r = pytester.runpytest(*args, "--fsperf-compare=base")
    r.assert_outcomes(failed=1)  # as inconclusive: fail by default
    r.stdout.fnmatch_lines(["*w: the machine changed since run 'base'*"])
    r = pytester.runpytest(*args, "--fsperf-compare=base", "--fsperf-machine-changed=warn")
    r.assert_outcomes(passed=1, warnings=1)
    r.stdout.fnmatch_lines(["*PytestWarning: fsperf: w: the machine changed since run 'base'*"])
    r = pytester.runpytest(*args, "--fsperf-compare=base", "--fsperf-inconclusive=warn",
                           "--fsperf-machine-changed=fail")
    r.assert_outcomes(failed=1)
    r = pytester.runpytest(*args, "--fsperf-machine-changed=maybe")
    r.stderr.fnmatch_lines(["*--fsperf-machine-changed=maybe (command line)*"])


@pytest.mark.parametrize("failing", ["a bad marker", "a collection error", "nothing measured"])
def test_a_failed_session_never_replaces_a_saved_run_a_baseline_or_a_results_file(
        pytester, failing):
    """As found: `--fsperf-save=good` in a session whose marker was bad (exit 4) or that
    failed to collect (exit 2) replaced .fsperf/runs/good.json with a run of 0 workloads;
    --fsperf-json and --fsperf-save-baseline overwrote theirs the same way. Such a session's
    files go aside (NAME.json.failed), the references stay, and the session says so."""
    need("fio")
    runs, bases = pytester.path / ".fsperf" / "runs", pytester.path / ".fsperf" / "baselines"
    runs.mkdir(parents=True)
    bases.mkdir(parents=True)
    keep = {runs / "good.json": '{"team": "reference run"}\n',
            bases / "mine.json": '{"team": "reference baseline"}\n',
            pytester.path / "results.json": '{"team": "last results"}\n'}
    for path, text in keep.items():
        path.write_text(text)
    pytester.makepyfile(test_it={
        "a bad marker": "from pytest_fsperf import fsperf\n@fsperf(min_bw='fast')\n"
                        "def test_x(fsperf):\n    pass\n",
        "a collection error": "import no_such_module_here\n",
        "nothing measured": "def test_x():\n    pass\n"}[failing])
    r = pytester.runpytest("-p", "no:cacheprovider", "--fsperf-save=good",
                           "--fsperf-save-baseline=mine", "--fsperf-json=results.json")
    assert r.ret != pytest.ExitCode.OK
    for path, text in keep.items():
        assert path.read_text() == text, path
    assert not list(runs.glob("*.json"))[1:] and (runs / "good.json.failed").exists()
    r.stdout.fnmatch_lines([f"*did not measure what it was asked to*{runs / 'good.json'} kept as "
                            f"it was; this session's results are in {runs / 'good.json.failed'}"])


def test_the_aside_file_of_a_failed_session_follows_no_link_another_user_planted(
        pytester, sticky_dir):
    """The file a failed session writes aside (NAME.json.failed) is a new name: in a runs
    folder others may add names to, nobody's link there to a file of root's is refused,
    never written through, and the saved run is still kept."""
    from tests.hostile import NOBODY, SYSTEM_PYTHON, as_nobody
    if os.geteuid() != 0 or not os.access(SYSTEM_PYTHON, os.X_OK):
        pytest.skip(f"needs root and {SYSTEM_PYTHON} to act as another user")
    (sticky_dir / "good.json").write_text('{"team": "reference run"}\n')
    victim = pytester.path / "victim"
    victim.write_text("root's own\n")
    as_nobody(f"import os; os.symlink({str(victim)!r}, {str(sticky_dir / 'good.json.failed')!r})")
    assert os.lstat(sticky_dir / "good.json.failed").st_uid == NOBODY
    pytester.makepyfile(test_it="from pytest_fsperf import fsperf\n@fsperf(min_bw='fast')\n"
                                "def test_x(fsperf):\n    pass\n")
    r = pytester.runpytest("-p", "no:cacheprovider", "--fsperf-save=good",
                           f"--fsperf-storage={sticky_dir}")
    assert r.ret == pytest.ExitCode.USAGE_ERROR
    assert victim.read_text() == "root's own\n"
    assert (sticky_dir / "good.json").read_text() == '{"team": "reference run"}\n'
    r.stdout.fnmatch_lines([f"*{sticky_dir / 'good.json.failed'} is a symlink*"])
