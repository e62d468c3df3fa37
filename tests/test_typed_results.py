"""Results read back as their types: a comparison's JSON (a session's, or an older file's that
lacks later fields) becomes the Comparison that wrote it, enums as enums, and writes the same
JSON again; a wrong field is one ValueError naming it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_fsperf.judge.comparison import Comparison, MetricComparison, settled
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
    ({"colour": "red"}, "unknown field 'colour'"),
    ({"rounds": [3]}, "field 'rounds': list where int belongs"),
    ({"a_options": "x"}, "field 'a_options': not a list of text"),
    ({"kind": "sideways"}, "field 'kind'"),
])
def test_a_wrong_field_is_one_error_naming_it(change, said) -> None:
    d = {**a_gate().to_dict(), **change}
    with pytest.raises(ValueError, match=said):
        Comparison.from_dict(d)
    bad = a_gate().to_dict()
    bad["metrics"]["bw"]["a"] = ["fast"]
    with pytest.raises(ValueError, match="field 'metrics': 'fast' is not a number"):
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
