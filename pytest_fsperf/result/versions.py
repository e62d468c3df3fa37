"""Results files of every version this project has written, read as the current one.

A file names its version (`schema`). Each older version has one step to the next (STEPS,
oldest first), so a file of any of them is brought to this one before it is read; a version
no step knows (a newer plugin's) is refused in one line. Within a version, a file written
before a field was kept reads with the field's default, as the schema allows; where that
default would say something false of an older file, one function per such field says what
its absence means (BACKFILL). Every function takes the document as read and returns a new
one: nothing is changed in place."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from pytest_fsperf.result.schema import SCHEMA_ID

Doc = dict[str, Any]
Step = Callable[[Doc], Doc]

# version -> (the next version, the step to it), set below
STEPS: dict[str, tuple[str, Step]] = {}


def _results(doc: Doc, change: Callable[[Mapping[str, Any]], Mapping[str, Any]]) -> Doc:
    given = doc.get("results")
    if not isinstance(given, list):
        return doc
    return {**doc, "results": [dict(change(r)) if isinstance(r, Mapping) else r for r in given]}


def own_verdict(doc: Doc) -> Doc:
    """Files from before a result kept its verdict by its own thresholds apart (verdict_own):
    the verdict it was written with is its own (no saved run judged it apart then), not
    'not judged'."""
    return _results(doc, lambda r: r if "verdict_own" in r or "verdict" not in r
                    else {**r, "verdict_own": r["verdict"]})


def faults_measured(doc: Doc) -> Doc:
    """pytest-fsperf/1 to /2: a meter's own figures are kept in `measured`, by the registry's
    keys; the daemon's page faults were a field of their own (`faults`: minor, major,
    processes, or null), and a file from before them has none."""
    def moved(r: Mapping[str, Any]) -> Mapping[str, Any]:
        if "faults" not in r:
            return r
        f = r["faults"] if isinstance(r["faults"], Mapping) else {}
        return {**{k: v for k, v in r.items() if k != "faults"},
                "measured": {"daemon_major_faults": f.get("major"), "daemon_minor_faults": f.get("minor")}}
    return _results(doc, moved)


STEPS["pytest-fsperf/1"] = ("pytest-fsperf/2", faults_measured)
BACKFILL: tuple[Step, ...] = (own_verdict,)


def upgrade(doc: Mapping[str, Any]) -> Doc:
    """doc as the current version holds it; ValueError for a version that no step leads
    from, or a document that is not an object."""
    if not isinstance(doc, Mapping):
        raise ValueError("not a results file (not an object)")
    out = dict(doc)
    seen: set[str] = set()
    while out.get("schema") != SCHEMA_ID:
        found = out.get("schema")
        if not isinstance(found, str) or found not in STEPS or found in seen:
            readable = ", ".join([*STEPS, SCHEMA_ID])
            raise ValueError(f"written as {str(found)[:60]!r}; this version reads {readable}")
        seen.add(found)
        following, step = STEPS[found]
        out = {**step(out), "schema": following}
    for fill in BACKFILL:
        out = fill(out)
    return out
