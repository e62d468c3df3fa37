"""A test's figures as JUnit XML properties (`--junitxml`): one property per figure of each
workload, named `fsperf.WORKLOAD.FIGURE`, for CI systems that chart JUnit properties."""

from __future__ import annotations

from collections.abc import Iterable

from pytest_fsperf.result.workload import WorkloadResult


def properties(results: Iterable[WorkloadResult]) -> list[tuple[str, object]]:
    """(name, value) for each figure of each result, in the order measured."""
    out: list[tuple[str, object]] = []
    for r in results:
        figures: dict[str, object] = {"bw_bytes": r.bw_bytes, "iops": r.iops,
                                      "lat_p99_ns": r.lat_p99_ns, "cache": str(r.cache)}
        if r.daemon:
            figures.update(daemon_cpu_percent=round(r.daemon.cpu_percent, 1),
                           daemon_peak_rss_bytes=r.daemon.peak_rss_bytes,
                           daemon_peak_rss_method=r.daemon.peak_rss_method)
        else:
            figures["daemon"] = r.daemon_note
        out += [(f"fsperf.{r.name}.{key}", value) for key, value in figures.items()]
    return out
