"""What the FUSE daemon read from and wrote to storage over the window
(measure/storage_io.py): the second meter made as the worked example says, one file, its
figures in figures.py and its line in measure/registry.py."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from pytest_fsperf.figures import Fig
from pytest_fsperf.measure.storage_io import StorageIo
from tests.conftest import run_json

TIER = "fuse"
MiB = 2**20


class _Span:
    wall, began, io_span, expected, stored = 1.0, 0.0, None, None, None


@pytest.mark.unit
def test_what_a_process_dirties_on_a_disk_is_counted_written(tmp_path: Path) -> None:
    meter = StorageIo((os.getpid(),))
    meter.start()
    with open(tmp_path / "f", "wb") as f:
        f.write(os.urandom(8 * MiB))
    found = meter.stop(_Span()).measured
    written = found[Fig.DAEMON_DISK_WRITTEN]
    assert set(found) == set(StorageIo.FIGURES)
    assert written is not None and written >= 8 * MiB, found


@pytest.mark.unit
def test_a_pid_reused_by_another_process_is_not_counted(monkeypatch) -> None:
    given = iter([(111, (0, 10 * MiB, 0)), (222, (0, 0, 0))])
    monkeypatch.setattr(StorageIo, "read", lambda self, pid: next(given))
    meter = StorageIo((4242,))
    meter.start()
    assert meter.stop(_Span()).measured == dict.fromkeys(StorageIo.FIGURES)


@pytest.mark.unit
def test_what_it_truncated_again_was_not_written(monkeypatch) -> None:
    """write_bytes counts pages as they are dirtied; cancelled_write_bytes what truncation
    took back before writeback: a temp file written and deleted never reached the disk."""
    given = iter([(7, (0, 0, 0)), (7, (4 * MiB, 10 * MiB, 10 * MiB))])
    monkeypatch.setattr(StorageIo, "read", lambda self, pid: next(given))
    meter = StorageIo((4242,))
    meter.start()
    assert meter.stop(_Span()).measured == {Fig.DAEMON_DISK_READ: 4.0 * MiB, Fig.DAEMON_DISK_WRITTEN: 0.0}


def test_bindfs_writes_and_reads_its_backing_disk_and_a_bound_on_it_fails(pytester, bindfs) -> None:
    """bindfs passes every byte to its backing directory on a disk (ext4 here): a write
    through it dirties as much there, and a cold read reads it back from the disk."""
    if os.path.realpath("/tmp").startswith("/dev/shm"):
        pytest.skip("the backing directory is not on a disk")
    mount = bindfs()
    pytester.makepyfile("""
        from pytest_fsperf import fsperf

        @fsperf(max_disk_written="1MB")
        def test_write(fsperf):
            fsperf.fio(name="w", rw="write", bs="1M", size="32M", direct=1)

        @fsperf(max_disk_read="1GB")
        def test_read(fsperf):
            fsperf.fio(name="w", rw="write", bs="1M", size="32M", direct=1)
            fsperf.cold()
            fsperf.fio(name="r", rw="read", bs="1M", size="32M")
    """)
    result, doc = run_json(pytester, f"--fsperf-mount={mount.point}")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*daemon disk written*"])
    rows = {(r["test"].split("::")[-1], r["name"]): r for r in doc["results"]}
    written = rows[("test_write", "w")]["measured"]
    assert 31 * MiB <= written["daemon_disk_written"] <= 40 * MiB, written
    read = rows[("test_read", "r")]["measured"]
    assert 31 * MiB <= read["daemon_disk_read"] <= 40 * MiB, read
    assert read["daemon_disk_written"] < 4 * MiB, read
    assert rows[("test_read", "r")]["stats"]["daemon_disk_read"]["median"] == read["daemon_disk_read"]


def test_a_daemon_process_that_ended_in_the_window_is_not_counted() -> None:
    """Its counts died with it: a process gone at the end gives no figure (None each), never
    the other processes' partial sum passed off as the daemon's."""
    import subprocess

    child = subprocess.Popen(["sleep", "30"], stdin=subprocess.DEVNULL)
    try:
        meter = StorageIo((child.pid,))
        meter.start()
        assert meter.before, "the live process was read at the start"
    finally:
        child.kill()
        child.wait()
    assert meter.stop(_Span()).measured == dict.fromkeys(StorageIo.FIGURES)


NOBODYS_DAEMON = r"""
import ctypes, os, shutil, sys, tempfile
ctypes.CDLL(None).prctl(15, b"x) Z 9 9 9 9 9", 0, 0, 0)  # PR_SET_NAME: a comm that looks like fields
print("ready", flush=True)
sys.stdin.readline()
folder = tempfile.mkdtemp(dir="/var/tmp")
with open(os.path.join(folder, "stage"), "wb") as f:
    f.write(os.urandom(4 * 2**20))
print("wrote", flush=True)
sys.stdin.readline()
shutil.rmtree(folder)
"""


def test_a_daemon_of_nobodys_naming_itself_like_stat_fields_is_counted_as_itself() -> None:
    """The worst a daemon's own process can do to the meters that read its /proc files: the
    only text of its own there is its name, in /proc/PID/stat. Named 'x) Z 9 9 9 9 9' (a
    closing parenthesis and fields after it), as user nobody, it is still read as itself:
    its real start time (so the same process at both ends) and its real counts, 4 MiB
    written to a disk."""
    import subprocess

    import psutil

    from pytest_fsperf.measure.faults import PageFaults
    from tests.hostile import NOBODY, SYSTEM_PYTHON

    if os.geteuid() != 0 or not os.access(SYSTEM_PYTHON, os.X_OK):
        pytest.skip(f"needs root and {SYSTEM_PYTHON} to act as another user")
    daemon = subprocess.Popen([SYSTEM_PYTHON, "-I", "-c", NOBODYS_DAEMON], cwd="/", user=NOBODY,
                              group=NOBODY, extra_groups=[], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
    assert daemon.stdin is not None and daemon.stdout is not None
    try:
        assert daemon.stdout.readline() == "ready\n"
        process = psutil.Process(daemon.pid)
        assert process.name() == "x) Z 9 9 9 9 9" and process.uids().real == NOBODY
        storage, faults = StorageIo((daemon.pid,)), PageFaults((daemon.pid,))
        for meter in (storage, faults):
            meter.start()
            (started, _), = meter.before.values()
            born = psutil.boot_time() + started / os.sysconf("SC_CLK_TCK")
            assert abs(born - process.create_time()) < 0.05, (started, process.create_time())
        daemon.stdin.write("write\n")
        daemon.stdin.flush()
        assert daemon.stdout.readline() == "wrote\n"
        written = storage.stop(_Span()).measured[Fig.DAEMON_DISK_WRITTEN]
        minor = faults.stop(_Span()).measured[Fig.DAEMON_MINOR_FAULTS]
        assert written is not None and written >= 4 * MiB, written
        assert minor is not None and minor > 0, minor
    finally:
        daemon.stdin.close()  # it removes its folder and ends
        daemon.wait(timeout=30)
