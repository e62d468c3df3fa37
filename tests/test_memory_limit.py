"""A daemon run under a memory limit (fsperf_mount(..., memory_limit=...)): every process of
it in a cgroup of its own; the result says the limit and the cgroup's peak; an OOM kill of the
daemon fails the test as exactly that, from the cgroup's own count; nothing is left behind."""

from __future__ import annotations

import contextlib
import json
import os
import sys
from pathlib import Path

import pytest

from pytest_fsperf.infra import cgroup
from tests.conftest import need, ours

TIER = "fuse"
HERE = Path(__file__).parent


def leaky_backend(pytester: pytest.Pytester) -> None:
    pytest.importorskip("fuse", reason="fusepy is not installed (pip install fusepy)")
    need("fio")
    why = cgroup.unavailable()
    if why:
        pytest.skip(why)
    pytester.makeconftest(f"""
        from pytest_fsperf import Backend

        def pytest_fsperf_backends():
            return [Backend(name="leakfs", binary={sys.executable!r}, install="-",
                            command=({sys.executable!r}, {str(HERE / "leakfs.py")!r},
                                     "{{source}}", "{{mountpoint}}", "{{leak}}"),
                            defaults={{"source": ("{{private}}/src",), "leak": ("0",)}}, secrets=())]
    """)


def cgroups_left() -> list[str]:
    found = []
    for root, dirs, _files in os.walk(cgroup.ROOT):
        found += [os.path.join(root, d) for d in dirs if d.startswith(cgroup.PREFIX)]
    return found


def run(pytester: pytest.Pytester, test: str):
    pytester.makepyfile(test)
    out = pytester.path / "fsperf.json"
    env = os.environ.get("PYTHONPATH", "")
    os.environ["PYTHONPATH"] = f"{HERE.parent}{os.pathsep}{env}" if env else str(HERE.parent)
    try:
        result = pytester.runpytest("-p", "no:cacheprovider", f"--fsperf-json={out}")
    finally:
        os.environ["PYTHONPATH"] = env
    return result, json.loads(out.read_text())


def test_the_limit_and_the_daemons_peak_under_it_are_in_the_result(pytester):
    leaky_backend(pytester)
    result, doc = run(pytester, """
        from pytest_fsperf import fsperf_mount

        @fsperf_mount("leakfs", memory_limit="300M", config={"leak": "0"})
        def test_read(fsperf):
            fsperf.fio(rw="read", bs="128k", size="16M", direct=1)
    """)
    result.assert_outcomes(passed=1)
    (read,) = [r for r in doc["results"] if r["name"] == "read"]
    m = read["memory"]
    assert m["limit"] == 300 << 20 and m["oom_kills"] == 0 and m["cgroup"] in (1, 2)
    assert 5e6 < m["peak"] < 300e6, m  # a Python daemon's few tens of MB, under the limit
    result.stdout.fnmatch_lines(["*daemon memory limit (its cgroup's own counters*test_read read peak * of 300 MiB (315 MB)*"])
    assert cgroups_left() == [] and ours() == ([], [])


def test_a_daemon_killed_for_memory_is_named_as_that(pytester):
    """1 MiB kept per READ request, 64 MB allowed: the kernel kills the daemon midway; the
    test fails saying so from the cgroup's own count, not as a vanished mount."""
    leaky_backend(pytester)
    result, _doc = run(pytester, """
        from pytest_fsperf import fsperf_mount

        @fsperf_mount("leakfs", memory_limit="64M", config={"leak": "1024"})
        def test_read(fsperf):
            fsperf.fio(rw="read", bs="128k", size="64M", direct=1)

        def test_after(fsperf):
            pass  # the session goes on
    """)
    result.assert_outcomes(failed=1, passed=1)
    result.stdout.fnmatch_lines(["*the daemon was killed for memory: its cgroup's limit 64 MiB (67.1 MB)*"
                                 "OOM kill* (cgroup v*'s own count)*"])
    assert cgroups_left() == [] and ours() == ([], [])


@pytest.mark.unit
@pytest.mark.parametrize("path", ["/etc", "/sys/fs/cgroup/memory/../../../etc/fsperf-mem-0123456789ab",
                                  "/sys/fs/cgroup/memory/x/fsperf-mem-short",
                                  "/sys/fs/cgroup/memory/fsperf-mem-0123456789ab/sub"])
def test_the_sweep_removes_only_a_cgroup_the_plugin_names(path):
    from pytest_fsperf.infra import leftovers
    assert leftovers.clean([{"kind": "cgroup", "path": path}]) == [
        f"kept {path} (not a memory cgroup the plugin makes)"]


@pytest.mark.unit
@pytest.mark.parametrize("given, why", [("12", "unknown unit"), ("lots", "memory_limit='lots'"),
                                        ("0.5K", "from 1 MiB to 1 EiB"),
                                        ("9" * 400 + "G", "from 1 MiB to 1 EiB"),
                                        ("9" * 400, "memory_limit='99999999999999999999999999999999999...")])
def test_a_bad_memory_limit_is_one_usage_error(given, why):
    from pytest_fsperf.errors import UsageError
    from pytest_fsperf.mounts.request import from_marker
    with pytest.raises(UsageError, match=why):
        from_marker(("bindfs",), {"memory_limit": given}, "t.py::test_x: fsperf_mount")
    assert from_marker(("bindfs",), {"memory_limit": "1.5G"}, "w").memory_limit == 3 << 29


@pytest.mark.fio
def test_a_helper_that_left_its_daemon_in_the_cgroup_is_stopped_by_the_next_sweep():
    """As found: after SIGKILL of the session, a `memory_limit=` daemon's double-forked
    helper lived on in its cgroup, and the next session's sweep left both (rmdir: busy)."""
    import subprocess
    import time

    from pytest_fsperf.infra import leftovers

    why = cgroup.unavailable()
    if why:
        pytest.skip(why)
    cage = cgroup.MemoryCage(64 << 20)
    # the daemon: forks a helper into its own session and exits, as a daemonizing FUSE does
    subprocess.run(cgroup.launcher(cage, ["/bin/sh", "-c", "setsid sleep 300 </dev/null "
                                                          ">/dev/null 2>&1 & exit 0"]), check=True)
    deadline = time.monotonic() + 5
    while not cage.pids():
        assert time.monotonic() < deadline
        time.sleep(0.05)
    helper = cage.pids()[0]
    said = leftovers.clean([{"kind": "cgroup", "path": cage.path}])  # as the next session's
    assert said == [f"stopped 1 process left in the memory cgroup {cage.path}",
                    f"removed the memory cgroup {cage.path}"] or said == [
        f"stopped 1 process left in the memory cgroup {cage.path}; removed the memory cgroup "
        f"{cage.path}"], said
    import psutil

    assert not os.path.exists(cage.path)
    with contextlib.suppress(psutil.NoSuchProcess):
        assert psutil.Process(helper).status() == psutil.STATUS_ZOMBIE  # dead, its reaper's now
