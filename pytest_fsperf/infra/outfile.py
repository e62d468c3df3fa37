"""Write the plugin's output files (reports, saved runs, baselines) without harming others.

A regular file (or a new one) is replaced atomically: the data goes to a fresh temporary
file created with O_EXCL in the same directory (never a fixed `PATH.tmp` another user could
plant a link at), then renamed over it. A character device or FIFO the user named
(`/dev/stdout`, a pipe) is written straight into, never replaced: only where no other user
could have put it there (its entry and directories root's or ours), opened without blocking
and checked (fstat) to be the one looked at. Anything else (a directory, a socket, a
symlink to a regular file) is refused with one line, and so is a target named at start-up
that has become something else since (a FIFO or a symlink planted at a new file's name).
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
import time
from dataclasses import dataclass
from pathlib import Path

from pytest_fsperf.errors import UsageError
from pytest_fsperf.infra import trust


class OutputError(UsageError):
    """An output file cannot be written: names the file and why."""


@dataclass(frozen=True)
class Seen:
    """What a target was: 'new', 'file' or 'stream' (a device or FIFO, maybe behind a link),
    and for a stream the (device, inode) it reaches."""

    kind: str
    ident: tuple[int, int] | None = None
    link: bool = False

    def __str__(self) -> str:
        kind = {"new": "absent", "file": "a regular file"}.get(self.kind, "a device or FIFO")
        return f"{kind}{' behind a symlink' if self.link else ''}"


READER_WAIT = 5.0  # s a FIFO may go without a reader before the write fails

# What each target named at start-up (check) was; write() refuses one that changed since.
_seen: dict[str, Seen] = {}


def _look(path: Path) -> Seen:
    """What path is now; OutputError for a kind never written."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return Seen("new")
    except OSError as exc:
        raise OutputError(f"{path}: {exc.strerror or exc}") from None
    if stat.S_ISREG(st.st_mode):
        return Seen("file")
    if stat.S_ISLNK(st.st_mode):
        try:
            st = os.stat(path)
        except OSError:
            raise OutputError(f"{path} is a dangling symlink; name the file itself") from None
        if stat.S_ISCHR(st.st_mode) or stat.S_ISFIFO(st.st_mode):
            return Seen("stream", (st.st_dev, st.st_ino), link=True)
        raise OutputError(f"{path} is a symlink; name the file it points to")
    if stat.S_ISCHR(st.st_mode) or stat.S_ISFIFO(st.st_mode):
        return Seen("stream", (st.st_dev, st.st_ino))
    if stat.S_ISDIR(st.st_mode):
        raise OutputError(f"{path} is a directory; give a file name")
    raise OutputError(f"{path} is not a regular file, device or FIFO")


def _placed_by_us(path: Path) -> None:
    """A device or FIFO (or a link to one) is written into only where no other user could
    have put it: the entry is root's or ours, and no other user can add or replace names in
    its directory or above (a sticky /tmp keeps ours ours). As found: nobody's link to root's
    pty at a report's name made root write the report onto the terminal."""
    st = os.lstat(path)
    if st.st_uid not in (0, os.geteuid()):
        raise OutputError(f"{path} is a device, FIFO or link of another user's (owner uid "
                          f"{st.st_uid}); not written into: name a file")
    parent = os.path.dirname(os.path.abspath(path))
    why = trust.untrusted(parent) if parent != "/" else ""
    if why:
        raise OutputError(f"{path} is a device, FIFO or link in a directory another user can "
                          f"change ({why}); not written into: name a file")


def _key(path: Path) -> str:
    return os.path.abspath(path)


def check(path: Path) -> None:
    """Fail now (at configuration) for a path that write() would refuse later, and note
    what it is: a target that changes kind before the write is refused then."""
    seen = _look(path)
    if seen.kind == "stream":
        _placed_by_us(path)
    _seen[_key(path)] = seen


def check_theirs(path: Path) -> Path:
    """An output another writer (pytest's --junitxml) makes as us: it must not be a symlink
    now, nor lie in a directory another user can change (they could plant one later, and we
    do not write it); OutputError says which. Returns the path with its directory resolved
    once, for the writer to use: a symlink above it re-pointed later changes nothing."""
    check(path)
    real, why = trust.resolved(str(path.absolute()), exists=False)
    if why:
        raise OutputError(f"{why}; another user could put a link there before it is written")
    try:  # its own directory: a sticky one (/tmp) still lets others add a new name
        st = os.stat(os.path.dirname(real))
    except OSError as exc:
        raise OutputError(f"{os.path.dirname(real)}: {exc.strerror or exc}") from None
    if st.st_mode & 0o022:
        raise OutputError(f"its directory {os.path.dirname(real)} lets other users add names "
                          f"(mode {stat.S_IMODE(st.st_mode):o}): one could put a link at "
                          "its name before pytest writes it there; name a directory of yours")
    return Path(real)


def _changed(before: Seen, now: Seen) -> bool:
    if before.kind in ("new", "file"):  # our own earlier write makes a new file a file
        return now.kind not in ("new", "file")
    return now != before


def write(path: Path, data: bytes | str, streams: bool = True) -> Path:
    """Write data to path as described above; creates missing parent directories.
    streams=False: a file the plugin names itself (a saved run), never a device or FIFO."""
    raw = data.encode("utf-8") if isinstance(data, str) else data
    now = _look(path)
    before = _seen.get(_key(path))
    if before is not None and _changed(before, now):
        raise OutputError(f"{path} changed since pytest started (it was {before}, now {now}); "
                          "not written")
    if now.kind == "stream" and not streams:
        raise OutputError(f"{path} is {now}, not a file; not written")
    if now.kind == "stream":
        _placed_by_us(path)
        _write_stream(path, now, raw)
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


def _write_stream(path: Path, seen: Seen, raw: bytes) -> None:
    """Into a device or FIFO: opened without blocking (a FIFO no one reads fails at once
    instead of hanging), and written only if it is the stream that was looked at."""
    deadline = time.monotonic() + READER_WAIT
    while True:
        try:
            fd = os.open(path, os.O_WRONLY | os.O_NOCTTY | os.O_NONBLOCK | os.O_CLOEXEC)
            break
        except OSError as exc:
            if exc.errno == errno.ENXIO and time.monotonic() < deadline:
                time.sleep(0.05)  # a FIFO whose reader is about to open it
                continue
            why = (f"no process reads this FIFO (waited {READER_WAIT:g} s)"
                   if exc.errno == errno.ENXIO else exc.strerror or exc)
            raise OutputError(f"cannot write {path}: {why}") from None
    try:
        st = os.fstat(fd)
        if (st.st_dev, st.st_ino) != seen.ident:
            raise OutputError(f"{path} was replaced while it was opened; not written")
        os.set_blocking(fd, True)
        with os.fdopen(fd, "wb", closefd=False) as f:
            f.write(raw)
    except OSError as exc:
        raise OutputError(f"cannot write {path}: {exc.strerror or exc}") from None
    finally:
        os.close(fd)


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
