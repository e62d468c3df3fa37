"""The decision line adds up: its counts sum to the workloads, and FAIL always stands beside
what failed in the same line (issue 74.2) - for any mix of verdicts, failed tests and modes,
as the exit codes of `fsperf comment` branch on them."""

from __future__ import annotations

import re

from hypothesis import example, given, settings
from hypothesis import strategies as st

from pytest_fsperf.report import comment
from pytest_fsperf.report.view import summary
from pytest_fsperf.result.document import Document, FailedTest
from pytest_fsperf.vocab import Decision, ExitCode, Outcome
from tests.results import result_json, row

TIER = "unit"

LINE = re.compile(r"^(?P<decision>[^:]+(?: \([^)]*\))?): (?P<n>\d+) workloads?: (?P<failing>\d+) failing, "
                  r"(?P<unsure>\d+) inconclusive(?: \([^)]*\))?, (?P<passed>\d+) passed, "
                  r"(?:(?P<in_part>\d+) passed in part, )?"
                  r"(?P<not_judged>\d+) not judged(?:; (?P<errors>\d+) tests? failed or errored)?$")

VERDICTS = [o.value for o in Outcome]


@settings(max_examples=300, deadline=None)
@given(verdicts=st.lists(st.tuples(st.integers(0, 3), st.sampled_from(VERDICTS)), max_size=8),
       failed=st.lists(st.tuples(st.integers(0, 4), st.sampled_from(["setup", "call", "teardown"])),
                       max_size=4),
       inconclusive_fails=st.booleans())
@example(verdicts=[(0, "INCONCLUSIVE")], failed=[(0, "call")], inconclusive_fails=False)  # as found
@example(verdicts=[(0, "partial")], failed=[], inconclusive_fails=False)  # PARTIAL, "1 passed"
def test_the_decision_line_adds_up(verdicts: list[tuple[int, str]], failed: list[tuple[int, str]],
                                   inconclusive_fails: bool) -> None:
    rows = [row(test=f"t.py::test_{t}", name=f"w{n}", verdict=v) for n, (t, v) in enumerate(verdicts)]
    failed_tests = [FailedTest(f"t.py::test_{t}", when, True, "why") for t, when in failed]
    decision, lines = summary(rows, [], inconclusive_fails, failed_tests)
    m = LINE.match(lines[0])
    assert m, lines[0]
    n = {k: int(v or 0) for k, v in m.groupdict().items() if k != "decision"}
    assert n["failing"] + n["unsure"] + n["passed"] + n["in_part"] + n["not_judged"] == n["n"] == len(rows)
    if n["in_part"] and decision in (Decision.PASS, Decision.NOTHING_JUDGED):  # as found: "1 passed"
        raise AssertionError(f"{decision} beside a workload passed in part: {lines[0]}")
    if decision is Decision.FAIL:  # what failed is in the same line
        assert n["failing"] or n["errors"] or (n["unsure"] and inconclusive_fails), lines[0]
    else:
        assert not n["failing"] and not n["errors"], lines[0]
    if failed_tests:  # never greener than pytest
        assert decision is Decision.FAIL, (lines[0], failed_tests)


@settings(max_examples=200, deadline=None)
@given(verdicts=st.lists(st.tuples(st.integers(0, 3), st.sampled_from(VERDICTS)), max_size=6),
       failed=st.lists(st.tuples(st.integers(0, 4), st.sampled_from(["setup", "call", "teardown"])),
                       max_size=3),
       inconclusive_fails=st.booleans(), changed_fails=st.booleans())
@example(verdicts=[(0, "MACHINE CHANGED")], failed=[(0, "call")], inconclusive_fails=False,
         changed_fails=True)  # its test failed on the change: 9, as the table says
@example(verdicts=[(0, "INCONCLUSIVE")], failed=[(0, "call")], inconclusive_fails=False,
         changed_fails=False)  # it warned, so the test failed on something else: 1
def test_the_exit_code_is_never_greener_than_pytest(verdicts: list[tuple[int, str]],
                                                    failed: list[tuple[int, str]],
                                                    inconclusive_fails: bool, changed_fails: bool) -> None:
    data = {"schema": "pytest-fsperf/1", "created": "2026-11-29T00:00:00+0000", "environment": {},
            "results": [result_json(f"t.py::test_{t}", f"w{n}", v) for n, (t, v) in enumerate(verdicts)],
            "comparisons": [],
            "failed_tests": [{"test": f"t.py::test_{t}", "when": when, "fsperf": True, "message": "why"}
                             for t, when in failed]}
    code = comment.exit_code(Document.of(data), inconclusive_fails, changed_fails)
    if failed:
        assert code in (ExitCode.FAILED, ExitCode.INCONCLUSIVE, ExitCode.MACHINE_CHANGED), code
    if code is ExitCode.MACHINE_CHANGED:
        assert changed_fails and any(v == "MACHINE CHANGED" for _, v in verdicts)
    if code is ExitCode.INCONCLUSIVE:
        assert inconclusive_fails
