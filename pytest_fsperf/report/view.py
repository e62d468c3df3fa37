"""The one view of a session's results that every renderer draws: tables of cells, notes,
charts of figures. Figures are named, formatted and directed by the metric registry; the
terminal, Markdown and HTML renderers only lay this out."""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from pytest_fsperf import units
from pytest_fsperf.baselines.check import Check
from pytest_fsperf.baselines.relative import Expectation
from pytest_fsperf.judge.comparison import interval_name
from pytest_fsperf.measure.cache import ColdRead, DaemonCache, PageCache
from pytest_fsperf.measure.figures import SHORT_WINDOW, countable_cpu_of
from pytest_fsperf.measure.timeline import sparkline
from pytest_fsperf.report import fuseview
from pytest_fsperf.scenarios.library import SCENARIOS
from pytest_fsperf.stats import median
from pytest_fsperf.vocab import METRICS, CompareKind, Difference, Metric, Outcome

HEADER = ("test", "workload", "bandwidth", "per second", "IOPS or ops", "p99 lat", "daemon CPU",
          "daemon peak mem", "cache", "verdict")

Row = dict[str, Any]  # one result as the JSON document holds it


@dataclass(frozen=True)
class Table:
    header: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]
    right: frozenset[int] = frozenset()  # right-aligned columns (figures)


@dataclass(frozen=True)
class Bar:
    label: str
    value: float
    side: str = "now"  # now, a, b, saved: how the chart colours it
    limit: float | None = None  # the test's threshold on this figure, drawn across the bar
    limit_text: str = ""  # as the user wrote it: "min_bw 2GB/s"
    failing: bool = False  # the workload failed its test


@dataclass(frozen=True)
class Chart:
    title: str
    metric: Metric
    bars: tuple[Bar, ...]


@dataclass(frozen=True)
class Section:
    """A comparison or check: a heading, lines under it, a table, a chart."""

    title: str
    lines: tuple[str, ...] = ()
    table: Table | None = None
    chart: Chart | None = None
    # an A/B's two daemon profiles, folded (stack, samples): a differential flame graph
    profiles: Mapping[str, Any] | None = None


@dataclass(frozen=True)
class Figure:
    metric: Metric
    value: float


@dataclass(frozen=True)
class Trace:
    """One run's timeline, as drawn: a name (A, B or the workload) and its per-interval ends."""

    name: str
    t: tuple[float, ...]  # end of each interval, s
    bw: tuple[float, ...]  # MB/s
    rss: tuple[float | None, ...]  # MB
    cpu: tuple[float | None, ...]  # %
    clat: tuple[tuple[float, float], ...] = ()  # (s of fio's clock, mean completion latency ms)
    fuse: tuple[float, ...] = ()  # FUSE requests per second, all opcodes (where traced)


@dataclass(frozen=True)
class TimeChart:
    title: str
    traces: tuple[Trace, ...]


@dataclass(frozen=True)
class View:
    header: tuple[tuple[str, str], ...]  # (what, value): the filesystem, machine, date, scale
    results: Table
    verdicts: tuple[Outcome, ...]
    notes: tuple[str, ...]
    charts: tuple[Chart, ...] = ()
    sections: tuple[Section, ...] = field(default_factory=tuple)
    summary: tuple[str, ...] = ()  # the decision, then each failing or undecided line
    timelines: tuple[TimeChart, ...] = ()  # per workload; A and B overlaid for an A/B

    @property
    def failing(self) -> int:
        return sum(v.failing for v in self.verdicts)

    @property
    def unsure(self) -> int:
        return sum(v.unsure for v in self.verdicts)


def short_test(r: Mapping[str, Any]) -> str:
    """The test's name without its file: 'test_seq_read[4k]'."""
    return str(r["test"]).rsplit("::", 1)[-1]


def label(r: Row) -> str:
    return f"{short_test(r)} {r['name']}"


def figures(r: Row) -> tuple[Figure, ...]:
    """The figures a result has, in registry terms (daemon CPU only over a countable window)."""
    total, d = r["total"], r.get("daemon")
    out = []
    if total.get("io_bytes"):
        out.append(Figure(METRICS["bw"], total["bw_bytes"]))
    if total.get("ops_per_second") is not None:
        out.append(Figure(METRICS["ops"], total["ops_per_second"]))
    if total.get("lat_p99_ns") is not None:
        out.append(Figure(METRICS["lat_p99"], total["lat_p99_ns"]))
    if d:
        out.append(Figure(METRICS["daemon_rss"], d["peak_rss_bytes"]))
        cpu = countable_cpu_of(d)
        if cpu is not None:
            out.append(Figure(METRICS["daemon_cpu"], cpu))
    return tuple(out)


def _daemon_cells(r: Row) -> tuple[str, str]:
    d = r.get("daemon")
    if not d:
        short = ("no daemon" if DaemonCache.of(r.get("daemon_cache")) == DaemonCache.NO_DAEMON
                 else "not found")
        return short, short
    cpu = countable_cpu_of(d)
    mem = units.format_mb(d["peak_rss_bytes"])
    if cpu is None:
        return "-", mem
    if d["peak_rss_method"] != "VmHWM":
        mem += " (sampled)"
    return units.format_percent(cpu), mem


def cache_cell(r: Row) -> str:
    """'cold: drop_caches', or with a remount: 'cold: remount+wipe+drop_caches'."""
    page = str(r["cache"])
    daemon = DaemonCache.of(r.get("daemon_cache"))
    if r.get("cold_read") == ColdRead.NOT_COLD:
        return "NOT cold: page cache served it"
    if daemon == DaemonCache.KEPT:
        return "not cold: daemon disk cache kept"
    cold = page in {p.value for p in PageCache if p.cold}
    if not cold or daemon not in (DaemonCache.WIPED, DaemonCache.REMOUNTED):
        return page
    return "cold: remount+" + ("wipe+" if daemon == DaemonCache.WIPED else "") + PageCache(page).method


def _spread(r: Row, key: str) -> str:
    """' [159-189]' over several rounds: the 95% interval of the median, the spread the
    threshold verdict uses, in the figure's own units."""
    st = r.get("stats", {}).get(key)
    if not r.get("rounds") or not st or st.get("ci_low") is None:
        return ""
    low, high = (METRICS[key].show(st[k]).partition(" ") for k in ("ci_low", "ci_high"))
    if low[2] == high[2]:  # one unit for both: "159-189 MB/s"
        return f" [{low[0]}-{''.join(high)}]"
    return f" [{''.join(low)}-{''.join(high)}]"


def _rate_cells(r: Row) -> tuple[str, str]:
    total = r["total"]
    per_s = total.get("ops_per_second")
    if per_s is None:
        return (units.format_rate(total["bw_bytes"]) + _spread(r, "bw"),
                units.format_count(total["iops"]))
    bw = units.format_rate(total["bw_bytes"]) if total["io_bytes"] else "-"
    return bw, (units.format_count(per_s) + (" files/s" if r["kind"] == "files" else " ops/s")
                + _spread(r, "ops"))


def row(r: Row, saved: bool = False) -> tuple[str, ...]:
    """saved: add the column of the comparison with a saved run (its own verdict)."""
    p99 = r["total"].get("lat_p99_ns")
    cpu, mem = _daemon_cells(r)
    bw, rate = _rate_cells(r)
    lat = units.format_duration(p99) if p99 is not None else "-"
    # a workload the test does not judge (a layout step, a gate's reference) reads as secondary
    name = r["name"] if r.get("judged", True) else f"{r['name']} (not judged)"
    cells: tuple[str, ...] = (short_test(r), name, bw, spark(r) or "-", rate, lat, cpu, mem,
                              cache_cell(r),
                              str(r.get("verdict_own", r.get("verdict", "-"))))
    if saved:
        c = r.get("run_comparison")
        cells += (str(c["outcome"]) if c else "-",)
    return cells


def in_comparisons(results: list[Row], comparisons: Iterable[Mapping[str, Any]]) -> set[tuple[str, str]]:
    """The runs behind A/B comparisons (shown in their sections, not as workloads)."""
    return {(str(c["test"]), str(name)) for c in comparisons
            for name in (*c.get("a_results", ()), *c.get("b_results", ()))}


def unexplained(results: list[Row], failed_tests: Iterable[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """Failed tests whose failure no failing workload row explains: an error in setup or
    teardown, or a test that failed without a failing or undecided workload (no space left,
    a crashed daemon, the user's own assertion)."""
    explained = {str(r["test"]) for r in results
                 if (v := Outcome.of(r.get("verdict"))).failing or v.unsure}
    return [t for t in failed_tests if t.get("when") != "call" or str(t["test"]) not in explained]


def summary(results: list[Row], comparisons: Iterable[Mapping[str, Any]],
            inconclusive_fails: bool,
            failed_tests: Iterable[Mapping[str, Any]] = ()) -> tuple[str, ...]:
    """The decision first: what failed and why, what could not be decided, every A/B, and
    every test that failed for a reason no workload shows (the decision is never greener
    than pytest)."""
    errors = unexplained(results, failed_tests)
    verdicts = [Outcome.of(r.get("verdict")) for r in results]
    comparisons = list(comparisons)
    failing = sum(v.failing for v in verdicts)
    unsure = sum(v.unsure for v in verdicts)
    passed = sum(v in (Outcome.PASS, Outcome.PARTIAL) for v in verdicts)
    partial = [n for r, v in zip(results, verdicts, strict=True)
               if v == Outcome.PARTIAL for n in r.get("not_judged") or ()]
    decided_ab = [c for c in comparisons if _decided(c)]
    if failing or errors or (unsure and inconclusive_fails):
        decision = "FAIL"
    elif unsure:
        decision = "PASS with warnings"
    elif not passed and not decided_ab:
        decision = "NOTHING JUDGED"  # no threshold, baseline or comparison decided anything
    elif partial:
        decision = f"PARTIAL ({'; '.join(sorted(set(partial)))})"
    else:
        decision = "PASS"
    how = ""
    if unsure:
        how = (" (these fail their tests: --fsperf-inconclusive=fail)" if inconclusive_fails
               else " (warnings: --fsperf-inconclusive=warn)")
    count = f"{len(results)} workload{'' if len(results) == 1 else 's'}"
    lines = [f"{decision}: {count}: {failing} failing, {unsure} inconclusive"
             f"{how}, {passed} passed, {len(results) - failing - unsure - passed} not judged"
             + (f"; {len(decided_ab)} of {len(comparisons)} comparisons decided"
                if comparisons else "")
             + (f"; {len(errors)} test{'' if len(errors) == 1 else 's'} failed or errored"
                if errors else "")]
    lines += [f"FAIL: {_test_id(t)} ({t.get('when')}): {t.get('message')}" for t in errors]
    for r, v in zip(results, verdicts, strict=True):
        if v.failing or v.unsure:
            lines += [f"{v}: {short_test(r)} {line}" for line in r.get("failures") or [r["name"]]]
    for c in comparisons:
        m = c["metrics"].get(c.get("decided_by") or "bw")
        if not m or m.get("ratio") is None:
            continue
        named = interval_name(m.get("level") or 0.0, bool(m.get("anytime")))
        band = (f", {named} {m['ci_low']:.3f} to {m['ci_high']:.3f}"
                if m.get("ci_low") is not None else "")
        kind = CompareKind(c.get("kind") or "options")
        lines.append(f"{'release gate' if kind.is_gate else 'A/B'} {short_test(c)} {c['name']}: "
                     f"{_name(m['metric'])} B/A {m['ratio']:.3f}{band}: {m.get('outcome')} "
                     f"({c['rounds']} pairs)")
    return tuple(lines)


SHOWN_RUNS = 6  # an A/B of 90 short pairs would print 90 figures per cell


def _runs(metric: str, values: list[float | None]) -> str:
    """A side's runs, in pair order; past SHOWN_RUNS the first ones and a count (all are in
    the JSON file)."""
    shown = ", ".join(_figure(metric, v) for v in values[:SHOWN_RUNS])
    more = len(values) - SHOWN_RUNS
    return f"{shown}, ... ({len(values)} runs)" if more > 0 else shown


def _decided(c: Mapping[str, Any]) -> bool:
    """An A/B or gate that reached an outcome on its deciding figure (and is not unstable)."""
    m = c["metrics"].get(c.get("decided_by") or "bw")
    return bool(c.get("crashed")) or (
        m is not None and m.get("outcome") is not None and not c.get("unstable")
        and Difference(m["outcome"]) != Difference.INCONCLUSIVE)


def latency_notes(results: list[Row]) -> list[str]:
    """Which latency fio's p99 is: total unless the test asked for completion latency."""
    kinds = {(label(r), d["lat_kind"]) for r in results for d in (r.get("read"), r.get("write"))
             if isinstance(d, dict) and d.get("lat_kind")}
    out = []
    if any(k == "lat" for _l, k in kinds):
        out.append("p99 lat of fio: total latency, submission + completion (fio's lat_percentiles)")
    clat = sorted({lab for lab, k in kinds if k == "clat"})
    if clat:
        out.append(f"p99 lat of {', '.join(clat)}: completion latency only (fio's clat), "
                   "without the submission")
    return out


def notes(results: list[Row]) -> list[str]:
    out = []
    if any(not r.get("daemon") for r in results):
        seen = sorted({r.get("daemon_note", "") for r in results if not r.get("daemon")})
        out += [f"daemon figures missing: {n}" for n in seen]
    if any(r.get("daemon") and r["daemon"]["peak_rss_method"] != "VmHWM" for r in results):
        out.append("(sampled): the kernel refused to reset VmHWM; peak memory is the highest "
                   "RSS sampled every 0.25 s and may miss short peaks")
    if any(r.get("daemon") and countable_cpu_of({**r["daemon"], "cpu_percent": 0.0}) is None
           for r in results):
        out.append(f"daemon CPU '-': I/O ran under {SHORT_WINDOW:g} s, too short for CPU "
                   "time counted in 10 ms ticks")
    if any(r.get("daemon", {}) and r["daemon"].get("cpu_window") == "I/O" for r in results):
        out.append("daemon CPU: over the time I/O ran, not the tool's start-up and teardown")
    out += latency_notes(results)
    out += _folded([(label(r), n) for r in results for n in r.get("notes", [])])
    out += [f"{label(r)}: {line}" for r in results if (line := processes_line(r))]
    out += [f"{label(r)}: {line}" for r in results if (line := own_counters_line(r))]
    out += [f"{label(r)}: {line}" for r in results if (line := requests_line(r))]
    out += fuseview.unavailable(results)
    out += [f"{label(r)}: daemon cache disk peak {units.format_mb(r['cache_disk_peak_bytes'])}"
            for r in results if r.get("cache_disk_peak_bytes")]  # 0: no cache disk was used
    rounds = sorted({len(r["rounds"]) for r in results if r.get("rounds")})
    if rounds:
        out.append(f"over {', '.join(map(str, rounds))} rounds: figures are medians; [low-high]: "
                   "the 95% interval of the median, which threshold verdicts use")
    out.append("CPU: 100% = one fully busy core; bandwidth and memory in powers of 1000")
    return list(dict.fromkeys(out))  # each note once


def _folded(said: list[tuple[str, str]]) -> list[str]:
    """'workload: note' lines, a note said of several workloads folded into one line that
    names them (each row keeps its own notes in the JSON and HTML rows)."""
    by_note: dict[str, list[str]] = {}
    for workload, text in said:
        by_note.setdefault(text, []).append(workload)
    out = []
    for note, who in by_note.items():
        if len(who) == 1:
            out.append(f"{who[0]}: {note}")
        else:
            names = ", ".join(who[:3]) + (f" and {len(who) - 3} more" if len(who) > 3 else "")
            out.append(f"{note} ({len(who)} workloads: {names})")
    return out


def requests_line(r: Row) -> str:
    """What the object store served the workload beyond the requests table: errors, bytes,
    the mean GET, the server's TTFB, egress; or why there are no figures."""
    q = r.get("requests")
    if not q:
        note = r.get("requests_note", "")
        return f"object-store requests not available: {note}" if r.get("mount") and note else ""
        # (an existing mount's note stays in the JSON: its store is not the plugin's to know)
    parts = []
    errors = q["errors_4xx"] + q["errors_5xx"]
    if errors:  # a 404 for a HEAD of a name not there yet is how s3fs creates a file
        parts.append(f"{errors} answered with errors: {q['errors_4xx']} 4xx, {q['errors_5xx']} 5xx"
                     + (" (a 503 SlowDown is a 5xx: the store throttled)" if q["errors_5xx"] else ""))
    if q.get("errors_unclassified"):
        parts.append(f"{q['errors_unclassified']} failed ({q['source']} does not say how)")
    if q.get("sent_bytes") is not None:
        parts.append(f"store sent {units.format_size(q['sent_bytes'])}, received "
                     f"{units.format_size(q['received_bytes'] or 0)}")
    if q.get("get_bytes_mean"):
        parts.append(f"GETs of {units.format_size(q['get_bytes_mean'])} on average")
    ttfb = q.get("ttfb_at_most") or {}
    if ttfb:
        parts.append("server TTFB " + ", ".join(
            f"{k} <= {units.format_duration(v * 1e9)}" for k, v in ttfb.items()))
    cost = r.get("cost")
    if cost and cost.get("egress"):
        parts.append(f"egress {units.format_money(cost['egress'])} {cost['currency']} "
                     "were it served to the internet")
    return f"object-store requests {q['total']}: " + "; ".join(parts) if parts else ""


def requests_table(results: list[Row], price: Mapping[str, Any] | None) -> Section | None:
    """Requests by kind, amplification and cost of every workload the store counted for."""
    counted = [r for r in results if r.get("requests")]
    if not counted:
        return None
    currency = next((r["cost"]["currency"] for r in counted if r.get("cost")), "")
    head = ("test", "workload", "requests", "GET", "HEAD", "LIST", "PUT", "other",
            "per file", "per MiB", f"cost {currency}".strip(), "per TB moved")
    rows = []
    for r in counted:
        q = r["requests"]
        m = {k: v["median"] for k, v in (r.get("stats") or {}).items()}
        kinds = q["by_kind"]
        other = q["total"] - sum(kinds[k] for k in ("GET", "HEAD", "LIST", "PUT"))
        rows.append((short_test(r), r["name"], str(q["total"]),
                     *(str(kinds[k]) for k in ("GET", "HEAD", "LIST", "PUT")), str(other),
                     _cell("req_per_file", m), _cell("req_per_mib", m), _cell("cost", m),
                     _cell("cost_per_tb", m)))
    sources = sorted({r["requests"].get("source", "?") for r in counted})
    lines = [f"counted by {' and '.join(sources)} around each measured window (not layout or "
             "remounts); 'other' includes multipart, COPY and DELETE"]
    if price:
        lines.append(f"cost at {price['title']} prices ({price['name']}, {price['currency']}, "
                     f"checked {price['checked']}, {price['origin']}); source: {price['source']}")
    return Section("Object-store requests", tuple(lines),
                   Table(head, tuple(rows), frozenset(range(2, len(head)))))


def fuse_table(results: list[Row]) -> Section | None:
    """The kernel's FUSE requests of every traced workload, by opcode."""
    rows = fuseview.table_rows(results)
    if not rows:
        return None
    return Section("FUSE requests", (fuseview.EXPLAINED,),
                   Table(fuseview.HEAD, tuple(rows), frozenset({2, 3, 4})))


CEILING_PATHS = ("store", "bindfs over tmpfs", "tmpfs")
OLD_NAMES = {"bindfs over tmpfs": "FUSE passthrough"}  # in runs saved before 2026-11-26


def ceilings_table(results: list[Row]) -> Section | None:
    """Each workload as a fraction of what the store, FUSE with nothing behind it and tmpfs
    moved for the same job (--fsperf-ceilings); how each ceiling was measured, once."""
    found = [r for r in results if r.get("ceilings")]
    if not found:
        return None
    rows: list[tuple[str, ...]] = []
    bars: list[Bar] = []  # each workload's share of each ceiling; the tick at 100% is the ceiling
    said: dict[str, str] = {}
    for r in found:
        by_path = {c["path"]: c for c in r["ceilings"]}
        bw = float(r.get("total", {}).get("bw_bytes") or 0.0)
        cells = []
        for path in CEILING_PATHS:
            c = by_path.get(path) or by_path.get(OLD_NAMES.get(path, ""))
            if c is None or c["unavailable"] or not c["bw_bytes"]:
                cells.append("-")
            else:
                ceiling = units.format_rate(c["bw_bytes"])
                cells.append(f"{100 * bw / c['bw_bytes']:.0f}% of {ceiling}")
                bars.append(Bar(f"{short_test(r)} {r['name']}: of the {path}",
                                100 * bw / c["bw_bytes"], limit=100.0,
                                limit_text=f"the {path} ceiling, {ceiling}",
                                failing=Outcome.of(r.get("verdict")).failing))
            if c is not None:
                said.setdefault(c["how"] or c["unavailable"], (
                    f"{path}: {c['how']} ({c['seconds']:.0f} s to measure)" if not c["unavailable"]
                    else f"{path}: not measured: {c['unavailable']}"))
        rows.append((short_test(r), str(r["name"]), units.format_rate(bw), *cells))
    return Section("Ceilings: the same job straight to the store, through FUSE with nothing "
                   "behind it, and on tmpfs (--fsperf-ceilings or min_efficiency)", tuple(said.values()),
                   Table(("test", "workload", "bandwidth", *CEILING_PATHS), tuple(rows),
                         frozenset({2, 3, 4, 5})),
                   Chart("Share of each ceiling (the tick: the ceiling itself)",
                         METRICS["efficiency"], tuple(bars)) if bars else None)


def _client_bw(c: Mapping[str, Any]) -> float:
    return float(sum(d["bw_bytes"] for d in (c.get("read"), c.get("write")) if d))


def _client_cells(c: Mapping[str, Any], whole: float) -> tuple[str, ...]:
    bw = _client_bw(c)
    iops = sum(d["iops"] for d in (c.get("read"), c.get("write")) if d)
    d = c.get("daemon")
    cpu = (units.format_percent(cpu) if d and (cpu := countable_cpu_of(d)) is not None
           else "-" if d else "not measured")
    mem = units.format_mb(d["peak_rss_bytes"]) if d else "not measured"
    return (units.format_rate(bw), units.format_count(iops),
            f"{100 * bw / whole:.0f}%" if whole else "-", cpu, mem)


def clients_table(results: list[Row]) -> Section | None:
    """A many-client run: the aggregate, each client under it, and how even they were."""
    many = [r for r in results if r.get("clients")]
    if not many:
        return None
    head: tuple[str, ...] = ("test", "workload", "client", "mount", "bandwidth", "IOPS", "share",
                             "daemon CPU", "daemon peak mem")
    counted = any(c.get("requests") for r in many for c in r["clients"])
    if counted:
        head += ("requests",)
    rows: list[tuple[str, ...]] = []
    lines = ["each client: its own mount, daemon and fio server; bandwidth and IOPS as fio "
             "reported for it; share: of the clients' summed bandwidth; the aggregate row is "
             "fio's 'All clients' (its bytes over the longest client's time) and the daemons' sum"]
    for r in many:
        clients = r["clients"]
        bws = [_client_bw(c) for c in clients]
        summed = sum(bws)
        cpu, mem = _daemon_cells(r)
        bw, rate = _rate_cells(r)
        q = r.get("requests")
        rows.append((short_test(r), r["name"], f"all {len(clients)}", "", bw, rate, "", cpu, mem,
                     *([str(q["total"]) if q else "-"] if counted else [])))
        rows += [("", "", c["server"], c["directory"].split(f"{os.sep}fsperf-work-")[0],
                  *_client_cells(c, summed),
                  *([str(c["requests"]["total"]) if c.get("requests") else "-"] if counted else []))
                 for c in clients]
        if len(bws) > 1 and max(bws):
            lines.append(f"{label(r)}: imbalance {100 * (1 - min(bws) / max(bws)):.0f}% (the "
                         f"slowest client {units.format_rate(min(bws))}, the fastest "
                         f"{units.format_rate(max(bws))})")
    if counted:
        lines.append("requests: the object requests each client's daemon counted itself "
                     "(JuiceFS's .stats); the aggregate row's as in Object-store requests")
    return Section("Clients", tuple(lines), Table(head, tuple(rows), frozenset(range(4, len(head)))))


def _cell(metric: str, figures: Mapping[str, Any]) -> str:
    value = figures.get(metric)
    return METRICS[metric].show(value) if value is not None else "-"


def _figure(metric: str, value: float | None) -> str:
    return METRICS[metric].show(value) if value is not None else "-"


def _name(metric: str) -> str:
    return METRICS[metric].label if metric in METRICS else metric


def comparison(c: Mapping[str, Any]) -> Section:
    """One A/B comparison: medians side by side, B/A over the pairs, and the runs behind them."""
    a = " ".join(c["a_options"]) or "(defaults)"
    b = " ".join(c["b_options"]) or "(defaults)"
    rows = []
    for metric, m in c["metrics"].items():
        ratio = f"{m['ratio']:.2f}" if m["ratio"] is not None else "-"
        band = "-"
        if m.get("ci_low") is not None:
            level = (f"{100 * m['level']:.4g}%{' anytime' if m.get('anytime') else ''}: "
                     if m.get("level") else "")
            band = f"{level}{m['ci_low']:.2f}-{m['ci_high']:.2f}"
        rows.append((_name(metric), _figure(metric, m["a_median"]), _figure(metric, m["b_median"]),
                     ratio, band, str(m.get("outcome", "-")), _runs(metric, m["a"]),
                     _runs(metric, m["b"])))
    table = Table(("metric", "A median", "B median", "B/A", "interval", "outcome", "A runs",
                   "B runs"), tuple(rows), frozenset((1, 2, 3)))
    bw = c["metrics"].get("bw")
    chart = None
    if bw:
        # each pair's A and B side by side: the pairs are what is judged
        bars = [Bar(f"pair {i + 1} {side.upper()}", v, side)
                for i, (a, b) in enumerate(zip(bw["a"], bw["b"], strict=True))
                for side, v in (("a", a), ("b", b)) if v]
        chart = Chart("bandwidth per pair, A (blue) beside B (red)", METRICS["bw"], tuple(bars))
    kind = CompareKind(c.get("kind") or "options")
    what = "release gate" if kind.is_gate else "A/B"
    cold = "page-cache drop" if kind == CompareKind.MOUNT_GATE else "cold remount"
    how = f"{c['rounds']} pairs, order {c['order']}, {cold} before each run"
    if c.get("placement"):
        how += f", {c['placement']}"
    if c.get("machine"):
        how += f"; {c['machine']}"
    if c.get("stopped"):
        how += f"; {c['stopped']} ({c.get('seconds', 0):.0f} s)"
    lines: tuple[str, ...] = (f"A: {a}", f"B: {b}")
    if c.get("decided_by"):
        lines += (f"decided on {_name(c['decided_by'])}: B/A is the geometric mean of the pairs' "
                  "ratios; interval: on their logs, paired t (judged once) or an anytime "
                  "confidence sequence (looked at after every pair, valid at every look)",)
    if c.get("short"):
        lines += (c["short"],)
    if c.get("needed"):
        lines += (f"inconclusive: {c['needed']}",)
    if c.get("unstable"):
        lines += (f"the measurement is unstable, nothing decided: {c['unstable']}",)
    if c.get("crashed"):
        lines += (c["crashed"],)
    if c.get("where"):
        lines += ("where, in the FUSE requests (medians of each side's runs): "
                  + "; ".join(c["where"]),)
    if c.get("profile"):
        lines += ("where, in the daemon's profile (share of its samples, A -> B): "
                  + "; ".join(p.removeprefix("daemon samples: ") for p in c["profile"]),)
    if c.get("profile_note"):
        lines += (c["profile_note"],)
    if c.get("dropped"):
        lines += (f"{len(c['dropped'])} runs not used (x in the order: a pair dropped): "
                  + "; ".join(c["dropped"]),)
    if c.get("expectation"):
        lines += ("documented gain " + Expectation(**c["expectation"]).message(),)
    profiles = c.get("profiles")
    return Section(f"{what} {short_test(c)} {c['name']} on {c['backend']}: {how}", lines, table, chart,
                   profiles if profiles and profiles.get("A") and profiles.get("B") else None)


def baseline_checks(results: list[Row], gated: bool, env: Mapping[str, Any]) -> Section | None:
    """Measured / documented per scenario and figure, for every baseline a test named; the
    workloads it has no figure for; where the figures came from."""
    named = [r for r in results if r.get("baseline") or r.get("baseline_checks")]
    if not named:
        return None
    infos = {info["name"]: info for r in named for info in _infos(r)}
    how = "gated (--fsperf-gate=baseline)" if gated else "shown, not gated (--fsperf-gate=baseline gates)"
    used = " ".join([*((env.get("daemon") or {}).get("cmdline") or ()),
                     *(o for r in named for o in ((r.get("mount") or {}).get("options") or ()))])
    lines = [_origin(info, env) + _options_differ(info, used) for info in infos.values()]
    missing = sorted({f"{r.get('baseline_key')} ({r['baseline']['name']})" for r in named
                      if r.get("baseline") and not r.get("baseline_checks")})
    if missing:
        lines.append(f"no documented figure, not compared: {', '.join(missing)}")
    checked = sorted({c["key"] for r in named for c in r.get("baseline_checks", [])})
    lines += [f"{key} {SCENARIOS[key].fidelity}" for key in checked
              if key in SCENARIOS and SCENARIOS[key].differs]
    rows = []
    for r in named:
        for c in r.get("baseline_checks", []):
            check = Check(**c)  # shown as the failure message shows it
            ratio = f"{c['ratio']:.2f}" if c["ratio"] is not None else "-"
            mark = {True: "ok", False: "below" if c["metric"] == "bw" else "above",
                    None: ""}[c["ok"]]
            mark = "; ".join(m for m in (mark, c.get("note")) if m) or "-"
            rows.append((short_test(r), c["key"], c["metric"], check.measured_shown, check.shown,
                         ratio, mark))
    saved = all(info.get("origin") not in ("shipped", None) for info in infos.values())
    column = "saved" if saved else "documented"
    table = (Table(("test", "scenario", "figure", "measured", column, "ratio", ""), tuple(rows),
                   frozenset((3, 4, 5))) if rows else None)
    return Section(f"baseline {', '.join(infos)}: measured / {column}, {how}", tuple(lines), table)


def _infos(r: Row) -> list[dict[str, Any]]:
    if r.get("baseline"):
        return [r["baseline"]]
    return [{"name": c["baseline"]} for c in r.get("baseline_checks", [])]


def _machine_differs(info: Mapping[str, Any], env: Mapping[str, Any]) -> str:
    """The conditions of a baseline's source this machine does not share, named."""
    said = []
    conditions = info.get("conditions") or {}
    machine = env.get("machine") or {}
    cpus, mem = machine.get("cpus"), machine.get("mem_total_bytes")
    if conditions.get("vcpu") and cpus and cpus != conditions["vcpu"]:
        said.append(f"{cpus} CPUs here, {conditions['vcpu']} vCPU documented")
    if conditions.get("memory_gib") and mem and abs(mem / 2**30 - conditions["memory_gib"]) > 1:
        said.append(f"{mem / 2**30:.0f} GiB here, {conditions['memory_gib']} GiB documented")
    if info.get("kernel") and env.get("kernel") and env["kernel"] != info["kernel"]:
        said.append(f"kernel {env['kernel']} here, {info['kernel']} documented")
    return "; ".join(said)


def _options_differ(info: Mapping[str, Any], used: str) -> str:
    """The documented mount options not found on this daemon's command line or among the
    options the plugin mounted with (an option inside a config file is not seen here)."""
    missing = [o for o in (info.get("conditions") or {}).get("options", ()) if o not in used]
    return (f"; documented with {', '.join(missing)}, not seen on this daemon's command line "
            "or mount options" if missing else "")


def _origin(info: Mapping[str, Any], env: Mapping[str, Any]) -> str:
    scale = env.get("scale")
    here = f"measured here at scale {scale:g}" if isinstance(scale, int | float) else "measured here"
    if "origin" not in info:
        return f"{info['name']}: {here}"
    if info.get("origin") == "shipped":
        differ = _machine_differs(info, env)
        return (f"{info['name']}: documented at full scale on {info.get('hardware') or '?'}; "
                f"{here}" + (f" ({differ})" if differ else "")
                + ": read the ratios as shapes, not as a verdict on this machine")
    return (f"{info['name']}: saved by an earlier run ({info.get('origin')}) at scale "
            f"{info.get('scale')} on {info.get('hardware') or '?'}; {here}")


def run_comparisons(results: list[Row]) -> Section | None:
    """This run against a saved one, per workload: the outcome and the ratio behind it."""
    found = [(r, r["run_comparison"]) for r in results if r.get("run_comparison")]
    if not found:
        return None
    rows, bars = [], []
    for r, c in found:
        ratio = f"{c['ratio']:.3f}" if c["ratio"] is not None else "-"
        band = (f"{c['ci_low']:.3f}-{c['ci_high']:.3f}" if c["ci_low"] is not None else "-")
        outcome = c["outcome"] + (f" ({', '.join(c['differs'])} differ)" if c["differs"] else "")
        rows.append((short_test(r), r["name"], c["metric"], ratio, band,
                     f"{len(c['new'])} vs {len(c['old'])}", outcome))
        if c["ratio"] is not None:
            bars += [Bar(f"{label(r)} saved", median(c["old"]), "saved"),
                     Bar(f"{label(r)} now", median(c["new"]), "now")]
    table = Table(("test", "workload", "figure", "ratio", "interval", "rounds", "outcome"), tuple(rows))
    return Section(f"against saved run {found[0][1]['run']!r} (median ratio this / saved, 95% interval)",
                   (), table, Chart("median, saved against now", METRICS["bw"], tuple(bars)))


def _bar(r: Row, text: str, value: float, metric: str) -> Bar:
    """A bar of a workload's figure, with the test's threshold on it and whether it failed."""
    limit = (r.get("limits") or {}).get(metric)
    return Bar(text, value, limit=limit["limit"] if limit else None,
               limit_text=limit["text"] if limit else "",
               failing=r.get("verdict") in (Outcome.FAIL.value, Outcome.REGRESSION.value))


def _charts(results: list[Row]) -> tuple[Chart, ...]:
    judged = [r for r in results if r.get("judged", True)]
    results = judged or results  # layout steps only where nothing else was measured
    per_round = [_bar(r, f"{label(r)} #{i + 1}", rnd["bw"], "bw") for r in results
                 for i, rnd in enumerate(r.get("rounds") or []) if rnd.get("bw")]
    single = [_bar(r, label(r), r["total"]["bw_bytes"], "bw") for r in results
              if not r.get("rounds") and r["total"].get("io_bytes")]
    by_metric: dict[str, list[Bar]] = {"daemon_cpu": [], "daemon_rss": []}
    for r in results:
        for f in figures(r):
            if f.metric.key in by_metric:
                by_metric[f.metric.key].append(_bar(r, label(r), f.value, f.metric.key))
    return (Chart("bandwidth per workload and round", METRICS["bw"], tuple(per_round + single)),
            Chart("daemon CPU (100% = one core)", METRICS["daemon_cpu"], tuple(by_metric["daemon_cpu"])),
            Chart("daemon peak memory", METRICS["daemon_rss"], tuple(by_metric["daemon_rss"])))


def header(env: Mapping[str, Any]) -> tuple[tuple[str, str], ...]:
    """What was measured, where and when: the facts a reader needs before any figure."""
    m = env.get("machine") or {}
    mount = env.get("mount") or {}
    daemon = env.get("daemon") or {}
    backend = env.get("backend")
    path, point = mount.get("path", "?"), mount.get("mount_point", "?")
    fs = f"{mount.get('fstype', '?')} at {path}" + (f", mounted at {point}" if point != path else "")
    if env.get("embedded_default"):
        fs += "; the embedded default: a fresh directory on the local disk, no FUSE daemon"
    source = str(mount.get("source") or "-")
    if env.get("source_note"):
        source += f" ({env['source_note']})"
    mem = m.get("mem_total_bytes")
    facts = [
        ("filesystem", fs),
        ("backend", f"{backend}, mounted by the plugin" if backend else "an existing mount"),
        ("source", source),
        ("mount options", " ".join(o for o in (mount.get("options"), mount.get("super_options")) if o)
         or "-"),
        ("daemon", (f"{' '.join(daemon.get('cmdline') or [])} (PID {daemon.get('pid')})"
                    if daemon else str(env.get("daemon_note") or "none found"))),
        ("machine", f"{m.get('hostname', '?')}: {m.get('cpus')} CPUs ({m.get('cpu_model')}), "
                    + (f"{float(mem) / 2**30:.0f} GiB RAM, " if mem else "")
                    + f"{env.get('os') or '?'}, kernel {env.get('kernel')}"),
        *((("kernel FUSE", fuse_facts(env["fuse_kernel"])),) if env.get("fuse_kernel") else ()),
        ("tools", f"fio {env.get('fio') or '-'}, pytest-fsperf {env.get('pytest_fsperf', '?')}"),
        ("date", str(env.get("date") or "-")),
        ("scale", _scale(env.get("scale"))),
    ]
    return tuple(facts)


def fuse_facts(k: Mapping[str, Any]) -> str:
    pages = k.get("max_pages_limit")
    return (f"requests up to {pages} pages (fs.fuse.max_pages_limit)" if pages else
            "max_pages_limit unknown") + (f"; io_uring: {k.get('io_uring', '?')}; "
                                          f"passthrough: {k.get('passthrough', '?')}")


def _scale(scale: object) -> str:
    if not isinstance(scale, int | float):
        return "-"
    if scale == 1:
        return "1 (the documented sizes)"
    return f"{scale:g} of the documented sizes and file counts"


def _test_id(t: Mapping[str, Any]) -> str:
    return str(t["test"]).rsplit("/", 1)[-1]


def build(env: Mapping[str, Any], results: list[Row], comparisons: Iterable[Mapping[str, Any]],
          gated: bool, inconclusive_fails: bool = True,
          failed_tests: Iterable[Mapping[str, Any]] = ()) -> View:
    comparisons = list(comparisons)
    sections = [comparison(c) for c in comparisons]
    behind = in_comparisons(results, comparisons)
    shown = [r for r in results if (str(r["test"]), str(r["name"])) not in behind]
    sections += [s for s in (clients_table(shown), requests_table(shown, env.get("price")),
                             fuse_table(shown), ceilings_table(shown),
                             baseline_checks(results, gated, env),
                             run_comparisons(results)) if s]
    saved = any(r.get("run_comparison") for r in shown)
    head = HEADER + (("vs saved run",) if saved else ())
    extra = ([f"{len(results) - len(shown)} runs of A/B comparisons: in their sections below"]
             if len(shown) < len(results) else [])
    return View(header(env), Table(head, tuple(row(r, saved) for r in shown), frozenset(range(2, 8))),
                tuple(Outcome.of(r.get("verdict")) for r in results),
                tuple(notes(shown) + extra) if results else (), _charts(shown), tuple(sections),
                summary(shown, comparisons, inconclusive_fails, failed_tests),
                timelines(results, comparisons, behind))


def trace(name: str, r: Row) -> Trace | None:
    t = r.get("timeline")
    if not t:
        return None
    ops = t.get("fuse_ops") or {}
    spans = [b - a for a, b in zip(t["t"], t["t"][1:], strict=False)]
    fuse = tuple(sum(row[i] for row in ops.values()) / span if span > 0 else 0.0
                 for i, span in enumerate(spans)) if ops else ()
    return Trace(name, tuple(t["t"][1:]), tuple(b / 1e6 for b in t["bw"]),
                 tuple(x / 1e6 if x is not None else None for x in t["rss"]), tuple(t["cpu"]),
                 tuple((float(sec), ns / 1e6) for sec, ns in t.get("clat") or ()), fuse)


def timelines(results: list[Row], comparisons: list[Mapping[str, Any]],
              behind: set[tuple[str, str]]) -> tuple[TimeChart, ...]:
    """A chart per workload with a timeline; for an A/B, its first A and first B overlaid."""
    by = {(str(r["test"]), str(r["name"])): r for r in results}
    charts = [TimeChart(label(r), (tr,)) for r in results
              if (str(r["test"]), str(r["name"])) not in behind and (tr := trace("", r))]
    for c in comparisons:
        pair = [trace(side, by[key]) for side, names in (("A", c.get("a_results", ())),
                                                          ("B", c.get("b_results", ())))
                if names and (key := (str(c["test"]), str(names[0]))) in by]
        drawn = tuple(tr for tr in pair if tr is not None)
        if drawn:
            charts.append(TimeChart(f"{short_test(c)} {c.get('name', '')}: A and B, first pair",
                                    drawn))
    return tuple(charts)


def spark(r: Row) -> str:
    t = r.get("timeline")
    return sparkline(t["bw"]) if t else ""


def processes_line(r: Row) -> str:
    """A daemon of several processes: each one, and that the figures are their sums."""
    procs = (r.get("daemon") or {}).get("processes") or []
    if not procs:
        return ""
    each = "; ".join(
        f"{p['role']} PID {p['pid']}: {p['cpu_seconds']:.2f} CPU-s, peak "
        + (units.format_mb(p["peak_rss_bytes"]) if p.get("peak_rss_bytes") is not None else "-")
        for p in procs)
    return f"daemon of {len(procs)} processes, figures summed: {each}"


def own_counters_line(r: Row) -> str:
    """What the daemon says of itself over the window (JuiceFS's .stats)."""
    c = r.get("daemon_counters")
    if not c:
        return ""
    parts = [f"{c.get('fuse_ops', 0):,.0f} FUSE ops", f"{c.get('meta_transactions', 0):,.0f} "
             "metadata transactions"]
    if "blockcache_hits" in c:
        parts.append(f"block cache {c['blockcache_hits']:,.0f} hits, "
                     f"{c.get('blockcache_misses', 0):,.0f} misses")
    if "cpu_seconds" in c:
        parts.append(f"its own CPU {c['cpu_seconds']:.2f} s")
    if "memory_bytes" in c:
        parts.append(f"memory {units.format_mb(c['memory_bytes'])}")
    return "JuiceFS .stats: " + ", ".join(parts)
