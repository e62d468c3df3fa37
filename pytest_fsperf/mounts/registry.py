"""Known backends: the built-in ones, those a config file defines, and those conftest.py adds.

A config file (--fsperf-backend-config) is INI. Section [fsperf] holds the values the
templates use (endpoint, bucket, access_key, secret_key, ...; `env:NAME` reads a variable).
A section [backend NAME] defines or replaces a backend:

    [backend myfs]
    binary = myfs
    command = myfs {bucket} {mountpoint} -f {options}
    install = pip install myfs
    requires = endpoint bucket
    file.passwd = {access_key}:{secret_key}
    env.MYFS_REGION = {region}
    default.region = us-east-1
    option.cache = --cache=(\\S+)
    cache_dirs = {cache}
"""

from __future__ import annotations

import configparser
import os
import re
import shlex
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from pytest_fsperf.errors import UsageError
from pytest_fsperf.infra import inputs
from pytest_fsperf.mounts.builtin import BUILTIN
from pytest_fsperf.mounts.spec import FIELD, Backend

KEYS = {"binary", "command", "install", "requires", "cache_dirs", "secrets", "store", "unset_env",
        "trust_env"}
PREFIXES = ("file.", "env.", "default.", "option.")


@dataclass(frozen=True)
class BackendConfig:
    values: Mapping[str, str] = field(default_factory=dict)
    backends: tuple[Backend, ...] = ()
    where: str = ""


def _value(raw: str, where: str) -> str:
    if raw.startswith("env:"):
        name = raw[4:]
        if name not in os.environ:
            raise UsageError(f"{where}: environment variable {name} is not set")
        raw = os.environ[name]
    if any(ord(c) < 32 or ord(c) == 127 for c in raw):  # a NUL reached the daemon's argv
        raise UsageError(f"{where}: holds a control character")
    return raw


BACKEND_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")  # a name, never a path


def _backend(name: str, section: Mapping[str, str], where: str) -> Backend:
    unknown = [k for k in section if k not in KEYS and not k.startswith(PREFIXES)]
    if unknown:
        raise UsageError(f"{where}: unknown key {unknown[0]!r} (known: {', '.join(sorted(KEYS))}, "
                         f"{', '.join(p + 'NAME' for p in PREFIXES)})")
    if "command" not in section:
        raise UsageError(f"{where}: needs a `command`")
    try:
        command = tuple(shlex.split(section["command"]))
    except ValueError as exc:
        raise UsageError(f"{where}: command: {exc}") from None
    if not command:  # empty would mean a plain directory, silently: the built-in `local` is that
        raise UsageError(f"{where}: `command` is empty (for a plain directory use the backend `local`)")

    def prefixed(prefix: str) -> dict[str, str]:
        return {k[len(prefix):]: v for k, v in section.items() if k.startswith(prefix)}

    for file in prefixed("file."):  # a file of the mount's private directory, by its name
        if not FILE_NAME.fullmatch(file) or ".." in file:
            raise UsageError(f"{where}: file.{file}: a file name of letters, digits, '.', '_', "
                             "'-' (no '/' or '..': it is made in the mount's private directory)")
    for field_name, pattern in prefixed("option.").items():
        _pattern(pattern, f"{where}: option.{field_name}")

    return Backend(
        name=name, binary=section.get("binary", command[0] if command else ""), command=command,
        install=section.get("install", f"install {section.get('binary', name)}"),
        requires=tuple(section.get("requires", "").split()),
        defaults={k: (v,) for k, v in prefixed("default.").items()},
        files=prefixed("file."), env=prefixed("env."), option_fields=prefixed("option."),
        unset_env=tuple(section.get("unset_env", "").split()),
        trust_env=tuple(section.get("trust_env", "").split()),
        cache_dirs=tuple(section.get("cache_dirs", "").split()),
        secrets=tuple(section.get("secrets", "access_key secret_key").split()),
        store=section.get("store", ""),
    )


FILE_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,63}")
# a repetition of a group that itself repeats: (a+)+ takes exponential time on a near miss
NESTED = re.compile(r"\((?:[^()\\]|\\.)*[+*}](?:[^()\\]|\\.)*\)[+*{]|[+*}]\)[+*{]")


def _pattern(pattern: str, where: str) -> None:
    """An option.NAME pattern: a regular expression with one group, and no nested repetition
    (matched against the mount's options as root: it must end)."""
    if len(pattern) > 200:
        raise UsageError(f"{where}: a pattern of at most 200 characters")
    if NESTED.search(pattern):
        raise UsageError(f"{where}: {pattern!r} repeats a group that repeats (its matching can "
                         "take exponential time); write it without the nested repetition")
    try:
        groups = re.compile(pattern).groups
    except re.error as exc:
        raise UsageError(f"{where}: {pattern!r} is not a regular expression: {exc}") from None
    if groups < 1:
        raise UsageError(f"{where}: {pattern!r} needs a group, (...), for the value it finds")


def load_config(path: str, where: str) -> BackendConfig:
    parser = configparser.ConfigParser(interpolation=None, delimiters=("=",))
    parser.optionxform = str  # type: ignore[assignment,method-assign]  # keep env.NAME case
    try:  # a FIFO, a device or a huge file is refused, never waited on
        parser.read_string(inputs.read_text(Path(path), 1 << 20), path)
    except inputs.InputError as exc:
        raise UsageError(f"{where}: cannot read: {path} {exc}") from None
    except configparser.Error as exc:
        raise UsageError(f"{where}: {str(exc).splitlines()[0]}") from None
    values: dict[str, str] = {}
    backends = []
    for section in parser.sections():
        here = f"{where} [{section}]"
        kind, _, name = section.partition(" ")
        if section == "fsperf":
            for key, raw in parser[section].items():
                if not FIELD.fullmatch(key):
                    raise UsageError(f"{here}: {key!r} is not a valid name")
                values[key] = _value(raw, f"{here} {key}")
        elif kind == "backend" and name.strip():
            if not BACKEND_NAME.fullmatch(name.strip()) or ".." in name:
                raise UsageError(f"{here}: a backend's name is letters, digits, '.', '_', '-' "
                                 "(not a path)")
            for key, raw in parser[section].items():
                if any(ord(c) < 32 or ord(c) == 127 for c in raw):
                    raise UsageError(f"{here} {key}: holds a control character")
            backends.append(_backend(name.strip(), parser[section], here))
        else:
            raise UsageError(f"{here}: unknown section (use [fsperf] or [backend NAME])")
    return BackendConfig(values, tuple(backends), where)


class Registry:
    def __init__(self, extra: Iterable[Backend] = ()) -> None:
        self._by_name = {b.name: b for b in BUILTIN}
        for backend in extra:
            self.add(backend)

    def add(self, backend: Backend) -> None:
        if not isinstance(backend, Backend):
            raise UsageError(f"not a pytest_fsperf Backend: {backend!r}")
        self._by_name[backend.name] = backend

    def names(self) -> list[str]:
        return sorted(self._by_name)

    def get(self, name: str, where: str) -> Backend:
        try:
            return self._by_name[name]
        except KeyError:
            raise UsageError(f"{where}: unknown backend {name!r} "
                             f"(known: {', '.join(self.names())})") from None
