"""`juicefs bench` grades each row green, yellow or red. The ranges are juicefs's own
(cmd/bench.go): per row (value low, value high, cost low, cost high); the small-file and
stat value ranges are per thread and grow with the thread count."""

from __future__ import annotations

from pytest_fsperf.result.workload import WorkloadResult

RANGES = {  # value: MiB/s or files/s; cost: s/file (big) or ms/file (small, stat)
    "jfs_bench_big_write": (100, 200, 10, 50),
    "jfs_bench_big_read": (100, 200, 10, 50),
    "jfs_bench_small_write": (12.5, 20, 50, 80),
    "jfs_bench_small_read": (50, 100, 10, 20),
    "jfs_bench_stat": (20, 1000, 1, 5),
}
PER_THREAD = {"jfs_bench_small_write", "jfs_bench_small_read", "jfs_bench_stat"}


def value_and_cost(scenario: str, r: WorkloadResult) -> tuple[float, float, str, str]:
    """The row as juicefs bench prints it: value, cost, and their units."""
    assert r.ops is not None
    threads = max(1, r.ops.threads)
    per_thread = r.ops.count / threads
    if scenario.startswith("jfs_bench_big"):
        return r.ops.bw_bytes / 2**20, r.ops.seconds / per_thread, "MiB/s", "s/file"
    return r.ops.per_second, r.ops.seconds * 1000 / per_thread, "files/s", "ms/file"


def grade(scenario: str, r: WorkloadResult) -> str | None:
    if scenario not in RANGES or r.ops is None:
        return None
    lo, hi, cost_lo, cost_hi = RANGES[scenario]
    if scenario in PER_THREAD:
        lo, hi = lo * r.ops.threads, hi * r.ops.threads
    value, cost, vunit, cunit = value_and_cost(scenario, r)
    v = "green" if value > hi else "yellow" if value > lo else "red"
    c = "green" if cost < cost_lo else "yellow" if cost < cost_hi else "red"
    return f"juicefs bench: {value:.2f} {vunit} {v}, {cost:.2f} {cunit} {c}"
