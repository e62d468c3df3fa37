"""What the FUSE daemon read from and wrote to storage over the window
(measure/storage_io.py): the second meter made as the worked example says, one file, its
figures in figures.py and its line in measure/registry.py."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from pytest_fsperf.figures import Fig
from pytest_fsperf.measure import storage_io
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
    monkeypatch.setattr(storage_io, "_counts", lambda pid: next(given))
    meter = StorageIo((4242,))
    meter.start()
    assert meter.stop(_Span()).measured == dict.fromkeys(StorageIo.FIGURES)


@pytest.mark.unit
def test_what_it_truncated_again_was_not_written(monkeypatch) -> None:
    """write_bytes counts pages as they are dirtied; cancelled_write_bytes what truncation
    took back before writeback: a temp file written and deleted never reached the disk."""
    given = iter([(7, (0, 0, 0)), (7, (4 * MiB, 10 * MiB, 10 * MiB))])
    monkeypatch.setattr(storage_io, "_counts", lambda pid: next(given))
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
