"""Every renderer over one canned results file (a real run: fio, rounds, the small-file
engine, a scenario against a baseline, an A/B on bindfs, a failing threshold), compared
with golden output. FSPERF_UPDATE_GOLDEN=1 rewrites the golden files after a deliberate
change; read the diff before committing it."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from pytest_fsperf.report import benchmark_json, html, jsonout, markdown, terminal, view
from tests.results import read_doc, read_env

DATA = Path(__file__).parent / "data"
GOLDEN = DATA / "golden"


@pytest.fixture(scope="module")
def doc() -> dict[str, Any]:
    data: dict[str, Any] = json.loads((DATA / "canned-results.json").read_text())
    return data


def golden(name: str, text: str) -> None:
    path = GOLDEN / name
    if os.environ.get("FSPERF_UPDATE_GOLDEN") == "1":
        path.write_text(text)
    assert text == path.read_text(), f"{name} differs from its golden file"


def test_the_canned_file_matches_the_schema(doc):
    jsonschema.validate(doc, jsonout.schema())


def test_the_schema_names_every_figure_a_comparison_holds_and_every_page_cache_state():
    """A comparison's metrics once held FUSE request counts the schema refused."""
    from pytest_fsperf.judge.comparison import COMPARED
    from pytest_fsperf.vocab import PageCache

    defs = jsonout.schema()["$defs"]
    metric = defs["MetricComparison"]["properties"]["metric"]
    assert set(COMPARED) <= set(metric["enum"])
    assert {p.value for p in PageCache} <= set(defs["ResultRow"]["properties"]["cache"]["enum"])


def the_view(doc: dict[str, Any]) -> view.View:
    return view.build(*read_doc(doc), False)


def test_terminal(doc):
    golden("terminal.txt", "\n".join(terminal.render(the_view(doc))) + "\n")


def test_markdown(doc):
    golden("summary.md", markdown.document(the_view(doc)))


def test_html(doc):
    golden("report.html", html.document(the_view(doc)))


def test_benchmark_files(doc):
    bigger, smaller = markdown.benchmark_action(read_doc(doc)[1])
    golden("benchmark-action.json", json.dumps({"bigger": bigger, "smaller": smaller}, indent=1,
                                                sort_keys=True) + "\n")
    pb = benchmark_json.document(read_doc(doc)[1], read_env(doc))
    for bench in pb["benchmarks"]:
        bench.pop("fullname", None)
    golden("pytest-benchmark.json", json.dumps(pb["benchmarks"], indent=1, sort_keys=True) + "\n")


def test_the_report_rows_are_the_schemas_results(doc):
    """The report reads typed rows, made once from the JSON form: each field is a property
    of the schema's result, and every canned result makes a row, its words as enums."""
    from dataclasses import fields

    from pytest_fsperf.result.document import ResultRow
    from pytest_fsperf.vocab import Outcome

    props = jsonout.schema()["$defs"]["ResultRow"]["properties"]
    own = {f.name for f in fields(ResultRow)} - {"profile_note", "output_file"}
    assert set(props) >= own, sorted(own - set(props))
    rows = [ResultRow.of(r) for r in doc["results"]]
    assert [r.verdict for r in rows] == [Outcome.of(r["verdict"]) for r in doc["results"]]
    assert all(isinstance(r.verdict, Outcome) for r in rows)


def test_the_load_generators_cost_and_engine_are_said():
    from pytest_fsperf.report.view import load_generator_lines
    from pytest_fsperf.result.parts import OpStats
    from pytest_fsperf.vocab import EngineKind
    from tests.results import row

    ops = OpStats("read files", 10, 10**6, 1.0, 10.0, 1e6, 1, {},
                  "python (no C compiler (cc) to build the compiled worker)")
    rows = [row("t.py::test_f", "files_read", kind=EngineKind.FILES, ops=ops, tool_cpu_percent=35.2),
            row("t.py::test_f", "layout", "-", judged=False, tool_cpu_percent=80.0)]
    assert load_generator_lines(rows) == [
        "load generator CPU (fio's processes; for the engines the plugin's process and its "
        "worker): test_f files_read 35%",
        "small files moved by Python threads, not the compiled worker: no C compiler (cc) to "
        "build the compiled worker"]
