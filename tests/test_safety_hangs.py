"""A daemon that hangs, never mounts or is stopped: the test fails naming it, nothing stays stuck, its whole process tree goes; helpers run isolated."""

from __future__ import annotations

import os
import signal
import subprocess
import time

import psutil
import pytest

from tests.conftest import need, ours
from tests.hostile import (
    as_nobody,
    ends_within,
)

# -- 3. report writers --------------------------------------------------------------------


# -- 6. the machine lock ------------------------------------------------------------------


# -- 9. the daemon's whole process tree is stopped --------------------------------------


@pytest.mark.integration
def test_a_daemon_that_never_mounts_is_stopped_with_its_children(pytester, tmp_path):
    need("fio")
    pids = tmp_path / "pids"
    pytester.makeconftest(f"""
        from pytest_fsperf import Backend

        def pytest_fsperf_backends():
            script = ("sleep 300 & echo $! >> {pids}; setsid sleep 301 & echo $! >> {pids}; "
                      "sleep 302")
            return [Backend(name="never", binary="sh", install="-",
                            command=("sh", "-c", script, "pytest-fsperf-never"))]
    """)
    pytester.makepyfile("""
        from pytest_fsperf import fsperf_mount

        @fsperf_mount("never")
        def test_timeout(fsperf):
            pass
    """)
    result = pytester.runpytest("-p", "no:cacheprovider", "--fsperf-mount-timeout=1")
    result.assert_outcomes(errors=1)
    helpers = [int(p) for p in pids.read_text().split()]
    assert len(helpers) == 2
    for pid in helpers:
        assert not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE


@pytest.mark.integration
def test_an_existing_mount_whose_daemon_is_stopped_is_a_usage_error_not_a_hang(pytester, bindfs):
    mount = bindfs()
    pytester.makepyfile("def test_x(fsperf): pass")
    mount.proc.send_signal(signal.SIGSTOP)
    try:
        result = ends_within(30, pytester, f"--fsperf-mount={mount.point}", "--fsperf-mount-timeout=2")
    finally:
        mount.proc.send_signal(signal.SIGCONT)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"*--fsperf-mount={mount.point} (command line): {mount.point} did not "
                                 "answer within 2 s (its FUSE daemon may be stopped*"])


STOP_MID_RUN = """
import os, signal, threading, time
import psutil
from pytest_fsperf import fsperf_mount

def stop_later(fsperf):
    pid = fsperf.daemon.daemon.pid
    threading.Timer(1.0, os.kill, (pid, signal.SIGSTOP)).start()
    return pid

{marker}
def test_hangs(fsperf):
    fsperf.fio(name="lay", rw="write", bs="1M", size="8M", judged=False)
    pid = stop_later(fsperf)
    open({pidfile!r}, "w").write(str(pid))
    fsperf.fio(name="read", rw="read", bs="4k", size="8M", time_based=1, runtime="60s", direct=1)

def test_next_runs(tmp_path):
    assert True
"""


@pytest.mark.integration
def test_a_daemon_stopped_mid_workload_fails_that_test_naming_the_hang(pytester, bindfs, tmp_path):
    """An existing mount: fio is stopped at the deadline, the test fails naming the hang and
    the daemon's state, the session goes on and ends (no D-state wait)."""
    mount = bindfs()
    pidfile = tmp_path / "pid"
    pytester.makepyfile(STOP_MID_RUN.format(marker="", pidfile=str(pidfile)))
    try:
        result = ends_within(60, pytester, f"--fsperf-mount={mount.point}",
                             "--fsperf-workload-timeout=4", "--fsperf-mount-timeout=2")
    finally:
        mount.proc.send_signal(signal.SIGCONT)
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines([f"*read: fio did not finish within 4 s: the filesystem stopped answering "
                                 f"(daemon PID {mount.pid}: stopped)*",
                                 "*could not remove work directory*(the filesystem stopped answering during a workload*"])
    # a job process whose request the daemon had taken waits in the kernel for its answer
    # (SIGCONT above); then, its status report's stat lock held by its killed parent, fio's
    # job tries it for 5 s before it exits (fio's backend.c)
    deadline = time.monotonic() + 10
    while (left := [p for p in psutil.process_iter(["name", "cmdline"]) if p.info["name"] == "fio"
                    and str(mount.point) in " ".join(p.info["cmdline"] or [])]):
        assert time.monotonic() < deadline, left
        time.sleep(0.1)


@pytest.mark.integration
def test_an_owned_mount_that_stops_answering_is_aborted_and_removed(pytester, tmp_path):
    need("bindfs")
    need("fio")
    pidfile = tmp_path / "pid"
    pytester.makepyfile(STOP_MID_RUN.format(marker='@fsperf_mount("bindfs")', pidfile=str(pidfile)))
    result = ends_within(60, pytester, "--fsperf-workload-timeout=4")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*read: fio did not finish within 4 s: the filesystem stopped answering "
                                 "(daemon PID *: stopped); killed its daemon *"])
    pid = int(pidfile.read_text())
    assert not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    assert ours()[0] == []


@pytest.mark.integration
def test_an_in_process_engine_stuck_on_an_owned_mount_is_freed_by_the_abort(pytester):
    need("bindfs")
    need("fio")
    pytester.makepyfile("""
        import os, signal
        from pytest_fsperf import fsperf_mount

        @fsperf_mount("bindfs")
        def test_stuck(fsperf):
            pid = fsperf.daemon.daemon.pid

            def run():
                os.kill(pid, signal.SIGSTOP)
                open(os.path.join(fsperf.workdir, "new"), "w")  # waits on the stopped daemon
                raise AssertionError("the stopped daemon answered")

            fsperf._runner.measure_engine("stuck", True, "meta", {}, run)

        def test_next():
            pass
    """)
    result = ends_within(60, pytester, "--fsperf-workload-timeout=3")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*stuck: did not finish within 3 s: the filesystem stopped answering "
                                 "(daemon PID *: stopped); killed its daemon *"])
    assert ours()[0] == []


@pytest.mark.fio
def test_a_package_planted_in_the_working_directory_never_runs_in_the_watchdog(
        tmp_path, sticky_dir, monkeypatch):
    """As found: pytest ran from a world-writable directory where nobody planted
    pytest_fsperf/__init__.py; after pytest died the watchdog imported it, as root."""
    from pytest_fsperf.infra import leftovers
    from pytest_fsperf.infra import watchdog as settler
    pwned = sticky_dir / "pwned"
    as_nobody(f"""
import os
os.mkdir({str(sticky_dir / 'pytest_fsperf')!r})
with open({str(sticky_dir / 'pytest_fsperf' / '__init__.py')!r}, "w") as f:
    f.write("import os\\nopen({str(pwned)!r}, 'w').write(str(os.getuid()))\\n")
""")
    folder = tmp_path / "state"
    folder.mkdir(mode=0o700)
    record = leftovers.Record.create(str(folder))
    record.add("dir", path=str(tmp_path / "gone"))  # something left: the watchdog imports
    monkeypatch.chdir(sticky_dir)
    monkeypatch.setenv("PYTHONPATH", str(sticky_dir))  # ignored too (-I)
    watchdog = settler.start(record)
    assert watchdog.stdin is not None
    watchdog.stdin.close()  # as when pytest dies
    assert watchdog.wait(timeout=60) == 0
    assert not pwned.exists()
    assert not os.path.exists(record.path)  # it settled the record with the installed package
    assert watchdog.args[1] == "-I"


@pytest.mark.fio
def test_helper_interpreters_run_isolated_from_root_dir(monkeypatch, tmp_path):
    """Every `python` the plugin starts gets -I and cwd "/" (the watchdog, the removal and
    the mount probe helpers)."""
    import pytest_fsperf
    seen: list[tuple[list[str], str | None]] = []
    real = subprocess.Popen

    def spy(args, *a, **kw):
        if args and args[0] == __import__("sys").executable:
            seen.append((list(args), kw.get("cwd")))
        return real(args, *a, **kw)

    monkeypatch.setattr(subprocess, "Popen", spy)
    from pytest_fsperf.infra.probe import probe
    probe("/", 30)
    from pytest_fsperf.infra import leftovers
    from pytest_fsperf.infra import watchdog as settler
    leftovers._remove_dir("/nonexistent/pytest-fsperf-x-0123456789ab")
    folder = tmp_path / "state"
    folder.mkdir(mode=0o700)
    watchdog = settler.start(leftovers.Record.create(str(folder)))
    assert watchdog.stdin is not None
    watchdog.stdin.close()
    watchdog.wait(timeout=60)
    assert len(seen) >= 3
    for args, cwd in seen:
        assert args[1] == "-I" and cwd == "/", args
    assert pytest_fsperf.__file__


@pytest.mark.unit
def test_the_watchdog_is_given_the_directory_the_package_was_imported_from() -> None:
    """As found: after infra/ was made, package_root() gave .../pytest_fsperf itself, so a
    watchdog of a session run from a checkout (not installed) could not import the package
    to settle the record."""
    import os

    import pytest_fsperf
    from pytest_fsperf.infra import watchdog as settler

    above = os.path.dirname(os.path.dirname(os.path.abspath(pytest_fsperf.__file__)))
    assert settler.package_root() == [above]  # a root-owned checkout no one else can write
    assert os.path.isfile(os.path.join(above, "pytest_fsperf", "__init__.py"))


@pytest.mark.unit
def test_a_writable_entry_beside_the_package_keeps_the_watchdog_off_that_path(tmp_path) -> None:
    """With the directory above the package on root's sys.path, an entry there another user
    can write (a module it could plant: `psutil.py` where psutil is missing) would run as
    root: such a directory is not given, nor one whose package holds such an entry."""
    import os

    from pytest_fsperf.infra import watchdog as settler

    root = tmp_path / "checkout"
    (root / "pytest_fsperf").mkdir(parents=True)
    (root / "pytest_fsperf" / "__init__.py").write_text("")
    os.chmod(tmp_path, 0o755)
    assert settler.package_root(str(root)) == [str(root)]
    (root / "shared").mkdir(mode=0o777)
    os.chmod(root / "shared", 0o777)
    assert settler.package_root(str(root)) == []
    os.chmod(root / "shared", 0o755)
    (root / "pytest_fsperf" / "__init__.py").chmod(0o666)
    assert settler.package_root(str(root)) == []

