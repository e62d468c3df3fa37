"""The machine lock: any user can take it, no link is followed, a holder is named, a deadline ends the wait, another user's lock fails at once."""

from __future__ import annotations

import contextlib
import os
import signal
import stat
import subprocess
import time
from pathlib import Path

import pytest

from pytest_fsperf.errors import MeasurementError
from pytest_fsperf.infra.lock import LOCK_PATH, ROOT_LOCK, SHARED_LOCK, machine_lock
from tests.hostile import (
    NOBODY,
    SYSTEM_PYTHON,
    as_nobody,
    fails_at_once,
    hold_lock,
)

# -- 3. report writers --------------------------------------------------------------------


# -- 6. the machine lock ------------------------------------------------------------------


@pytest.mark.fio
def test_the_lock_root_made_can_be_taken_by_any_user(sticky_dir):
    path = sticky_dir / "pytest-fsperf.lock"
    with machine_lock(str(path)):
        pass
    path.chmod(0o600)  # as an older version left it
    with machine_lock(str(path)):
        pass
    assert stat.S_IMODE(path.stat().st_mode) == 0o644
    assert as_nobody(f"""
import fcntl, os
fd = os.open({str(path)!r}, os.O_RDONLY | os.O_NOFOLLOW)
fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
print("locked")
""").strip() == "locked"


@pytest.mark.fio
def test_a_link_planted_at_the_lock_is_not_followed(tmp_path, sticky_dir):
    victim = tmp_path / "victim"
    victim.write_text("precious\n")
    victim.chmod(0o600)
    path = sticky_dir / "pytest-fsperf.lock"
    as_nobody(f"import os; os.symlink({str(victim)!r}, {str(path)!r})")
    with pytest.raises(MeasurementError, match=r"^cannot open the machine lock .*: it is a symlink \(not made by pytest-fsperf: remove it"), \
            machine_lock(str(path)):
        pass
    assert victim.read_text() == "precious\n" and stat.S_IMODE(victim.stat().st_mode) == 0o600


def test_a_lock_another_user_holds_fails_at_once_naming_the_holder(sticky_dir, monkeypatch,
                                                                     pytester):
    """As found: `flock $TMPDIR/pytest-fsperf.lock sleep 40` as nobody blocked root's pytest
    with no message until killed."""
    if os.geteuid() != 0 or not os.access(SYSTEM_PYTHON, os.X_OK):
        pytest.skip(f"needs root and {SYSTEM_PYTHON} to act as another user")
    path = sticky_dir / "pytest-fsperf.lock"
    with machine_lock(str(path)):
        pass
    holder = hold_lock(path, NOBODY)
    try:
        fails_at_once(path, rf"held by another user: PID {holder.pid} "
                            r"\(user nobody, .*python3.*running since")
    finally:
        holder.kill()
        holder.wait()
    # a whole session while nobody holds the machine's shared lock: root's own lock is in
    # /run, where nobody can create, remove or lock it; the shared one nobody holds is said,
    # not obeyed (it stalled every root gate for as long as nobody liked)
    if LOCK_PATH != ROOT_LOCK:
        return
    with machine_lock():
        pass
    assert stat.S_IMODE(os.stat(ROOT_LOCK).st_mode) == 0o600 and os.stat(ROOT_LOCK).st_uid == 0
    as_nobody(f"import os\ntry:\n    os.open({ROOT_LOCK!r}, os.O_RDONLY)\nexcept PermissionError:"
              "\n    print('refused')\n")
    shared = Path(SHARED_LOCK)
    if not shared.exists():
        with machine_lock(SHARED_LOCK):
            pass
    holder = hold_lock(shared, NOBODY)
    try:
        monkeypatch.setenv("TMPDIR", str(sticky_dir))
        pytester.makepyfile("""
            def test_one(fsperf):
                fsperf.fio(rw="write", bs="4k", size="64k")
        """)
        result = pytester.runpytest_subprocess("-p", "no:cacheprovider", timeout=120)
        result.assert_outcomes(passed=1)
        result.stdout.fnmatch_lines([f"*the shared lock {shared} is held by PID {holder.pid} "
                                     f"(user nobody*measuring beside it*"])
        assert "Traceback" not in result.stdout.str()
    finally:
        holder.kill()
        holder.wait()


@pytest.mark.fio
def test_a_lock_file_removed_and_made_anew_while_held_is_not_taken_twice(sticky_dir):
    """As found: nobody made the shared lock file first, then, while root A held it, removed
    it and made a new one: root B locked the new file and both measured at once. A lock is
    now the file its name holds once locked; one whose name moved on is taken again."""
    import threading
    if os.geteuid() != 0 or not os.access(SYSTEM_PYTHON, os.X_OK):
        pytest.skip(f"needs root and {SYSTEM_PYTHON} to act as another user")
    path = sticky_dir / "pytest-fsperf.lock"
    as_nobody(f"import os; os.close(os.open({str(path)!r}, os.O_CREAT | os.O_RDONLY, 0o644))")
    first = hold_lock(path, None)  # root A, on nobody's file
    entered = threading.Event()

    def session_b() -> None:
        with machine_lock(str(path), timeout=60):
            entered.set()

    b = threading.Thread(target=session_b, daemon=True)
    b.start()
    time.sleep(0.5)
    as_nobody(f"import os; os.unlink({str(path)!r}); "
              f"os.close(os.open({str(path)!r}, os.O_CREAT | os.O_RDONLY, 0o644))")
    second = hold_lock(path, None)  # root C, on the new file
    try:
        first.kill()
        first.wait()
        assert not entered.wait(1.5)  # B took the old file, saw its name moved on, waits for C
    finally:
        second.kill()
        second.wait()
    assert entered.wait(10)
    b.join(10)


def gone(pid: int) -> None:
    """Wait until a killed process of nobody's (not our child: init reaps it) has exited,
    its descriptors closed."""
    import psutil

    with contextlib.suppress(psutil.Error):
        psutil.Process(pid).wait(timeout=10)


def nobodys_locker(code: str) -> int:
    """Run `code` as nobody: it takes the lock, forks a child that prints its PID and sleeps,
    and exits; the child's PID (its locker is gone by the time this returns)."""
    keeper = subprocess.Popen([SYSTEM_PYTHON, "-c", code], stdout=subprocess.PIPE, text=True,
                              cwd="/", user=NOBODY, group=NOBODY, extra_groups=[])
    assert keeper.stdout is not None
    child = int(keeper.stdout.readline())
    keeper.wait()
    return child


def held_by_me(sticky_dir: Path) -> tuple[Path, subprocess.Popen[str]]:
    """A lock file in a sticky directory, made as the plugin makes it, and a process of this
    user holding it."""
    if not os.access(SYSTEM_PYTHON, os.X_OK):
        pytest.skip(f"needs {SYSTEM_PYTHON}")
    path = sticky_dir / "pytest-fsperf.lock"
    with machine_lock(str(path)):
        pass
    return path, hold_lock(path, None)


@pytest.mark.fio
def test_a_lock_this_user_holds_is_waited_for_until_the_deadline(sticky_dir):
    path, holder = held_by_me(sticky_dir)
    said: list[str] = []
    try:
        began = time.monotonic()
        with pytest.raises(MeasurementError, match=rf"gave up after 1.5 s waiting for the machine "
                                                   rf"lock {path}, held by PID {holder.pid} "
                                                   r"\(user root.*\(--fsperf-lock-timeout\)"), \
                machine_lock(str(path), timeout=1.5, say=said.append):
            pass
        assert 1.5 <= time.monotonic() - began < 5
        assert len(said) == 1 and said[0].startswith(
            f"pytest-fsperf: waiting for the machine lock {path}, held by PID {holder.pid} "
            "(user root, ")
    finally:
        holder.kill()
        holder.wait()
    with machine_lock(str(path), timeout=1.5, say=said.append):  # free again: taken at once
        assert len(said) == 1


@pytest.mark.fio
def test_a_lock_whose_holder_cannot_be_named_fails_at_once_and_is_waited_for_once(sticky_dir):
    """As found: nobody took the lock, passed the descriptor into an unread unix socket and
    exited; every test waited the full --fsperf-lock-timeout, the holder shown as 'user ?'."""
    if os.geteuid() != 0 or not os.access(SYSTEM_PYTHON, os.X_OK):
        pytest.skip(f"needs root and {SYSTEM_PYTHON} to act as another user")
    path = sticky_dir / "pytest-fsperf.lock"
    with machine_lock(str(path)):
        pass
    code = (f"import fcntl, os, socket, sys, time\nfd = os.open({str(path)!r}, os.O_RDONLY)\n"
            "fcntl.flock(fd, fcntl.LOCK_EX)\na, b = socket.socketpair()\n"
            "if os.fork() == 0:\n    a.close()\n    os.close(fd)\n    print(os.getpid(), flush=True)\n"
            "    time.sleep(60)\n    os._exit(0)\n"
            "socket.send_fds(a, [b'x'], [fd])\nos._exit(0)\n")  # the locker is gone; its fd lives on
    child = nobodys_locker(code)
    try:
        fails_at_once(path, r"held by a process that cannot be named \(PID \d+, which is gone")
        began = time.monotonic()  # the session's next test: at once, not another second
        fails_at_once(path, r"cannot be named .*found at an earlier test of this session")
        assert time.monotonic() - began < 0.5
    finally:
        os.kill(child, signal.SIGKILL)
        gone(child)
    with machine_lock(str(path), timeout=1):  # let go with its keeper: taken at once
        pass


@pytest.mark.fio
def test_a_session_waits_out_the_lock_once_not_once_per_test(sticky_dir):
    path, holder = held_by_me(sticky_dir)
    try:
        with pytest.raises(MeasurementError, match="gave up after 1 s"), \
                machine_lock(str(path), timeout=1):
            pass
        began = time.monotonic()
        with pytest.raises(MeasurementError, match="already waited its --fsperf-lock-timeout once"), \
                machine_lock(str(path), timeout=600):
            pass
        assert time.monotonic() - began < 1
    finally:
        holder.kill()
        holder.wait()


@pytest.mark.fio
def test_a_holder_that_became_root_through_a_setuid_program_is_still_another_user(sticky_dir):
    """As found: nobody took the lock and exec'd a setuid-root program (same PID, euid 0):
    root took the holder for its own session and waited out the whole lock timeout."""
    if os.geteuid() != 0 or not os.access(SYSTEM_PYTHON, os.X_OK):
        pytest.skip(f"needs root and {SYSTEM_PYTHON} to act as another user")
    path = sticky_dir / "pytest-fsperf.lock"
    with machine_lock(str(path)):
        pass
    sleeper = sticky_dir / "suid-sleep"  # a setuid-root program nobody can run
    sleeper.write_bytes(Path("/bin/sleep").read_bytes())
    sleeper.chmod(0o4755)
    code = (f"import fcntl, os\nfd = os.open({str(path)!r}, os.O_RDONLY)\n"
            "fcntl.flock(fd, fcntl.LOCK_EX)\nos.set_inheritable(fd, True)\n"
            f"os.execv({str(sleeper)!r}, ['sleep', '60'])\n")
    holder = subprocess.Popen([SYSTEM_PYTHON, "-c", code], cwd="/", user=NOBODY, group=NOBODY,
                              extra_groups=[])
    try:
        deadline = time.monotonic() + 10
        while Path(f"/proc/{holder.pid}/exe").exists() and \
                os.readlink(f"/proc/{holder.pid}/exe") != str(sleeper):
            assert time.monotonic() < deadline
            time.sleep(0.05)
        status = Path(f"/proc/{holder.pid}/status").read_text()
        uids = next(ln for ln in status.splitlines() if ln.startswith("Uid:")).split()[1:]
        if uids[1] != "0":
            pytest.skip("setuid programs do not run as root here (nosuid)")
        fails_at_once(path, rf"held by another user: PID {holder.pid} \(user nobody")
    finally:
        holder.kill()
        holder.wait()


@pytest.mark.fio
def test_a_lock_whose_locker_exited_is_named_by_the_child_that_still_holds_it(sticky_dir):
    """As found: the recorded holder had exited while a child it started still held the file;
    28 tests failed, each saying the holder could not be named and to remove the file."""
    if os.geteuid() != 0 or not os.access(SYSTEM_PYTHON, os.X_OK):
        pytest.skip(f"needs root and {SYSTEM_PYTHON} to act as another user")
    path = sticky_dir / "pytest-fsperf.lock"
    with machine_lock(str(path)):
        pass
    code = (f"import fcntl, os, time\nfd = os.open({str(path)!r}, os.O_RDONLY)\n"
            "fcntl.flock(fd, fcntl.LOCK_EX)\n"
            "if os.fork() == 0:\n    print(os.getpid(), flush=True)\n    time.sleep(60)\n"
            "    os._exit(0)\nos._exit(0)\n")  # the locker exits; its child keeps the fd
    child = nobodys_locker(code)
    try:
        fails_at_once(path, rf"held by another user: PID {child} \(user nobody")
    finally:
        os.kill(child, signal.SIGKILL)


@pytest.mark.fio
def test_a_hard_link_planted_at_the_lock_is_refused_and_its_file_left_alone(tmp_path, sticky_dir):
    """Where fs.protected_hardlinks is off (containers, older kernels), a local user can link
    a root file of 0600 into /run/lock under the lock's name: the lock made a file of root's
    0644 (to let every user lock it), a secret readable by all. Played here by root's own
    link, as nobody's would be."""
    victim = sticky_dir / "secret"
    victim.write_text("precious\n")
    victim.chmod(0o600)
    path = sticky_dir / "pytest-fsperf.lock"
    os.link(victim, path)
    with pytest.raises(MeasurementError, match=r"^the machine lock .* has other names \(hard "
                                               r"links\): not made by pytest-fsperf: remove it"), \
            machine_lock(str(path)):
        pass
    assert stat.S_IMODE(victim.stat().st_mode) == 0o600 and victim.read_text() == "precious\n"
