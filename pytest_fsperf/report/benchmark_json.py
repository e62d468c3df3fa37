"""pytest-benchmark's JSON format, so `pytest-benchmark compare` and dashboards built on it
keep working. Each judged workload is one benchmark: its time per round (the workload's wall
seconds) in `stats`, every pytest-fsperf figure in `extra_info`."""

from __future__ import annotations

import datetime
import platform
from collections.abc import Sequence
from typing import Any

from pytest_fsperf.errors import UsageError
from pytest_fsperf.report.model import short_test
from pytest_fsperf.result.document import ResultRow
from pytest_fsperf.result.environment import Environment

INSTALL = "pip install pytest-benchmark"


def _stats(seconds: list[float]) -> dict[str, Any]:
    try:
        from pytest_benchmark import stats as bstats
    except ImportError:
        raise UsageError(f"pytest-benchmark's JSON needs pytest-benchmark ({INSTALL})") from None
    make: Any = bstats.Stats  # pytest-benchmark is untyped
    stats = make()
    for s in seconds:
        stats.update(s)
    data: dict[str, Any] = dict(stats.as_dict())
    data["data"] = seconds
    data["iterations"] = 1
    return data


def entries(given: Sequence[ResultRow]) -> list[dict[str, Any]]:
    """pytest-benchmark's entries (the format it writes) of the judged results."""
    out = []
    for r in given:
        if not r.judged:
            continue
        seconds = [s for x in r.rounds if (s := x.get("seconds"))] or [r.wall_seconds]
        total, d = r.headline, r.daemon
        out.append({
            "group": "fsperf", "name": f"{short_test(r)}::{r.name}",
            "fullname": f"{r.test}::{r.name}", "params": None, "param": None,
            "extra_info": {"fsperf": True, "kind": str(r.kind), "bw_bytes": total.bw_bytes,
                           "iops": total.iops, "ops_per_second": total.ops_per_second,
                           "lat_p99_ns": total.lat_p99_ns, "cache": str(r.cache),
                           "daemon_cpu_percent": d.countable_cpu if d else None,
                           "daemon_peak_rss_bytes": d.peak_rss_bytes if d else None,
                           "verdict": str(r.verdict), "scenario": r.scenario},
            "options": {"disable_gc": False, "timer": "time.monotonic", "min_rounds": len(seconds),
                        "max_time": 0, "min_time": 0, "warmup": False},
            "stats": _stats(seconds),
        })
    return out


def document(results: Sequence[ResultRow], env: Environment) -> dict[str, Any]:
    """pytest-benchmark's JSON (the format it writes) of this session's workloads."""
    m = env.machine
    return {
        "machine_info": {"node": m.hostname, "processor": m.cpu_model,
                         "machine": m.arch, "python_version": platform.python_version(),
                         "release": env.kernel, "system": platform.system(),
                         "cpu": {"count": m.cpus, "brand_raw": m.cpu_model}},
        "commit_info": {},
        "benchmarks": entries(results),
        "datetime": datetime.datetime.now(datetime.timezone.utc).isoformat(),
        "version": _version(),
    }


def _version() -> str:
    try:
        from importlib.metadata import version

        return version("pytest-benchmark")
    except Exception:  # not installed: the format is still the same
        return "unknown"


class BenchmarkJsonHook:
    """Registered when pytest-benchmark is active: its own JSON gets our workloads too."""

    def __init__(self, results: Sequence[ResultRow]) -> None:
        self.results = results

    def pytest_benchmark_update_json(self, output_json: dict[str, Any]) -> None:
        output_json.setdefault("benchmarks", []).extend(entries(self.results))
