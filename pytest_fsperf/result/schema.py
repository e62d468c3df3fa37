"""The results file's contract: its version and its JSON schema (schema.json, shipped
beside this module). Every reader of results checks them here."""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping
from importlib import resources
from typing import Any

import jsonschema

SCHEMA_ID = "pytest-fsperf/2"


@functools.cache
def _text() -> str:
    return resources.files("pytest_fsperf.result").joinpath("schema.json").read_text("utf-8")


def schema() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(_text())
    return data


# the judgement a report adds to a result (ResultRow's fields beyond WorkloadResult's; a
# test keeps them equal): a measured result alone is read without them
JUDGEMENT = frozenset({"verdict", "verdict_own", "failures", "not_judged", "limits", "baseline",
                       "baseline_key", "baseline_checks", "baseline_entry", "fingerprint",
                       "run_comparison"})


PARTS = {"result": "ResultRow", "comparison": "Comparison"}  # a part's definition


@functools.cache
def _validator(part: str) -> jsonschema.protocols.Validator:
    whole = schema()
    target = whole if part == "document" else {**whole["$defs"][PARTS[part]], "$defs": whole["$defs"]}
    kind = jsonschema.validators.validator_for(whole)
    arrays = kind.TYPE_CHECKER.redefine("array", lambda _c, x: isinstance(x, list | tuple))
    made: jsonschema.protocols.Validator = jsonschema.validators.extend(  # type: ignore[no-untyped-call]
        kind, type_checker=arrays)(target)  # to_dict's tuples are arrays too
    return made


def check(data: Mapping[str, Any], part: str, what: str) -> None:
    """data must be a `part` of the schema ('document', 'result': one with or without its
    judgement, 'comparison'): else one ValueError naming what and where it is wrong."""
    error = jsonschema.exceptions.best_match(_validator(part).iter_errors(data))
    if error is not None:
        where = "/".join(str(p) for p in error.absolute_path) or "the top"
        raise ValueError(f"{what}: at {where}: {error.message[:200]}")
