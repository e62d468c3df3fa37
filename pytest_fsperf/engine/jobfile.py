"""A team's own fio job file, read into workloads: each job section one workload, run one
after another (as if every section began with stonewall), with [global] under each.

The plugin runs every job in the test's work directory, so `directory=` is dropped (the
workload's notes say so); every other option goes through the same allow-list as keyword
options (engine/fio.py build_job). `include` and `$` expansions are refused: they would
read files or the environment the plugin does not own.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

from pytest_fsperf.errors import UsageError
from pytest_fsperf.infra.inputs import InputError, read_text

MAX_BYTES = 1 << 20  # a job file of a thousand sections is a few tens of KB
_SECTION = re.compile(r"\[([^\]\s]+)\]")


@dataclass(frozen=True)
class Section:
    name: str
    options: dict[str, str]  # [global] first, then the section's own
    dropped: tuple[str, ...] = ()  # options the plugin sets itself, as written


def parse(text: str, where: str) -> list[Section]:
    """The job sections of fio job-file text; UsageError (one line, with the line number)
    for what fio would not read or the plugin will not run."""
    shared: dict[str, str] = {}
    shared_dropped: list[str] = []
    sections: list[tuple[str, dict[str, str], list[str]]] = []
    current: dict[str, str] | None = None
    dropped: list[str] = shared_dropped
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line[0] in "#;":
            continue
        at = f"{where} line {number}"
        if line.startswith("["):
            m = _SECTION.fullmatch(line)
            if not m:
                raise UsageError(f"{at}: {line!r} is not a section header like [seq-read]")
            if m.group(1) == "global":
                if sections:
                    raise UsageError(f"{at}: [global] after a job section: put it first")
                current, dropped = shared, shared_dropped
            else:
                dropped = []
                current = {}
                sections.append((m.group(1), current, dropped))
            continue
        if line.startswith("include ") or line == "include":
            raise UsageError(f"{at}: include is not run (it reads another file); paste it in")
        if current is None:
            raise UsageError(f"{at}: an option before any section")
        key, sep, value = line.partition("=")
        key, value = key.strip(), value.strip() if sep else "1"
        if "$" in value:
            raise UsageError(f"{at}: {key}={value!r}: $ expansions are not run")
        if key == "directory":  # the plugin's work dir, always
            dropped.append(line)
            continue
        current[key] = value
    if not sections:
        raise UsageError(f"{where}: no job section (a [name] with options under it)")
    return [Section(name, {**shared, **own}, (*shared_dropped, *gone))
            for name, own, gone in sections]


def read(path: str | os.PathLike[str], where: str) -> list[Section]:
    """The job sections of the file at `path` (a regular file of at most 1 MiB)."""
    try:
        text = read_text(Path(path), MAX_BYTES)
    except InputError as exc:
        raise UsageError(f"{where}: job file {os.fspath(path)!r} {exc}") from None
    return parse(text, f"{where}: job file {os.fspath(path)!r}")
