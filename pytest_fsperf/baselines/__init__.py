"""Documented baselines shipped as data, and baselines a run saves for itself.

A baseline file is JSON: the system, version, hardware, OS, kernel, mount options and
source, and per scenario id the figures as printed (`printed`) with their value in
bytes/s (bw), percent of one core (cpu) or bytes (rss). Ranges keep `high` too.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from pytest_fsperf.errors import UsageError
from pytest_fsperf.figures import FILE_KEYS
from pytest_fsperf.infra import inputs
from pytest_fsperf.result.judged import Described

# what a figure counts: the whole workload, or each fio job apart (the document's command
# had no --group_reporting: "X-Y MB/s" is the jobs' min-max)
PER = ("total", "job")


@dataclass(frozen=True)
class Baseline:
    name: str
    data: dict[str, Any]
    origin: str  # "shipped" or the saved file's path

    def entry(self, scenario: str) -> dict[str, Any] | None:
        found = self.data.get("entries", {}).get(scenario)
        return found if isinstance(found, dict) else None


def described(baseline: Baseline) -> Described:
    """A baseline as a result names it."""
    d = baseline.data
    return Described(baseline.name, baseline.origin, d.get("hardware"), d.get("scale"),
                     d.get("kernel"), d.get("conditions") or {})


def shipped_names() -> list[str]:
    folder = resources.files("pytest_fsperf.baselines").joinpath("data")
    return sorted(p.name[:-5] for p in folder.iterdir() if p.name.endswith(".json"))


def saved_dir(root: Path) -> Path:
    return root / ".fsperf" / "baselines"


def shipped(name: str) -> Baseline:
    """A baseline shipped with the plugin (never a saved one of the same name)."""
    return load(name, None, "shipped baselines")


def load(name: str, root: Path | None, where: str) -> Baseline:
    """A saved baseline (.fsperf/baselines/NAME.json under the rootdir) first, then a shipped one."""
    local = saved_dir(root) / f"{name}.json" if root is not None else None
    if local is not None and os.path.lexists(local):
        try:
            text, origin = inputs.read_text(local), str(local)
        except inputs.InputError as exc:
            raise UsageError(f"{where}: baseline {local} {exc}") from None
    elif name in shipped_names():
        folder = resources.files("pytest_fsperf.baselines").joinpath("data")
        text = folder.joinpath(f"{name}.json").read_text("utf-8")
        origin = "shipped"
    else:
        saved = (sorted(p.stem for p in saved_dir(root).glob("*.json"))
                 if root is not None and saved_dir(root).is_dir() else [])
        raise UsageError(f"{where}: unknown baseline {name!r} (shipped: {', '.join(shipped_names())}"
                         + (f"; saved: {', '.join(saved)}" if saved else "") + ")")
    try:
        data = inputs.parse_json(text)
    except inputs.InputError as exc:
        raise UsageError(f"{where}: baseline {origin} {exc}") from None
    problem = shape_problem(data)
    if problem:
        raise UsageError(f"{where}: baseline {origin}: {problem}")
    return Baseline(name, data, origin)


def _number(value: object) -> bool:
    """A finite number of 0 or more (not a bool, text or list)."""
    return (isinstance(value, int | float) and not isinstance(value, bool)
            and 0 <= value < float("inf"))


RELATIVE_TEXT = ("scenario", "a", "b", "printed")  # a relative entry's fields


def _relative_problem(relative: object) -> str | None:
    if relative is None:
        return None
    if not isinstance(relative, dict):
        return "`relative` is not an object of entries"
    for key, entry in relative.items():
        if not isinstance(entry, dict):
            return f"relative entry {key!r} is not an object"
        missing = [f for f in RELATIVE_TEXT if not isinstance(entry.get(f), str)]
        if missing:
            return f"relative entry {key!r}: {', '.join(missing)} must be text"
        less = entry.get("less_time")
        if not _number(less) or not less < 1:  # type: ignore[operator]
            return f"relative entry {key!r}: less_time must be a share from 0 to below 1"
        options = entry.get("b_options", [])
        if not isinstance(options, list) or not all(isinstance(o, str) for o in options):
            return f"relative entry {key!r}: b_options must be a list of texts"
    return None


def shape_problem(data: object) -> str | None:
    """What makes this not a baseline file, or None: an object whose `entries` map scenario
    ids to objects of figures {"printed": text, "value": number}."""
    if not isinstance(data, dict):
        return f"not a baseline file (a JSON {type(data).__name__}, not an object)"
    entries = data.get("entries")
    if not isinstance(entries, dict):
        return "not a baseline file (no `entries` object)"
    if not isinstance(data.get("conditions") or {}, dict):
        return "`conditions` is not an object"
    if (problem := _relative_problem(data.get("relative"))) is not None:
        return problem
    scale = data.get("scale")
    if scale is not None and not (_number(scale) and scale > 0):
        return "`scale` must be a positive number"
    for key, entry in entries.items():
        if not isinstance(entry, dict):
            return f"entry {key!r} is not an object"
        for metric, figure in entry.items():
            if metric in FILE_KEYS and not (isinstance(figure, dict) and _number(figure.get("value"))):
                return f"entry {key!r}: {metric} needs a numeric `value`"
            if metric in FILE_KEYS and figure.get("per", "total") not in PER:
                return f"entry {key!r}: {metric} `per` must be one of {', '.join(PER)}"
            if metric in FILE_KEYS and figure.get("high") is not None and not _number(figure["high"]):
                return f"entry {key!r}: {metric} `high` must be a number"
    return None

