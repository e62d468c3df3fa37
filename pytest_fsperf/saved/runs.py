"""Saved runs on disk: where they are kept, reading them (each checked to be a saved run),
and naming new ones. The judges work on what is read here and read no file themselves."""

from __future__ import annotations

import datetime
import glob
import math
import os
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pytest_fsperf import typed
from pytest_fsperf.errors import UsageError
from pytest_fsperf.figures import Fig
from pytest_fsperf.infra import inputs
from pytest_fsperf.result.machine import Rest
from pytest_fsperf.result.parts import Headline, Spread
from pytest_fsperf.result.versions import upgrade

CREATED = "%Y-%m-%dT%H:%M:%S%z"  # when a run was written (its `created`), as strftime writes it


def storage(root: Path, configured: Path | None) -> Path:
    return configured if configured is not None else root / ".fsperf" / "runs"


def autosave_name() -> str:
    return time.strftime("%Y%m%d-%H%M%S")


def load(folder: Path, name: str, where: str) -> list[tuple[str, dict[str, Any]]]:
    """NAME: that run; 'latest': every saved run, newest first (each workload is then compared
    with the newest runs whose fingerprint matches its own)."""
    if name == "latest":
        found = sorted(folder.glob("*.json"), key=_mtime) if folder.is_dir() else []
        if not found:
            raise UsageError(f"{where}: no saved run in {folder}")
        return [(path.stem, read_run(path, where)) for path in reversed(found)]
    path = folder / f"{name}.json"
    if not os.path.lexists(path):  # something else of that name: read_run says what
        have = sorted(p.stem for p in folder.glob("*.json")) if folder.is_dir() else []
        raise UsageError(f"{where}: no saved run {name!r} in {folder}"
                         + (f" (have: {', '.join(have)})" if have else ""))
    return [(path.stem, read_run(path, where))]


def _mtime(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except OSError:
        return 0.0  # a dangling link: read_run names it


def read_run(path: Path, where: str) -> dict[str, Any]:
    """The run in the file `path` (that one, whatever its name)."""
    try:
        doc: dict[str, Any] = inputs.read_json(path)
    except inputs.InputError as exc:
        raise UsageError(f"{where}: saved run {path} {exc}") from None
    try:
        return checked(doc)
    except ValueError as exc:
        raise UsageError(f"{where}: {path} is not a saved run: {exc}") from None


def checked(doc: object) -> dict[str, Any]:
    """A saved run's document brought to this version (versions.upgrade) and checked;
    ValueError says why it is not a saved run."""
    if not isinstance(doc, dict) or not isinstance(doc.get("results"), list):
        raise ValueError("no `results` list")
    current = upgrade(doc)
    problem = shape_problem(current)
    if problem:
        raise ValueError(problem)
    return current


def shape_problem(doc: object) -> str | None:
    """What the comparison would trip over in a saved run, or None."""
    if not isinstance(doc, dict) or not isinstance(doc.get("results"), list):
        return "no `results` list"
    for key, kind, what in (("environment", dict, "an object"), ("comparisons", list, "a list"),
                            ("created", str, "text")):
        if doc.get(key) is not None and not isinstance(doc[key], kind):
            return f"`{key}` must be {what}"
    build = (doc.get("environment") or {}).get("build")
    if build is not None and not (isinstance(build, dict) and all(
            isinstance(build.get(k), str | None) for k in ("id", "daemon_sha256"))):
        return "`environment.build` must be an object whose `id` and `daemon_sha256` are text"
    for i, r in enumerate(doc["results"]):
        try:
            SavedResult.of(r)
        except ValueError as exc:
            return f"result {i}: {exc}"[:300]
    return None


Figure = dict[str, float | None]
MAX_ROUNDS = 2000  # rounds (or canary readings) of one workload: --fsperf-rounds is at most 1000


def _measured(value: object, above: float | None) -> bool:
    """A finite number, above `above` (or 0 or more where None)."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        return False
    return value > above if above is not None else value >= 0


@dataclass(frozen=True)
class SavedResult:
    """A saved run's workload as the judges of saved runs read it, in the result's own types:
    what identifies it, its rounds' figures and its headline ones, the machine's readings."""

    test: str
    name: str
    fingerprint: dict[str, str | float | None] = field(default_factory=dict)
    total: Headline | None = None
    rounds: tuple[Figure, ...] = ()
    stats: dict[str, Spread] = field(default_factory=dict)
    canary: tuple[float, ...] = ()  # the machine canary's scores around its rounds
    rest: Rest | None = None  # the rest of the machine over its window
    judged: bool = True

    @classmethod
    def of(cls, data: object) -> SavedResult:
        """From a result's JSON (the rest of its fields left); ValueError names what is wrong."""
        if not isinstance(data, dict):
            raise ValueError("not an object")
        for many in ("rounds", "canary"):  # each is bootstrapped: a million took 600 s
            if isinstance(data.get(many), list) and len(data[many]) > MAX_ROUNDS:
                raise ValueError(f"{len(data[many])} {many}: a run makes at most {MAX_ROUNDS}")
        fingerprint = data.get("fingerprint")
        scale = fingerprint.get("scale") if isinstance(fingerprint, dict) else None
        for key, value, least in (("wall_seconds", data.get("wall_seconds"), 0.0),
                                  ("tool_cpu_percent", data.get("tool_cpu_percent"), None),
                                  ("fingerprint.scale", scale, 0.0)):
            if value is not None and not _measured(value, least):
                raise ValueError(f"{key} {str(value)[:20]} is not a figure a run makes "
                                 f"({'above 0' if least is not None else '0 or more'})")
        own = {k: v for k, v in data.items() if k in typed.names(cls) and v is not None}
        return typed.read(cls, own, f"result {str(data.get('test', '?'))[:200]}::"
                                    f"{str(data.get('name', '?'))[:100]}")

    @property
    def key(self) -> str:
        return f"{self.test}::{self.name}"

    def values(self, metric: str) -> list[float]:
        """The figure of each round; without rounds, its one headline or median figure."""
        if self.rounds:
            return [float(v) for r in self.rounds if (v := r.get(metric)) is not None]
        if metric in (Fig.BW, Fig.OPS):
            total = self.total
            v = (total.bw_bytes if metric == Fig.BW else total.ops_per_second) if total else None
            return [float(v)] if v else []
        spread = self.stats.get(metric)
        return [spread.median] if spread is not None else []


@dataclass(frozen=True)
class Run:
    """One saved run, as history reads it."""

    name: str  # the file's stem
    created: str  # ISO time the run was written
    build: str  # the build it measured (build id, commit, daemon hash), or ""
    doc: dict[str, Any] = field(repr=False, compare=False)

    @property
    def results(self) -> list[SavedResult]:
        """Its workloads, read into their type (each was checked when the run was read)."""
        return [SavedResult.of(r) for r in self.doc.get("results") or []]


def paths(given: Sequence[str], default: Path) -> list[Path]:
    """The saved-run files named: files, folders (their *.json) or globs; none: `default`."""
    found: list[Path] = []
    for g in given or [str(default)]:
        p = Path(g)
        if p.is_dir():
            found += sorted(p.glob("*.json"))
        elif p.is_file():
            found.append(p)
        elif matched := sorted(glob.glob(g)):
            found += [Path(m) for m in matched if Path(m).is_file()]
        else:
            raise UsageError(f"fsperf history: {g}: no such file, folder or glob match")
    if not found:
        raise UsageError(f"fsperf history: no saved run (*.json) in {', '.join(given or [str(default)])}")
    return list(dict.fromkeys(found))


def build_of(doc: dict[str, Any]) -> str:
    """What build a run measured: --fsperf-build-id or the CI's commit, else the daemon
    binary's hash, else ""."""
    build = (doc.get("environment") or {}).get("build") or {}
    if build.get("id"):
        return str(build["id"])
    if build.get("daemon_sha256"):
        return f"daemon {str(build['daemon_sha256'])[:12]}"
    return ""


def read(files: Iterable[Path]) -> tuple[list[Run], list[str]]:
    """The plugin's JSON files among `files`, oldest first (by when each was written, then
    name); and one line for each file skipped, saying why."""
    found, skipped = [], []
    for path in files:
        try:
            doc = inputs.read_json(path)
        except inputs.InputError as exc:
            skipped.append(f"{path}: {exc}")
            continue
        try:
            doc = checked(doc)
        except ValueError as exc:
            skipped.append(f"{path}: not a saved run: {exc}")
            continue
        found.append(Run(path.stem, str(doc.get("created") or ""), build_of(doc), doc))
    found.sort(key=lambda r: (_when(r.created), r.name))
    return found, skipped


def read_folder(folder: Path) -> tuple[list[Run], list[str]]:
    """read() of the saved runs in a storage folder (none where it does not exist)."""
    return read(sorted(folder.glob("*.json")) if folder.is_dir() else [])


def _when(created: str) -> float:
    """A run's `created` as seconds since the epoch (runs written in other time zones sort
    by the instant, not the text); 0 where it cannot be read."""
    try:
        return datetime.datetime.strptime(created, CREATED).timestamp()
    except ValueError:
        return 0.0
