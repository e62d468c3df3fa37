"""Results as the JSON file holds them, made through the real types (valid against the
schema): for the tests of what reads results."""

from __future__ import annotations

import json
from typing import Any

from pytest_fsperf.judge.runs import fingerprint
from pytest_fsperf.result.document import ResultRow
from pytest_fsperf.result.parts import IoStats
from pytest_fsperf.result.workload import WorkloadResult
from pytest_fsperf.vocab import DaemonCache, EngineKind, PageCache


def result_json(test: str = "t.py::test_x", name: str = "read", verdict: str = "pass",
                bw: float = 1e9, **fields: Any) -> dict[str, Any]:
    """One fio read of `bw` B/s (1 s, no daemon) judged `verdict`; fields: any other of the
    result's own (WorkloadResult's)."""
    read = IoStats(int(bw), bw, 1000.0, 1000, 1000, 1e6, 1e6, 2e6, 3e6, "lat")
    r = WorkloadResult(**{
        "test": test, "name": name, "kind": EngineKind.FIO, "options": {}, "cache": PageCache.WARM,
        "daemon_cache": DaemonCache.NO_DAEMON, "read": read, "write": None, "daemon": None,
        "daemon_note": "no daemon: tmpfs is not a FUSE filesystem", "wall_seconds": 1.0,
        "tool_cpu_percent": 10.0, **fields})
    return {**r.to_dict(), "verdict": verdict, "verdict_own": verdict, "failures": [],
            "not_judged": [], "limits": {}, "baseline": None, "baseline_checks": [], "baseline_key": f"{test}:{name}", "baseline_entry": {},
            "fingerprint": fingerprint(r.scenario, r.options, r.mount, None), "run_comparison": None}


def row(test: str = "t.py::test_x", name: str = "read", verdict: str = "pass",
        **fields: Any) -> ResultRow:
    """That result as the report's row."""
    return ResultRow.of(result_json(test, name, verdict, **fields))


def reads_back(doc: dict[str, Any]) -> None:
    """Every result and comparison of a session's JSON reads into its types and writes out the
    same JSON again."""
    from pytest_fsperf.report.jsonout import finite
    from pytest_fsperf.result.comparison import Comparison

    for r in doc.get("results") or []:
        again = json.loads(json.dumps(finite(ResultRow.of(r).to_dict())))
        differ = sorted(k for k in set(r) | set(again) if r.get(k) != again.get(k))
        assert not differ, (r["name"], [(k, r.get(k), again.get(k)) for k in differ][:3])
    for c in doc.get("comparisons") or []:
        assert json.loads(json.dumps(finite(Comparison.from_dict(c).to_dict()))) == c, c["name"]


def read_doc(doc):
    """A canned results file, read into its types: environment, results, comparisons."""
    from pytest_fsperf.result.document import Document

    read = Document.read(doc, "canned")
    return read.environment, list(read.results), list(read.comparisons)


def read_env(doc):
    env = read_doc(doc)[0]
    assert env is not None
    return env
