"""A machine-wide lock: measured tests never overlap, under xdist or across sessions."""

from __future__ import annotations

import fcntl
import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager

LOCK_PATH = os.path.join(tempfile.gettempdir(), "pytest-fsperf.lock")


@contextmanager
def machine_lock(path: str = LOCK_PATH) -> Iterator[None]:
    fd = os.open(path, os.O_CREAT | os.O_RDWR, 0o666)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)  # blocks; Ctrl-C interrupts it
        yield
    finally:
        os.close(fd)  # closing releases the lock
