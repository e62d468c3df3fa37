"""Command-line flags and ini keys, validated into frozen Settings.

Each option is a flag (--fsperf-x) and an ini key (fsperf_x); the flag wins. Every
error names the value and where it came from, as pytest-timeout does.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from .errors import UsageError


@dataclass(frozen=True)
class Option:
    name: str  # ini key; the flag is --fsperf-... with dashes
    help: str
    metavar: str

    @property
    def flag(self) -> str:
        return "--" + self.name.replace("_", "-")


OPTIONS = (
    Option("fsperf_mount", "filesystem under test (a mounted directory); default: a fresh "
           "directory under the system temp dir", "PATH"),
    Option("fsperf_daemon_pid", "PID of the FUSE daemon; default: found from the mount", "PID"),
    Option("fsperf_scale", "multiply every workload size and file count (default 1)", "FACTOR"),
    Option("fsperf_json", "write every result, with the environment, as JSON to PATH", "PATH"),
)


@dataclass(frozen=True)
class Settings:
    mount: Path | None  # None: the embedded default, a fresh temp directory
    daemon_pid: int | None
    scale: float
    json_path: Path | None


def add_options(parser: pytest.Parser) -> None:
    group = parser.getgroup("fsperf", "filesystem performance (pytest-fsperf)")
    for opt in OPTIONS:
        group.addoption(opt.flag, dest=opt.name, metavar=opt.metavar, default=None, help=opt.help)
        parser.addini(opt.name, opt.help, default="")


@dataclass(frozen=True)
class Raw:
    text: str
    where: str
    base: Path  # relative paths resolve against this


def _raw(config: pytest.Config, opt: Option) -> Raw | None:
    value: Any = config.getoption(opt.name)
    if value is not None:
        return Raw(str(value), f"{opt.flag}={value} (command line)", Path.cwd())
    ini = str(config.getini(opt.name)).strip()
    if ini:
        inipath = config.inipath
        name = str(inipath) if inipath else "ini file"
        base = inipath.parent if inipath else config.rootpath
        return Raw(ini, f"{opt.name} = {ini} (ini file {name})", base)
    return None


def _mount(raw: Raw) -> Path:
    path = Path(os.path.expanduser(raw.text))
    path = (raw.base / path) if not path.is_absolute() else path
    if not path.exists():
        raise UsageError(f"{raw.where}: no such directory")
    if not path.is_dir():
        raise UsageError(f"{raw.where}: not a directory")
    if os.statvfs(path).f_flag & os.ST_RDONLY or not os.access(path, os.W_OK | os.X_OK):
        raise UsageError(f"{raw.where}: not writable (read-only mount or no permission)")
    return path.resolve()


def _pid(raw: Raw) -> int:
    try:
        pid = int(raw.text)
    except ValueError:
        raise UsageError(f"{raw.where}: not a process ID") from None
    if pid <= 0 or not os.path.exists(f"/proc/{pid}"):
        raise UsageError(f"{raw.where}: no such process")
    return pid


def _scale(raw: Raw) -> float:
    try:
        scale = float(raw.text)
    except ValueError:
        raise UsageError(f"{raw.where}: not a number") from None
    if not math.isfinite(scale) or scale <= 0:
        raise UsageError(f"{raw.where}: must be a positive number")
    return scale


def _json(raw: Raw) -> Path:
    path = Path(os.path.expanduser(raw.text))
    path = (raw.base / path) if not path.is_absolute() else path
    if path.is_dir():
        raise UsageError(f"{raw.where}: is a directory; give a file name")
    if not path.parent.is_dir():
        raise UsageError(f"{raw.where}: directory {path.parent} does not exist")
    return path


def read_settings(config: pytest.Config) -> Settings:
    by_name = {opt.name: _raw(config, opt) for opt in OPTIONS}

    def get(name: str, convert: Any, default: Any) -> Any:
        raw = by_name[name]
        return convert(raw) if raw is not None else default

    return Settings(
        mount=get("fsperf_mount", _mount, None),
        daemon_pid=get("fsperf_daemon_pid", _pid, None),
        scale=get("fsperf_scale", _scale, 1.0),
        json_path=get("fsperf_json", _json, None),
    )
