"""A small FUSE daemon that leaks, for the memory tests: a passthrough of SOURCE at MOUNTPOINT
(forkfs.py's, without the fork) that keeps LEAK_KIB KiB of touched memory for every READ
request it serves, so its growth per request is known.

    python3 leakfs.py SOURCE MOUNTPOINT LEAK_KIB
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from fuse import FUSE  # fusepy

# started as a service is (issue 72.3): no PYTHONPATH of the test run's, so the repository's
# root is found from here
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from tests.forkfs import Passthrough


class Leaky(Passthrough):
    def __init__(self, root: str, leak: int) -> None:
        super().__init__(root, "")
        self.leak = leak
        self.kept: list[bytearray] = []

    def init(self, path: str) -> None:  # no fork: one process serves every request
        pass

    def open(self, path: str, flags: int) -> int:
        return super().open(path, flags & ~os.O_DIRECT)  # Python's buffers are not aligned

    def read(self, path: str, size: int, offset: int, fh: int) -> bytes:
        if self.leak:
            block = bytearray(self.leak)
            block[::4096] = b"\x01" * len(block[::4096])  # touched: resident
            self.kept.append(block)
        return super().read(path, size, offset, fh)


if __name__ == "__main__":
    source, mountpoint, leak_kib = sys.argv[1:4]
    FUSE(Leaky(source, int(leak_kib) * 1024), mountpoint, foreground=True, nothreads=True)
