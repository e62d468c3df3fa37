"""Whatever ends a session (SIGTERM, SIGKILL, a daemon stopped dead), nothing it started
is left: not the mount, the daemon, fio, MinIO nor the private directories. Checked on what
the killed session itself recorded, so other sessions on the machine do not matter."""

from __future__ import annotations

import contextlib
import glob
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil
import pytest

from pytest_fsperf.infra import leftovers
from pytest_fsperf.infra.mountinfo import read_mounts
from pytest_fsperf.infra.procs import Proc, kill_tree
from pytest_fsperf.store.minio import find_minio
from tests.conftest import need

TIER = "fuse"  # every test here, unless one says otherwise (conftest.py)

SUITE = """
import os
from pytest_fsperf import fsperf_mount

@fsperf_mount("{backend}"{config})
def test_long_read(fsperf{extra}):
    fsperf.fio(name="lay", rw="write", bs="1M", size="16M", judged=False)
    fsperf.cold()
    fsperf.fio(name="read", rw="read", bs="4k", size="16M", time_based=1, runtime="60s")
"""


def record_of(pid: int) -> str | None:
    found = glob.glob(os.path.join(leftovers.state_dir(), f"{pid}-*.jsonl"))
    return found[0] if found else None


def entries(path: str) -> list[dict]:
    out = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            try:
                item = json.loads(line)
            except ValueError:
                continue
            if "kind" in item:
                out.append(item)
    return out


def running_fio(items: list[dict]) -> bool:
    for e in items:
        if e["kind"] == "process":
            try:
                if psutil.Process(e["pid"]).name() == "fio":
                    return True
            except psutil.Error:
                pass
    return False


def what_is_left(items: list[dict]) -> list[str]:
    mounts = {m.mount_point for m in read_mounts()}
    left = []
    for e in items:
        if e["kind"] == "mount" and e["path"] in mounts:
            left.append(f"mount {e['path']}")
        if e["kind"] == "dir" and os.path.lexists(e["path"]):
            left.append(f"dir {e['path']}")
        if e["kind"] == "process":
            try:
                p = psutil.Process(e["pid"])
                if abs(p.create_time() - e["started"]) < 0.01 and p.status() != psutil.STATUS_ZOMBIE:
                    left.append(f"process {e['pid']} {p.name()}")
            except psutil.Error:
                pass
    return left


def start_suite(folder: Path, backend: str = "bindfs", s3: bool = False) -> subprocess.Popen[bytes]:
    (folder / "test_suite.py").write_text(SUITE.format(
        backend=backend, config=', config="fsperf_s3"' if s3 else "",
        extra=", fsperf_s3" if s3 else ""))
    return subprocess.Popen([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q",
                             "test_suite.py"], cwd=folder, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT)


def wait_for_fio(proc: subprocess.Popen[bytes], timeout: float = 60) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        path = record_of(proc.pid)
        if path and running_fio(entries(path)):
            return path
        assert proc.poll() is None, proc.stdout.read().decode() if proc.stdout else ""
        time.sleep(0.1)
    raise AssertionError("fio did not start")


def gone_within(items: list[dict], seconds: float) -> list[str]:
    deadline = time.monotonic() + seconds
    while (left := what_is_left(items)) and time.monotonic() < deadline:
        time.sleep(0.2)
    return left


@pytest.fixture
def suite_dir(tmp_path):
    need("bindfs")
    need("fio")
    return tmp_path


def test_sigterm_ends_the_session_like_ctrl_c(suite_dir):
    proc = start_suite(suite_dir)
    path = wait_for_fio(proc)
    items = entries(path)
    proc.send_signal(signal.SIGTERM)
    out, _ = proc.communicate(timeout=60)
    assert proc.returncode == pytest.ExitCode.INTERRUPTED, out.decode()
    assert "KeyboardInterrupt" in out.decode() or "SIGTERM" in out.decode()
    assert what_is_left(items) == []
    assert not os.path.exists(path)  # everything was removed, so the record went too


def test_sigkill_the_watchdog_removes_everything_at_once(suite_dir):
    proc = start_suite(suite_dir)
    path = wait_for_fio(proc)
    items = entries(path)
    assert any(e["kind"] == "mount" for e in items)
    proc.kill()
    proc.communicate()
    assert gone_within(items, 30) == []
    # the record goes last, a moment after what it names (the full suite once looked between)
    deadline = time.monotonic() + 10
    while os.path.exists(path) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not os.path.exists(path)


def test_what_a_session_killed_with_its_watchdog_left_is_removed_by_the_next(suite_dir):
    proc = start_suite(suite_dir)
    path = wait_for_fio(proc)
    watchdogs = [p for p in psutil.process_iter(["cmdline"])
                 if p.info["cmdline"] and path in p.info["cmdline"]]
    assert len(watchdogs) == 1
    watchdogs[0].kill()
    proc.kill()
    proc.communicate()
    items = entries(path)
    assert what_is_left(items) != []  # nobody cleaned up: the mount and daemon are still there
    (suite_dir / "test_next.py").write_text("def test_nothing(): pass\n")
    out = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "test_next.py",
                          "--fsperf-json=r.json"], cwd=suite_dir, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stdout
    assert f"pytest-fsperf removed what an earlier session left: session {proc.pid}" in out.stdout
    mount = next(e["path"] for e in items if e["kind"] == "mount")
    assert f"unmounted {mount}" in out.stdout
    swept = json.loads((suite_dir / "r.json").read_text())["swept"]
    assert any(f"unmounted {mount}" in line for line in swept)
    assert what_is_left(items) == []


def test_minio_and_its_bucket_go_with_a_killed_session(suite_dir):
    need("s3fs")
    if find_minio() is None:
        pytest.skip("MinIO is not installed")
    proc = start_suite(suite_dir, "s3fs", s3=True)
    items = entries(wait_for_fio(proc))
    assert any("minio" in e.get("path", "") for e in items if e["kind"] == "dir")
    proc.kill()
    proc.communicate()
    assert gone_within(items, 30) == []


CHAOS_RUNS = int(os.environ.get("FSPERF_CHAOS_RUNS", "4"))

CHAOS_SUITE = """
import os
from pytest_fsperf import fsperf_mount

def test_existing_mount(fsperf):
    fsperf.fio(name="lay", rw="write", bs="1M", size="8M", judged=False)
    fsperf.cold()
    fsperf.fio(name="read", rw="read", bs="4k", size="8M", time_based=1, runtime="3s")

@fsperf_mount("{backend}", options={options!r})
def test_owned_mount(fsperf):
    fsperf.fio(name="lay", rw="write", bs="1M", size="8M", judged=False)
    fsperf.cold()
    fsperf.fio(name="read", rw="read", bs="4k", size="8M", time_based=1, runtime="3s")
"""


def planted_tree(root: Path) -> dict[Path, bytes]:
    made = {}
    for name in ("keep.bin", "sub/keep2.bin"):
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(os.urandom(4096))
        made[path] = path.read_bytes()
    return made


@pytest.mark.parametrize("run", range(CHAOS_RUNS))
def test_chaos(suite_dir, bindfs, run, request):
    """A session on an existing mount and an owned one (rclone with a shared --cache-dir where
    rclone is installed, else bindfs), ended at a random moment by SIGTERM, SIGKILL, SIGKILL
    of its watchdog too, a stopped daemon, or a full disk; then a new session. Nothing the
    first started is left, and the files planted beside its work dir and in the shared cache
    dir are byte-identical."""
    rng = random.Random(run)
    action = rng.choice(["SIGTERM", "SIGKILL", "SIGKILL+watchdog", "SIGSTOP daemon", "ENOSPC"])
    existing = bindfs(name=f"existing{run}")
    point, backing = existing.point, existing.source
    if action == "ENOSPC":  # the existing mount is a 4 MiB tmpfs: the 8 MiB layout fills it
        point = backing = suite_dir / "small"
        backing.mkdir()
        subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(point)], check=True)
        request.addfinalizer(lambda: subprocess.run(["umount", str(point)], check=False))
    shared = suite_dir / "shared-cache"
    rclone = shutil.which("rclone") is not None
    options = ["--cache-dir", str(shared)] if rclone else []
    planted = {**planted_tree(backing / "planted"), **planted_tree(shared)}
    (suite_dir / "test_chaos.py").write_text(CHAOS_SUITE.format(
        backend="rclone" if rclone else "bindfs", options=options))
    proc = subprocess.Popen([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q",
                             "test_chaos.py", f"--fsperf-mount={point}",
                             "--fsperf-workload-timeout=20"], cwd=suite_dir,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    path = None
    items: list[dict] = []
    deadline = time.monotonic() + rng.uniform(0.3, 8.0)
    while time.monotonic() < deadline and proc.poll() is None:
        path = path or record_of(proc.pid)
        if path and os.path.exists(path):
            items = entries(path)
        time.sleep(0.05)
    try:
        if action == "SIGSTOP daemon":
            existing.proc.send_signal(signal.SIGSTOP)
            for e in items:
                with contextlib.suppress(psutil.Error):
                    if e["kind"] == "process" and psutil.Process(e["pid"]).name() in ("bindfs", "rclone"):
                        psutil.Process(e["pid"]).suspend()
            time.sleep(rng.uniform(0.5, 3))
            proc.kill()
        elif action == "SIGKILL+watchdog":
            for p in psutil.process_iter(["cmdline"]):
                if path and p.info["cmdline"] and path in p.info["cmdline"]:
                    p.kill()
            proc.kill()
        elif action in ("SIGTERM", "SIGKILL"):
            proc.send_signal(getattr(signal, action))
        out, _ = proc.communicate(timeout=180)
        if action == "ENOSPC" and proc.returncode != pytest.ExitCode.INTERRUPTED:
            assert b"No space left on device" in out or b"ENOSPC" in out, out.decode()
            assert b"Traceback" not in out
    finally:
        existing.proc.send_signal(signal.SIGCONT)
    subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--co", "-q",
                    "test_chaos.py"], cwd=suite_dir, capture_output=True, timeout=120, check=False)
    assert gone_within(items, 30) == [], action
    for planted_path, content in planted.items():
        assert planted_path.read_bytes() == content, (action, planted_path)
    assert not [p for p in backing.iterdir() if p.name.startswith("fsperf-work-")], action


def test_a_record_naming_what_cannot_be_touched_is_settled_without_an_error(tmp_path):
    """A dir of a name the plugin never gives (even one this user owns), a dir on a dead
    mount, a PID long gone, a garbled line: the sweep removes nothing of them, says what it
    kept, forgets the record, and never raises."""
    folder = tmp_path / "state"
    folder.mkdir(mode=0o700)
    precious = tmp_path / "precious"  # owned by this user, but not a name the plugin makes
    made = {precious / "a": b"keep me"}
    precious.mkdir()
    (precious / "a").write_bytes(b"keep me")
    linked = tmp_path / "pytest-fsperf-bindfs-abcdef123456"
    linked.symlink_to(precious)
    gone = tmp_path / "fsperf-work-0123abcd"
    (folder / "1-dead.jsonl").write_text(
        '{"owner": 1, "started": 1.0}\n'
        f'{{"id": 1, "kind": "dir", "path": "{precious}"}}\n'
        f'{{"id": 2, "kind": "dir", "path": "{linked}"}}\n'
        f'{{"id": 3, "kind": "dir", "path": "{gone}"}}\n'
        f'{{"id": 4, "kind": "dir", "path": "{precious}/../precious"}}\n'
        '{"id": 5, "kind": "process", "pid": 999999, "started": 5.0}\n'
        '{"id": 6, "kind": "mount", "pa')
    report = leftovers.sweep(str(folder))
    assert all(path.read_bytes() == content for path, content in made.items())
    assert linked.is_symlink()
    assert len(report) == 1 and f"kept {precious} (not a directory the plugin makes)" in report[0]
    assert "reached through a symlink" in report[0]
    assert list(folder.iterdir()) == []


def test_a_reused_pid_never_kills_a_stranger_or_its_group(tmp_path):
    """As found: the sweep also took every process whose process group id equalled a
    recorded PID; a new group leader that reused the PID (here: a recorded PID with an
    earlier start time, as a dead session's record holds it) passed the start-time check
    and was killed with its group, and the sweep said nothing."""
    if os.geteuid() != 0:
        pytest.skip("needs root to start the stranger as another user")
    stranger = subprocess.Popen(["/bin/sh", "-c", "sleep 60 & exec sleep 61"], user=65534,
                                group=65534, extra_groups=[], start_new_session=True)
    try:
        leader = psutil.Process(stranger.pid)
        deadline = time.monotonic() + 10
        while len(leader.children()) < 1 and time.monotonic() < deadline:
            time.sleep(0.05)
        (child,) = leader.children()
        assert os.getpgid(child.pid) == stranger.pid  # a group the stranger leads
        gone_session = {"kind": "process", "pid": stranger.pid,
                        "started": leader.create_time() - 30.0}  # our process of that PID, dead
        assert leftovers.clean([gone_session]) == []
        assert leader.is_running() and child.is_running()
        assert kill_tree(Proc(stranger.pid, leader.create_time() - 30.0)) == []
        assert leader.is_running() and child.is_running()
        # the process itself, by its true start time: it and its group go
        assert sorted(kill_tree(Proc.of(stranger.pid))) == sorted([stranger.pid, child.pid])
    finally:
        stranger.kill()
        stranger.wait()


def test_a_state_dir_another_user_made_first_never_switches_off_crash_cleanup(pytester, monkeypatch,
                                                                            request):
    """As found: `mkdir -m700 $TMPDIR/pytest-fsperf.state-0` as nobody made root's session
    run with no record and no watchdog (and print a false "removed what an earlier session
    left" line). Root's record now lives under /run, where only root creates entries; a
    user without one is refused in one line when the directory is not its own."""
    if os.geteuid() != 0:
        pytest.skip("needs root to act as another user")
    tmp = Path(tempfile.mkdtemp(prefix="fsperf-sticky-", dir="/tmp"))  # nobody reaches it
    tmp.chmod(0o1777)
    request.addfinalizer(lambda: shutil.rmtree(tmp))
    monkeypatch.setenv("TMPDIR", str(tmp))
    monkeypatch.setattr("tempfile.tempdir", None)
    planted = tmp / "pytest-fsperf.state-0"
    subprocess.run(["/usr/bin/python3", "-c", f"import os; os.mkdir({str(planted)!r}, 0o700)"],
                   user=65534, group=65534, extra_groups=[], check=True)
    assert leftovers.state_dir() == "/run/pytest-fsperf"
    pytester.makepyfile("""
        from pytest_fsperf.infra import leftovers
        def test_recorded(fsperf_settings):  # a session that uses the plugin
            assert leftovers._records, "no record kept"
    """)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)
    assert "earlier session" not in result.stdout.str()
    assert "kept no record" not in result.stdout.str()
    # where /run cannot be used, the fallback refuses the planted directory in one line
    monkeypatch.setattr(leftovers, "RUN_DIR", str(pytester.path / "no-run"))
    monkeypatch.delenv("XDG_RUNTIME_DIR", raising=False)
    with pytest.raises(leftovers.StateDirError, match=r"is not a 0700 directory of yours \(it "
                                                      r"belongs to user nobody \(uid 65534\)\)"):
        leftovers.state_dir()
    pytester.makeconftest("""
        from pytest_fsperf.infra import leftovers
        leftovers.RUN_DIR = "/nonexistent-run"  # as where /run cannot be used
    """)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.stderr.fnmatch_lines(["*pytest-fsperf: the state directory */pytest-fsperf.state-0 is "
                                 "not a 0700 directory of yours*"])
    assert "Traceback" not in result.stderr.str()
    assert result.ret == pytest.ExitCode.USAGE_ERROR


def test_a_dead_sessions_trace_instance_is_removed_and_no_other(tmp_path):
    """A tracefs instance a killed session made is removed by the next session's sweep; an
    instance of any other name, or a path outside tracefs, named in a record, is kept."""
    from pytest_fsperf.measure import fusetrace
    if fusetrace.unavailable():
        pytest.skip(f"FUSE tracepoints: {fusetrace.unavailable()}")
    instances = f"{fusetrace.TRACEFS}/instances"
    ours = f"{instances}/{fusetrace.PREFIX}{os.urandom(6).hex()}"
    theirs = f"{instances}/someone-else-{os.urandom(3).hex()}"
    os.mkdir(ours)
    os.mkdir(theirs)
    try:
        folder = tmp_path / "state"
        folder.mkdir(mode=0o700)
        (folder / "1-dead.jsonl").write_text(
            '{"owner": 1, "started": 1.0}\n'
            f'{{"id": 1, "kind": "trace", "path": "{ours}"}}\n'
            f'{{"id": 2, "kind": "trace", "path": "{theirs}"}}\n'
            f'{{"id": 3, "kind": "trace", "path": "{tmp_path}"}}\n')
        report = leftovers.sweep(str(folder))
        assert not os.path.exists(ours)
        assert os.path.isdir(theirs) and tmp_path.is_dir()
        assert f"removed the trace instance {ours}" in report[0]
        assert f"kept {theirs} (not a tracefs instance the plugin makes)" in report[0]
    finally:
        for path in (ours, theirs):
            with contextlib.suppress(FileNotFoundError):
                os.rmdir(path)
