"""Bad and hostile input from files and markers: one line naming the file or value, never a
traceback or a hang (saved runs, baselines, thresholds, backend config, price lists).

The safety tests are by subject in test_safety_*.py; where it applies the attacker is a local
user without privileges (`nobody`), acting while the plugin's mount is up."""

from __future__ import annotations

import os

import pytest

from tests.hostile import (
    refused_in_one_line,
)

# -- 3. report writers --------------------------------------------------------------------


# -- 6. the machine lock ------------------------------------------------------------------


# -- 9. the daemon's whole process tree is stopped --------------------------------------


# -- 5. fio options that run commands or write elsewhere ----------------------------------


# -- 7. a mount that stops answering --------------------------------------------------------


# -- Low: bad input is one line, never a traceback ------------------------------------------


@pytest.mark.parametrize("doc", ["[]", '{"results": null}', '{"results": [1]}',
                                 '{"results": [{"test": "t", "name": "w", "total": "x"}]}',
                                 '{"results": [{"test": "t", "name": "w", "rounds": [{"bw": "fast"}]}]}'])
def test_a_wrong_shape_saved_run_is_one_line(pytester, doc):
    refused_in_one_line(pytester, "runs", "base", doc, "--fsperf-compare",
                        "*base.json is not a saved run: *")


@pytest.mark.parametrize("doc", ["[]", '{"entries": []}', '{"entries": {"x": {"bw": {"value": "1"}}}}'])
def test_a_wrong_shape_baseline_is_one_line(pytester, doc):
    refused_in_one_line(pytester, "baselines", "mine", doc, "--fsperf-baseline", "baseline *mine.json: *")


@pytest.mark.parametrize(("kw", "needle"), [
    ('min_iops=10**400', "is too large"), ('min_bw="1e308GB/s"', "is too large"),
    ('max_p99="1e300s"', "is too large")])
def test_absurd_thresholds_are_usage_errors(pytester, kw, needle):
    pytester.makepyfile(f"""
        from pytest_fsperf import fsperf

        @fsperf({kw})
        def test_x(fsperf):
            pass
    """)
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines([f"*usage error*{needle}*"])


@pytest.mark.parametrize(("call", "needle"), [
    ("fsperf.sysbench(files=-1)", "files=-1 must be a whole number from 1 to 1000000"),
    ("fsperf.sysbench(seconds=float('nan'))", "seconds=nan must be a number of seconds"),
    ("fsperf.sysbench(threads=0)", "threads=0 must be a whole number")])
def test_sysbench_bounds(pytester, call, needle):
    pytester.makepyfile(f"""
        def test_x(fsperf):
            {call}
    """)
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines([f"*{needle}*"])
    assert "Traceback" not in result.stdout.str()


@pytest.mark.parametrize(("call", "needle"), [
    ("fsperf.files(count=10**12)", "count=1000000000000 must be a whole number from 1 to 100,000,000"),
    ("fsperf.meta(entries=10**15)", "entries=1000000000000000 must be a whole number from 1"),
    ("fsperf.files(mode='hold', count=10**7, hold=1)", "past this process's limit of"),
])
def test_counts_past_any_machine_are_one_line_before_anything_is_made(pytester, call, needle):
    """As found: files(count=10**12) and meta(entries=10**15) took memory until killed;
    files(mode="hold", count=30000) failed with EMFILE after laying out every file."""
    pytester.makepyfile(f"""
        import os
        def test_x(fsperf):
            try:
                {call}
            finally:
                assert not os.path.exists(os.path.join(str(fsperf.workdir), "files"))
    """)
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines([f"*{needle}*"])
    assert "Traceback" not in result.stdout.str()


@pytest.mark.parametrize(("ini", "needle"), [
    (b"[backend x]\ncommand =\n", "`command` is empty"),
    (b"[backend x]\ncommand = sh -c {port:>99999999999}\n", "without indexing, attributes, conversions or format specs"),
    (b"[fsperf]\nbucket = caf\xe9\n", "not UTF-8 text"),
    (b"[backend x]\ncommand = sh\noption.x = (\n", "option.x: '(' is not a regular expression"),
    (b"[backend x]\ncommand = sh\noption.x = ^(a+)+$\n", "repeats a group that repeats"),
    (b"[backend x]\ncommand = sh\noption.x = --x=\\S+\n", "needs a group"),
    (b"[backend x]\ncommand = sh\nfile.../../../x = planted\n",
     "file.../../../x: a file name of letters, digits")])
def test_bad_backend_config_is_one_line(pytester, ini, needle):
    cfg = pytester.path / "b.ini"
    cfg.write_bytes(ini)
    pytester.makepyfile("""
        from pytest_fsperf import fsperf_mount

        @fsperf_mount("x")
        def test_x(fsperf):
            pass
    """)
    result = pytester.runpytest("-p", "no:cacheprovider", f"--fsperf-backend-config={cfg}")
    out = result.stdout.str() + result.stderr.str()
    assert needle in out and "Traceback" not in out and "MemoryError" not in out


# -- second round (issue 22) ------------------------------------------------------------
# 22.1 fio servers: a fio server runs any job any client sends it, so a server of the
# plugin's (root) must be out of every other user's reach.


# 22.3 option values that name a file, and 22.4 control characters: refused before fio runs


# 22.2 the watchdog and every helper interpreter run isolated, from "/"


# 22.7 the machine lock: a holder is named, a deadline ends the wait, another user's lock fails


# 22.8 an output path swapped by another user after the start-up check


# 22.9 template fields are plain names: no indexing, attributes or conversions


# 22.10 hostile files: one line naming the file or value, never a traceback or a hang

HOSTILE_RUNS = {
    "nested": lambda p: p.write_text("[" * 100_000 + "]" * 100_000),
    "nan": lambda p: p.write_text('{"results": [{"test": "t", "name": "w", '
                                  '"total": {"bw_bytes": NaN}}]}'),
    "infinite": lambda p: p.write_text('{"results": [{"test": "t", "name": "w", '
                                       '"total": {"bw_bytes": 1e999}}]}'),
    "huge-int": lambda p: p.write_text('{"results": [], "x": ' + "9" * 5000 + "}"),
    # 309 digits: past a float (OverflowError where a figure was divided); 1.7e308: finite,
    # but a sum of two is not
    "past-float": lambda p: p.write_text('{"results": [{"test": "t", "name": "w", '
                                         '"total": {"bw_bytes": ' + "9" * 309 + "}}]}"),
    "near-max": lambda p: p.write_text('{"results": [{"test": "t", "name": "w", '
                                       '"total": {"bw_bytes": 1.7e308}}]}'),
    "dangling": lambda p: p.symlink_to(p.parent / "missing"),
    "directory": lambda p: p.mkdir(),
    "fifo": lambda p: os.mkfifo(p),
}
SAYS = {"nested": "is not JSON this plugin reads: nested too deeply", "nan": "holds NaN, which no measurement gives",
        "infinite": "holds 1e999, which no measurement gives", "huge-int": "holds a number of 5000 digits",
        "past-float": "holds a number of 309 digits", "near-max": "holds 1.7e308, which no",
        "dangling": "does not exist (a dangling symlink)", "directory": "is a directory, not a file",
        "fifo": "is a FIFO, not a file"}


@pytest.mark.parametrize("kind", sorted(HOSTILE_RUNS))
@pytest.mark.parametrize("name", ["base", "latest"])
def test_a_hostile_saved_run_is_one_line(pytester, kind, name):
    """As found: deeply nested JSON -> INTERNALERROR (RecursionError); a dangling symlink or
    a directory named *.json with --fsperf-compare=latest -> FileNotFoundError /
    IsADirectoryError; a FIFO named *.json hangs; NaN gave the verdict `bw nanx`."""
    folder = pytester.path / ".fsperf" / "runs"
    folder.mkdir(parents=True)
    HOSTILE_RUNS[kind](folder / "base.json")
    pytester.makepyfile("def test_x(): pass")
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", f"--fsperf-compare={name}",
                                           timeout=60)
    assert result.ret == pytest.ExitCode.USAGE_ERROR, result.stdout.str()
    result.stderr.fnmatch_lines([f"*--fsperf-compare={name} (command line): saved run "
                                 f"*base.json {SAYS[kind]}*"])
    assert "Traceback" not in result.stderr.str() + result.stdout.str()
    assert len([ln for ln in result.stderr.lines if ln.strip()]) == 1


@pytest.mark.parametrize("kind", ["nested", "huge-int", "fifo", "dev-zero", "directory"])
def test_a_hostile_price_list_is_one_line(pytester, kind):
    """As found: a 5000-digit integer or deeply nested TOML -> INTERNALERROR; a FIFO or
    /dev/zero hung pytest at configure."""
    path = pytester.path / "prices.toml"
    if kind == "nested":
        path.write_text("x = " + "[" * 100_000 + "]" * 100_000 + "\n")
    elif kind == "huge-int":
        path.write_text("[mine]\nx = " + "9" * 5000 + "\n")
    elif kind == "fifo":
        os.mkfifo(path)
    elif kind == "dev-zero":
        path.symlink_to("/dev/zero")
    else:
        path.mkdir()
    says = {"nested": "nested too deeply", "huge-int": "is not TOML: Exceeds", "fifo": "is a FIFO",
            "dev-zero": "is a device", "directory": "is a directory"}[kind]
    pytester.makepyfile("def test_x(): pass")
    # relative: a long temp path (pytest-109/...) is cut in the message's option value
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--fsperf-prices=prices.toml",
                                           timeout=60)
    assert result.ret == pytest.ExitCode.USAGE_ERROR, result.stdout.str()
    result.stderr.fnmatch_lines([f"*--fsperf-prices=prices.toml (command line)*{says}*"])
    assert "Traceback" not in result.stderr.str() + result.stdout.str()


@pytest.mark.parametrize("value", ["NaN", "+Inf", "-Inf", "-5"])
def test_juicefs_stats_that_are_not_counts_are_not_measured(value):
    """As found: JuiceFS .stats with NaN/Inf raised an uncaught OverflowError; negative
    counters were taken as they were."""
    from pytest_fsperf.store import juicefs
    good = "# TYPE juicefs_object_request_durations_histogram_seconds_GET counter\n" \
           "juicefs_object_request_durations_histogram_seconds_GET_total 3\n"
    bad = good.replace(" 3\n", f" {value}\n")
    with pytest.raises(ValueError, match="not a count"):
        juicefs.parse(bad)
    before, after = juicefs.parse(good), juicefs.parse(good.replace(" 3\n", " 1\n"))
    with pytest.raises(ValueError, match="went down from 3 to 1"):
        juicefs.difference(before, after)
    assert juicefs.difference(after, before).by_kind["GET"] == 2


