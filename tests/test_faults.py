"""The daemon's page faults over the window (measure/faults.py): the worked example of adding
a meter (docs/explanation/architecture.md)."""

from __future__ import annotations

import os

import pytest

from pytest_fsperf.measure import faults
from pytest_fsperf.measure.faults import PageFaults
from tests.conftest import run_json

TIER = "fuse"


class _Span:
    wall, began, io_span, expected = 1.0, 0.0, None, None


@pytest.mark.unit
def test_the_faults_of_a_process_touching_new_memory_are_counted() -> None:
    meter = PageFaults([os.getpid()])
    meter.start()
    touched = bytearray(64 * 2**20)
    for i in range(0, len(touched), 4096):
        touched[i] = 1
    found = meter.stop(_Span()).faults
    assert found is not None and found.processes == 1
    assert found.minor >= len(touched) // 4096 // 2, found  # (huge pages fault fewer times)
    assert found.figures() == {"daemon_major_faults": float(found.major)}


@pytest.mark.unit
def test_a_pid_reused_by_another_process_is_not_counted(monkeypatch) -> None:
    """Its counts are another process's: a delta of them would be nonsense (even negative)."""
    given = iter([["S"] + ["0"] * 6 + ["500", "0", "7"] + ["0"] * 9 + ["111"],
                  ["S"] + ["0"] * 6 + ["3", "0", "0"] + ["0"] * 9 + ["222"]])
    monkeypatch.setattr(faults, "stat_fields", lambda pid: next(given))
    meter = PageFaults([4242])
    meter.start()
    assert meter.stop(_Span()).faults is None


def test_a_cold_read_says_the_daemons_faults_in_its_result_and_json(pytester, bindfs) -> None:
    mount = bindfs()
    pytester.makepyfile("""
        def test_read(fsperf):
            fsperf.fio(name="w", rw="write", bs="1M", size="32M", direct=1)
            fsperf.cold()
            r = fsperf.fio(name="r", rw="read", bs="1M", size="32M")
            assert r.faults is not None and r.faults.processes == 1, r.faults
            assert r.metrics()["daemon_major_faults"] == r.faults.major
    """)
    before = faults._counts(mount.pid)
    result, doc = run_json(pytester, f"--fsperf-mount={mount.point}")  # reads back: run_json
    after = faults._counts(mount.pid)
    result.assert_outcomes(passed=1)
    assert before is not None and after is not None
    for r in doc["results"]:  # each window's counts are within the whole session's
        assert r["faults"]["processes"] == 1
        assert 0 <= r["faults"]["minor"] <= after[1] - before[1]
        assert 0 <= r["faults"]["major"] <= after[2] - before[2]
        assert r["stats"]["daemon_major_faults"]["median"] == r["faults"]["major"]


def test_the_faults_figure_is_declared_once_and_judged_by_marker_ab_and_history() -> None:
    """Issue 65's worked example: the meter's figure is one registry entry (figures.METRICS:
    its keyword, compared, history); no other list names it, and it is a marker's bound, an
    A/B's judged figure and a history series."""
    import dataclasses
    import inspect

    from pytest_fsperf.judge import comparison, history
    from pytest_fsperf.judge import judge as judge_plan
    from pytest_fsperf.plan import marker
    from pytest_fsperf.result.daemon import Faults
    from pytest_fsperf.vocab import Outcome
    from tests.test_history import result as saved_result
    from tests.test_history import run
    from tests.test_rounds import result

    for module in (marker, comparison, history):  # the registry's, not a list of their own
        assert '"daemon_major_faults"' not in inspect.getsource(module)
    faulted = dataclasses.replace(result(100e6), faults=Faults(40, 7, 1))
    verdict = judge_plan(marker.build_plan("t", [((), {"max_major_faults": 5})]), [faulted])
    assert verdict.per_workload["read"] == Outcome.FAIL, verdict
    assert "daemon major page faults" in " ".join(verdict.failures)
    a = [dataclasses.replace(result(100e6), name=f"A{i}", faults=Faults(40, 2, 1)) for i in range(3)]
    b = [dataclasses.replace(result(100e6), name=f"B{i}", faults=Faults(40, 9, 1)) for i in range(3)]
    c = comparison.compare("t", "read", "bindfs", (), (), a, b, "ABBAAB")
    assert c.metrics["daemon_major_faults"].b_median == 9
    runs = [run(i, {**saved_result(1e9), "rounds": [{"bw": 1e9, "daemon_major_faults": 3.0 + i}]})
            for i in range(3)]
    assert any(s.figure == "daemon_major_faults" for s in history.series(runs))


def test_a_bounded_figure_gets_its_column_in_the_results_table() -> None:
    """The registry's column (Metric.column): shown where a test bounds the figure, with the
    figure (its median), '-' where a row did not measure it; absent where nothing bounds it."""
    from pytest_fsperf.report import terminal, view
    from pytest_fsperf.result.daemon import Faults
    from pytest_fsperf.result.document import ResultRow
    from tests.results import result_json

    bound = {"daemon_major_faults": {"bound": "max", "limit": 5.0, "text": "max_major_faults 5"}}
    rows = [ResultRow.of({**result_json(name="faulted", faults=Faults(40, 7, 1)), "limits": bound}),
            ResultRow.of(result_json(name="plain"))]
    table = terminal.render(view.build(None, rows, [], False))
    head = next(line for line in table if line.lstrip().startswith("test"))
    assert "major faults" in head.split("daemon peak mem")[1].split("cache")[0]
    faulted = next(line for line in table if "faulted" in line)
    plain = next(line for line in table if " plain " in line)
    column = head.index("major faults")
    assert faulted[column:column + 12].strip() == "7"
    assert plain[column:column + 12].strip() == "-"
    unbounded = terminal.render(view.build(None, [ResultRow.of(result_json(faults=Faults(1, 2, 1)))], [], False))
    assert not any("major faults" in line for line in unbounded)
