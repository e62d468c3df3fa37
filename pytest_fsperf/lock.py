"""A machine-wide lock: measured tests never overlap, under xdist or across sessions.

The lock file is never followed through a symlink, and any user can lock it: flock needs
only a read descriptor, so a file root created earlier does not lock out later users.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import stat
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager

from .errors import MeasurementError

LOCK_PATH = os.path.join(tempfile.gettempdir(), "pytest-fsperf.lock")


def _open(path: str) -> int:
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK  # NONBLOCK: a planted FIFO
    try:
        try:
            fd = os.open(path, flags)
        except FileNotFoundError:
            fd = os.open(path, flags | os.O_CREAT | os.O_EXCL, 0o644)
    except FileExistsError:  # another session created it just now
        return _open(path)
    except OSError as exc:
        what = "it is a symlink" if exc.errno == errno.ELOOP else exc.strerror or str(exc)
        raise MeasurementError(f"cannot open the machine lock {path}: {what} "
                               "(remove it, or point TMPDIR elsewhere)") from None
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode):
        os.close(fd)
        raise MeasurementError(f"the machine lock {path} is not a regular file "
                               "(remove it, or point TMPDIR elsewhere)")
    if st.st_uid == os.geteuid() and stat.S_IMODE(st.st_mode) != 0o644:
        with contextlib.suppress(OSError):
            os.fchmod(fd, 0o644)  # readable, so lockable, by every user
    return fd


@contextmanager
def machine_lock(path: str = LOCK_PATH) -> Iterator[None]:
    fd = _open(path)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)  # blocks; Ctrl-C interrupts it
        yield
    finally:
        os.close(fd)  # closing releases the lock
