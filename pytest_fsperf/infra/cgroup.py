"""A memory limit for a daemon the plugin starts: a cgroup of its own (v2, or v1's memory
controller), every process of the daemon in it from its first instruction, its peak and its
OOM kills read from the cgroup's own counters.

v1: a child of the plugin's own memory cgroup (the daemon stays inside whatever limit the
plugin runs under); v2: a child of the root cgroup (v2 puts no process in a cgroup whose
children have controllers, and the plugin's own cgroup has processes). Swap is limited too
where the kernel counts it, so the limit bites instead of swapping. Root only.
"""

from __future__ import annotations

import contextlib
import os
import time

from pytest_fsperf.infra import leftovers
from pytest_fsperf.infra.named import fresh_dir
from pytest_fsperf.result.daemon import Memory

ROOT = "/sys/fs/cgroup"
PREFIX = "fsperf-mem-"


def _own(controller: str, proc: str = "/proc/self/cgroup") -> str:
    """This process's cgroup path in the v1 hierarchy of `controller` ('' for v2's)."""
    with open(proc, encoding="ascii") as f:
        for line in f:
            _, names, path = line.rstrip("\n").split(":", 2)
            if controller in names.split(","):
                return path
    return ""


def unavailable(root: str = ROOT) -> str | None:
    """Why a memory limit cannot be set here, or None."""
    if os.geteuid() != 0:
        return "not root (cgroups are root's)"
    if os.path.exists(os.path.join(root, "cgroup.controllers")):
        with open(os.path.join(root, "cgroup.subtree_control"), encoding="ascii") as f:
            if "memory" not in f.read().split():
                return f"cgroup v2 at {root} does not delegate the memory controller"
        return None
    if os.path.exists(os.path.join(root, "memory", "memory.limit_in_bytes")):
        return None
    return f"no cgroup memory controller under {root} (neither v2 nor v1's memory)"


class MemoryCage:
    """One cgroup with a memory limit (or none: it only counts); its processes enter it
    before they run (launcher()); read(), close()."""

    def __init__(self, limit: int | None, root: str = ROOT) -> None:
        why = unavailable(root)
        if why:
            raise OSError(why)
        self.limit = limit
        self._peak_fd: int | None = None
        self.version = 2 if os.path.exists(os.path.join(root, "cgroup.controllers")) else 1
        base = root if self.version == 2 else os.path.join(root, "memory", _own("memory").lstrip("/"))
        self.path, self._entry = fresh_dir(base, PREFIX, leftovers.note_cgroup, "cgroup")
        memory, swap = (("memory.max", "memory.swap.max") if self.version == 2
                        else ("memory.limit_in_bytes", "memory.memsw.limit_in_bytes"))
        try:
            if limit is not None:
                self._write(memory, str(limit))
                self._try(swap, "0" if self.version == 2 else str(limit))  # v1: memory+swap
        except OSError:
            self.close()
            raise

    def _write(self, name: str, value: str) -> None:
        with open(os.path.join(self.path, name), "w", encoding="ascii") as f:
            f.write(value)

    def _try(self, name: str, value: str) -> None:
        with contextlib.suppress(FileNotFoundError):
            self._write(name, value)

    def _read(self, name: str) -> str | None:
        try:
            with open(os.path.join(self.path, name), encoding="ascii") as f:
                return f.read()
        except (FileNotFoundError, NotADirectoryError):
            return None

    @property
    def procs_file(self) -> str:
        """Where a process writes its pid to enter (the daemon's launcher does, then execs)."""
        return os.path.join(self.path, "cgroup.procs")

    def pids(self) -> list[int]:
        return [int(p) for p in (self._read("cgroup.procs") or "").split()]

    def reset_peak(self) -> None:
        """From now on the peak is this window's (v1: the counter reset; v2: a reset written
        to memory.peak, read back through the same open file, kernel 6.12 and later)."""
        if self.version == 1:
            self._try("memory.max_usage_in_bytes", "0")
            return
        with contextlib.suppress(OSError):
            if self._peak_fd is None:
                self._peak_fd = os.open(os.path.join(self.path, "memory.peak"), os.O_RDWR)
            os.write(self._peak_fd, b"reset\n")

    def read(self) -> Memory:
        if self.version == 2:
            peak_text = (os.pread(self._peak_fd, 64, 0).decode() if self._peak_fd is not None
                         else self._read("memory.peak"))
            events = self._read("memory.events") or ""
        else:
            peak_text = self._read("memory.max_usage_in_bytes")
            events = self._read("memory.oom_control") or ""
        kills = 0
        for line in events.splitlines():
            key, _, value = line.partition(" ")
            if key == "oom_kill":
                kills = int(value)
        peak = int(peak_text) if peak_text and peak_text.strip().isdigit() else None
        stat = dict(line.split(" ", 1) for line in (self._read("memory.stat") or "").splitlines()
                    if " " in line)
        # page cache: files' pages, without shared memory (fio's own segments count there)
        cache, shmem = (("file", "shmem") if self.version == 2 else
                        ("total_cache", "total_shmem") if "total_cache" in stat else ("cache", "shmem"))
        pages = (int(stat[cache]) - int(stat.get(shmem, "0"))
                 if stat.get(cache, "").strip().isdigit() else None)
        return Memory(self.version, self.limit, peak, kills, pages)

    def close(self, wait: float = 5.0) -> str:
        """Remove the cgroup once its processes are gone (the mount reaped them); '' or why
        it stays (a process still in it: the next session's sweep tries again)."""
        if self._peak_fd is not None:
            os.close(self._peak_fd)
            self._peak_fd = None
        if not self.path:
            return ""
        deadline = time.monotonic() + wait
        while True:
            try:
                os.rmdir(self.path)
            except FileNotFoundError:
                pass
            except OSError as exc:
                if time.monotonic() < deadline:
                    time.sleep(0.05)
                    continue
                return f"cgroup {self.path} left: {exc.strerror or exc} ({len(self.pids())} processes in it)"
            leftovers.done(self._entry)
            self.path = ""
            return ""


def launcher(cage: MemoryCage | None, argv: list[str]) -> list[str]:
    """argv, started in the cage: a shell writes its own pid into it, then execs the daemon
    (same pid), so the daemon and every process it forks are counted from the start."""
    if cage is None:
        return argv
    return ["/bin/sh", "-c", 'echo $$ > "$0" && exec "$@"', cage.procs_file, *argv]
