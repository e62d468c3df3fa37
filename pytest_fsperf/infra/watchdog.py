"""The watchdog: a process that settles a session's record of what it made (infra/leftovers.py)
the moment the session dies, however it dies."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
from collections.abc import Iterator

from pytest_fsperf.infra import leftovers
from pytest_fsperf.infra.leftovers import Record, sweep
from pytest_fsperf.infra.trust import closed

# Waits (importing nothing) until stdin reaches end-of-file, then settles the record. Run
# isolated (-I: no current directory, no PYTHON* variables, no user site on sys.path) from
# "/", so it imports the installed package; argv[2], when given, is the directory pytest
# imported the plugin from, appended last (so an installed copy still comes first), and
# only when no one else can write it, anything in it that an import could find (its
# entries) or anything in the package.
_WATCHDOG = ("import os, sys\nsys.stdin.buffer.read()\nif os.path.exists(sys.argv[1]):\n"
             "    sys.path.extend(sys.argv[2:])\n"
             "    from pytest_fsperf.infra.leftovers import settle\n    settle(sys.argv[1])\n")


def package_root(root: str | None = None) -> list[str]:
    """The directory pytest imported this plugin from (`root`: the one holding the
    pytest_fsperf package), for the isolated watchdog's sys.path - if no one else can change
    it, a directory above it, an entry in it or anything in the package (a planted module
    would run as root); else nothing (the installed package is found, or the watchdog fails
    and the next session sweeps)."""
    if root is None:  # above infra/ and the package
        root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    package = os.path.join(root, "pytest_fsperf")
    try:
        if not closed(os.stat(root)):
            return []
        above = os.path.dirname(root)
        while True:
            if not closed(os.stat(above), sticky_ok=True):
                return []
            if os.path.dirname(above) == above:
                break
            above = os.path.dirname(above)
        inside = [*(os.path.join(root, n) for n in os.listdir(root)), package,
                  *(os.path.join(d, n) for d, dirs, files in os.walk(package) for n in dirs + files)]
        if not all(closed(os.lstat(p)) for p in inside):
            return []
    except OSError:
        return []
    return [root]


def start(record: Record) -> subprocess.Popen[bytes]:
    """A process that settles the record as soon as this one dies. It reads a pipe only we
    hold open: at our exit, however it comes, it reads end-of-file. In a session of its own,
    so a signal to pytest's process group does not reach it; isolated (see _WATCHDOG)."""
    return subprocess.Popen([sys.executable, "-I", "-c", _WATCHDOG, record.path, *package_root()],
                            stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, start_new_session=True, cwd="/")


@contextlib.contextmanager
def recorded() -> Iterator[list[str]]:
    """A session outside pytest (fsperf bench --ceilings): what a killed session left is
    removed first (yielded: what was removed), what this one makes is recorded, and a
    watchdog removes it if this process dies, however."""
    swept = sweep()
    record = leftovers.start()
    watchdog = start(record)
    try:
        yield swept
    finally:
        leftovers.stop(record)
        assert watchdog.stdin is not None
        watchdog.stdin.close()
        with contextlib.suppress(subprocess.TimeoutExpired):
            watchdog.wait(timeout=0.5)
