"""Each figure of the registry is read one way, and what its absence means is its Source,
never its name (issue 76.1): the readers, the meters' own figures, the timeline's shape, the
FUSE trace and the ceilings cover the registry once; no module tells a figure by its prefix."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from pytest_fsperf.figures import METRICS, Fig, Source
from pytest_fsperf.judge.thresholds import judge
from pytest_fsperf.plan.marker import build_plan
from pytest_fsperf.result import readers
from pytest_fsperf.result.daemon import DaemonStats
from pytest_fsperf.result.parts import IoStats
from pytest_fsperf.result.workload import SHAPE, SHARES, WorkloadResult
from pytest_fsperf.vocab import DaemonCache, Outcome, PageCache

pytestmark = pytest.mark.unit
PACKAGE = Path(__file__).resolve().parent.parent / "pytest_fsperf"

# read by their own parts (result/workload.py): the FUSE trace, the rounds' slope
TRACED = {Fig.FUSE_REQUESTS, Fig.FUSE_PER_MIB, Fig.FUSE_PER_FILE}
OVER_ROUNDS = {Fig.DAEMON_RSS_ROUND_GROWTH}


def test_every_figure_of_the_registry_is_read_one_way() -> None:
    ways = {"readers": set(readers.READ), "meters": set(readers.MEASURED), "shape": set(SHAPE),
            "ceilings": set(SHARES) & set(METRICS), "trace": TRACED, "rounds": OVER_ROUNDS}
    seen: dict[str, str] = {}
    for way, keys in ways.items():
        for key in keys:
            assert key not in seen, f"{key} is read by {seen[key]} and by {way}"
            seen[key] = way
    assert set(seen) == set(METRICS), set(METRICS) ^ set(seen)


def test_no_module_tells_a_figure_by_its_name() -> None:
    """As found: `k.startswith(("daemon_", "req_", "cost", "fuse_", "page_"))` decided which
    missing figures are 'not judged', and the thresholds picked their reason by prefix."""
    prefixes = {key.split("_")[0] + "_" for key in METRICS if "_" in key} | {"cost"}
    found = []
    for path in PACKAGE.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "startswith":
                words = [n.value for n in ast.walk(node) if isinstance(n, ast.Constant) and isinstance(n.value, str)]
                if any(w in prefixes for w in words):
                    found.append(f"{path.relative_to(PACKAGE)}:{node.lineno} {words}")
    assert found == []


def _result(daemon: DaemonStats | None, measured: dict[str, float | None]) -> WorkloadResult:
    io = IoStats(1 << 20, 1e6, 1.0, 1, 1000, 1e6, 1e6, 1e6, 1e6, "clat")
    return WorkloadResult("t.py::test_x", "read", "fio", {}, PageCache.DROPPED, DaemonCache.NO_DAEMON,
                          daemon, io, None, "no daemon: the mount is not FUSE", 1.0, 0.0, measured=measured)


def test_a_meters_figure_without_its_meter_is_not_judged_with_its_reason() -> None:
    """As found (read, not run): with no daemon PIDs no faults were recorded, so the figure
    was missing and max_major_faults a usage error 'read workloads do not measure ...', where
    max_rss on the same run said 'not judged'."""
    r = _result(None, {})
    assert r.metrics()[Fig.DAEMON_MAJOR_FAULTS] is None and r.metrics()[Fig.DAEMON_RSS] is None
    plan = build_plan("t.py::test_x", [((), {"max_major_faults": 10, "max_rss": "1GB"})])
    verdict = judge(plan, [r])
    assert verdict.failures == [] and verdict.per_workload["read"] == Outcome.PARTIAL
    assert verdict.notes == ["read: max_major_faults not judged (no daemon: the mount is not FUSE)",
                             "read: max_rss not judged (no daemon: the mount is not FUSE)"]


def test_the_figures_a_run_cannot_give_are_missing_and_the_unmeasured_are_none() -> None:
    m = _result(None, {Fig.DAEMON_MAJOR_FAULTS: 2.0}).metrics()
    assert m[Fig.DAEMON_MAJOR_FAULTS] == 2.0
    for key, metric in METRICS.items():
        if key in m and m[key] is None:
            assert metric.source.kept_when_missing, key  # None only where a meter did not measure
    assert Fig.OPS not in m and Fig.REQ_PER_FILE not in m  # fio: no operations, no files counted
    assert m[Fig.REQ_TOTAL] is None and METRICS[Fig.REQ_TOTAL].source is Source.STORE
