"""History over saved runs (judge/history.py, `fsperf history`): series by fingerprint, change
points with Apache Otava, the machine canary's rule, the gate and the trend page."""

from __future__ import annotations

import json
import random
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_fsperf.cli import main
from pytest_fsperf.judge import history
from pytest_fsperf.judge.history import Cause
from pytest_fsperf.saved import runs as saved
from pytest_fsperf.saved.runs import Run
from tests.conftest import need

otava = pytest.importorskip("otava.analysis")  # the [history] extra; CI installs it

FP = {"workload": "read", "scale": 0.01, "fs": "bindfs", "kernel": "6.1", "machine": "m x2"}


def result(bw: float, canary: float | None = 100.0, test: str = "t.py::test_read",
           name: str = "read", fp: dict[str, Any] | None = None, rounds: int = 3,
           rng: random.Random | None = None) -> dict[str, Any]:
    rng = rng or random.Random(0)
    return {"test": test, "name": name, "fingerprint": fp or FP,
            "total": {"bw_bytes": bw, "ops_per_second": None, "io_bytes": 1},
            "rounds": [{"bw": bw * rng.lognormvariate(0, 0.005), "ops": None} for _ in range(rounds)],
            "canary": [] if canary is None else [canary, canary]}


def run(i: int, *results: dict[str, Any], build: str = "") -> Run:
    doc = {"schema": "pytest-fsperf/1", "created": f"2026-11-01T{i // 60:02d}:{i % 60:02d}:00+0000",
           "environment": {"build": {"id": build}} if build else {}, "results": list(results)}
    return Run(f"run{i:03d}", doc["created"], saved.build_of(doc), doc)


def stepped(n: int = 30, at: int | None = 20, step: float = 0.9, noise: float = 0.02,
            canary_at: int | None = None, seed: int = 1, canary: bool = True) -> list[Run]:
    rng = random.Random(seed)
    out = []
    for i in range(n):
        bw = 1e9 * (step if at is not None and i >= at else 1.0) * rng.lognormvariate(0, noise)
        c = 100.0 * (0.8 if canary_at is not None and i >= canary_at else 1.0) * rng.lognormvariate(0, 0.01)
        out.append(run(i, result(bw, c if canary else None, rng=rng), build=f"c{i}"))
    return out


def test_a_ten_percent_step_is_found_at_its_run_with_its_size_and_build():
    (a,) = [history.analyse(s) for s in history.series(stepped(), ("bw",))]
    (c,) = a.changes
    assert abs(c.index - 20) <= 1
    assert c.change == pytest.approx(-0.10, abs=0.02) and c.worse and c.cause == Cause.FILESYSTEM
    assert c.pvalue < history.MAX_PVALUE
    assert c.message().startswith("t.py::test_read::read bandwidth: worse by ")
    assert f"from run run{c.index:03d}, build c{c.index}" in c.message()


def test_a_flat_series_has_no_change_point():
    (a,) = [history.analyse(s) for s in history.series(stepped(at=None), ("bw",))]
    assert a.changes == () and a.note == ""


def test_a_step_where_the_canary_stepped_too_is_the_machines():
    (a,) = [history.analyse(s) for s in history.series(stepped(canary_at=20), ("bw",))]
    (c,) = a.changes
    assert c.cause == Cause.MACHINE and "the machine changed" in c.message()
    assert history.gate([a], 0.05, "run029", recent=15) == []  # never fails the filesystem


def test_the_canary_moving_alone_is_said():
    (a,) = [history.analyse(s) for s in history.series(stepped(at=None, canary_at=15), ("bw",))]
    assert a.changes == ()
    assert a.note.startswith("the machine's canary changed from run run015 (-19.")
    assert a.note.endswith("t.py::test_read::read bandwidth did not")


def test_without_canary_readings_the_cause_is_unknown_and_normalising_is_refused():
    (s,) = history.series(stepped(canary=False), ("bw",))
    (c,) = history.analyse(s).changes
    assert c.cause == Cause.UNKNOWN and history.normalised(s) is None


def busy_stretch(found: list[Run], runs: range, slower: float = 0.7) -> list[Run]:
    """A neighbour busy during `runs`: the rest of the machine used a core, and the
    workload ran slower; the other runs read 0.05 cores."""
    for i, r in enumerate(found):
        (res,) = r.doc["results"]
        res["rest"] = {"cpu": 1.0 if i in runs else 0.05, "steal": 0.0}
        if i in runs:
            res["rounds"] = [{**x, "bw": x["bw"] * slower} for x in res["rounds"]]
    return found


def test_runs_a_busy_neighbour_disturbed_are_left_out_and_named():
    flat = busy_stretch(stepped(at=None), range(8, 13))
    (s,) = history.series(flat, ("bw",))
    assert history.disturbed(s) == [8, 9, 10, 11, 12]
    a = history.analyse(s)
    assert a.changes == ()
    assert a.note.startswith("runs left out, a neighbour busy during them (the rest of the "
                             "machine used more than 0.3 cores above its usual 0.05): run008 "
                             "(1.00), run009 (1.00)")
    # a real step is still found, at its run in the whole series
    (c,) = history.analyse(history.series(busy_stretch(stepped(at=20), range(8, 13)),
                                          ("bw",))[0]).changes
    assert abs(c.index - 20) <= 1 and c.worse


def test_leaving_disturbed_runs_out_finds_more_steps():
    """Synthetic series like the benchmark's (5% noise, a neighbour busy in a quarter of
    the runs, each such run 20% slower, a 10% step from run 10-19): a step found alone at
    its run (±1), raw against with the disturbed runs left out."""
    def found(at: int, seed: int) -> tuple[bool, bool]:
        rng = random.Random(seed)
        busy = [i for i in range(30) if rng.random() < 0.25]
        (s,) = history.series(busy_stretch(stepped(at=at, noise=0.05, seed=seed), busy, 0.8),
                              ("bw",))
        raw = [f.index for f in history.change_points(s.values())]
        left = [c.index for c in history.analyse(s).changes]
        return (len(raw) == 1 and abs(raw[0] - at) <= 1), (len(left) == 1 and abs(left[0] - at) <= 1)

    got = [found(10 + seed % 10, seed) for seed in range(20)]
    raw, left = sum(r for r, _ in got), sum(x for _, x in got)
    assert left >= raw + 4, (raw, left)


def test_without_rest_readings_on_most_runs_nothing_is_left_out():
    found = busy_stretch(stepped(at=None), range(8, 13))
    for r in found[:16]:
        del r.doc["results"][0]["rest"]
    (s,) = history.series(found, ("bw",))
    assert history.disturbed(s) == []


def test_normalising_shows_its_effect():
    """The canary fell 20% from run 15 while the filesystem stayed: raw, no change point;
    divided by the canary, one appears - the option says so instead of doing it silently."""
    (s,) = history.series(stepped(at=None, canary_at=15), ("bw",))
    a = history.analyse(s)
    said = history.normalised_effect(a, history.MAX_PVALUE, 0.0, history.WINDOW)
    assert said.startswith("normalised by the canary: change points from runs run01")
    assert said.endswith("(raw: none)")


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["6.1", "6.18"]), st.sampled_from([0.01, 0.1]),
                          st.sampled_from(["read", "write"])), min_size=1, max_size=25))
def test_a_series_never_mixes_fingerprints(shapes):
    found = [run(i, result(1e9, fp={**FP, "kernel": k, "scale": sc}, name=name))
             for i, (k, sc, name) in enumerate(shapes)]
    every = history.series(found, ("bw",))
    assert sum(len(s.points) for s in every) == len(shapes)
    for s in every:
        assert len({(p.run) for p in s.points}) == len(s.points)
        members = [shapes[int(p.run[3:])] for p in s.points]
        assert len(set(members)) == 1  # one kernel, one scale, one workload
    for m in history.differences(every):
        name, fields = m.key.rsplit("::", 1)[1], m.fields
        kernels = {k for k, _sc, n in shapes if n == name}
        scales = {sc for _k, sc, n in shapes if n == name}
        assert set(fields) == {f for f, many in (("kernel", kernels), ("scale", scales))
                               if len(many) > 1}


@settings(max_examples=30, deadline=None)
@given(st.permutations(list(range(12))))
def test_runs_are_ordered_by_when_they_were_written_not_by_file_name(order):
    files = []
    for i in order:
        r = run(i, result(1e9 + i))
        files.append((f"z{order.index(i):02d}", r.doc))
    found = [Run(name, doc["created"], "", doc) for name, doc in files]
    found.sort(key=lambda r: (r.created, r.name))
    (s,) = history.series(found, ("bw",))
    assert [p.value for p in s.points] == sorted(p.value for p in s.points)


def test_the_gate_fails_only_a_recent_worsening_of_the_filesystem_past_the_tolerance():
    recent = [history.analyse(s) for s in history.series(stepped(at=26, step=0.8), ("bw",))]
    (c,) = history.gate(recent, 0.10, "run029")
    assert c.worse and abs(c.index - 26) <= 1
    assert history.gate(recent, 0.25, "run029") == []  # within the tolerance
    old = [history.analyse(s) for s in history.series(stepped(at=10, step=0.8), ("bw",))]
    assert history.gate(old, 0.10, "run029") == []  # began long ago: a trend, not this run
    better = [history.analyse(s) for s in history.series(stepped(at=26, step=1.25), ("bw",))]
    assert history.gate(better, 0.10, "run029") == []
    assert history.gate(recent, 0.10, "run999") == []  # the newest run is not in the series
    alone = [history.analyse(s) for s in history.series(stepped(at=29, step=0.6), ("bw",))]
    assert alone[0].changes and history.gate(alone, 0.10, "run029") == []  # one run: not yet


def gated(n: int = 30, at: int | None = 20, step: float = 0.9, drift: float = 0.04,
          reference: str = "/opt/v1/bindfs", seed: int = 5, pair_noise: float = 0.02) -> list[Run]:
    """Runs saved by a gated session: the candidate's own bandwidth wanders with the machine
    (a random walk of `drift` per run, as this VM's did over minutes), its pairs' B/A only
    by `pair_noise`, and steps to `step` from run `at`."""
    rng = random.Random(seed)
    machine, out = 1.0, []
    for i in range(n):
        machine *= rng.lognormvariate(0, drift)
        level = step if at is not None and i >= at else 1.0
        ratio = level * rng.lognormvariate(0, pair_noise)
        r = result(1e9 * machine * level, rng=rng)
        c = {"test": r["test"], "name": r["name"], "kind": "gate", "a_options": [reference],
             "b_options": ["/opt/next/bindfs"], "rounds": 3, "backend": "bindfs", "order": "ABBAAB",
             "a_results": [], "b_results": [],
             "metrics": {"bw": {"metric": "bw", "a": [], "b": [], "a_median": None, "b_median": None,
                                "ratio": ratio, "ci_low": ratio * 0.95,
                                "ci_high": ratio * 1.05}}}
        out.append(run(i, r, build=f"c{i}"))
        out[-1].doc["comparisons"] = [c]
    return out


def test_a_gated_runs_b_over_a_is_a_series_of_its_own_where_the_machines_drift_cancels():
    every = history.series(gated(), ("bw",))
    raw, ratio = sorted(every, key=lambda s: s.against)
    assert raw.against == "" and ratio.against == "/opt/v1/bindfs"
    assert ratio.label == "bandwidth B/A against /opt/v1/bindfs" and ratio.shown(0.9) == "0.900x"
    assert ratio.points[0].low < ratio.points[0].value < ratio.points[0].high  # the pair interval
    (c,) = history.analyse(ratio).changes
    assert abs(c.index - 20) <= 1 and c.change == pytest.approx(-0.10, abs=0.02) and c.worse
    flat = [s for s in history.series(gated(at=None), ("bw",)) if s.against]
    assert history.analyse(flat[0]).changes == ()
    # normalising a B/A by the canary is not needed, and said
    a = history.analyse(ratio)
    assert "not needed" in history.normalised_effect(a, history.MAX_PVALUE, history.MIN_CHANGE,
                                                     history.WINDOW)


@settings(max_examples=20, deadline=None)
@given(st.integers(0, 10_000))
def test_the_machines_drift_alone_fails_no_gated_history(seed):
    """The candidate's own bandwidth falls with the machine; its B/A holds: the history gate
    judges the B/A and passes, whatever the raw series shows."""
    found = gated(at=None, drift=0.06, seed=seed)
    for r in found[25:]:  # the machine 30% slower for the newest runs
        for rnd in r.doc["results"][0]["rounds"]:
            rnd["bw"] *= 0.7
    analyses = [history.analyse(s) for s in history.series(found, ("bw",))]
    assert history.gate(analyses, 0.10, "run029") == []


def test_a_recent_step_in_a_b_over_a_series_fails_the_history_gate():
    """An example, not a property: one run beside a step can take the change point (seed
    1386: a B/A of 1.07 just before a 20% fall, and Otava splits there)."""
    stepped = gated(at=26, step=0.8, seed=5)
    (c,) = history.gate([history.analyse(s) for s in history.series(stepped, ("bw",))],
                        0.10, "run029")
    assert c.series.against and c.worse and abs(c.index - 26) <= 1


def test_a_busy_neighbour_leaves_no_run_of_a_b_over_a_series_out():
    """Both sides of a pair met the neighbour: its B/A stays in, its raw figure does not."""
    found = gated(at=None)
    for i, r in enumerate(found):
        r.doc["results"][0]["rest"] = {"cpu": 0.9 if i % 4 == 0 else 0.0, "steal": 0.0}
    raw, ratio = sorted((history.analyse(s) for s in history.series(found, ("bw",))),
                        key=lambda a: a.series.against)
    assert "runs left out" in raw.note and ratio.note == ""
    assert raw.left_out == tuple(range(0, 30, 4)) and ratio.left_out == ()


def test_each_reference_is_a_series_of_its_own():
    found = gated(n=20, at=None)
    for r in found[10:]:  # a new release became the reference
        r.doc["comparisons"][0]["a_options"] = ["/opt/v2/bindfs"]
    ratios = [s for s in history.series(found, ("bw",)) if s.against]
    assert sorted((s.against, len(s.points)) for s in ratios) == [("/opt/v1/bindfs", 10),
                                                                  ("/opt/v2/bindfs", 10)]
    assert history.differences(ratios) == []  # one fingerprint each: not mixed, two references


def test_the_build_a_run_measured():
    assert saved.build_of({"environment": {"build": {"id": "abc123"}}}) == "abc123"
    assert saved.build_of({"environment": {"build": {"daemon_sha256": "f" * 64}}}) == "daemon ffffffffffff"
    assert saved.build_of({"environment": {}}) == ""


# -- the command -------------------------------------------------------------------------


def write(folder: Path, found: list[Run]) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for r in reversed(found):  # written newest first: the order must come from `created`
        (folder / f"{r.name}.json").write_text(json.dumps(r.doc))


def test_fsperf_history_prints_each_change_point_and_writes_the_trend_page(tmp_path, capsys):
    write(tmp_path / "runs", stepped())
    (tmp_path / "runs" / "notes.json").write_text('{"not": "a run"}')
    rc = main(["history", str(tmp_path / "runs"), "--html", str(tmp_path / "t.html"), "--figure", "bw"])
    out, err = capsys.readouterr()
    assert rc == 0
    assert out.splitlines()[0] == "30 runs, run000 to run029; 1 series"
    assert "t.py::test_read::read bandwidth (30 runs): worse by" in out
    assert "notes.json: not a saved run: no `results` list" in err
    page = (tmp_path / "t.html").read_text()
    assert page.count("<svg") == 1 and "class=\"cp\"" in page and "class=\"newest\"" in page
    assert "<td class=\"bad\">-1" in page  # the change point's row, worse, in red


def test_a_saved_run_whose_build_is_not_an_object_is_skipped_naming_why(tmp_path, capsys):
    write(tmp_path / "runs", stepped(n=3))
    odd = json.loads((tmp_path / "runs" / "run000.json").read_text())
    odd["environment"] = {"build": ["not", "an", "object"]}
    (tmp_path / "runs" / "run000.json").write_text(json.dumps(odd))
    assert main(["history", str(tmp_path / "runs"), "--figure", "bw"]) == 0
    err = capsys.readouterr().err
    assert "run000.json: not a saved run: `environment.build` must be an object" in err


def test_fsperf_history_gate_exits_1_on_a_recent_worsening(tmp_path, capsys):
    write(tmp_path, stepped(at=27, step=0.8))
    assert main(["history", str(tmp_path / "*.json"), "--gate", "--figure", "bw"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("history: t.py::test_read::read bandwidth: worse by 19.9% from run run027")
    assert main(["history", str(tmp_path), "--gate", "--tolerance", "30%"]) == 0


@pytest.mark.parametrize(("args", "said"), [
    (["--figure", "speed"], "--figure speed: not one of bw, ops, daemon_cpu_per_gb, daemon_rss"),
    (["--max-pvalue", "2"], "--max-pvalue must be in (0, 1)"),
    (["/nonexistent/runs"], "/nonexistent/runs: no such file, folder or glob match"),
])
def test_bad_input_is_one_line(tmp_path, capsys, args, said):
    write(tmp_path, stepped(n=3))
    rc = main(["history", str(tmp_path), *args] if args[0].startswith("-") else ["history", *args])
    err = capsys.readouterr().err
    assert rc == 4 and said in err and len(err.strip().splitlines()) == 1


@pytest.mark.fio
def test_without_otava_one_line_says_how_to_install(tmp_path):
    write(tmp_path, stepped(n=3))
    code = ("import sys; sys.modules['otava'] = None; from pytest_fsperf.cli import main; "
            f"sys.exit(main(['history', {str(tmp_path)!r}]))")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert p.returncode == 4
    assert p.stderr.strip() == ("fsperf: error: fsperf history: change points need Apache Otava: "
                                "pip install 'pytest-fsperf[history]' (Apache Otava)")


# -- in a pytest session -----------------------------------------------------------------


@pytest.mark.integration
def test_the_history_gate_fails_the_test_whose_newest_runs_start_a_worse_level(pytester):
    """Saved runs of the same workload at 1000x today's bandwidth, then three at today's: the
    run that joins them fails its test naming the first run and build of the new level;
    --fsperf-history prints every series after the session."""

    need("fio")
    pytester.makepyfile("""
        def test_w(fsperf):
            fsperf.fio(name="w", rw="write", bs="1M", size="4M", direct=1)
    """)
    args = ("-p", "no:cacheprovider", "--fsperf-rounds=3")
    r = pytester.runpytest(*args, "--fsperf-history-gate=1")
    r.stderr.fnmatch_lines(["*--fsperf-history-gate=1 (command line): needs --fsperf-save or "
                            "--fsperf-autosave*"])
    pytester.runpytest(*args, "--fsperf-save=seed", "--fsperf-build-id=v1.0").assert_outcomes(passed=1)
    folder = pytester.path / ".fsperf" / "runs"
    seed = json.loads((folder / "seed.json").read_text())
    assert seed["environment"]["build"]["id"] == "v1.0"
    (folder / "seed.json").unlink()
    rng = random.Random(3)
    for i in range(23):
        doc = json.loads(json.dumps(seed))
        doc["created"] = f"2026-01-01T00:{i:02d}:00+0000"
        doc["environment"]["build"]["id"] = f"v{i}"
        w = doc["results"][0]
        for rnd in w["rounds"]:
            rnd["bw"] *= (1000 if i < 20 else 1) * rng.lognormvariate(0, 0.05)
        w["canary"] = [c * rng.lognormvariate(0, 0.02) for c in w["canary"]]
        (folder / f"old{i:02d}.json").write_text(json.dumps(doc))
    r = pytester.runpytest(*args, "--fsperf-save=new", "--fsperf-history-gate=1",
                           "--fsperf-history=1")
    r.assert_outcomes(failed=1)
    r.stdout.fnmatch_lines(["*w: history: *::test_w::w bandwidth: worse by 99.9% from run old20, "
                            "build v20 *", "*fsperf history*",
                            "24 runs, old00 to new; * series",
                            "*::test_w::w bandwidth (24 runs): worse by 99.9% from run old20, build v20*"])
    # a session whose runs hold their level passes (a newest run alone at a new level is
    # not acted on: this local disk's 4 MiB direct writes moved 23% from one session to the
    # next here). The run saved above is set to the seed's level first: it and the next
    # measured one, both real, came out 32% below the seed once (the disk's two modes),
    # which is two runs at a new level, rightly acted on.
    for i in range(20):
        (folder / f"old{i:02d}.json").unlink()
    new = json.loads((folder / "new.json").read_text())
    for got, was in zip(new["results"][0]["rounds"], seed["results"][0]["rounds"], strict=True):
        got["bw"] = was["bw"] * rng.lognormvariate(0, 0.05)
    (folder / "new.json").write_text(json.dumps(new))
    r = pytester.runpytest(*args, "--fsperf-save=newer", "--fsperf-history-gate=1")
    r.assert_outcomes(passed=1)
    r.stdout.fnmatch_lines(["fsperf decision: PASS*"])


def test_a_saved_run_records_the_build_and_the_daemon_binary_it_ran(monkeypatch):
    import hashlib
    import os

    from pytest_fsperf.report.environment import BUILD_ENV, build_dict

    for key in BUILD_ENV:
        monkeypatch.delenv(key, raising=False)
    assert build_dict(None, None) == {}
    monkeypatch.setenv("GITHUB_SHA", "abc123")
    assert build_dict(None, None) == {"id": "abc123"}
    found = build_dict("v2.0.1", os.getpid())  # this process stands in for a daemon
    assert found["id"] == "v2.0.1"
    assert found["daemon_exe"] == os.readlink(f"/proc/{os.getpid()}/exe")
    assert found["daemon_sha256"] == hashlib.sha256(Path(found["daemon_exe"]).read_bytes()).hexdigest()
    assert "daemon_sha256" not in build_dict(None, 2 ** 22 + 12345)  # no such process: nothing


def test_a_bad_build_id_or_history_flag_is_one_line_naming_where(pytester):
    pytester.makepyfile("def test_x(fsperf): pass")
    r = pytester.runpytest("-p", "no:cacheprovider", "--fsperf-build-id=v1 rm -rf")
    r.stderr.fnmatch_lines(["*--fsperf-build-id=v1 rm -rf (command line): up to 128 letters, "
                            "digits and . _ + : / @ -*"])
    pytester.makeini("[pytest]\nfsperf_history = maybe\n")
    r = pytester.runpytest("-p", "no:cacheprovider")
    assert r.ret == pytest.ExitCode.USAGE_ERROR and "fsperf_history" in r.stderr.str()
    assert "Traceback" not in r.stderr.str()


def test_a_shift_below_the_minimum_change_is_not_a_change_point():
    """Peak memory comes in pages: a shift of 0.04% with no spread gives p = 0."""
    flat = [100.0] * 15 + [100.04] * 15
    assert history.change_points(flat) == []
    (f,) = history.change_points(flat, min_magnitude=0.0)
    assert f.index == 15 and f.pvalue == 0.0


def test_runs_written_in_other_time_zones_sort_by_the_instant(tmp_path):
    early = run(1, result(1e9))
    early.doc["created"] = "2026-11-01T09:00:00+0200"  # 07:00 UTC
    late = run(2, result(1e9))
    late.doc["created"] = "2026-11-01T08:00:00+0000"
    write(tmp_path, [early, late])
    found, _ = saved.read(sorted(tmp_path.glob("*.json")))
    assert [r.name for r in found] == ["run001", "run002"]


@pytest.mark.integration
def test_a_daemon_binary_on_a_fuse_mount_is_named_not_read(tmp_path):
    """Reading it, root would wait on that FUSE daemon, which may never answer."""
    import os
    import shutil
    import time

    from pytest_fsperf.report.environment import build_dict
    from tests.conftest import need

    bindfs = need("bindfs")
    src, mnt = tmp_path / "src", tmp_path / "mnt"
    src.mkdir()
    mnt.mkdir()
    shutil.copy2("/bin/sleep", src / "sleep")
    subprocess.run([bindfs, str(src), str(mnt)], check=True)
    try:
        proc = subprocess.Popen([str(mnt / "sleep"), "30"])
        try:
            time.sleep(0.2)
            found = build_dict(None, proc.pid)
            assert found["daemon_exe"] == str(mnt / "sleep") and "daemon_sha256" not in found
        finally:
            proc.kill()
            proc.wait()
    finally:
        subprocess.run(["umount", str(mnt)], check=False)
    assert not os.path.ismount(mnt)


def test_cpu_is_followed_per_gb_so_a_throttled_daemon_is_never_called_better():
    """As found: a daemon throttled to half a core from run 7 on read 'daemon CPU: better by
    49.7% from run run07' beside 'bandwidth: worse by 54.1%': it did half the work. CPU per
    GB moved is the work per byte: flat; bandwidth carries the step."""
    rng = random.Random(3)
    runs = []
    for i in range(20):
        throttled = i >= 7
        bw = 1e9 * (0.46 if throttled else 1.0) * rng.lognormvariate(0, 0.01)
        cpu_s_per_gb = 0.5 * rng.lognormvariate(0, 0.01)  # the same work per byte
        r = result(bw, rng=rng)
        for rnd in r["rounds"]:
            rnd["daemon_cpu_per_gb"] = cpu_s_per_gb
            rnd["daemon_cpu"] = (50.0 if throttled else 100.0) * rng.lognormvariate(0, 0.01)
        runs.append(run(i, r, build=f"c{i}"))
    lines = history.report(runs)[2]
    text = "\n".join(lines)
    assert "read bandwidth (20 runs): worse by" in text
    assert "read daemon CPU-s/GB (20 runs): no change point" in text
    assert "better" not in text, text
    assert not any(line.startswith("t.py::test_read::read daemon CPU:") for line in lines)


def test_a_worsening_between_two_commits_prints_the_bisect_command():
    runs = stepped()
    commits = {r.name: f"{i:07x}abc" for i, r in enumerate(runs)}
    runs = [Run(r.name, r.created, commits[r.name], r.doc) for r in runs]
    _analyses, _notes, lines = history.report(runs, ("bw",))
    (hint,) = [line for line in lines if "look inside" in line]
    (c,) = history.analyse(history.series(runs, ("bw",))[0]).changes
    good, bad = runs[c.index - 1].build, runs[c.index].build
    assert hint == (f"  look inside: fsperf bisect --good {good} --bad {bad} --test t.py::test_read "
                    "--build 'YOUR BUILD' --binary PATH/TO/DAEMON --backend NAME")
    # builds that are not commit ids (c0, c1, ...): no command
    assert not [line for line in history.report(stepped(), ("bw",))[2] if "look inside" in line]


def test_a_comparison_that_does_not_read_is_said_not_dropped_silently():
    found = gated(n=6, at=None)
    found[2].doc["comparisons"][0]["rounds"] = "three"
    _analyses, notes, lines = history.report(found, ("bw",))
    said = [n for n in notes if n.startswith(f"run {found[2].name}: a comparison left out: ")]
    assert len(said) == 1 and "rounds" in said[0] and said[0] in lines
    ratio = next(s for s in history.series(found, ("bw",)) if s.against)
    assert len(ratio.points) == 5  # the other runs' B/A still count
