"""The cells of one result's row: rates, daemon figures, cache state, verdict."""

from __future__ import annotations

from pytest_fsperf import units
from pytest_fsperf.figures import METRICS, Fig
from pytest_fsperf.measure.timeline import sparkline
from pytest_fsperf.report.model import (
    Figure,
    Row,
    short_test,
)
from pytest_fsperf.result import readers
from pytest_fsperf.vocab import ColdRead, DaemonCache, FilesOp, PageCache


def figures(r: Row) -> tuple[Figure, ...]:
    """The figures a result has, in registry terms (daemon CPU only over a countable window)."""
    total, d = r.headline, r.daemon
    out = []
    if total.io_bytes:
        out.append(Figure(METRICS[Fig.BW], total.bw_bytes))
    if total.ops_per_second is not None:
        out.append(Figure(METRICS[Fig.OPS], total.ops_per_second))
    if total.lat_p99_ns is not None:
        out.append(Figure(METRICS[Fig.LAT_P99], total.lat_p99_ns))
    if d:
        out.append(Figure(METRICS[Fig.DAEMON_RSS], d.peak_rss_bytes))
        cpu = d.countable_cpu
        if cpu is not None:
            out.append(Figure(METRICS[Fig.DAEMON_CPU], cpu))
    return tuple(out)


def daemon_cells(r: Row) -> tuple[str, str]:
    d = r.daemon
    if not d:
        short = ("no daemon" if DaemonCache.of(r.daemon_cache) == DaemonCache.NO_DAEMON
                 else "not found")
        return short, short
    cpu = d.countable_cpu
    mem = units.format_mb(d.peak_rss_bytes)
    held = r.ops.count if r.ops is not None and r.ops.operation == FilesOp.HOLD else None
    if held and r.rss_before is not None:  # idle open handles: what the test is judged on
        mem += f" ({units.format_mb((d.peak_rss_bytes - r.rss_before) / held)} per handle)"
    if d.peak_rss_method != "VmHWM":
        mem += " (sampled)"
    if d.carried:
        mem += f" (started at {units.format_mb(d.start_rss_bytes or 0)})"
    if cpu is None:
        return "-", mem
    return units.format_percent(cpu), mem


def cache_cell(r: Row) -> str:
    """'cold: drop_caches', or with a remount: 'cold: remount+wipe+drop_caches'."""
    page = str(r.cache)
    daemon = DaemonCache.of(r.daemon_cache)
    if r.cold_read == ColdRead.NOT_COLD:
        return "NOT cold: page cache served it"
    if daemon == DaemonCache.KEPT:
        return "not cold: daemon disk cache kept"
    if daemon == DaemonCache.SERVED_ITSELF:
        return "warm in the daemon"
    if page == PageCache.WARM and _writes_only(r):  # a write reads nothing: no cache to name
        return "-"
    cold = page in {p.value for p in PageCache if p.cold}
    if cold and daemon == DaemonCache.UNKNOWN:  # the kernel's cache only: say so
        return f"{page}, daemon not restarted"
    kept = page in (PageCache.STORE_KEPT, PageCache.STORE_KEPT_GATE)
    if not cold or daemon not in (DaemonCache.WIPED, DaemonCache.REMOUNTED):
        return "cold: FUSE only, the store's cache kept" if kept else page
    if kept:  # the words the gate's how-to uses, and what was done to the daemon
        return ("cold: FUSE only, the store's cache kept (daemon remounted"
                + (", its disk cache wiped)" if daemon == DaemonCache.WIPED else ")"))
    return "cold: remount+" + ("wipe+" if daemon == DaemonCache.WIPED else "") + PageCache(page).method


def _writes_only(r: Row) -> bool:
    read, write = r.read, r.write
    return (write is not None and write.io_bytes > 0
            and (read is None or read.io_bytes == 0))


def _spread(r: Row, key: str) -> str:
    """' [159-189]' over several rounds: the 95% interval of the median, the spread the
    threshold verdict uses, in the figure's own units."""
    st = r.stats.get(key)
    if not r.rounds or not st:
        return ""
    low, high = (METRICS[key].show(v).partition(" ") for v in (st.ci_low, st.ci_high))
    if low[2] == high[2]:  # one unit for both: "159-189 MB/s"
        return f" [{low[0]}-{''.join(high)}]"
    return f" [{''.join(low)}-{''.join(high)}]"


def buffered(r: Row) -> str:
    """A write the daemon buffered past the tool's clock: the rate the store took it at,
    beside the timed one (" (in the store: 214 MB/s)"); "" where the store kept up."""
    stored, w = readers.READ[Fig.STORED_BW](r), r.write
    if stored is None or w is None or not w.bw_bytes:
        return ""
    return f" (in the store: {units.format_rate(stored)})" if stored < 0.8 * w.bw_bytes else ""


def rate_cells(r: Row) -> tuple[str, str]:
    total = r.headline
    per_s = total.ops_per_second
    if per_s is None:
        return (units.format_rate(total.bw_bytes) + _spread(r, Fig.BW) + buffered(r),
                units.format_count(total.iops))
    bw = units.format_rate(total.bw_bytes) if total.io_bytes else "-"
    return bw, (units.format_count(per_s) + (" files/s" if r.kind == "files" else " ops/s")
                + _spread(r, Fig.OPS))


def bounded(rows: list[Row]) -> tuple[str, ...]:
    """The figures with a column of their own (figures.METRICS: Metric.column) that a shown
    test bounds, in the registry's order: the results table adds a column for each."""
    named = {key for r in rows for key in r.limits}
    return tuple(key for key, m in METRICS.items() if m.column and key in named)


def judged_cell(r: Row, key: str) -> str:
    """A bounded figure's cell: its median over the rounds, or '-' (not measured)."""
    value = r.median(key)
    return METRICS[key].show(value) if value is not None else "-"


def row(r: Row, saved: bool = False, extra: tuple[str, ...] = ()) -> tuple[str, ...]:
    """saved: add the column of the comparison with a saved run (its own verdict); extra:
    the bounded figures' columns (bounded())."""
    p99 = r.headline.lat_p99_ns
    cpu, mem = daemon_cells(r)
    bw, rate = rate_cells(r)
    lat = units.format_duration(p99) if p99 is not None else "-"
    # a workload the test does not judge (a layout step, a gate's reference) reads as secondary
    name = r.name if r.judged else f"{r.name} (not judged)"
    cells: tuple[str, ...] = (short_test(r), name, bw, spark(r) or "-", rate, lat, cpu, mem,
                              *(judged_cell(r, key) for key in extra), cache_cell(r),
                              str(r.verdict_own))
    if saved:
        c = r.run_comparison
        cells += (str(c.outcome) if c else "-",)
    return cells


def spark(r: Row) -> str:
    t = r.timeline
    return sparkline(t.bw) if t else ""
