"""Read files a user (or anyone who can write the folder) hands the plugin: saved runs,
baselines, price lists. Each is a regular file of bounded size, opened without blocking (a
FIFO never hangs the session) and parsed with every failure turned into one line: nesting
deep enough to exhaust the stack, integers of thousands of digits, NaN and Infinity (not a
figure anything measured)."""

from __future__ import annotations

import json
import math
import os
import stat
import sys
from pathlib import Path
from typing import Any

import iniconfig  # pytest's own reader, loaded before any plugin

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib  # type: ignore[import-not-found,no-redef,unused-ignore]

MAX_BYTES = 64 << 20  # a saved run of thousands of workloads is a few MB
MAX_NUMBER = 2 ** 62  # any figure, count or size a run holds is far below


class InputError(ValueError):
    """Why a file cannot be read as what it should be; one line, without the path."""


def _kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


def read_text(path: Path, limit: int = MAX_BYTES) -> str:
    """The text of a regular file of at most `limit` bytes; InputError otherwise."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOCTTY)
    except FileNotFoundError:
        raise InputError("does not exist" + (" (a dangling symlink)" if os.path.islink(path)
                                             else "")) from None
    except OSError as exc:
        raise InputError(f"cannot be read: {exc.strerror or exc}") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise InputError(f"is {_kind(st.st_mode)}, not a file")
        if st.st_size > limit:
            raise InputError(f"is larger than {limit >> 20} MiB")
        with os.fdopen(os.dup(fd), "rb") as f:
            raw = f.read(limit + 1)  # a file that grew since fstat: still bounded
        if len(raw) > limit:
            raise InputError(f"is larger than {limit >> 20} MiB")
    except OSError as exc:
        raise InputError(f"cannot be read: {exc.strerror or exc}") from None
    finally:
        os.close(fd)
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(f"is not UTF-8 text ({exc.reason} at byte {exc.start})") from None


def _no_constant(name: str) -> Any:
    raise InputError(f"holds {name}, which no measurement gives")


def _finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value) or abs(value) > MAX_NUMBER:
        raise InputError(f"holds {_cut(text)}, which no measurement gives")
    return value


def _bounded(text: str) -> int:
    if len(text.lstrip("-")) > 19 or abs(value := int(text)) > MAX_NUMBER:
        raise InputError(f"holds a number of {len(text.lstrip('-'))} digits ({_cut(text)}), "
                         "which no measurement gives")
    return value


def _cut(text: str, n: int = 24) -> str:
    return text if len(text) <= n else text[:n] + "..."


def parse_json(text: str) -> Any:
    """JSON without NaN or Infinity, its numbers within 2^62 (sums and ratios of them stay
    finite); InputError for anything that is not such JSON."""
    try:
        return json.loads(text, parse_constant=_no_constant, parse_float=_finite,
                          parse_int=_bounded)
    except InputError:
        raise
    except RecursionError:
        raise InputError("is not JSON this plugin reads: nested too deeply") from None
    except ValueError as exc:  # JSONDecodeError, and int() past its digit limit
        raise InputError(f"is not JSON: {exc}") from None


def parse_toml(text: str) -> dict[str, Any]:
    """TOML; InputError for anything that is not (deep nesting, huge integers too)."""
    try:
        doc: dict[str, Any] = tomllib.loads(text)
        return doc
    except RecursionError:
        raise InputError("is not TOML this plugin reads: nested too deeply") from None
    except ValueError as exc:  # TOMLDecodeError, and int() past its digit limit
        raise InputError(f"is not TOML: {exc}") from None


def read_json(path: Path, limit: int = MAX_BYTES) -> Any:
    return parse_json(read_text(path, limit))


def ini_keys(path: Path) -> list[str]:
    """The keys of pytest's section of an ini, cfg or toml file (as pytest finds them)."""
    try:
        text = read_text(path)
        if path.suffix == ".toml":
            tool = parse_toml(text).get("tool", {})
            found = tool.get("pytest", {}) if isinstance(tool, dict) else {}
            section = found.get("ini_options", found) if isinstance(found, dict) else {}
            return [str(k) for k in section] if isinstance(section, dict) else []
        ini = iniconfig.IniConfig(str(path), data=text)
    except (InputError, iniconfig.ParseError):
        return []  # pytest itself names a file it cannot read
    name = "tool:pytest" if path.name == "setup.cfg" else "pytest"
    return list(ini[name]) if name in ini else []
