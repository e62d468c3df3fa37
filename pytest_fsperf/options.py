"""Command-line flags and ini keys, validated into frozen Settings.

Each option is a flag (--fsperf-x) and an ini key (fsperf_x); the flag wins. Every
error names the value and where it came from, as pytest-timeout does.
"""

from __future__ import annotations

import math
import os
import re
import shlex
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from . import outfile, runs
from .errors import UsageError
from .mounts.probe import MISSING, NOT_DIR, READ_ONLY, NoAnswer, probe
from .mounts.registry import BackendConfig, load_config

if TYPE_CHECKING:  # the settings are read from pytest's config; the core needs no pytest
    import pytest


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
    Option("fsperf_backend", "mount this backend for the session (local, bindfs, rclone, s3fs, "
           "ossfs, ossfs2, goofys, juicefs, mountpoint-s3, or one you define)", "NAME"),
    Option("fsperf_mount_options", "options for --fsperf-backend, as on its command line", "OPTIONS"),
    Option("fsperf_backend_config", "INI file: [fsperf] endpoint, bucket, credentials ...; "
           "[backend NAME] sections define backends", "FILE"),
    Option("fsperf_mount_timeout", "seconds a backend may take to mount, and an existing mount to "
           "answer its first touch (default 30)", "SECONDS"),
    Option("fsperf_workload_timeout", "seconds after which a workload is taken to hang (default: "
           "its runtime, or its bytes at 2 MB/s, plus 2 minutes)", "SECONDS"),
    Option("fsperf_baseline", "compare each scenario with this baseline (shipped, e.g. ossfs-2.0.4, "
           "or saved with --fsperf-save-baseline)", "NAME"),
    Option("fsperf_gate", "'baseline': fail a scenario that misses its baseline by more than the "
           "tolerance; default 'none': only report measured / documented", "WHAT"),
    Option("fsperf_rounds", "run every workload N times and judge the medians (default 1)", "N"),
    Option("fsperf_warmup", "1: run one unjudged, discarded warm-up round before the rounds", "0|1"),
    Option("fsperf_inconclusive", "when the rounds' spread is too wide to decide a threshold: "
           "'fail' (default) or 'warn'", "fail|warn"),
    Option("fsperf_save", "save this run (every round's figures, the environment) as NAME in the "
           "storage directory", "NAME"),
    Option("fsperf_autosave", "1: save every run, named by its start time", "0|1"),
    Option("fsperf_storage", "where runs are saved (default .fsperf/runs under the rootdir)", "DIR"),
    Option("fsperf_compare", "compare with a saved run (NAME or 'latest'): regression, improvement, "
           "pass or inconclusive per workload", "NAME"),
    Option("fsperf_markdown", "write a Markdown summary to PATH (e.g. $GITHUB_STEP_SUMMARY)", "PATH"),
    Option("fsperf_benchmark_json", "write every workload in pytest-benchmark's JSON format to "
           "PATH (needs pytest-benchmark)", "PATH"),
    Option("fsperf_html", "write a self-contained HTML report with charts to PATH", "PATH"),
    Option("fsperf_benchmark_action", "write github-action-benchmark files PREFIX-bigger.json and "
           "PREFIX-smaller.json", "PREFIX"),
    Option("fsperf_save_baseline", "save this run's figures as baseline NAME in .fsperf/baselines/",
           "NAME"),
)


@dataclass(frozen=True)
class Settings:
    mount: Path | None  # None: the embedded default, a fresh temp directory
    daemon_pid: int | None
    scale: float
    json_path: Path | None
    backend: str | None = None
    backend_where: str = ""
    mount_options: tuple[str, ...] = ()
    backend_config: BackendConfig = field(default_factory=BackendConfig)
    mount_timeout: float = 30.0
    workload_timeout: float | None = None  # None: derived from each workload
    baseline: str | None = None
    baseline_where: str = ""
    gate: str = "none"
    save_baseline: str | None = None
    rounds: int = 1
    warmup: bool = False
    inconclusive: str = "fail"
    save: str | None = None
    storage: Path | None = None
    compare: str | None = None
    compare_where: str = ""
    markdown_path: Path | None = None
    html_path: Path | None = None
    benchmark_json: Path | None = None
    action_prefix: Path | None = None
    root: Path = Path(".")  # rootdir: .fsperf/ lives here


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

    @property
    def path(self) -> Path:
        path = Path(os.path.expanduser(self.text))
        return path if path.is_absolute() else self.base / path


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


def _mount(raw: Raw, timeout: float) -> Path:
    """Checked from a helper process: a mount whose daemon never answers must not hang pytest."""
    try:
        state, real = probe(str(raw.path), timeout)
    except NoAnswer as exc:
        raise UsageError(f"{raw.where}: {exc}") from None
    problem = {MISSING: "no such directory", NOT_DIR: "not a directory",
               READ_ONLY: "not writable (read-only mount or no permission)"}.get(state)
    if problem:
        raise UsageError(f"{raw.where}: {problem}")
    return Path(real)


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


def _out_file(raw: Raw) -> Path:
    path = raw.path
    if path.is_dir():
        raise UsageError(f"{raw.where}: is a directory; give a file name")
    if not path.parent.is_dir():
        raise UsageError(f"{raw.where}: directory {path.parent} does not exist")
    try:
        outfile.check(path)
    except outfile.OutputError as exc:
        raise UsageError(f"{raw.where}: {exc}") from None
    return path


def _words(raw: Raw) -> tuple[str, ...]:
    try:
        return tuple(shlex.split(raw.text))
    except ValueError as exc:
        raise UsageError(f"{raw.where}: {exc}") from None


def _backend_config(raw: Raw) -> BackendConfig:
    return load_config(str(raw.path), raw.where)


def _timeout(raw: Raw) -> float:
    value = _scale(raw)
    if value > 3600:
        raise UsageError(f"{raw.where}: at most 3600 seconds")
    return value


def _name(raw: Raw) -> str:
    name = raw.text.strip()
    if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_.+-]*", name):
        raise UsageError(f"{raw.where}: a name of letters, digits, '.', '_', '+', '-'")
    return name


def _rounds(raw: Raw) -> int:
    try:
        n = int(raw.text)
    except ValueError:
        raise UsageError(f"{raw.where}: not a whole number") from None
    if not 1 <= n <= 1000:
        raise UsageError(f"{raw.where}: must be from 1 to 1000")
    return n


def _flag(raw: Raw) -> bool:
    text = raw.text.strip().lower()
    if text not in ("0", "1", "true", "false", "yes", "no"):
        raise UsageError(f"{raw.where}: must be 1 or 0")
    return text in ("1", "true", "yes")


def _choice(*allowed: str) -> Callable[[Raw], str]:
    def convert(raw: Raw) -> str:
        if raw.text.strip() not in allowed:
            raise UsageError(f"{raw.where}: must be " + " or ".join(f"'{a}'" for a in allowed))
        return raw.text.strip()

    return convert


def _storage(raw: Raw) -> Path:
    path = raw.path
    if path.exists() and not path.is_dir():
        raise UsageError(f"{raw.where}: not a directory")
    return path


def _compare(raw: Raw) -> str:
    return "latest" if raw.text.strip() == "latest" else _name(raw)


def read_settings(config: pytest.Config) -> Settings:
    by_name = {opt.name: _raw(config, opt) for opt in OPTIONS}

    def get(name: str, convert: Any, default: Any) -> Any:
        raw = by_name[name]
        return convert(raw) if raw is not None else default

    def where(name: str) -> str:
        raw = by_name[name]
        return raw.where if raw is not None else ""

    backend = by_name["fsperf_backend"]
    if backend is not None and by_name["fsperf_mount"] is not None:
        raise UsageError(f"{backend.where}: conflicts with {by_name['fsperf_mount'].where}; "
                         "give an existing mount or a backend to mount, not both")
    options = by_name["fsperf_mount_options"]
    if options is not None and backend is None:
        raise UsageError(f"{options.where}: needs --fsperf-backend (options of which backend?)")
    mount_timeout = get("fsperf_mount_timeout", _timeout, 30.0)
    return Settings(
        mount=get("fsperf_mount", lambda raw: _mount(raw, mount_timeout), None),
        daemon_pid=get("fsperf_daemon_pid", _pid, None),
        scale=get("fsperf_scale", _scale, 1.0),
        json_path=get("fsperf_json", _out_file, None),
        backend=backend.text.strip() if backend is not None else None,
        backend_where=where("fsperf_backend"),
        mount_options=get("fsperf_mount_options", _words, ()),
        backend_config=get("fsperf_backend_config", _backend_config, BackendConfig()),
        mount_timeout=mount_timeout,
        workload_timeout=get("fsperf_workload_timeout", _scale, None),
        baseline=get("fsperf_baseline", _name, None),
        baseline_where=where("fsperf_baseline"),
        gate=get("fsperf_gate", _choice("none", "baseline"), "none"),
        save_baseline=get("fsperf_save_baseline", _name, None),
        rounds=get("fsperf_rounds", _rounds, 1),
        warmup=get("fsperf_warmup", _flag, False),
        inconclusive=get("fsperf_inconclusive", _choice("fail", "warn"), "fail"),
        save=get("fsperf_save", _name, None) or (
            runs.autosave_name() if get("fsperf_autosave", _flag, False) else None),
        storage=get("fsperf_storage", _storage, None),
        compare=get("fsperf_compare", _compare, None),
        compare_where=where("fsperf_compare"),
        markdown_path=get("fsperf_markdown", _out_file, None),
        html_path=get("fsperf_html", _out_file, None),
        benchmark_json=get("fsperf_benchmark_json", _out_file, None),
        action_prefix=get("fsperf_benchmark_action", _out_file, None),
        root=config.rootpath,
    )
