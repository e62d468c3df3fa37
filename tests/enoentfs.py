"""A FUSE daemon that surfaces a throttled request as a missing file, as mountpoint-s3 did
when S3 answered 503 SlowDown (awslabs/mountpoint-s3#1422): a passthrough of SOURCE at
MOUNTPOINT (forkfs.py's, without the fork) whose every EVERY-th open of a file answers
ENOENT - the application sees a file it just listed vanish.

    python3 enoentfs.py SOURCE MOUNTPOINT EVERY
"""

from __future__ import annotations

import errno
import sys
import threading
from pathlib import Path

from fuse import FUSE, FuseOSError  # fusepy

# started as a service is: no PYTHONPATH of the test run's
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from tests.forkfs import Passthrough


class SlowDownAsEnoent(Passthrough):
    def __init__(self, root: str, every: int) -> None:
        super().__init__(root, "")
        self.every, self.opens, self.lock = every, 0, threading.Lock()

    def init(self, path: str) -> None:  # no fork: one process serves every request
        pass

    def open(self, path: str, flags: int) -> int:
        with self.lock:
            self.opens += 1
            throttled = self.every > 0 and self.opens % self.every == 0
        if throttled:  # the store said 503 SlowDown; the daemon says the file is not there
            raise FuseOSError(errno.ENOENT)
        return super().open(path, flags)


if __name__ == "__main__":
    source, mountpoint, every = sys.argv[1:4]
    FUSE(SlowDownAsEnoent(source, int(every)), mountpoint, foreground=True, nothreads=True)
