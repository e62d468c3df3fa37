"""The reference tables, generated from the code (the option table in
pytest_fsperf/options/config.py, the marker keywords in plan/marker.py, the fixture's methods,
each engine's parameters) and committed in the pages between their markers, so GitHub and an
editor show them too. `python docs/hooks.py` writes them; a test fails when a page is stale;
the MkDocs hook refreshes them again at build time."""

from __future__ import annotations

import dataclasses
import enum
import inspect
import re
from typing import Any

from pytest_fsperf.fixture import Fsperf
from pytest_fsperf.measure.placement import CpuSetting
from pytest_fsperf.mounts.registry import BackendConfig
from pytest_fsperf.options.table import OPTIONS, Option
from pytest_fsperf.plan.marker import BASELINE_KEYS, KEYWORDS
from pytest_fsperf.scenarios import steps


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


ENGINES = (("files", steps.FilesJob), ("meta", steps.MetaJob), ("checkpoint", steps.CheckpointJob),
           ("mdtest", steps.MdtestJob), ("sysbench", steps.SysbenchJob))
FIELD_LINE = re.compile(r"^\s+(\w+): [^=]+= (.+?)(?:\s+#\s*(.*))?$")


def engine_parameters() -> str:
    """Each engine's keyword parameters: default and, where the code says, what it does."""
    out = []
    for method, job in ENGINES:
        said = {m.group(1): m.group(3) or "" for line in inspect.getsource(job).splitlines()
                if (m := FIELD_LINE.match(line))}
        doc = " ".join(inspect.cleandoc(job.__doc__ or "").split())
        out += [f"**`fsperf.{method}()`**: {doc}", "", "| parameter | default | |", "|---|---|---|"]
        for f in dataclasses.fields(job):
            out.append(f"| `{f.name}` | `{f.default!r}` | {_cell(said.get(f.name, ''))} |")
        out.append("")
    return "\n".join(out).rstrip()


MAKERS = {"options": options_table, "markers": markers_table, "fixture": fixture_methods,
          "engines": engine_parameters}
REGION = re.compile(r"(<!-- fsperf:(\w+) -->\n)(.*?)(<!-- /fsperf:\2 -->)", re.S)
DEFAULT_VALUE = re.compile(r"(<!-- fsperf:default (\w+) -->)(.*?)(<!-- /fsperf -->)")
PAGES = ("reference/fixture.md", "reference/marker.md", "reference/options.md")


def refresh(markdown: str) -> str:
    """The page with every generated region and default written from the code now."""
    markdown = DEFAULT_VALUE.sub(lambda m: m.group(1) + as_written(BY_KEY[m.group(2)]) + m.group(4),
                                 markdown)
    return REGION.sub(lambda m: m.group(1) + MAKERS[m.group(2)]() + "\n" + m.group(4), markdown)


def on_page_markdown(markdown: str, **_kwargs: Any) -> str:
    return refresh(markdown)


if __name__ == "__main__":
    from pathlib import Path

    docs = Path(__file__).resolve().parent
    for path in sorted(docs.rglob("*.md")):  # every page: defaults are written in the source
        text = path.read_text()
        if refresh(text) != text:
            path.write_text(refresh(text))
            print(f"wrote {path}")
    from pytest_fsperf.result import contract  # the results file's schema, from the types

    shipped = docs.parent / "pytest_fsperf" / "result" / "schema.json"
    if shipped.read_text() != contract.text():
        shipped.write_text(contract.text())
        print(f"wrote {shipped}")
    from pytest_fsperf.options import declare  # what the entry point declares, from the table

    if declare.PATH.read_text() != declare.render():
        declare.PATH.write_text(declare.render())
        print(f"wrote {declare.PATH}")
