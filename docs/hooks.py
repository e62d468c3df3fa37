"""MkDocs hook: the reference tables are generated from the code at build time (the option
table in pytest_fsperf/options/config.py, the marker keywords in plan/marker.py, the fixture's methods), so
they cannot go stale."""

from __future__ import annotations

import enum
import inspect
import re
from typing import Any

from pytest_fsperf.fixture import Fsperf
from pytest_fsperf.measure.placement import CpuSetting
from pytest_fsperf.mounts.registry import BackendConfig
from pytest_fsperf.options.config import OPTIONS, Option
from pytest_fsperf.plan.marker import BASELINE_KEYS, KEYWORDS


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


BY_KEY = {o.name.removeprefix("fsperf_"): o for o in OPTIONS}


def as_written(o: Option) -> str:
    """An option's default as a user writes it on the command line ("" for none)."""
    value = o.default
    if isinstance(value, bool):
        return ("on" if value else "off") if o.metavar == "on|off" else ("1" if value else "0")
    if isinstance(value, enum.Enum):
        return str(value.value)
    if isinstance(value, CpuSetting):
        return str(value.given) if value.given is not None else str(value.mode.value)
    if isinstance(value, BackendConfig):
        return "" if not (value.values or value.backends) else str(value.where)
    if isinstance(value, float):
        return f"{100 * value:g}%" if o.metavar == "PERCENT" else f"{value:g}"
    return "" if value in (None, (), "") else str(value)


def options_table() -> str:
    rows = ["| flag | ini key | default | what it does |", "|---|---|---|---|"]
    for o in OPTIONS:
        shown = as_written(o)
        default = f"`{shown}`" if shown else "-"
        rows.append(f"| `{o.flag}={o.metavar}` | `{o.name}` | {_cell(default)} | {_cell(o.help)} |")
    return "\n".join(rows)


DEFAULT = re.compile(r"<!-- fsperf:default (\w+) -->")


def markers_table() -> str:
    rows = ["| keyword | bound | figure |", "|---|---|---|"]
    for name, k in KEYWORDS.items():
        rows.append(f"| `{name}` | {k.bound} | {_cell(k.label)} |")
    rows.append("")
    rows.append("Besides the bounds: " + ", ".join(f"`{k}`" for k in BASELINE_KEYS) + ".")
    return "\n".join(rows)


def fixture_members() -> dict[str, str]:
    """The fixture's public attributes, each as the reference shows it: name -> line."""
    out = {}
    for name, member in vars(Fsperf).items():
        if name.startswith("_"):
            continue
        if isinstance(member, property):
            shown, doc = f"fsperf.{name}", member.__doc__
        else:
            sig = (str(inspect.signature(member)).replace("(self, ", "(").replace("(self)", "()")
                   .replace("'", ""))
            shown, doc = f"fsperf.{name}{sig}", member.__doc__
        first = inspect.cleandoc(doc or "").split("\n\n")[0]
        out[name] = f"- `{shown}` — {' '.join(first.split())}"
    return out


def fixture_methods() -> str:
    return "\n".join(fixture_members().values())


def on_page_markdown(markdown: str, **_kwargs: Any) -> str:
    markdown = DEFAULT.sub(lambda m: as_written(BY_KEY[m.group(1)]), markdown)
    for mark, make in (("<!-- fsperf:options -->", options_table),
                       ("<!-- fsperf:markers -->", markers_table),
                       ("<!-- fsperf:fixture -->", fixture_methods)):
        if mark in markdown:
            markdown = markdown.replace(mark, make())
    return markdown
