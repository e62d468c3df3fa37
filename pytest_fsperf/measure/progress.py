"""A live line for a long workload: elapsed time, bytes moved, MB/s.

Only on an interactive terminal: the line is written to /dev/tty on a line of its own below
pytest's and erased when the workload ends, the cursor put back where pytest left it, so -q
and -v output, captured output and CI logs (not a terminal) are left exactly as they were.
Bytes are the rchar + wchar of the load generator's processes (fio and its job processes, or
this process for in-process engines).
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable

from pytest_fsperf.infra.procs import io_counters
from pytest_fsperf.mounts.daemon import stat_fields

START_AFTER = 3.0  # s: a shorter workload never shows the line
INTERVAL = 1.0


def tree_io(root: int, proc: str = "/proc") -> int:
    """rchar + wchar of a process and all its descendants (fio's job processes call setsid,
    so they are not in its process group)."""
    return sum(sum(io) for pid in _tree(root, proc) if (io := io_counters(pid, proc)))


def _tree(root: int, proc: str) -> set[int]:
    parent: dict[int, int] = {}
    for name in os.listdir(proc):
        if name.isdigit() and (fields := stat_fields(int(name), proc)):
            parent[int(name)] = int(fields[1])  # ppid
    tree, changed = {root}, True
    while changed:
        grown = {pid for pid, pp in parent.items() if pp in tree} | tree
        changed, tree = grown != tree, grown
    return tree


class TreeIo:
    """tree_io, read often: the process tree is found again at most every `refresh` s (a
    scan of /proc), the counters of the processes known are read on every call. A process
    that exited takes its bytes with it, so the most seen for each is kept. The kernel adds
    a reaped child's bytes to its parent's counters: where the root has descendants (fio's
    job processes), only theirs are counted, or fio's last moment would count every byte
    twice (a jump of the whole run's bytes in its last interval)."""

    def __init__(self, root: Callable[[], int | None], refresh: float = 0.5,
                 proc: str = "/proc") -> None:
        self._root, self._refresh, self._proc = root, refresh, proc
        self._pids: set[int] = set()
        self._found = -1e9
        self._seen: dict[int, int] = {}

    def __call__(self) -> int:
        root = self._root()
        if root is None:
            return 0
        now = time.monotonic()
        if now - self._found >= self._refresh:
            self._pids, self._found = _tree(root, self._proc), now
        for pid in list(self._pids):
            io = io_counters(pid, self._proc)
            if io is not None:
                self._seen[pid] = max(self._seen.get(pid, 0), sum(io))
        children = [n for pid, n in self._seen.items() if pid != root]
        return sum(children) if children else self._seen.get(root, 0)


def own_io() -> int:
    return sum(io_counters(os.getpid()) or (0, 0))


class WithChild:
    """own_io, with a child's bytes while it runs (the kernel adds them to ours only when
    it is reaped): an engine's compiled worker. Made just before the window."""

    def __init__(self) -> None:
        self.pid: int | None = None
        self._base = own_io()
        self._tree = TreeIo(lambda: self.pid)

    def started(self, pid: int) -> None:
        self.pid = pid

    def __call__(self) -> int:
        return max(own_io(), self._base + self._tree())


class Progress:
    """Drawn on its own line below pytest's current one; when done, the line is cleared and
    the cursor goes back up to where pytest left it (`column`), so pytest writes on as if
    nothing had been shown."""

    def __init__(self, write: Callable[[str], None], label: str, counter: Callable[[], int],
                 column: Callable[[], int] = lambda: 0,
                 detail: Callable[[], str] = lambda: "") -> None:
        self.write = write
        self.detail = detail  # the current interval: its MB/s, the daemon's RSS
        self.label = label
        self.counter = counter
        self.column = column
        self.shown = False
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._t0 = 0.0
        self._b0 = 0

    def _run(self) -> None:
        while not self._stop.wait(INTERVAL):
            elapsed = time.monotonic() - self._t0
            if elapsed < START_AFTER:
                continue
            moved = max(0, self.counter() - self._b0)
            line = (f"  fsperf {self.label}: {elapsed:.0f} s, {moved / 1e6:,.0f} MB, "
                    f"{moved / 1e6 / elapsed:,.1f} MB/s" + self.detail())
            self.write(("\r\x1b[2K" if self.shown else "\n") + line)
            self.shown = True

    def start(self) -> None:
        self._t0, self._b0 = time.monotonic(), self.counter()
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()
        if self.shown:
            col = self.column()
            self.write("\r\x1b[2K\x1b[1A" + (f"\x1b[{col}C" if col else ""))
