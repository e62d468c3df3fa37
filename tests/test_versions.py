"""Every results file this project has written reads with today's code: the files in
tests/data/written, each written by the plugin of its commit (its first on), read as a
report, as saved runs and through the steps between versions; and the shipped schema is the
one the types make."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import jsonschema
import pytest

from pytest_fsperf.report import terminal, view
from pytest_fsperf.result import contract, versions
from pytest_fsperf.result.document import Document
from pytest_fsperf.result.schema import SCHEMA_ID, schema
from pytest_fsperf.saved import runs as saved
from pytest_fsperf.vocab import Outcome

WRITTEN = sorted((Path(__file__).parent / "data" / "written").glob("*.json"))


def test_there_is_a_file_of_the_first_commit_and_of_each_era() -> None:
    assert len(WRITTEN) >= 10 and WRITTEN[0].name.endswith("dc3ae16.json")


@pytest.mark.parametrize("path", WRITTEN, ids=lambda p: p.stem)
def test_a_file_written_then_reads_as_a_report(path: Path) -> None:
    """As found: the files of the first two commits were refused ('mount' and then
    'fingerprint' "is a required property") by a hand-kept schema that required fields the
    types give defaults."""
    doc = json.loads(path.read_text())
    read = Document.read(doc, str(path))
    assert [r.name for r in read.results] == [r["name"] for r in doc["results"]]
    for r, raw in zip(read.results, doc["results"], strict=True):
        assert r.bw_bytes == pytest.approx(raw["total"]["bw_bytes"])  # the figures as written
        assert r.verdict == Outcome(raw["verdict"])
        assert r.verdict_own == Outcome(raw.get("verdict_own", raw["verdict"]))
    shown = "\n".join(terminal.render(view.build(read.environment, list(read.results), list(read.comparisons), False)))
    assert "seq_read" in shown and "seq_write" in shown


@pytest.mark.parametrize("path", WRITTEN, ids=lambda p: p.stem)
def test_a_file_written_then_reads_as_a_saved_run(path: Path) -> None:
    found, skipped = saved.read([path])
    assert not skipped and len(found) == 1
    figures = {r.name: r.values("bw") for r in found[0].results}
    assert set(figures) == {"seq_write", "seq_read"} and all(figures.values())
    assert saved.read_run(path, "test")["schema"] == SCHEMA_ID


def test_an_older_file_is_not_changed_by_reading_it() -> None:
    doc = json.loads(WRITTEN[0].read_text())
    kept = copy.deepcopy(doc)
    versions.upgrade(doc)
    assert doc == kept


def test_a_version_no_step_leads_from_is_refused_in_one_line(tmp_path: Path) -> None:
    doc = {**json.loads(WRITTEN[-1].read_text()), "schema": "pytest-fsperf/9"}
    with pytest.raises(ValueError, match=r"^f: written as 'pytest-fsperf/9'; this version reads pytest-fsperf/1, pytest-fsperf/2$"):
        Document.read(doc, "f")
    (tmp_path / "run.json").write_text(json.dumps(doc))
    found, skipped = saved.read([tmp_path / "run.json"])
    assert not found and skipped == [f"{tmp_path / 'run.json'}: not a saved run: written as "
                                     "'pytest-fsperf/9'; this version reads pytest-fsperf/1, "
                                     "pytest-fsperf/2"]


def test_the_steps_run_oldest_first_each_from_its_own_version(monkeypatch: pytest.MonkeyPatch) -> None:
    """The chain itself, with two made-up older versions: a 0 that called bandwidth `bw`
    and a 0.5 whose results lacked a test name."""
    monkeypatch.setitem(versions.STEPS, "pytest-fsperf/0", ("pytest-fsperf/0.5", lambda d: {
        **d, "results": [{**{k: v for k, v in r.items() if k != "bw"}, "total": r["bw"]}
                         for r in d["results"]]}))
    monkeypatch.setitem(versions.STEPS, "pytest-fsperf/0.5", (SCHEMA_ID, lambda d: {
        **d, "results": [{**r, "test": r.get("test", "?")} for r in d["results"]]}))
    old = {"schema": "pytest-fsperf/0", "results": [{"bw": {"bw_bytes": 5.0}}]}
    now = versions.upgrade(old)
    assert now["schema"] == SCHEMA_ID
    assert now["results"] == [{"test": "?", "total": {"bw_bytes": 5.0}}]
    monkeypatch.setitem(versions.STEPS, "pytest-fsperf/0.5", ("pytest-fsperf/0", lambda d: d))
    with pytest.raises(ValueError, match="written as"):  # a loop is refused, not followed
        versions.upgrade({"schema": "pytest-fsperf/0", "results": []})


def test_the_shipped_schema_is_the_one_the_types_make() -> None:
    """`python3 docs/hooks.py` writes it again."""
    assert schema() == contract.generate()


def test_the_schema_refuses_what_the_reader_refuses() -> None:
    doc = versions.upgrade(json.loads(WRITTEN[-1].read_text()))
    jsonschema.validate(doc, schema())
    bad = copy.deepcopy(doc)
    bad["results"][0]["daemon"]["colour"] = "red"
    with pytest.raises(jsonschema.ValidationError, match="'colour' was unexpected"):
        jsonschema.validate(bad, schema())
    with pytest.raises(ValueError, match="colour"):
        Document.read(bad, "bad")


def test_a_field_is_described_by_its_comment() -> None:
    defs = schema()["$defs"]
    assert "sent in the window" in defs["FuseOpJSON"]["properties"]["count"]["description"]
    assert defs["IoStats"]["properties"]["bw_bytes"]["description"] == "B/s, fio's bw_bytes"
    assert defs["DaemonStats"]["properties"]["cpu_percent"]["type"] == ["number", "null"]


def test_the_judgement_a_result_is_read_without_is_the_rows_own_fields() -> None:
    from dataclasses import fields

    from pytest_fsperf.result.document import ResultRow
    from pytest_fsperf.result.schema import JUDGEMENT
    from pytest_fsperf.result.workload import WorkloadResult

    assert {f.name for f in fields(ResultRow)} - {f.name for f in fields(WorkloadResult)} == JUDGEMENT


@pytest.mark.parametrize("doc", [
    {"schema": "x" * 1_000_000, "results": []},
    {"schema": ["pytest-fsperf/1"], "results": []},
    {"schema": "pytest-fsperf/1", "results": [1, "a", None, {"verdict": ["x"] * 100_000}]},
    {"schema": "pytest-fsperf/1", "results": [{"verdict": "pass", "total": {"bw_bytes": "fast"}}]},
], ids=["huge-version", "version-not-text", "results-of-any-shape", "wrong-figure"])
def test_a_hostile_saved_run_is_skipped_in_one_short_line(tmp_path: Path, doc: dict) -> None:
    """History reads CI artifacts anyone who opens a pull request can shape: whatever the
    version or the results hold, the file is skipped with one bounded line, never raising."""
    path = tmp_path / "run.json"
    path.write_text(json.dumps(doc))
    found, skipped = saved.read([path])
    assert not found and len(skipped) == 1 and "\n" not in skipped[0]
    assert skipped[0].startswith(f"{path}: not a saved run: ") and len(skipped[0]) < 500
    with pytest.raises(ValueError) as said:
        Document.read(doc, "run")
    assert len(str(said.value)) < 500


@pytest.mark.parametrize("faults", [{"major": "x" * 100_000, "minor": 1}, [1, 2], {"major": {"a": 1}}])
def test_a_first_version_file_with_faults_of_another_shape_is_refused_in_one_line(tmp_path: Path,
                                                                                 faults: object) -> None:
    """The step from /1 moves what `faults` held into `measured`; what is not a count there
    is refused by the reader, naming the result, as any wrong field is (a list: no figure)."""
    doc = json.loads(WRITTEN[-2].read_text())
    assert doc["schema"] == "pytest-fsperf/1"
    doc["results"][0]["faults"] = faults
    if isinstance(faults, list):
        read = Document.read(doc, "f")
        assert read.results[0].measured == {"daemon_major_faults": None, "daemon_minor_faults": None}
        return
    with pytest.raises(ValueError) as refused:
        Document.read(doc, "f")
    said = str(refused.value)
    assert "\n" not in said and len(said) < 400 and "measured" in said, said[:400]
