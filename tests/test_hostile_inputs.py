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


@pytest.mark.parametrize("value", ["1e308", "inf", "101"])
def test_a_scale_past_any_machine_is_a_usage_error(pytester, value):
    pytester.makeini(f"[pytest]\nfsperf_scale = {value}\n")
    pytester.makepyfile("def test_x(): pass")
    result = pytester.runpytest("-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"*fsperf_scale = {value} (ini file *): must be*"])


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
