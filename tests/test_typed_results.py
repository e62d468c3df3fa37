"""Results read back as their types: a comparison's JSON (a session's, or an older file's that
lacks later fields) becomes the Comparison that wrote it, enums as enums, and writes the same
JSON again; a wrong field is one ValueError naming it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_fsperf.judge.comparison import settled
from pytest_fsperf.result.comparison import Comparison, MetricComparison
from pytest_fsperf.vocab import CompareKind, Difference, Settled

TIER = "unit"

CANNED = Path(__file__).parent / "data" / "canned-results.json"


def a_gate() -> Comparison:
    bw = MetricComparison("bw", (1e9, 1.1e9, None), (0.8e9, 0.9e9, 0.85e9), 1.05e9, 0.85e9, 0.81,
                          0.74, 0.88, 0.98, Difference.B_WORSE, True)
    return Comparison("t.py::test_read", "read", "rclone", ("/opt/a/rclone",), ("/opt/b/rclone",),
                      3, "ABBAAB", ("read[reference]",), ("read",), {"bw": bw}, "bw",
                      "decided after 3 pairs", 41.5, CompareKind.GATE, None, ("A1: not cold",),
                      where=("READ: p50 412 us -> 498 us",), profile=("daemon samples: x",),
                      profiles={"A": [("main;read", 10)], "B": [("main;read", 14)]})


def test_a_comparison_reads_back_as_the_one_that_wrote_it() -> None:
    c = a_gate()
    text = json.dumps(c.to_dict())
    back = Comparison.from_dict(json.loads(text))
    assert back == c
    assert isinstance(back.kind, CompareKind) and isinstance(back.metrics["bw"].outcome, Difference)
    assert json.dumps(back.to_dict()) == text
    assert settled(back.to_dict()) is Settled.B_WORSE


def test_an_older_files_comparison_reads_with_defaults_for_what_it_lacks() -> None:
    for d in json.loads(CANNED.read_text())["comparisons"]:
        c = Comparison.from_dict(d)
        assert c.kind is CompareKind.OPTIONS and c.metrics["bw"].outcome is Difference.INCONCLUSIVE
        written = json.loads(json.dumps(c.to_dict()))
        assert all(written[k] == v for k, v in d.items() if k != "metrics")
        for name, m in d["metrics"].items():
            assert all(written["metrics"][name][k] == v for k, v in m.items())


@pytest.mark.parametrize("change, said", [
    ({"colour": "red"}, r"comparison 'read': at the top: Additional properties are not allowed \('colour' was unexpected\)"),
    ({"rounds": [3]}, "comparison 'read': at rounds: \\[3\\] is not of type 'integer'"),
    ({"a_options": "x"}, "comparison 'read': at a_options: 'x' is not of type 'array'"),
    ({"kind": "sideways"}, "comparison 'read': at kind: 'sideways' is not one of"),
])
def test_a_wrong_field_is_one_error_naming_it(change, said) -> None:
    d = {**a_gate().to_dict(), **change}
    with pytest.raises(ValueError, match=said):
        Comparison.from_dict(d)
    bad = a_gate().to_dict()
    bad["metrics"]["bw"]["a"] = ["fast"]
    with pytest.raises(ValueError, match="at metrics/bw/a/0: 'fast' is not of type 'number'"):
        Comparison.from_dict(bad)


def test_bisect_judges_a_gates_json_through_the_types() -> None:
    from pytest_fsperf.bisect.run import judge
    from pytest_fsperf.vocab import BisectVerdict

    worse = a_gate().to_dict()
    verdict, why, m = judge({"comparisons": [worse]})
    assert (verdict, why) == (BisectVerdict.BAD, "regression") and m["ratio"] == 0.81
    assert m["pairs"] == 3 and m["ci_high"] == 0.88
    fine = json.loads(json.dumps(worse))
    fine["metrics"]["bw"].update(outcome="not worse", ratio=0.99)
    assert judge({"comparisons": [fine]})[0] == BisectVerdict.GOOD
    crashed = {**fine, "crashed": "B's daemon died in 2 runs"}
    assert judge({"comparisons": [crashed]})[0] == BisectVerdict.BAD
    odd = {**fine, "rounds": "three"}
    verdict, why, _ = judge({"comparisons": [odd]})
    assert verdict == BisectVerdict.UNDECIDED and "could not be read" in why


def test_the_schema_names_every_verdict_the_plugin_writes() -> None:
    """As found: the schema allowed 5 of Outcome's 8 words, so a session with a saved run's
    REGRESSION wrote a file its own schema refused."""
    from pytest_fsperf.result.schema import schema
    from pytest_fsperf.vocab import Outcome

    said = schema()["$defs"]["ResultRow"]["properties"]["verdict"]["enum"]
    assert sorted(said) == sorted(o.value for o in Outcome)


def test_a_result_reads_back_as_the_one_that_wrote_it_with_its_nested_readings() -> None:
    from dataclasses import replace

    from pytest_fsperf.result.ceiling import Ceiling, CeilingPath
    from pytest_fsperf.result.daemon import DaemonStats, ProcessStats
    from pytest_fsperf.result.daemon import Memory as Reading
    from pytest_fsperf.result.document import ResultRow
    from pytest_fsperf.result.fuse import FuseOp, FuseRequests
    from pytest_fsperf.result.machine import Mounted
    from pytest_fsperf.result.store import Requests
    from pytest_fsperf.result.timeline import Timeline
    from pytest_fsperf.result.workload import WorkloadResult
    from pytest_fsperf.vocab import ColdRead, Outcome
    from tests.results import result_json

    daemon = DaemonStats(41, 2.0, 1.5, 75.0, 90 * 2**20, "VmHWM", 10**9, 10**9, "I/O", 1.9, True,
                         (ProcessStats(41, "supervisor", "ossfs2", 0.1, 2**20),))
    short = replace(daemon, cpu_window_seconds=0.05, wall_seconds=0.05, cpu_exact=False)
    fuse = FuseRequests(42, 2.0, (FuseOp("READ", 256, {}, 2**28, 80.0, 900.0, 0),
                                  FuseOp("GETXATTR", 4, {"ENODATA": 4}, 0, 3.0, 5.0, 1)), lost=2)
    timeline = Timeline(1.0, [0.0, 1.0, 2.0], [10**8, 2 * 10**8], [50.0, None], [2**20, None],
                        [4, 4], [9, 9], [None, None], [(0.5, 1e6)], {"READ": [100, 156]})
    requests = Requests({"GET": 64, "HEAD": 1, "LIST": 0, "PUT": 0, "MULTIPART": 0, "COPY": 0,
                         "DELETE": 0, "OTHER": 0}, {"GetObject": 64, "HeadObject": 1}, 1, 0,
                        2**26, 0, ttfb_at_most={"p99": 0.05})
    doc = result_json(daemon=daemon, fuse=fuse, timeline=timeline, requests=requests,
                      mount=Mounted("ossfs2", ("-o", "secret=***"), ("ossfs2", "mount")),
                      ceilings=(Ceiling(CeilingPath.FUSE, "bindfs over tmpfs", 2e9),),
                      memory=Reading(2, 2**30, 2**29, 0), cold_read=ColdRead.VERIFIED,
                      rounds=({"bw": 1e9, "seconds": 1.0}, {"bw": 1.1e9, "seconds": 0.9}))
    text = json.dumps(doc)
    row = ResultRow.of(json.loads(text))
    assert isinstance(row.fuse, FuseRequests) and row.fuse.op("GETXATTR").errors == {"ENODATA": 4}
    assert row.daemon == daemon and row.timeline == timeline and row.requests == requests
    assert row.verdict is Outcome.PASS and row.cold_read is ColdRead.VERIFIED
    assert json.loads(json.dumps(row.to_dict())) == json.loads(text)
    # a daemon CPU% over too short a window was written null with why: it reads back as not known
    brief = json.loads(json.dumps(WorkloadResult.from_dict(doc).to_dict() | {"daemon": None}))
    brief["daemon"] = json.loads(json.dumps(result_json(daemon=short)["daemon"]))
    assert brief["daemon"]["cpu_percent"] is None and brief["daemon"]["cpu_percent_note"]
    again = WorkloadResult.from_dict(brief)
    assert again.daemon is not None and again.daemon.countable_cpu is None
    assert json.loads(json.dumps(again.to_dict()["daemon"])) == brief["daemon"]


@pytest.mark.parametrize("change, said", [
    ({"cache": "lukewarm"}, "result t.py::test_x::read: at cache"),
    ({"read": {"io_bytes": "lots"}}, "result t.py::test_x::read: at read"),
    ({"colour": "red"}, "'colour' was unexpected"),
    ({"wall_seconds": True}, "wall_seconds"),
])
def test_a_wrong_result_is_one_error_naming_it(change, said) -> None:
    from pytest_fsperf.result.document import ResultRow
    from tests.results import result_json

    with pytest.raises(ValueError, match=said):
        ResultRow.of({**result_json(), **change})


def test_fsperf_comment_refuses_another_versions_file_or_a_wrong_result_in_one_line(tmp_path, capsys) -> None:
    from pytest_fsperf import cli
    from tests.results import result_json

    base = {"schema": "pytest-fsperf/1", "created": "2026-11-27T06:00:00+0000", "environment": {},
            "results": [result_json()], "comparisons": [], "failed_tests": []}
    for name, doc, said in (
            ("other", {**base, "schema": "pytest-fsperf/3"}, "written as 'pytest-fsperf/3'"),
            ("wrong", {**base, "results": [{**result_json(), "cache": "lukewarm"}]}, "at cache")):
        path = tmp_path / f"{name}.json"
        path.write_text(json.dumps(doc))
        assert cli.main(["comment", str(path)]) == 4
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and said in err[0] and "Traceback" not in err[0], err


# what a report module may take untyped: the writers of JSON files and pytest-benchmark's hook
WRITERS = {("jsonout", "finite"), ("jsonout", "write"),
           ("benchmark_json", "pytest_benchmark_update_json")}


def test_the_reports_read_types_not_mappings() -> None:
    """Only result/document.py (the reader of a results file's JSON) takes a mapping: every other
    function of report/ is given the types (rows, comparisons, failed tests, environment)."""
    import ast

    folder = Path(__file__).resolve().parent.parent / "pytest_fsperf" / "report"
    found = []
    for path in sorted(folder.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                args = [*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs]
                for a in args:
                    shown = ast.unparse(a.annotation) if a.annotation is not None else ""
                    if "Any" in shown and (path.stem, node.name) not in WRITERS:
                        found.append(f"{path.stem}.{node.name}({a.arg}: {shown})")
    assert not found, found


@pytest.mark.parametrize("sent", [
    {"by_kind": "all of them", "by_api": {}, "errors_4xx": 0, "errors_5xx": 0, "sent_bytes": 0,
     "received_bytes": 0},
    {"__class__": "x"}, ["a list"], {"by_kind": {}, "by_api": {}, "errors_4xx": 10**400}])
def test_a_hosts_request_counts_that_do_not_read_are_said_never_trusted(sent) -> None:
    """A hostile agent's reply: counts of the wrong shape become the line saying why, never a
    Requests holding what it sent (nor a traceback through the session)."""
    from pytest_fsperf.runner.on_hosts import _requests

    said = _requests(sent)
    assert isinstance(said, str) and len(said) <= 300, said
