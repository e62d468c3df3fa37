"""Touch a mount from a helper process with a deadline, never from pytest itself.

A FUSE daemon that is alive but never answers (stopped, or waiting on an endpoint that
never replies) puts whatever touches its mount into uninterruptible sleep, Ctrl-C
included. The helper takes that risk; pytest waits for it with a deadline and kills it
(a fatal signal ends a FUSE wait).
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys

# Prints what the path is, then its real path; runs with -I -S so it starts in a few ms.
_CODE = """
import os, sys
p = sys.argv[1]
if not os.path.isdir(p):
    print("missing" if not os.path.exists(p) else "notdir")
elif os.statvfs(p).f_flag & os.ST_RDONLY or not os.access(p, os.W_OK | os.X_OK):
    print("readonly")
else:
    print("ok")
print(os.path.realpath(p))
"""

OK, MISSING, NOT_DIR, READ_ONLY = "ok", "missing", "notdir", "readonly"


class NoAnswer(Exception):
    """The mount did not answer within the deadline."""


def probe(path: str, timeout: float) -> tuple[str, str]:
    """('ok', 'missing', 'notdir' or 'readonly', the real path); NoAnswer if the path does
    not answer in time."""
    proc = subprocess.Popen([sys.executable, "-I", "-S", "-c", _CODE, os.path.abspath(path)],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                            stdin=subprocess.DEVNULL, start_new_session=True, cwd="/")
    try:
        out, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        with contextlib.suppress(subprocess.TimeoutExpired):  # a fatal signal ends a FUSE wait
            proc.communicate(timeout=5)
        raise NoAnswer(f"{path} did not answer within {timeout:g} s (its FUSE daemon may be "
                       "stopped or waiting on a backend that never replies)") from None
    lines = out.decode(errors="surrogateescape").splitlines()
    return (lines[0], lines[1]) if len(lines) == 2 else ("missing", path)


def abort_connection(minor: int) -> bool:
    """Fail every pending and future request of a FUSE mount (it must be one the plugin
    owns): whatever waits on it wakes with ENOTCONN."""
    try:
        with open(f"/sys/fs/fuse/connections/{minor}/abort", "w", encoding="ascii") as f:
            f.write("1")
    except OSError:
        return False
    return True
