"""The daemon's page faults over the window (measure/faults.py): the worked example of adding
a meter (docs/explanation/architecture.md): one file, its figures in figures.py and its line
in measure/registry.py."""

from __future__ import annotations

import os

import pytest

from pytest_fsperf.measure import faults
from pytest_fsperf.measure.faults import PageFaults
from tests.conftest import run_json

TIER = "fuse"


class _Span:
    wall, began, io_span, expected, stored = 1.0, 0.0, None, None, None


def _faults(major: int) -> dict[str, float | None]:
    return {"daemon_major_faults": float(major), "daemon_minor_faults": 40.0}


@pytest.mark.unit
def test_the_faults_of_a_process_touching_new_memory_are_counted() -> None:
    meter = PageFaults((os.getpid(),))
    meter.start()
    touched = bytearray(64 * 2**20)
    for i in range(0, len(touched), 4096):
        touched[i] = 1
    found = meter.stop(_Span()).measured
    assert set(found) == {"daemon_major_faults", "daemon_minor_faults"}
    minor = found["daemon_minor_faults"]
    assert minor is not None and minor >= len(touched) // 4096 // 2, found  # (huge pages: fewer)
    assert found["daemon_major_faults"] is not None


@pytest.mark.unit
def test_a_pid_reused_by_another_process_is_not_counted(monkeypatch) -> None:
    """Its counts are another process's: a delta of them would be nonsense (even negative)."""
    given = iter([["S"] + ["0"] * 6 + ["500", "0", "7"] + ["0"] * 9 + ["111"],
                  ["S"] + ["0"] * 6 + ["3", "0", "0"] + ["0"] * 9 + ["222"]])
    monkeypatch.setattr(faults, "stat_fields", lambda pid: next(given))
    meter = PageFaults((4242,))
    meter.start()
    assert meter.stop(_Span()).measured == {"daemon_major_faults": None, "daemon_minor_faults": None}


def test_a_cold_read_says_the_daemons_faults_in_its_result_and_json(pytester, bindfs) -> None:
    mount = bindfs()
    pytester.makepyfile("""
        def test_read(fsperf):
            fsperf.fio(name="w", rw="write", bs="1M", size="32M", direct=1)
            fsperf.cold()
            r = fsperf.fio(name="r", rw="read", bs="1M", size="32M")
            assert r.measured["daemon_major_faults"] is not None, r.measured
            assert r.metrics()["daemon_major_faults"] == r.measured["daemon_major_faults"]
    """)
    meter = faults.PageFaults((mount.pid,))
    before = meter.read(mount.pid)
    result, doc = run_json(pytester, f"--fsperf-mount={mount.point}")  # reads back: run_json
    after = meter.read(mount.pid)
    result.assert_outcomes(passed=1)
    assert before is not None and after is not None
    (minor_before, major_before), (minor_after, major_after) = before[1], after[1]
    for r in doc["results"]:  # each window's counts are within the whole session's
        assert 0 <= r["measured"]["daemon_minor_faults"] <= minor_after - minor_before
        assert 0 <= r["measured"]["daemon_major_faults"] <= major_after - major_before
        assert r["stats"]["daemon_major_faults"]["median"] == r["measured"]["daemon_major_faults"]


def test_the_faults_figure_is_declared_once_and_judged_by_marker_ab_and_history() -> None:
    """Issue 65's worked example: the meter's figure is one registry entry (figures.METRICS:
    its keyword, compared, history); no other list names it, and it is a marker's bound, an
    A/B's judged figure and a history series."""
    import dataclasses
    import inspect
    from pathlib import Path

    from pytest_fsperf.judge import comparison, history
    from pytest_fsperf.judge import judge as judge_plan
    from pytest_fsperf.plan import marker
    from pytest_fsperf.vocab import Outcome
    from tests.test_history import result as saved_result
    from tests.test_history import run
    from tests.test_rounds import result

    for module in (marker, comparison, history):  # the registry's, not a list of their own
        assert '"daemon_major_faults"' not in inspect.getsource(module)
    package = Path(inspect.getfile(marker)).parent.parent
    naming = sorted(str(p.relative_to(package)) for p in package.rglob("*.py")
                    if "daemon_major_faults" in p.read_text() or "DAEMON_MAJOR_FAULTS" in p.read_text())
    # its entry, the meter that reads it, and the step that moved it (as /2 first wrote it)
    assert naming == ["figures.py", "measure/faults.py", "result/versions.py"]
    faulted = dataclasses.replace(result(100e6), measured=_faults(7))
    verdict = judge_plan(marker.build_plan("t", [((), {"max_major_faults": 5})]), [faulted])
    assert verdict.per_workload["read"] == Outcome.FAIL, verdict
    assert "daemon major page faults" in " ".join(verdict.failures)
    a = [dataclasses.replace(result(100e6), name=f"A{i}", measured=_faults(2)) for i in range(3)]
    b = [dataclasses.replace(result(100e6), name=f"B{i}", measured=_faults(9)) for i in range(3)]
    c = comparison.compare("t", "read", "bindfs", (), (), a, b, "ABBAAB")
    assert c.metrics["daemon_major_faults"].b_median == 9
    runs = [run(i, {**saved_result(1e9), "rounds": [{"bw": 1e9, "daemon_major_faults": 3.0 + i}]})
            for i in range(3)]
    assert any(s.figure == "daemon_major_faults" for s in history.series(runs))


def test_a_bounded_figure_gets_its_column_in_the_results_table() -> None:
    """The registry's column (Metric.column): shown where a test bounds the figure, with the
    figure (its median), '-' where a row did not measure it; absent where nothing bounds it."""
    from pytest_fsperf.report import terminal, view
    from pytest_fsperf.result.document import ResultRow
    from tests.results import result_json

    bound = {"daemon_major_faults": {"bound": "max", "limit": 5.0, "text": "max_major_faults 5"}}
    rows = [ResultRow.of({**result_json(name="faulted", measured=_faults(7)), "limits": bound}),
            ResultRow.of(result_json(name="plain"))]
    table = terminal.render(view.build(None, rows, [], False))
    head = next(line for line in table if line.lstrip().startswith("test"))
    assert "major faults" in head.split("daemon peak mem")[1].split("cache")[0]
    faulted = next(line for line in table if "faulted" in line)
    plain = next(line for line in table if " plain " in line)
    column = head.index("major faults")
    assert faulted[column:column + 12].strip() == "7"
    assert plain[column:column + 12].strip() == "-"
    unbounded = terminal.render(view.build(None, [ResultRow.of(result_json(measured=_faults(2)))], [], False))
    assert not any("major faults" in line for line in unbounded)


# Text that is a figure's name but means something else there: a JSON field or fio's key,
# a baseline file's metric ("bw", "cpu", "rss"), an option's name, a field's name
NOT_FIGURES = {
    ("result/workload.py", "cost"), ("engine/fio.py", "iops"), ("report/junit.py", "iops"),
    ("report/benchmark_json.py", "iops"), ("result/fuse.py", "ops"), ("result/timeline.py", "bw"),
    ("result/contract.py", "bw"), ("runner/window.py", "cost"), ("options/table.py", "page_cache"),
    ("baselines/__init__.py", "bw"), ("baselines/check.py", "bw"), ("ceilings/published.py", "bw"),
    ("cli.py", "bw"), ("result/judged.py", "bw"), ("report/tables.py", "bw"),
    # a step between versions writes the names as that version wrote them, not as renamed later
    ("result/versions.py", "daemon_major_faults"), ("result/versions.py", "daemon_minor_faults"),
}


def test_code_names_a_figure_by_the_registry_not_by_text() -> None:
    """Every figure name is a Fig attribute and a METRICS entry, one each; no package module
    spells one as text but for the uses above (a misspelt figure then fails mypy)."""
    import ast
    from pathlib import Path

    from pytest_fsperf.figures import METRICS, Fig

    names = {v for k, v in vars(Fig).items() if k.isupper()}
    assert names == set(METRICS) and len(names) == len([k for k in vars(Fig) if k.isupper()])
    package = Path(__file__).resolve().parent.parent / "pytest_fsperf"
    found = sorted({(str(p.relative_to(package)), n.value)
                    for p in package.rglob("*.py") if p.name != "figures.py"
                    for n in ast.walk(ast.parse(p.read_text()))
                    if isinstance(n, ast.Constant) and n.value in names} - NOT_FIGURES)
    assert not found, found
