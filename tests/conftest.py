"""Fixtures for the plugin's own tests: real bindfs FUSE mounts, started and stopped here."""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psutil
import pytest

from pytest_fsperf.infra.mountinfo import read_mounts
from pytest_fsperf.mounts.daemon import find_daemon
from pytest_fsperf.store import tls
from pytest_fsperf.store.minio import INSTALL, S3Server, find_minio, start_minio

# cryptography's Python modules loaded here, before any in-process pytester run: each run
# takes them out of sys.modules after it, and loaded again over its Rust part, kept, they no
# longer agree ("curve must be an EllipticCurve instance"); the plugin loads them lazily
with contextlib.suppress(ImportError):  # a checkout's bare venv (test_cli) has no cryptography
    tls.preload()

# The plugin's session hooks, loaded here for the same reason: the entry point imports them
# when a session first uses the plugin, and a pytester run that did so would take them out of
# sys.modules again, beside modules the tests hold (a second copy of every type)
importlib.import_module("pytest_fsperf.session_plugin")

# Test tiers, by what a test needs; each test is in exactly one (pytest -m unit: the quick tier):
#   unit  pure logic: no fio, no mounts, no servers, no subprocess, no pytester run, not the
#         machine lock, nothing of the real machine measured (held at run time, below)
#   fio   runs fio, the engines, a pytester session or another process; or reads the machine
#   fuse  real FUSE mounts (bindfs, rclone over a local dir), as root
#   s3    MinIO with s3fs or rclone over it
# A tier marker on the test wins; else the higher of its module's TIER and what its fixtures
# imply. Nothing that needs more than pure logic may call itself unit.
TIERS = ("unit", "fio", "fuse", "s3")
ALIASES = {"integration": "fuse"}
S3_FIXTURES = {"minio", "fsperf_s3"}
FUSE_FIXTURES = {"bindfs", "bindfs_mount"}
NOT_UNIT_FIXTURES = {"pytester", "testdir"}


# modules the test files import at their top (the [test] extra): without them a run of the
# suite ended in 13 collection tracebacks; now it stops on one line
TEST_EXTRAS = {"hypothesis": "hypothesis", "jsonschema": "jsonschema", "fuse": "fusepy"}


def pytest_configure(config: pytest.Config) -> None:
    missing = [pkg for mod, pkg in TEST_EXTRAS.items() if importlib.util.find_spec(mod) is None]
    if missing and not config.option.help:
        raise pytest.UsageError(f"the plugin's own tests need its test extras ({', '.join(missing)} "
                                "missing): pip install -e '.[test]'")
    if not (config.option.help or config.option.markers or config.pluginmanager.is_blocked("fsperf")):
        # the suite's helpers (tests/netns_hosts.py, tests/k8s/) note what they make into the
        # session's leftovers record, which the plugin keeps once a session uses it: this one does,
        # whichever of its tests are run
        from pytest_fsperf import plugin

        plugin.used(config)


def implied_tier(fixtures: set[str]) -> str:
    """The tier a test's fixtures put it in."""
    if fixtures & S3_FIXTURES:
        return "s3"
    if fixtures & FUSE_FIXTURES:
        return "fuse"
    if fixtures & NOT_UNIT_FIXTURES:
        return "fio"
    return "unit"


def tier_of(fixtures: set[str], marks: set[str], module: str, where: str) -> str:
    """The one tier of a test: its explicit marker, else the higher of its module's TIER and
    what its fixtures imply."""
    given = {ALIASES.get(m, m) for m in marks if ALIASES.get(m, m) in TIERS}
    implied = implied_tier(fixtures)
    if len(given) > 1:
        raise pytest.UsageError(f"{where}: in two test tiers ({', '.join(sorted(given))}): keep one")
    tier = given.pop() if given else max(module, implied, key=TIERS.index)
    if tier == "unit" and implied != "unit":
        raise pytest.UsageError(f"{where}: in the unit tier but its fixtures need the {implied} tier")
    return tier


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    wrong = []
    for item in items:
        fixtures = set(getattr(item, "fixturenames", ()))
        marks = {m.name for m in item.iter_markers()}
        try:
            module = getattr(getattr(item, "module", None), "TIER", "unit")
            tier = tier_of(fixtures, marks, module, item.nodeid)
        except pytest.UsageError as exc:
            wrong.append(str(exc))
            continue
        if tier not in marks:
            item.add_marker(getattr(pytest.mark, tier))
    if wrong:
        raise pytest.UsageError("\n".join(wrong))


@pytest.fixture(autouse=True)
def _unit_tier_is_pure(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """A unit test that starts a process or takes the machine lock fails, naming what it did."""
    if request.node.get_closest_marker("unit") is None:
        return
    from pytest_fsperf.infra import lock

    def no_process(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError(f"a unit test started a process ({args[1:2]}): mark it fio")

    take = lock._take

    def no_machine_lock(fd: int, path: str, *args: Any) -> None:
        assert path != lock.LOCK_PATH, "a unit test took the machine lock: mark it fio"
        take(fd, path, *args)

    monkeypatch.setattr(subprocess.Popen, "__init__", no_process)
    monkeypatch.setattr(lock, "_take", no_machine_lock)


PACKAGES = {"perf": "linux-perf", "fusermount3": "fuse3", "cc": "gcc libc6-dev"}  # Debian's package where its name differs


def need(binary: str) -> str:
    path = shutil.which(binary)
    if path is None:
        pytest.skip(f"{binary} is not installed (apt-get install {PACKAGES.get(binary, binary)})")
    return path


def interrupt_pytest(cwd: Path, args: list[str], started: Callable[[], bool],
                     settle: float) -> str:
    """Run pytest in cwd, wait until started() (at most 20 s), let it run `settle` s more,
    press Ctrl-C (SIGINT); checks pytest ended as interrupted and returns its output."""
    # SIGINT as a terminal gives it: a suite started in the background (`cmd &`) inherits
    # SIGINT ignored, and the child would never see the Ctrl-C
    proc = subprocess.Popen([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *args],
                            cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        return _interrupt(proc, started, settle)
    finally:
        if proc.poll() is None:  # never leave it running (and its mounts) past a failure
            proc.send_signal(signal.SIGTERM)
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.communicate(timeout=30)


def _interrupt(proc: subprocess.Popen[bytes], started: Callable[[], bool], settle: float) -> str:
    deadline = time.monotonic() + 20
    while not started():
        assert time.monotonic() < deadline and proc.poll() is None
        time.sleep(0.1)
    time.sleep(settle)
    proc.send_signal(signal.SIGINT)
    out, _ = proc.communicate(timeout=30)
    assert proc.returncode == pytest.ExitCode.INTERRUPTED, out.decode()
    return out.decode()


@dataclass
class BindMount:
    source: Path
    point: Path
    pid: int
    proc: subprocess.Popen[bytes]


def _mounted(point: Path) -> bool:
    return any(m.mount_point == str(point) for m in read_mounts())


def _unmount(point: Path) -> None:
    fusermount = shutil.which("fusermount3") or shutil.which("fusermount") or "fusermount3"
    for args in ([fusermount, "-u", str(point)], [fusermount, "-uz", str(point)]):
        if not _mounted(point):
            return
        subprocess.run(args, capture_output=True, check=False)


@pytest.fixture
def bindfs(tmp_path: Path) -> Iterator[Callable[..., BindMount]]:
    """Start bindfs in the foreground (its PID known independently of the plugin)."""
    binary = need("bindfs")
    need("fio")
    if not os.path.exists("/dev/fuse"):
        pytest.skip("/dev/fuse is missing")
    started: list[BindMount] = []

    def start(*options: str, name: str = "mnt") -> BindMount:
        source, point = tmp_path / f"{name}-src", tmp_path / name
        source.mkdir()
        point.mkdir()
        proc = subprocess.Popen([binary, "-f", *options, str(source), str(point)],
                                stderr=subprocess.PIPE)
        deadline = time.monotonic() + 10
        while not _mounted(point):
            if proc.poll() is not None or time.monotonic() > deadline:
                proc.kill()
                err = proc.stderr.read().decode() if proc.stderr else ""
                pytest.fail(f"bindfs did not mount {point}: {err}")
            time.sleep(0.05)
        mount = BindMount(source, point, proc.pid, proc)
        started.append(mount)
        return mount

    yield start
    for mount in started:
        _unmount(mount.point)
        try:
            mount.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            mount.proc.kill()
            mount.proc.wait()


def ours() -> tuple[list[str], list[str]]:
    """Mounts and processes of the plugin's making that belong to this test process: its
    descendants (daemons, fio, MinIO, started by in-process pytester runs), and the mounts
    they serve or that lost their daemon. Another pytest-fsperf session on the machine does
    not count."""
    me = psutil.Process()
    mine = {p.pid: p for p in me.children(recursive=True)}
    procs = []
    for pid, p in mine.items():
        try:
            cmd = " ".join(p.cmdline())
        except psutil.Error:
            continue
        if "pytest-fsperf-" in cmd and "sys.stdin.buffer.read()" not in cmd:  # not a watchdog
            procs.append(f"{pid}: {cmd}")
    mounts = []
    for m in read_mounts():
        if "pytest-fsperf-" not in m.mount_point:
            continue
        lookup = find_daemon(m)
        if lookup.daemon is None or lookup.daemon.pid in mine:
            mounts.append(m.mount_point)
    return mounts, procs


@pytest.fixture
def minio() -> None:
    """fio and the MinIO the S3 tests start (skipped, with the install command, without it)."""
    need("fio")
    if find_minio() is None:
        pytest.skip(f"MinIO is not installed: {INSTALL}")


@dataclass
class JuiceFsMount:
    point: Path
    meta_url: str
    server: S3Server


@pytest.fixture
def juicefs_mount(tmp_path: Path, minio: None) -> Iterator[JuiceFsMount]:
    """A JuiceFS volume on a MinIO of its own (sqlite3 metadata in tmp_path), mounted the way
    users do (`juicefs mount -d`: a supervisor and its worker), unmounted after the test."""
    binary = need("juicefs")
    server = start_minio(find_minio() or "minio")
    point, meta = tmp_path / "jfs", f"sqlite3://{tmp_path}/jfs.db"
    point.mkdir()
    env = dict(os.environ, ACCESS_KEY=server.access_key, SECRET_KEY=server.secret_key)
    try:
        subprocess.run([binary, "format", "--storage", "minio", "--bucket",
                        f"{server.endpoint}/{server.bucket}", meta, "vol"], env=env, check=True,
                       capture_output=True, timeout=60)
        subprocess.run([binary, "mount", "-d", meta, str(point), "--cache-dir",
                        str(tmp_path / "cache"), "--log", str(tmp_path / "jfs.log")],
                       check=True, capture_output=True, timeout=60)
        yield JuiceFsMount(point, meta, server)
    finally:
        if _mounted(point):
            subprocess.run([binary, "umount", "--force", str(point)], capture_output=True, timeout=60)
        server.stop()


def run_json(pytester: pytest.Pytester, *args: str) -> tuple[pytest.RunResult, Any]:
    """pytester.runpytest with the fsperf JSON written, and that document (None if none)."""
    out = pytester.path / "r.json"
    result = pytester.runpytest("-p", "no:cacheprovider", f"--fsperf-json={out}", *args)
    doc = json.loads(out.read_text()) if out.exists() else None
    if doc is not None:  # every session's file reads back into the types, and writes the same
        from tests.results import reads_back
        reads_back(doc)
    return result, doc


def measured_fio() -> bool:
    """A measuring fio runs on this machine (not a layout pass: create_only)."""
    for p in psutil.process_iter(["name", "cmdline"]):
        cmd = " ".join(p.info["cmdline"] or ())
        if p.info["name"] == "fio" and "--name=fsperf" in cmd and "create_only" not in cmd:
            return True
    return False


def pause(pid: int, after: float, seconds: float,
          when: Callable[[], bool] | None = None) -> threading.Thread:
    """SIGSTOP the process `after` s from now (or from when `when()` first holds, polled for
    at most 60 s) for `seconds` s, then SIGCONT it (started)."""
    def stop() -> None:
        deadline = time.monotonic() + 60
        while when is not None and not when() and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(after)
        os.kill(pid, signal.SIGSTOP)
        time.sleep(seconds)
        os.kill(pid, signal.SIGCONT)

    thread = threading.Thread(target=stop, daemon=True)
    thread.start()
    return thread


# -- for the safety tests (test_safety_*.py) --

@pytest.fixture
def sticky_dir():
    """A sticky, world-writable directory like /tmp, reachable by other users."""
    path = Path(tempfile.mkdtemp(prefix="fsperf-sticky-", dir="/tmp"))
    path.chmod(0o1777)
    yield path
    shutil.rmtree(path)


@pytest.fixture
def full_disk(tmp_path):
    """A 1 MiB tmpfs, filled up."""
    if os.geteuid() != 0:
        pytest.skip("needs root to mount a tmpfs")
    point = tmp_path / "full"
    point.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(point)], check=True)
    try:
        with open(point / "filler", "wb") as f, contextlib.suppress(OSError):
            while True:
                f.write(b"\0" * 65536)
                f.flush()
        yield point
    finally:
        subprocess.run(["umount", str(point)], check=True)


@pytest.fixture
def clean():
    """Fails the test if it leaves a mount or a process of the plugin's behind."""
    assert ours() == ([], []), "left over from before this test"
    yield
    deadline = time.monotonic() + 5
    while ours() != ([], []) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert ours() == ([], [])
