"""What the pytest entry point declares before a session uses the plugin: every flag and ini
key, and the markers' lines, written from the option table into pytest_fsperf/declared.py,
so that the entry point imports none of the package's stages (an unrelated pytest run pays
nothing). `python3 -m pytest_fsperf.options.declare` rewrites it; a test fails when stale."""

from __future__ import annotations

import json
from pathlib import Path

from pytest_fsperf.mounts.request import MARKER_HELP as MOUNT_HELP
from pytest_fsperf.options.parse import RULE
from pytest_fsperf.options.table import OPTIONS
from pytest_fsperf.plan.marker import KEYWORDS

PATH = Path(__file__).resolve().parent.parent / "declared.py"
MARKER_HELP = ("fsperf(**thresholds): performance thresholds for the test's measured workloads: "
               + ", ".join(KEYWORDS))
GROUP = "filesystem performance (pytest-fsperf); precedence: " + RULE


def _text(value: str, indent: str) -> str:
    """A string as adjacent literals of at most 80 characters each (the generated file keeps
    the line length), in parentheses where it takes more than one."""
    parts, rest = [], value
    while len(rest) > 80:
        cut = rest.rfind(" ", 40, 80) + 1 or 80  # after a space where there is one
        parts.append(rest[:cut])
        rest = rest[cut:]
    pieces = [json.dumps(p, ensure_ascii=False) for p in [*parts, rest]]
    if len(pieces) == 1:
        return pieces[0]
    return "(" + f"\n{indent} ".join(pieces) + ")"


def render() -> str:
    out = ['"""Written by pytest_fsperf/options/declare.py from the option table: do not edit.',
           "What the entry point (plugin.py) declares before a session uses the plugin.\"\"\"",
           "",
           "# (ini key and dest; the flag is --fsperf-... with dashes), metavar, help",
           "OPTIONS: tuple[tuple[str, str, str], ...] = ("]
    for o in OPTIONS:
        out.append(f"    ({json.dumps(o.name)}, {json.dumps(o.metavar)},")
        out.append(f"     {_text(o.help, '     ')}),")
    out.append(")")
    out.append(f"GROUP = {_text(GROUP, '        ')}")
    out.append(f"MARKERS = (\n    {_text(MARKER_HELP, '    ')},\n    {_text(MOUNT_HELP, '    ')},\n)")
    return "\n".join(out) + "\n"


if __name__ == "__main__":
    PATH.write_text(render())
