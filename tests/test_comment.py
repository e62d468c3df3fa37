"""`fsperf comment`: one pull-request comment from a session's JSON, the decision first, under
GitHub's size limit whatever the number of workloads, and the exit code of the decision."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from pytest_fsperf import cli
from pytest_fsperf.report import comment
from pytest_fsperf.result.document import Document
from pytest_fsperf.vocab import ExitCode
from tests.results import result_json


def render(data: dict[str, Any], *args: Any, **kwargs: Any) -> str:
    return comment.render(Document.of(data), *args, **kwargs)


def exit_code(data: dict[str, Any], *args: Any, **kwargs: Any) -> ExitCode:
    return comment.exit_code(Document.of(data), *args, **kwargs)

TIER = "unit"

GOLDEN = Path(__file__).parent / "data" / "golden"
UPDATE = os.environ.get("FSPERF_UPDATE_GOLDEN") == "1"


def result(name: str, verdict: str = "-", test: str = "perf/test_read.py::test_read",
           ) -> dict[str, Any]:
    return result_json(test, name, verdict, judged=verdict != "-")


def gate(name: str, ratio: float, low: float, high: float, outcome: str, pairs: int,
         seconds: float, where: list[str] | None = None, test: str = "perf/test_read.py::test_read",
         ) -> dict[str, Any]:
    return {"test": test, "name": name, "kind": "gate", "backend": "rclone", "rounds": pairs,
            "order": "AB" * pairs, "seconds": seconds, "decided_by": "bw",
            "a_options": ["/opt/base/rclone"], "b_options": ["/work/pr/rclone"],
            "a_results": [f"{name}[reference]"], "b_results": [],
            "where": where or [],
            "metrics": {"bw": {"metric": "bw", "ratio": ratio, "ci_low": low, "ci_high": high,
                               "level": 0.98, "anytime": True, "outcome": outcome,
                               "a": [], "b": [], "a_median": 1e9, "b_median": ratio * 1e9}}}


def doc(results: list[dict[str, Any]], comparisons: list[dict[str, Any]],
        failed: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    return {"schema": "pytest-fsperf/1", "created": "2026-11-26T12:00:00+0000", "environment": {},
            "results": results, "comparisons": comparisons, "failed_tests": failed or []}


PASSING = doc([result("seq_read", "pass"), result("seq_write", "pass")],
              [gate("seq_read", 0.998, 0.97, 1.03, "not worse", 6, 41.0),
               gate("seq_write", 1.012, 0.99, 1.04, "not worse", 4, 30.0)])
REGRESSION = doc(
    [result("seq_read", "REGRESSION"), result("seq_write", "pass")],
    [gate("seq_write", 1.0, 0.97, 1.04, "not worse", 4, 30.0),
     gate("seq_read", 0.871, 0.84, 0.90, "B worse", 12, 80.0,
          ["READ: p50 service 412 us -> 498 us (+21%), 61% of the time",
           "GETATTR: count 10 -> 55 (+450%)"])],
    [{"test": "perf/test_read.py::test_read", "when": "call",
      "message": "seq_read: regression against the reference build"}])
UNDECIDED = doc([result("seq_read", "INCONCLUSIVE")],
                [gate("seq_read", 0.926, 0.893, 0.96, "inconclusive", 18, 300.0)])


@pytest.mark.parametrize("name, data, fails, code", [
    ("pass", PASSING, True, ExitCode.PASS),
    ("regression", REGRESSION, True, ExitCode.FAILED),
    ("inconclusive", UNDECIDED, True, ExitCode.INCONCLUSIVE),
])
def test_comment_matches_its_golden_and_exits_with_its_decision(name, data, fails, code) -> None:
    text = render(data, fails, "https://ci.example/run/7")
    path = GOLDEN / f"comment-{name}.md"
    if UPDATE:
        path.write_text(text)
    assert text == path.read_text()
    assert text.startswith(comment.MARKER + "\n### pytest-fsperf: ")
    assert exit_code(data, fails) is code


def test_the_regression_is_named_first_with_where_its_time_went() -> None:
    text = render(REGRESSION, True)
    decision = text.splitlines()[1]
    assert decision.startswith("### pytest-fsperf: FAIL"), decision
    table = [line for line in text.splitlines() if line.startswith("| perf/") or line.startswith("| test_")]
    assert table[0].startswith("| test_read seq_read | bandwidth | 1.00 GB/s → 871 MB/s | 0.871 |"), table
    assert "**B worse**" in table[0] and "READ: p50 service" in table[0]
    assert "not worse" in table[1] and "READ" not in table[1]


def test_an_undecided_gate_warns_or_fails_as_the_user_chose() -> None:
    assert exit_code(UNDECIDED, inconclusive_fails=False) is ExitCode.PASS
    warned = render(UNDECIDED, inconclusive_fails=False)
    assert "PASS with warnings" in warned.splitlines()[1]
    assert "**inconclusive**" in warned


def test_a_test_that_errored_is_never_green() -> None:
    """A session whose every comparison passed but a test errored in setup: FAIL, exit 1."""
    errored = {**PASSING, "failed_tests": [{"test": "perf/test_x.py::test_x", "when": "setup",
                                            "message": "mount failed: no such device"}]}
    assert exit_code(errored, True) is ExitCode.FAILED
    text = render(errored, True)
    assert text.splitlines()[1].startswith("### pytest-fsperf: FAIL")
    assert "mount failed: no such device" in text


def test_nothing_judged_has_its_own_code() -> None:
    assert exit_code(doc([result("seq_read")], []), True) is ExitCode.NOTHING_JUDGED


def test_200_workloads_fit_with_the_decision_first_and_the_rest_counted() -> None:
    many = [gate(f"w{i:03d}", 0.99, 0.95, 1.03, "not worse", 8, 60.0,
                 test=f"perf/test_x.py::test_{'x' * 300}_{i}") for i in range(200)]
    many.append(gate("slow", 0.8, 0.75, 0.85, "B worse", 6, 45.0, ["READ: " + "y" * 500],
                     test="perf/test_z.py::test_z"))
    data = doc([result("slow", "REGRESSION", "perf/test_z.py::test_z")], many)
    for limit in (comment.LIMIT, 5000):
        text = render(data, True, "https://ci.example/run/7", limit=limit)
        assert len(text) <= limit
        assert text.splitlines()[1].startswith("### pytest-fsperf: FAIL")
        rows = [line for line in text.splitlines() if line.startswith("| test_")]
        assert rows[0].startswith("| test_z slow |"), rows[0]  # the regression first
        assert len(rows[0]) < 600  # its 'where' is cut short
        shown = len(rows)
        assert f"… and {201 - shown} more workloads: in the artifacts" in text
        assert text.rstrip().splitlines()[-2].startswith("[The report")


def test_table_cells_cannot_break_out() -> None:
    """A test id or a daemon's message with a pipe, HTML or a new line stays in its cell."""
    odd = gate("r|<script>x</script>\n# head [click](https://evil.example)", 0.8, 0.7, 0.9,
               "B worse", 3, 9.0, ["a | b <img src=x>"])
    text = render(doc([], [odd]), True)
    row = next(line for line in text.splitlines() if "B worse" in line)
    assert "<script>" not in text and "<img" not in text and "\n# head" not in text
    assert "[click](" not in text and "\\[click\\](https&#58;//evil.example)" in text
    assert row.count(" | ") == 8, row  # 9 cells, the pipes inside escaped


def test_test_ids_neither_mention_nor_link_and_no_text_passes_the_limit() -> None:
    named = "perf/t.py::test_x[@maintainers http://evil.example/a www.evil.example]"
    odd = gate("seq_read", 0.8, 0.7, 0.9, "B worse", 3, 9.0, test=named)
    text = render(doc([], [odd], [{"test": named, "when": "call",
                                          "message": "@alice see https://evil.example " * 4000}]),
                          True, "https://ci.example/run/" + "x" * 200_000, 1000)
    assert len(text) <= 1000, len(text)
    assert "@" not in text and "://" not in text and "www.evil" not in text
    assert text.startswith(comment.MARKER) and "FAIL" in text.splitlines()[1]


@pytest.mark.parametrize("ref", ["#12", "acme/fs#12", "GH-12", "!7", "~perf", "$3", "%v1"])
def test_test_ids_reference_no_issue_request_label_or_milestone(ref) -> None:
    """As found: a test id `test_x[#1]` in the bot's comment linked (and notified) issue 1."""
    named = f"perf/t.py::test_x[{ref}]"
    text = render(doc([], [gate("seq_read", 0.8, 0.7, 0.9, "B worse", 3, 9.0, test=named)]), True)
    row = next(line for line in text.splitlines() if "B worse" in line)
    assert not re.search(r"(?<![&])[#!~$%](?=\w)", row) and "GH-12" not in row, row


def test_cli_prints_the_comment_and_exits_with_the_decision(tmp_path, capsys) -> None:
    path = tmp_path / "results.json"
    path.write_text(json.dumps(REGRESSION))
    assert cli.main(["comment", str(path), "--link", "https://ci.example/run/7"]) == 1
    assert capsys.readouterr().out == render(REGRESSION, True, "https://ci.example/run/7")
    path.write_text(json.dumps(UNDECIDED))
    assert cli.main(["comment", str(path)]) == 8
    assert cli.main(["comment", str(path), "--inconclusive=warn"]) == 0


@pytest.mark.parametrize("given, said", [
    ("missing.json", "no results file"),
    ("bad.json", "is not a saved run"),
    ("notes.txt", "is not a .json file"),
])
def test_cli_bad_input_is_one_line_and_exit_4(tmp_path, capsys, given, said) -> None:
    (tmp_path / "bad.json").write_text('{"results": 3}')
    (tmp_path / "notes.txt").write_text("{}")
    assert cli.main(["comment", str(tmp_path / given)]) == 4
    err = capsys.readouterr().err
    assert said in err and len(err.strip().splitlines()) == 1, err


def test_help_lists_every_exit_code() -> None:
    text = cli.parser()._subparsers._group_actions[0].choices["comment"].format_help()  # type: ignore[union-attr]
    for code in ExitCode:
        assert f"  {int(code):<3} " in text


@pytest.mark.parametrize("kind", ["github", "gitlab"])
def test_the_recipes_print(kind, capsys) -> None:
    assert cli.main(["ci", kind]) == 0
    text = capsys.readouterr().out
    assert "fsperf comment" in text and "FSPERF_BUILD" in text and "fsperf history" in text


@pytest.mark.fio  # starts a process
def test_python_dash_m_works_too(tmp_path) -> None:
    """The recipes call `fsperf`; the module form is the same program."""
    path = tmp_path / "results.json"
    path.write_text(json.dumps(PASSING))
    done = subprocess.run([sys.executable, "-m", "pytest_fsperf", "comment", str(path)],
                          capture_output=True, text=True, check=False)
    assert done.returncode == 0 and done.stdout.startswith(comment.MARKER)


def test_the_comment_shows_absolute_figures_and_explains_its_intervals_and_not_judged() -> None:
    """As found: 14.3k vs 10.0k files/s only in the report, "2 not judged" unexplained (the
    reference's rows), 70% and 98% intervals side by side with no word on why."""
    g = gate("files_read", 1.43, 1.2, 1.7, "B better", 6, 40.0)
    g["metrics"]["bw"].update(metric="ops", a_median=10_000.0, b_median=14_300.0, level=0.7)
    g["decided_by"] = "bw"
    text = render(doc([result("files_read", "pass"), result("files_read[reference]")],
                              [g]), True)
    row = next(line for line in text.splitlines() if line.startswith("| test_read files_read |"))
    assert "| 10.0k → 14.3k |" in row, row
    assert "70% anytime interval" in row
    assert "interval: where B/A lies, at the confidence it names (70% anytime interval)" in text
    assert "not judged: 1 workload measured without a threshold of their own (the reference's" in text


def test_a_run_of_thresholds_alone_speaks_of_no_pairs_or_reference() -> None:
    """Issue 74.3, as found: `fsperf comment` on a threshold-only run spoke of `the
    reference's runs, A` and of `interleaved pairs` that never happened."""
    text = render(doc([result("seq_read", "pass"), result("layout")], []), True)
    assert "not judged: 1 workload measured without a threshold of their own" in text
    assert "reference" not in text and "interleaved" not in text and "B/A" not in text
