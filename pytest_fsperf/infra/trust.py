"""Whether root may use a path another user could change: the file and every directory above
it owned by root or us and writable by no one else (a sticky directory may be above). The
real path is resolved once and checked as that string, for the caller to use."""

from __future__ import annotations

import glob
import os
import re
import shutil
import stat

from pytest_fsperf.infra import elf


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


_TOKEN = re.compile(r"\$(\{[A-Za-z_]*\}|[A-Za-z_]+)")  # $LIB, ${PLATFORM}, any other


def library_dir(where: str) -> str:
    """Why the loader may find another user's library in the RUNPATH entry `where` ($ORIGIN
    already expanded), or "". Every other token ($LIB, $PLATFORM: the loader's own values,
    not known here) stands for any name: each existing directory it could name is checked,
    and the directory it would be looked up in must let no other user create a name there
    (not even sticky). A missing directory is unsafe where another user could create it."""
    pattern = _TOKEN.sub("*", where)
    parts = pattern.split(os.sep)
    fixed = next((i for i, part in enumerate(parts) if "*" in part), len(parts))
    for found in glob.glob(glob.escape(where) if fixed == len(parts) else pattern):
        if why := untrusted(found):
            return why
    if fixed == len(parts) and os.path.lexists(where):
        return ""
    above = os.sep.join(parts[:fixed]) or os.sep
    while not os.path.lexists(above):  # the nearest directory that exists
        above = os.path.dirname(above)
    above = os.path.realpath(above)  # as the loader's lookup walks it
    try:
        st = os.stat(above)
    except OSError as exc:
        return f"{above}: {exc.strerror or exc}"
    if not closed(st):
        return (f"{'a directory its tokens name' if fixed < len(parts) else 'it does not exist, and it'}"
                f" could be created in {above} by another user than root or you (owner uid "
                f"{st.st_uid}, mode {stat.S_IMODE(st.st_mode):o})")
    return untrusted(above)


LOADER_ENV = {"LD_LIBRARY_PATH": ":;", "LD_PRELOAD": ": ", "LD_AUDIT": ":"}  # name: separators


def loader_env() -> str:
    """Why the dynamic loader, as this environment tells it, may load another user's library
    into a program root runs, or "": an empty or relative entry (the current directory, a
    mount's work directory), or a directory or library another user can change."""
    for name, seps in LOADER_ENV.items():
        value = os.environ.get(name)
        if value is None:
            continue
        entries = re.split(f"[{re.escape(seps)}]", value)
        for entry in entries:
            if name != "LD_LIBRARY_PATH" and "/" not in entry:
                continue  # a blank, or a library's name: looked up as a needed one is
            if not os.path.isabs(_TOKEN.sub("x", entry)):
                return (f"{name} holds {entry!r}, relative to the current directory: the "
                        "loader would look there")
            why = (library_dir(entry) if name == "LD_LIBRARY_PATH"
                   else untrusted(entry) if os.path.lexists(entry)
                   else library_dir(os.path.dirname(entry)) or _creatable(entry))
            if why:
                return f"{name} names {entry}: {why}"
    return ""


def _creatable(path: str) -> str:
    """Why another user could create `path` (a missing file) in its directory, or ""."""
    try:
        st = os.stat(os.path.dirname(path))
    except OSError as exc:
        return f"{os.path.dirname(path)}: {exc.strerror or exc}"
    return "" if closed(st) else (f"it does not exist, and another user could create it in "
                                  f"{os.path.dirname(path)}")


def program(name: str, search: str | None = None) -> tuple[list[str], str]:
    """How root may run the program `name` (a path, or a name looked up on PATH once): the
    argv that runs what was checked, and why it may not ("" where it may). Checked: the
    program's real path and every directory above it; an ELF program's RUNPATH/RPATH
    directories (libraries it loads from beside itself, `$ORIGIN`); a script's interpreter
    (`#!/usr/bin/env node` is a PATH lookup too), which then runs the script by its real path."""
    found = name if os.sep in name else shutil.which(name, path=search)
    if found is None:
        return [], f"{name} is not on PATH"
    real, why = resolved(found)
    if why:
        return [real], why
    if why := loader_env():
        return [real], why
    for where in elf.search_dirs(real):
        if not os.path.isabs(where):
            return [real], f"{real} loads libraries from {where!r}, relative to the current directory"
        if why := library_dir(where):
            return [real], f"{real} loads libraries from {where}: {why}"
    try:
        with open(real, "rb") as f:
            head = f.read(256)
    except OSError as exc:
        return [real], f"{real}: {exc.strerror or exc}"
    if not head.startswith(b"#!"):
        return [real], ""
    words = head[2:].split(b"\n", 1)[0].decode("utf-8", "replace").split()
    if not words:
        return [real], f"{real} names no interpreter"
    if os.path.basename(words[0]) == "env" and len(words) > 1 and not words[1].startswith("-"):
        words = words[1:]  # `env NAME`: NAME from PATH, as env would find it
    if len(words) > 2:
        return [real], f"{real}: an interpreter line of more than one argument"
    interpreter, why = program(words[0], search)
    return ([*interpreter, *words[1:], real],
            f"{real}'s interpreter {words[0]}: {why}" if why else "")


def again(argv: list[str]) -> str:
    """The program of a checked argv, checked once more just before another exec of it (a
    start-up retry): a library directory planted since the first check is refused then."""
    return program(argv[0])[1] if argv else "nothing to run"


def which(*names: str) -> tuple[str | None, str]:
    """The first of `names` on PATH, as root may run it: (its checked real path, ""), (None,
    why) where the one found may not run, (None, "") where none is installed."""
    for name in names:
        found = shutil.which(name)  # looked up once: the path checked is the path run
        if found is None:
            continue
        argv, why = program(found)
        if why or len(argv) != 1:
            return None, why or f"{name} is a script: not run as root from PATH"
        return argv[0], ""
    return None, ""
