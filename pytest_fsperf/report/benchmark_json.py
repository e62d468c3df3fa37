"""pytest-benchmark's JSON format, so `pytest-benchmark compare` and dashboards built on it
keep working. Each judged workload is one benchmark: its time per round (the workload's wall
seconds) in `stats`, every pytest-fsperf figure in `extra_info`."""

from __future__ import annotations

import datetime
import platform
from typing import Any

from pytest_fsperf.errors import UsageError
from pytest_fsperf.report.model import short_test

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


def entries(results: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out = []
    for r in results:
        if not r.get("judged", True):
            continue
        rounds = r.get("rounds") or []
        seconds = [float(x["seconds"]) for x in rounds if x.get("seconds")] or [float(r["wall_seconds"])]
        total = r["total"]
        d = r.get("daemon") or {}
        out.append({
            "group": "fsperf", "name": f"{short_test(r)}::{r['name']}",
            "fullname": f"{r['test']}::{r['name']}", "params": None, "param": None,
            "extra_info": {"fsperf": True, "kind": r["kind"], "bw_bytes": total.get("bw_bytes"),
                           "iops": total.get("iops"), "ops_per_second": total.get("ops_per_second"),
                           "lat_p99_ns": total.get("lat_p99_ns"), "cache": r["cache"],
                           "daemon_cpu_percent": d.get("cpu_percent"),
                           "daemon_peak_rss_bytes": d.get("peak_rss_bytes"),
                           "verdict": r.get("verdict"), "scenario": r.get("scenario")},
            "options": {"disable_gc": False, "timer": "time.monotonic", "min_rounds": len(seconds),
                        "max_time": 0, "min_time": 0, "warmup": False},
            "stats": _stats(seconds),
        })
    return out


def document(results: list[dict[str, Any]], env: dict[str, Any]) -> dict[str, Any]:
    m = env.get("machine", {})
    return {
        "machine_info": {"node": m.get("hostname"), "processor": m.get("cpu_model"),
                         "machine": m.get("arch"), "python_version": platform.python_version(),
                         "release": env.get("kernel"), "system": platform.system(),
                         "cpu": {"count": m.get("cpus"), "brand_raw": m.get("cpu_model")}},
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

    def __init__(self, results: list[dict[str, Any]]) -> None:
        self.results = results

    def pytest_benchmark_update_json(self, output_json: dict[str, Any]) -> None:
        output_json.setdefault("benchmarks", []).extend(entries(self.results))
