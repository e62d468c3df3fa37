"""The sixth round's malformed inputs (issue 71), each once a traceback, a hang, data silently
accepted or an unclear line: now one usage line naming what was wrong and where."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

from pytest_fsperf import units
from pytest_fsperf.baselines import shape_problem
from pytest_fsperf.engine.fio import build_job
from pytest_fsperf.engine.fio_clients import parse_servers
from pytest_fsperf.errors import UsageError
from pytest_fsperf.figures import METRICS, Fig
from pytest_fsperf.hosts.spec import check_python, parse_hosts
from pytest_fsperf.plan.conditions import StoreConditions
from pytest_fsperf.saved.runs import SavedResult
from pytest_fsperf.store import cost

TIER = "unit"


@pytest.mark.parametrize("text", ["\u0663GB/s", "1_0GB/s", "3GB/s\u0663"])
def test_digits_of_other_scripts_are_not_numbers(text):
    with pytest.raises(ValueError):
        units.parse_bytes(text, rate=True)
    assert units.parse_bytes("3GB/s", rate=True) == 3e9


@pytest.mark.parametrize("value", [-1, float("inf"), float("nan"), 10**400, "1_0", "\u0663", True])
def test_a_bound_on_requests_per_mib_is_a_finite_number_of_zero_or_more(value):
    for fig in (Fig.REQ_PER_MIB, Fig.FUSE_PER_MIB):
        with pytest.raises(ValueError) as found:
            METRICS[fig].parse(value)
        assert len(str(found.value)) < 120  # 10**400 is not echoed whole
    assert METRICS[Fig.FUSE_PER_MIB].parse("2.5") == 2.5


@pytest.mark.parametrize("value", ["1_0", "\u0663", "-1", "nan"])
def test_a_cost_bound_is_an_amount(value):
    with pytest.raises(ValueError):
        units.parse_money(value)


@pytest.mark.parametrize(("doc", "says"), [
    ({"entries": {}, "conditions": [1]}, "`conditions` is not an object"),
    ({"entries": {}, "conditions": "x"}, "`conditions` is not an object"),
    ({"entries": {}, "relative": ["x"]}, "`relative` is not an object"),
    ({"entries": {}, "relative": {"e": {}}}, "scenario, a, b, printed must be text"),
    ({"entries": {}, "relative": {"e": {"scenario": "s", "a": "a", "b": "b", "printed": "p",
                                        "less_time": 1}}}, "less_time must be a share"),
    ({"entries": {"s": {"bw": {"value": "10"}}}}, "needs a numeric `value`"),
    ({"entries": {"s": {"bw": {"value": [10]}}}}, "needs a numeric `value`"),
    ({"entries": {"s": {"bw": {"value": 10, "high": "x"}}}}, "`high` must be a number"),
    ({"entries": {}, "scale": 0}, "`scale` must be a positive number"),
])
def test_a_hostile_baseline_file_is_named_not_a_traceback(doc, says):
    assert says in (shape_problem(doc) or "")


@pytest.mark.parametrize(("kw", "says"), [
    ({"profile": 5}, "profile=5"), ({"profile": ["x"]}, "profile=['x']"),
    ({"tail_every": 2.5}, "tail_every=2.5 must be a whole number"),
])
def test_store_conditions_of_the_wrong_type_are_one_line(kw, says):
    with pytest.raises(UsageError, match=rf"^here: {re.escape(says)}"):
        StoreConditions(**kw).checked("here")


@pytest.mark.parametrize(("options", "says"), [
    ({"size": True}, "is not a size or a count"), ({"bs": "1e309"}, "not a fio size"),
    ({"bsrange": "8k-4k"}, "LOW not past HIGH"), ({"loops": 0}, "from 1 to"),
    ({"offset": "-1"}, "not a fio size"), ({"numjobs": 0}, "from 1 to 4,096"),
    ({"thinktime": 10**18}, "at most an hour"), ({"loops": 10**9}, "from 1 to 1,000,000"),
])
def test_fio_options_fio_would_refuse_or_that_mean_nothing_are_one_line(options, says):
    with pytest.raises(UsageError, match=says):
        build_job({"rw": "write", "size": "64k", **options}, 1.0, "t")
    assert build_job({"rw": "write", "bs": "4k,8k", "bsrange": "4k-8k", "offset": "10%",
                      "loops": 2, "numjobs": 4, "thinktime": "10ms", "size": "64k"}, 1.0, "t")


def test_prices_failed_billed_is_true_or_false():
    text = ('[p]\ntitle = "t"\ncurrency = "USD"\nsource = "s"\nchecked = "2026"\n'
            'failed_billed = "no"\n[p.per_1000]\n')
    kinds = "".join(f"{k} = 0.1\n" for k in cost.KINDS)
    with pytest.raises(cost.PriceError, match="failed_billed must be true or false"):
        cost.parse(text + kinds, "here")


@pytest.mark.parametrize(("text", "says"), [
    ("-oProxyCommand=x:80", "is not HOST:PORT"), ("h:80:/a\nexec_prerun=/x", "control"),
    ("h:99999", "is not HOST:PORT"), ("h:\u0668\u0660", "is not HOST:PORT"),
])
def test_a_fio_server_is_a_host_and_port(text, says):
    with pytest.raises(ValueError, match=says):
        parse_servers(text)


def test_hosts_and_their_python_are_bounded():
    with pytest.raises(ValueError, match="at most 1,024"):
        parse_hosts(",".join(f"h{i}:/m" for i in range(2000)))
    for bad in ("../etc/passwd", "bin/python3", "/usr/../tmp/python3"):
        with pytest.raises(ValueError, match="absolute path without"):
            check_python(bad)
    assert check_python("python3") == "python3" and check_python("/usr/bin/python3")


@pytest.mark.parametrize(("field", "value"), [
    ("wall_seconds", -1), ("wall_seconds", 0), ("tool_cpu_percent", -5),
    ("tool_cpu_percent", float("inf")), ("scale", 0), ("scale", -1),
])
def test_a_saved_run_of_figures_no_run_makes_is_skipped(field, value):
    row = {"test": "t", "name": "r", "wall_seconds": 1.0, "tool_cpu_percent": 10.0,
           "fingerprint": {"scale": 1.0}}
    if field == "scale":
        row["fingerprint"] = {"scale": value}
    else:
        row[field] = value
    with pytest.raises(ValueError, match="is not a figure a run makes"):
        SavedResult.of(row)


@pytest.mark.fio
@pytest.mark.parametrize(("args", "says"), [
    (["bench", "--ceilings", "--scale", "-1"], "'-1' is not a plain number"),
    (["bench", "--ceilings", "--scale", "0"], "--scale=0 must be above 0"),
    (["bench", "--scale", "\u0663"], "is not a plain number"),
    (["history", ".", "--window", "1" + "0" * 400], "is not a plain whole number"),
    (["comment", "x.json", "--link", "http://x\ny"], "is not one http(s) URL"),
])
def test_the_fsperf_commands_numbers_and_links_are_one_line_at_once(tmp_path, args, says):
    out = subprocess.run([sys.executable, "-m", "pytest_fsperf", *args], cwd=tmp_path,
                         capture_output=True, text=True, timeout=30, check=False)
    assert out.returncode == 4 and says in out.stderr, out.stderr
    assert len(out.stderr.strip().splitlines()) == 1 and "Traceback" not in out.stderr


BAD_CALLS = {
    "fio_positional": "fsperf.fio(5, rw='read')",
    "files_subdir": "fsperf.files(name='f', mode='write', count=2, size='4KiB', subdir=5)",
    "files_hold_text": "fsperf.files(name='f', mode='hold', count=2, size='4KiB', hold='10')",
    "files_hold_none": "fsperf.files(name='f', mode='hold', count=2, size='4KiB', hold=None)",
    "jobfile_int": "fsperf.fio(jobfile=5)",
    "jobfile_nul": "fsperf.fio(jobfile='a\\x00b')",
    "mdtest_threads": "fsperf.mdtest(files=10, threads=10**8)",
}


@pytest.mark.fio
def test_fixture_calls_of_the_wrong_type_and_bad_markers_are_one_usage_line_each(pytester):
    body = "\n".join(f"def test_{k}(fsperf):\n    {call}\n" for k, call in BAD_CALLS.items())
    pytester.makepyfile(
        "from pytest_fsperf import fsperf, fsperf_mount\n" + body
        + "@fsperf(min_bw='1GB/s')\ndef test_marker_without_the_fixture():\n    pass\n"
        + "@fsperf(baseline='../../etc/passwd')\ndef test_baseline_path(fsperf):\n    pass\n"
        + "@fsperf_mount('bindfs', options=['ro\\x00x'])\ndef test_mount_nul(fsperf):\n    pass\n")
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", timeout=120)
    out = result.stdout.str()
    assert "Traceback" not in out and "TypeError" not in out and "ValueError" not in out
    for name in [*BAD_CALLS, "marker_without_the_fixture", "baseline_path", "mount_nul"]:
        assert f"usage error: test_fixture_calls_of_the_wrong_type_and_bad_markers_are_one_usage_line_each.py::test_{name}" in out, name
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stdout.fnmatch_lines(["*test_marker_without_the_fixture: the fsperf marker judges what "
                                 "the fsperf fixture measures*",
                                 "*baseline='../../etc/passwd' must be a baseline name*"])


@pytest.mark.fio
@pytest.mark.parametrize("key", ["fsperf_json", "fsperf_storage", "fsperf_markdown",
                                 "fsperf_backend_config", "fsperf_prices"])
def test_a_nul_in_an_ini_path_is_one_usage_line(pytester, key):
    pytester.path.joinpath("pytest.ini").write_bytes(f"[pytest]\n{key} = a\0b\n".encode())
    pytester.makepyfile("def test_x(): pass")
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", timeout=60)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"*{key} = a\\x00b (ini file *): holds a control character*"])
    assert "INTERNALERROR" not in result.stdout.str() + result.stderr.str()


@pytest.mark.fio
def test_a_job_that_asks_for_more_time_than_the_deadline_is_not_blamed_on_the_filesystem(pytester):
    """As found: a job stopped by --fsperf-workload-timeout was blamed on the filesystem ("the
    filesystem stopped answering") where fio itself was told to think between I/Os."""
    pytester.makepyfile("""
        def test_slow(fsperf):
            fsperf.fio(name="think", rw="write", bs="4k", size="64k", thinktime="1s")
    """)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider",
                                           "--fsperf-workload-timeout=3", timeout=120)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*fio did not finish within 3 s: the mount still answers*the "
                                 "job may have asked for more time than that*"])
    assert "stopped answering" not in result.stdout.str()
