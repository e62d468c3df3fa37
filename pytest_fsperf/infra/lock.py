"""A machine-wide lock: measured tests never overlap, under xdist or across sessions.

The lock file is never followed through a symlink, and is the file its name holds once
locked. Root's sessions lock a file of root's in /run, where no other user can create,
remove or lock it, and take the shared lock beside it where free. Other users' sessions
lock the shared one, which any user can lock (flock needs only a read descriptor): a waiting
test says who holds it (PID, user, command, since when, from /proc/locks), gives up after a
deadline, and fails at once when the holder is another user.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import pwd
import stat
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import psutil

from pytest_fsperf.errors import MeasurementError

# One path for the machine, whatever the environment says: a lock that followed TMPDIR let
# two sessions with different TMPDIRs measure at once (FHS: /run/lock holds locks of
# resources several programs share; /tmp where a system has none). Any user can create,
# remove and lock a name there: root's sessions lock a file of root's in /run instead, where
# only root creates names (nobody removing the shared file while root A held it let root B
# take "the lock" too), and take the shared one beside it only when it is free, so other
# users' sessions wait for root's; one another user holds is said, never obeyed.
SHARED_LOCK = ("/run/lock/pytest-fsperf.lock" if os.path.isdir("/run/lock")
               else "/tmp/pytest-fsperf.lock")
ROOT_LOCK = "/run/pytest-fsperf.lock"


def _roots_own() -> bool:
    with contextlib.suppress(OSError):
        st = os.stat(os.path.dirname(ROOT_LOCK))
        return os.geteuid() == 0 and st.st_uid == 0 and not st.st_mode & 0o022
    return False


LOCK_PATH = ROOT_LOCK if _roots_own() else SHARED_LOCK


def _open(path: str, mode: int = 0o644) -> int:
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK  # NONBLOCK: a planted FIFO
    try:
        try:
            fd = os.open(path, flags)
        except FileNotFoundError:
            fd = os.open(path, flags | os.O_CREAT | os.O_EXCL, mode)
    except FileExistsError:  # another session created it just now
        return _open(path, mode)
    except OSError as exc:
        what = "it is a symlink" if exc.errno == errno.ELOOP else exc.strerror or str(exc)
        raise MeasurementError(f"cannot open the machine lock {path}: {what} "
                               "(not made by pytest-fsperf: remove it)") from None
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode) or st.st_nlink != 1:
        os.close(fd)
        what = "is not a regular file" if not stat.S_ISREG(st.st_mode) else \
            "has other names (hard links)"  # another file of root's: never chmod it
        raise MeasurementError(f"the machine lock {path} {what}: not made by pytest-fsperf: "
                               "remove it")
    if st.st_uid == os.geteuid() and stat.S_IMODE(st.st_mode) != mode:
        with contextlib.suppress(OSError):
            os.fchmod(fd, mode)  # the shared one readable, so lockable, by every user
    return fd


@dataclass(frozen=True)
class Holder:
    pid: int
    uid: int | None
    user: str
    command: str
    since: str  # the holder's start, as HH:MM:SS

    def __str__(self) -> str:
        return f"PID {self.pid} (user {self.user}, {self.command!r}, running since {self.since})"


def holder(fd: int) -> Holder | None:
    """Who holds the flock on fd's file, from /proc/locks (None: not found or not visible)."""
    st = os.fstat(fd)
    key = f"{os.major(st.st_dev):02x}:{os.minor(st.st_dev):02x}:{st.st_ino}"
    try:
        with open("/proc/locks", encoding="ascii", errors="replace") as f:
            lines = f.read().splitlines()
    except OSError:
        return None
    for line in lines:
        parts = line.split()
        if len(parts) >= 6 and parts[1] == "FLOCK" and parts[5] == key and parts[4].isdigit():
            return _describe(int(parts[4]))
    return None


def _describe(pid: int) -> Holder:
    try:
        p = psutil.Process(pid)
        with p.oneshot():
            # a holder is this user's only if every uid of it is: nobody who takes the lock
            # and execs a setuid-root program keeps the PID, now with euid 0 (taken for ours)
            uids = p.uids()
            uid = next((u for u in (uids.real, uids.effective, uids.saved) if u != os.geteuid()),
                       uids.effective)
            command = " ".join(p.cmdline())[:120] or p.name()
            since = time.strftime("%H:%M:%S", time.localtime(p.create_time()))
    except psutil.Error:
        return Holder(pid, None, "?", "?", "?")
    try:
        user = pwd.getpwuid(uid).pw_name
    except KeyError:
        user = str(uid)
    return Holder(pid, uid, user, command, since)


def keepers(fd: int) -> Holder | None:
    """Who holds the lock's file open now, where its locker is gone: a child that inherited
    the descriptor (found by its /proc/PID/fd), not ourselves; None where no one visible does."""
    st = os.fstat(fd)
    for p in psutil.process_iter():
        if p.pid == os.getpid():
            continue
        with contextlib.suppress(psutil.Error, OSError):
            for f in p.open_files():
                try:
                    other = os.stat(f.path)
                except OSError:
                    continue
                if (other.st_dev, other.st_ino) == (st.st_dev, st.st_ino):
                    return _describe(p.pid)
    return None


@contextmanager
def machine_lock(path: str | None = None, timeout: float = 900.0,
                 say: Callable[[str], None] | None = None) -> Iterator[None]:
    """Hold the lock for the block. Busy: `say` who holds it, wait at most `timeout` s
    (MeasurementError then), or fail at once if another user holds it."""
    mine = path or LOCK_PATH
    mode = 0o600 if mine == ROOT_LOCK else 0o644
    while True:
        fd = _open(mine, mode)
        try:
            _take(fd, mine, timeout, say)
        except BaseException:
            os.close(fd)
            raise
        if _names(fd, mine):
            break
        os.close(fd)  # the name was given to another file while we waited: lock that one
    shared = _beside(say) if path is None and mine == ROOT_LOCK else None
    try:
        yield
    finally:
        os.close(fd)  # closing releases the lock
        if shared is not None:
            os.close(shared)


def _names(fd: int, path: str) -> bool:
    """The lock's name still holds the file locked (not removed and made anew meanwhile)."""
    try:
        named, held = os.lstat(path), os.fstat(fd)
    except OSError:
        return False
    return (named.st_dev, named.st_ino) == (held.st_dev, held.st_ino)


def _beside(say: Callable[[str], None] | None) -> int | None:
    """Root's session also takes the shared lock where it is free (other users' sessions
    then wait for it); held by another user, it is said and not obeyed."""
    try:
        fd = _open(SHARED_LOCK)
    except MeasurementError as exc:
        if say is not None:
            say(f"pytest-fsperf: {exc}; not taken beside {ROOT_LOCK}")
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return fd
    except BlockingIOError:
        who = holder(fd)
        if say is not None:
            say(f"pytest-fsperf: the shared lock {SHARED_LOCK} is held by {who or 'a process'}"
                f"; root's sessions lock {ROOT_LOCK}, which no other user can take: measuring"
                " beside it (its measurements may overlap this one)")
        os.close(fd)
        return None


# Paths this process gave up waiting for: a session waits out its deadline once, not once
# per test (a holder that never lets go held root 900 s per test).
_WAITED_OUT: set[str] = set()
KEEPERS_EVERY = 5.0  # s between walks of every process for a gone locker's descriptor
UNNAMED_FOR = 1.0  # s a holder that cannot be named must stay so before we fail


# Paths whose holder could not be named: the session's later tests fail at once, saying so
_UNNAMED: dict[str, str] = {}


def _take(fd: int, path: str, timeout: float, say: Callable[[str], None] | None) -> None:
    if path in _UNNAMED:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            del _UNNAMED[path]
            return
        except BlockingIOError:
            raise MeasurementError(f"{_UNNAMED[path]} (found at an earlier test of this "
                                   "session; not waited for again)") from None
    once = path in _WAITED_OUT
    deadline = time.monotonic() + (0.0 if once else timeout)
    told: Holder | None = None
    unnamed_since: float | None = None
    kept: Holder | None = None  # who holds a gone locker's descriptor, found every few s
    kept_until = 0.0
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return
        except BlockingIOError:
            pass
        who = holder(fd)
        if who is None or who.uid is None:  # the locker is gone: who holds its descriptor now
            if time.monotonic() >= kept_until:  # a walk of every process: not every 0.2 s
                kept, kept_until = keepers(fd), time.monotonic() + KEEPERS_EVERY
            who = kept or who
        if who is not None and who.uid is not None and who.uid != os.geteuid():
            raise MeasurementError(f"the machine lock {path} is held by another user: {who}; "
                                   "measurements would overlap: run when it has ended")
        if who is None or who.uid is None:  # gone, or its descriptor passed on: no one to wait for
            unnamed_since = unnamed_since or time.monotonic()
            if time.monotonic() - unnamed_since >= UNNAMED_FOR:
                named = f"PID {who.pid}, which is gone" if who is not None else "no visible process"
                _UNNAMED[path] = (
                    f"the machine lock {path} is held by a process that cannot be named ({named})")
                raise MeasurementError(
                    f"the machine lock {path} is held by a process that cannot be named ({named}: "
                    "its descriptor lives on elsewhere, e.g. passed over a socket); not waiting "
                    "for it (whoever holds it must let go; removing the file while it is held "
                    "lets two sessions measure at once)")
        else:
            unnamed_since = None
        if who != told and who is not None and who.uid is not None and say is not None:
            say(f"pytest-fsperf: waiting for the machine lock {path}, held by {who}")
            told = who
        if time.monotonic() > deadline and unnamed_since is None:
            _WAITED_OUT.add(path)
            if once:
                raise MeasurementError(f"the machine lock {path} is still held by {who}; this "
                                       "session already waited its --fsperf-lock-timeout once")
            raise MeasurementError(f"gave up after {timeout:g} s waiting for the machine lock "
                                   f"{path}, held by {who} (--fsperf-lock-timeout)")
        time.sleep(0.2)  # Ctrl-C interrupts it
