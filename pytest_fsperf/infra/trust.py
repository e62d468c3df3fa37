"""Whether root may use a path another user could change: the file and every directory above
it owned by root or us and writable by no one else (a sticky directory may be above). The
real path is resolved once and checked as that string, for the caller to use."""

from __future__ import annotations

import os
import stat


def closed(st: os.stat_result, sticky_ok: bool = False) -> bool:
    """Owned by root or us, and writable by no one else (a sticky directory such as /tmp
    lets others add entries, but not replace ours: allowed above the package only)."""
    sticky = sticky_ok and stat.S_ISDIR(st.st_mode) and bool(st.st_mode & stat.S_ISVTX)
    return st.st_uid in (0, os.geteuid()) and (not st.st_mode & 0o022 or sticky)


def untrusted(path: str, exists: bool = True) -> str:
    """Why root may not execute, obey or write at `path` ("" where it may): the file (its
    real path), or a directory above it, can be changed by a user other than root or us,
    so a name checked now could be another file when it is used (a parent renamed by
    `nobody` made root's ssh run a ProxyCommand as uid 0). exists=False: an output that
    may not exist yet; only its directories are checked."""
    return resolved(path, exists)[1]


def resolved(path: str, exists: bool = True) -> tuple[str, str]:
    """`path` resolved once, and why root may not use that real path ("" where it may). The
    real path is checked as the string returned (lstat: a component that became a symlink
    since it was resolved is refused), so a caller that uses it uses what was checked."""
    real = os.path.realpath(path)
    try:
        if exists:
            st = os.lstat(real)
            if stat.S_ISLNK(st.st_mode):
                return real, f"{real} changed while it was checked (now a symlink)"
            if not closed(st):
                return real, (f"{real} can be changed by another user than root or you (owner "
                              f"uid {st.st_uid}, mode {stat.S_IMODE(st.st_mode):o})")
        above = os.path.dirname(real)
        while True:
            st = os.lstat(above)
            if stat.S_ISLNK(st.st_mode):
                return real, f"{above} changed while it was checked (now a symlink)"
            if not closed(st, sticky_ok=True):
                return real, (f"its directory {above} can be changed by another user than root "
                              f"or you (owner uid {st.st_uid}, mode {stat.S_IMODE(st.st_mode):o})")
            if os.path.dirname(above) == above:
                return real, ""
            above = os.path.dirname(above)
    except OSError as exc:
        return real, f"{real}: {exc.strerror or exc}"
