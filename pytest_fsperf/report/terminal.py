"""The terminal summary: one row per measured workload, in the published tables' units."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from .. import units
from ..baselines.check import SHOW as BASELINE_SHOW
from ..cache import DaemonCache, PageCache
from ..result import SHORT_WINDOW, countable_cpu

HEADER = ("test", "workload", "bandwidth", "IOPS or ops", "p99 lat", "daemon CPU", "daemon peak mem",
          "cache", "verdict")
FIGURES = range(2, 7)  # right-aligned columns


def short_test(r: dict[str, Any]) -> str:
    """The test's name without its file: 'test_seq_read[4k]'."""
    return str(r["test"]).rsplit("::", 1)[-1]


def align(rows: Sequence[tuple[str, ...]], right: Iterable[int] = (), indent: str = "") -> list[str]:
    """Columns padded to their widest cell; `right` ones right-aligned."""
    right = set(right)
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return [(indent + "  ".join(c.rjust(w) if i in right else c.ljust(w)
                                for i, (c, w) in enumerate(zip(cells, widths, strict=True)))).rstrip()
            for cells in rows]


def _daemon_cells(r: dict[str, Any]) -> tuple[str, str]:
    d = r.get("daemon")
    if not d:
        short = ("no daemon" if DaemonCache.of(r.get("daemon_cache")) == DaemonCache.NO_DAEMON
                 else "not found")
        return short, short
    cpu = countable_cpu(d["wall_seconds"], d["cpu_percent"])
    if cpu is None:
        return "-", units.format_mb(d["peak_rss_bytes"])
    mem = units.format_mb(d["peak_rss_bytes"])
    if d["peak_rss_method"] != "VmHWM":
        mem += " (sampled)"
    return units.format_percent(cpu), mem


def cache_cell(r: dict[str, Any]) -> str:
    """'cold: drop_caches', or with a remount: 'cold: remount+wipe+drop_caches'."""
    page = str(r["cache"])
    daemon = DaemonCache.of(r.get("daemon_cache"))
    if daemon == DaemonCache.KEPT:
        return "not cold: daemon disk cache kept"
    if page not in (PageCache.DROPPED, PageCache.FADVISED) or daemon not in (DaemonCache.WIPED,
                                                                           DaemonCache.REMOUNTED):
        return page
    return "cold: remount+" + ("wipe+" if daemon == DaemonCache.WIPED else "") + PageCache(page).method


def _spread(r: dict[str, Any], key: str) -> str:
    """' ±7%' over several rounds: the median absolute deviation, relative to the median."""
    st = r.get("stats", {}).get(key)
    if not r.get("rounds") or not st or not st["median"]:
        return ""
    return f" ±{100 * st['mad'] / st['median']:.0f}%"


def _rate_cells(r: dict[str, Any]) -> tuple[str, str]:
    total = r["total"]
    per_s = total.get("ops_per_second")
    if per_s is None:
        return (units.format_rate(total["bw_bytes"]) + _spread(r, "bw"),
                units.format_count(total["iops"]))
    bw = units.format_rate(total["bw_bytes"]) if total["io_bytes"] else "-"
    return bw, (units.format_count(per_s) + (" files/s" if r["kind"] == "files" else " ops/s")
                + _spread(r, "ops"))


def row(r: dict[str, Any]) -> tuple[str, ...]:
    total = r["total"]
    p99 = total.get("lat_p99_ns")
    cpu, mem = _daemon_cells(r)
    bw, rate = _rate_cells(r)
    return (
        short_test(r),
        r["name"],
        bw,
        rate,
        units.format_duration(p99) if p99 is not None else "-",
        cpu,
        mem,
        cache_cell(r),
        r.get("verdict", "-"),
    )


def table(results: list[dict[str, Any]]) -> list[str]:
    return align([HEADER, *(row(r) for r in results)], FIGURES)


def footnotes(results: list[dict[str, Any]]) -> list[str]:
    notes = []
    if any(not r.get("daemon") for r in results):
        seen = sorted({r.get("daemon_note", "") for r in results if not r.get("daemon")})
        notes += [f"daemon figures missing: {n}" for n in seen]
    if any(r.get("daemon") and r["daemon"]["peak_rss_method"] != "VmHWM" for r in results):
        notes.append("(sampled): the kernel refused to reset VmHWM; peak memory is the highest "
                     "RSS sampled every 0.25 s and may miss short peaks")
    if any(r.get("daemon") and countable_cpu(r["daemon"]["wall_seconds"], 0.0) is None
           for r in results):
        notes.append(f"daemon CPU '-': the workload took under {SHORT_WINDOW:g} s, too short for CPU "
                     "time counted in 10 ms ticks")
    notes += [f"{short_test(r)} {r['name']}: {n}" for r in results for n in r.get("notes", [])]
    notes += [f"{short_test(r)} {r['name']}: daemon cache disk peak "
              f"{units.format_mb(r['cache_disk_peak_bytes'])}"
              for r in results if r.get("cache_disk_peak_bytes") is not None]
    rounds = sorted({len(r["rounds"]) for r in results if r.get("rounds")})
    if rounds:
        notes.append(f"over {', '.join(map(str, rounds))} rounds: figures are medians; ±: median "
                     "absolute deviation / median")
    notes.append("CPU: 100% = one fully busy core; bandwidth and memory in powers of 1000")
    return notes


METRIC_NAMES = {"bw": "bandwidth", "iops": "IOPS", "lat_p99": "p99 lat", "daemon_cpu": "daemon CPU",
                "daemon_rss": "daemon peak mem"}


FORMATS = {"bw": units.format_rate, "iops": units.format_count, "lat_p99": units.format_duration,
           "daemon_cpu": units.format_percent, "daemon_rss": units.format_mb}


def _figure(metric: str, value: float | None) -> str:
    return FORMATS[metric](value) if value is not None else "-"


def comparison(c: dict[str, Any]) -> list[str]:
    """One A/B comparison: medians side by side, B/A, and the rounds behind them."""
    a = " ".join(c["a_options"]) or "(defaults)"
    b = " ".join(c["b_options"]) or "(defaults)"
    lines = [f"A/B {short_test(c)} {c['name']} on {c['backend']}: "
             f"{c['rounds']} rounds, order {c['order']}, cold remount before each",
             f"  A: {a}", f"  B: {b}"]
    rows = [("metric", "A median", "B median", "B/A", "95% interval", "outcome", "A rounds", "B rounds")]
    for metric, m in c["metrics"].items():
        ratio = f"{m['ratio']:.2f}" if m["ratio"] is not None else "-"
        band = f"{m['ci_low']:.2f}-{m['ci_high']:.2f}" if m.get("ci_low") is not None else "-"
        rows.append((METRIC_NAMES.get(metric, metric), _figure(metric, m["a_median"]),
                     _figure(metric, m["b_median"]), ratio, band, m.get("outcome", "-"),
                     ", ".join(_figure(metric, v) for v in m["a"]),
                     ", ".join(_figure(metric, v) for v in m["b"])))
    return lines + align(rows, (1, 2, 3), "  ")


def baseline_checks(results: list[dict[str, Any]], gated: bool) -> list[str]:
    """Measured / documented per scenario and figure, for every baseline a test named."""
    rows = [(r, c) for r in results for c in r.get("baseline_checks", [])]
    if not rows:
        return []
    names = sorted({c["baseline"] for _r, c in rows})
    how = "gated (--fsperf-gate=baseline)" if gated else "shown, not gated (--fsperf-gate=baseline gates)"
    lines = [f"baseline {', '.join(names)}: measured / documented, {how}"]
    table = [("test", "scenario", "figure", "measured", "documented", "ratio", "")]
    for r, c in rows:
        measured = BASELINE_SHOW[c["metric"]](c["measured"]) if c["measured"] is not None else "-"
        ratio = f"{c['ratio']:.2f}" if c["ratio"] is not None else "-"
        mark = {True: "ok", False: "below" if c["metric"] == "bw" else "above", None: "-"}[c["ok"]]
        table.append((short_test(r), c["key"], c["metric"], measured, c["printed"], ratio, mark))
    return lines + align(table, (3, 4, 5), "  ")


def run_comparisons(results: list[dict[str, Any]]) -> list[str]:
    """This run against a saved one, per workload: the outcome and the ratio behind it."""
    rows = [(r, r["run_comparison"]) for r in results if r.get("run_comparison")]
    if not rows:
        return []
    lines = [f"against saved run {rows[0][1]['run']!r} (median ratio this / saved, 95% interval)"]
    table = [("test", "workload", "figure", "ratio", "interval", "rounds", "outcome")]
    for r, c in rows:
        ratio = f"{c['ratio']:.3f}" if c["ratio"] is not None else "-"
        band = (f"{c['ci_low']:.3f}-{c['ci_high']:.3f}" if c["ci_low"] is not None else "-")
        outcome = c["outcome"] + (f" ({', '.join(c['differs'])} differ)" if c["differs"] else "")
        table.append((short_test(r), r["name"], c["metric"], ratio, band,
                      f"{len(c['new'])} vs {len(c['old'])}", outcome))
    return lines + align(table, indent="  ")
