"""The page cache a run fills (WorkloadResult.cache_filled), measured on real bindfs mounts:
what decides whether waiting out a VM's free page reporting can matter to an A/B's runs.
(Free memory was measured first: in the full suite it moved by 56 MB around direct reads
that fill no cache, and rose over a 256 MiB buffered read, as other processes ended.)"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from pytest_fsperf.mounts.mounter import MountPlan
from pytest_fsperf.mounts.registry import Registry
from pytest_fsperf.options.config import Settings
from pytest_fsperf.result.workload import WorkloadResult
from pytest_fsperf.runner.pairs import fills_cache
from pytest_fsperf.runner.workspace import Workspace
from pytest_fsperf.session.state import FsperfSession
from tests.conftest import need

TIER = "fuse"  # every test here, unless one says otherwise (conftest.py)

MIB = 1 << 20


@pytest.fixture
def over(tmp_path: Path) -> Iterator[Callable[[str], Workspace]]:
    """A workspace on bindfs over a source of the test's own: a tmpfs it mounts, or a
    directory on the machine's disk."""
    need("bindfs")
    need("fio")
    made: list[tuple[FsperfSession, Path | None]] = []

    def start(source_kind: str) -> Workspace:
        source = tmp_path / f"src-{source_kind}"
        source.mkdir()
        tmpfs = None
        if source_kind == "tmpfs":
            subprocess.run(["mount", "-t", "tmpfs", "-o", "size=640m", "tmpfs", str(source)],
                           check=True)
            tmpfs = source
        session = FsperfSession(Settings())
        made.append((session, tmpfs))
        target = session.open_target(MountPlan(Registry().get("bindfs", "memory"), (),
                                               {"source": str(source)}))
        return Workspace(session, target, "memory::t", target.new_workdir("t"))

    yield start
    for session, tmpfs in made:
        session.close()
        if tmpfs is not None:
            subprocess.run(["umount", str(tmpfs)], check=False)
    shutil.rmtree(tmp_path, ignore_errors=True)


def read(ws: Workspace, direct: int) -> int:
    _base, job = ws.job("read", {"rw": "read", "bs": "1M", "size": "256M", "direct": direct}, "t")
    ws.measure("lay", False, job, layout=True)
    ws.cold_start()
    r = ws.measure(ws.unique("read"), True, job, layout=True)
    assert r.cache_filled is not None
    return r.cache_filled


def test_direct_reads_of_a_tmpfs_fill_no_cache_and_do_not_settle(over):
    taken = read(over("tmpfs"), 1)
    assert not fills_cache(_result(taken)), taken / MIB


def test_cold_buffered_reads_fill_the_page_cache(over):
    taken = read(over("tmpfs"), 0)
    assert taken >= 160 * MIB and fills_cache(_result(taken)), taken / MIB


def test_direct_reads_of_bindfs_over_a_disk_fill_the_backing_files_cache(over):
    """The daemon reads its backing file through the page cache: 256 MiB direct reads at the
    mount take about 256 MiB (this is where settling helped, issue 24 at scale 0.002)."""
    taken = read(over("disk"), 1)
    assert taken >= 160 * MIB and fills_cache(_result(taken)), taken / MIB


def _result(taken: int) -> WorkloadResult:
    """A run that read 256 MiB and took `taken` bytes of free memory."""
    from dataclasses import replace

    from tests.test_rounds import io, result

    return replace(result(1.0), read=replace(io(1.0), io_bytes=256 * MIB), cache_filled=taken)
