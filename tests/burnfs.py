"""A FUSE daemon whose one build burns a core while idle (blobfuse2's idle-CPU regression, in
miniature): a passthrough of SOURCE at MOUNTPOINT (forkfs.py's, without the fork) that, with
BURN 1, spins a thread from its start whether or not a request comes.

    python3 burnfs.py SOURCE MOUNTPOINT BURN
"""

from __future__ import annotations

import sys
import threading
from pathlib import Path

from fuse import FUSE  # fusepy

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # started as a service is
from tests.forkfs import Passthrough


class Quiet(Passthrough):
    def init(self, path: str) -> None:  # no fork: one process serves every request
        pass


def spin() -> None:
    n = 0
    while True:  # a poll loop that never sleeps
        n += 1


if __name__ == "__main__":
    source, mountpoint, burn = sys.argv[1:4]
    if burn == "1":
        threading.Thread(target=spin, daemon=True).start()
    FUSE(Quiet(source, ""), mountpoint, foreground=True, nothreads=True)
