"""Write the plugin's output files (reports, saved runs, baselines) without harming others.

A regular file (or a new one) is replaced atomically: the data goes to a fresh temporary
file created with O_EXCL in the same directory (never a fixed `PATH.tmp` another user could
plant a link at), then renamed over it. A character device or FIFO the user named
(`/dev/stdout`, a pipe) is written straight into, never replaced. Anything else (a directory,
a socket, a symlink to a regular file) is refused with one line.
"""

from __future__ import annotations

import contextlib
import os
import stat
from pathlib import Path

from .errors import UsageError


class OutputError(UsageError):
    """An output file cannot be written: names the file and why."""


def _kind(path: Path) -> str:
    """'new', 'file' or 'stream' (device/FIFO, also behind a link); else OutputError."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return "new"
    except OSError as exc:
        raise OutputError(f"{path}: {exc.strerror or exc}") from None
    if stat.S_ISREG(st.st_mode):
        return "file"
    if stat.S_ISLNK(st.st_mode):
        try:
            st = os.stat(path)
        except OSError:
            raise OutputError(f"{path} is a dangling symlink; name the file itself") from None
        if stat.S_ISCHR(st.st_mode) or stat.S_ISFIFO(st.st_mode):
            return "stream"
        raise OutputError(f"{path} is a symlink; name the file it points to")
    if stat.S_ISCHR(st.st_mode) or stat.S_ISFIFO(st.st_mode):
        return "stream"
    if stat.S_ISDIR(st.st_mode):
        raise OutputError(f"{path} is a directory; give a file name")
    raise OutputError(f"{path} is not a regular file, device or FIFO")


def check(path: Path) -> None:
    """Fail now (at configuration) for a path that write() would refuse later."""
    _kind(path)


def write(path: Path, data: bytes | str) -> Path:
    """Write data to path as described above; creates missing parent directories."""
    raw = data.encode("utf-8") if isinstance(data, str) else data
    kind = _kind(path)
    if kind == "stream":
        try:
            fd = os.open(path, os.O_WRONLY | os.O_NOCTTY)
            with os.fdopen(fd, "wb") as f:
                f.write(raw)
        except OSError as exc:
            raise OutputError(f"cannot write {path}: {exc.strerror or exc}") from None
        return path
    tmp = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = _mkstemp(path)
        with os.fdopen(fd, "wb") as f:
            f.write(raw)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except OSError as exc:
        if tmp is not None:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
        raise OutputError(f"cannot write {path}: {exc.strerror or exc}") from None
    return path


def _mkstemp(path: Path) -> tuple[int, str]:
    """A new file next to path, O_EXCL | O_NOFOLLOW, with the mode a plain create would get."""
    umask = os.umask(0)
    os.umask(umask)
    for _ in range(100):
        tmp = str(path.with_name(f".{path.name}.{os.urandom(6).hex()}.tmp"))
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
                         0o666 & ~umask)
        except FileExistsError:
            continue
        return fd, tmp
    raise FileExistsError(f"no free temporary name next to {path}")
