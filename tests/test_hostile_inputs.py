"""Inputs that once hung or crashed root's session: a FIFO where a file is expected, a saved
run of the wrong shape, a number too large to mean anything. Each is one line, at once."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest

from pytest_fsperf.cli import main
from tests.conftest import need


def _fifo(path):
    os.mkfifo(path)
    return path


@pytest.mark.fio
@pytest.mark.parametrize("option", ["--fsperf-hosts=@{path}", "--fsperf-backend-config={path}"])
def test_a_fifo_given_as_a_file_is_refused_not_waited_on(tmp_path, option):
    fifo = _fifo(tmp_path / "pipe")
    (tmp_path / "test_x.py").write_text("def test_x(): pass\n")
    began = time.monotonic()
    out = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider",
                          option.format(path=fifo)], cwd=tmp_path, capture_output=True,
                         text=True, timeout=60, check=False)
    assert time.monotonic() - began < 30
    assert out.returncode == 4, out.stdout + out.stderr
    assert "is a FIFO, not a file" in out.stderr and str(fifo) in out.stderr, out.stderr


def test_a_saved_run_whose_environment_is_not_an_object_is_skipped_with_why(tmp_path, capsys):
    doc = {"schema": "pytest-fsperf/1", "created": "2026-11-01T00:00:00+0000", "environment": "oops",
           "results": [{"test": "t", "name": "r", "total": {"bw_bytes": 1e9}}], "comparisons": []}
    for i in range(3):
        (tmp_path / f"r{i}.json").write_text(json.dumps(doc))
    assert main(["history", str(tmp_path)]) == 4
    err = capsys.readouterr()
    assert "not a saved run: `environment` must be an object" in err.out + err.err
    assert "Traceback" not in err.out + err.err


@pytest.mark.parametrize(("value", "says"), [
    ("1e308", "must be"), ("inf", "not a number"), ("101", "must be"),
    # Python's float() and int() take these; no one writing a scale means them
    ("1_0", "not a number"), ("\u0661", "not a number"), ("9" * 5000, "not a number")])
def test_a_scale_past_any_machine_is_a_usage_error(pytester, value, says):
    pytester.makeini(f"[pytest]\nfsperf_scale = {value}\n")
    pytester.makepyfile("def test_x(): pass")
    result = pytester.runpytest("-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    shown = value if len(value) <= 80 else f"{value[:80]}... ({len(value)} characters)"
    result.stderr.fnmatch_lines([f"*fsperf_scale = {shown} (ini file *): {says}*"])
    assert max(map(len, result.stderr.lines)) < 400  # the input is not echoed whole


@pytest.mark.fio
def test_fsperf_bench_obeys_no_config_or_conftest_of_the_current_directory(tmp_path):
    """As found: a conftest.py, or a pytest.ini with pythonpath/addopts, in root's working
    directory (or a parent another user can write) was imported as uid 0 by fsperf bench."""
    ran = tmp_path / "ran"
    (tmp_path / "conftest.py").write_text(f"open({str(ran)!r}, 'a').write('conftest\\n')\n")
    (tmp_path / "evil").mkdir()
    (tmp_path / "evil" / "evilplugin.py").write_text(f"open({str(ran)!r}, 'a').write('plugin\\n')\n")
    (tmp_path / "pytest.ini").write_text("[pytest]\npythonpath = evil\naddopts = -p evilplugin\n")
    out = subprocess.run([sys.executable, "-m", "pytest_fsperf", "bench", "--scale", "0.001", "-k",
                          "seq_write_1t"], cwd=tmp_path, capture_output=True, text=True, check=False)
    assert out.returncode == 0, out.stdout + out.stderr
    assert not ran.exists(), ran.read_text()
    assert "1 passed" in out.stdout
    out = subprocess.run([sys.executable, "-m", "pytest_fsperf", "bench", "--scale", "0.001", "-k",
                          "seq_write_1t", "--user-config"], cwd=tmp_path, capture_output=True,
                         text=True, check=False)
    assert set(ran.read_text().split()) == {"plugin", "conftest"}  # asked for: read


def test_a_daemon_binary_on_a_detached_stopped_fuse_mount_is_not_read(bindfs, tmp_path):
    """As found: a daemon whose binary lies on a lazily detached, stopped FUSE mount passed
    the 'on FUSE' check (/proc/PID/exe names a path outside any mount) and hashing it hung
    the session. Where the binary lies is judged by the mapping's device."""
    import shutil as sh
    import signal

    m = bindfs()
    sh.copy("/bin/sleep", m.source / "sleeper")
    runner = subprocess.Popen([str(m.point / "sleeper"), "60"])
    try:
        os.kill(m.pid, signal.SIGSTOP)
        subprocess.run(["umount", "-l", str(m.point)], check=True)
        code = ("import sys, json; from pytest_fsperf.report.environment import build_dict; "
                f"print(json.dumps(build_dict(None, {runner.pid})))")
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                             timeout=20, check=False)
        assert out.returncode == 0, out.stderr
        found = json.loads(out.stdout)
        assert "daemon_exe" in found and "daemon_sha256" not in found
    finally:
        runner.kill()
        os.kill(m.pid, signal.SIGCONT)
        runner.wait()


LONG_NAME = "/tmp/" + "x" * 300 + ".json"  # past NAME_MAX: ENAMETOOLONG from every call


@pytest.mark.parametrize(("option", "says"), [
    *[(f"--fsperf-{name}={LONG_NAME}", "File name too long")
      for name in ("json", "html", "markdown", "benchmark-json", "storage")],
    ("--fsperf-cpus=" + "1" * 5000 + "/0", "is not a CPU list"),
    # a range of 4 billion CPUs grew pytest to 22.5 GB before
    ("--fsperf-cpus=0-4294967296/0", "is not a CPU list"),
    ("--fsperf-rounds=1_0", "not a whole number"),
])
def test_an_option_past_what_the_system_takes_is_one_usage_line(pytester, option, says):
    pytester.makepyfile("def test_x(): pass")
    result = pytester.runpytest("-p", "no:cacheprovider", option)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    err = result.stderr.str()
    assert says in err and "Traceback" not in err and "INTERNALERROR" not in err
    assert max(map(len, result.stderr.lines)) < 600  # the value is not echoed whole


@pytest.mark.fio
@pytest.mark.parametrize(("size", "says"), [
    ("str(10**4000)", "is not a fio size (a number of at most 20 digits"),
    ("10**5000", "a number of 16610 bits: past any value fio takes")])  # str() refuses it
def test_a_size_past_any_fio_size_fails_its_test_in_one_line(pytester, tmp_path, size, says):
    need("fio")
    pytester.makepyfile(f"""
        def test_x(fsperf):
            fsperf.fio(name="w", rw="read", bs="4k", size={size})
    """)
    result = pytester.runpytest("-p", "no:cacheprovider", f"--fsperf-mount={tmp_path}",
                                "--fsperf-plain-dir=1")
    result.assert_outcomes(failed=1)
    out = result.stdout.str()
    assert says in out and "INTERNALERROR" not in out and "Traceback" not in out
    assert max(map(len, result.stdout.lines)) < 400
