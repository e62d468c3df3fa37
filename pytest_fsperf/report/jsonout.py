"""The machine-readable result file. Its schema ships as result/schema.json."""

from __future__ import annotations

import json
import math
import time
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

from pytest_fsperf.infra import outfile
from pytest_fsperf.result.comparison import Comparison
from pytest_fsperf.result.document import FailedTest, ResultRow
from pytest_fsperf.result.environment import Environment
from pytest_fsperf.result.schema import SCHEMA_ID, schema
from pytest_fsperf.saved import runs as saved

__all__ = ["SCHEMA_ID", "document", "finite", "schema", "write"]


def document(environment: Environment, results: Sequence[ResultRow],
             leftovers: list[str], comparisons: Sequence[Comparison],
             swept: list[str] | None = None,
             failed_tests: Sequence[FailedTest] = ()) -> dict[str, Any]:
    """The results file: every type written as its JSON (read back by ResultRow.of,
    Comparison.from_dict and FailedTest.of)."""
    return {
        "failed_tests": [asdict(t) for t in failed_tests],
        "schema": SCHEMA_ID,
        "created": time.strftime(saved.CREATED),
        "environment": environment.to_dict(),
        "results": [r.to_dict() for r in results],
        "comparisons": [c.to_dict() for c in comparisons],
        "leftovers": leftovers,
        "swept": swept or [],
    }


def finite(doc: Any) -> Any:
    """doc with every NaN or infinite float as null (not measured): JSON has no such number,
    and the plugin's readers refuse them."""
    if isinstance(doc, float):
        return doc if math.isfinite(doc) else None
    if isinstance(doc, dict):
        return {k: finite(v) for k, v in doc.items()}
    if isinstance(doc, list | tuple):
        return [finite(v) for v in doc]
    return doc


def write(path: Path, doc: Any, streams: bool = True) -> Path:
    """Write JSON atomically (a reader never sees half a file); creates the directory.
    Raises outfile.OutputError, naming the file, when it cannot (outfile.write: streams)."""
    return outfile.write(path, json.dumps(finite(doc), indent=2, sort_keys=True,
                                          allow_nan=False) + "\n", streams)
