"""The report's tables beside the results: object requests, FUSE requests, ceilings,
clients, comparisons, baselines, saved runs."""

from __future__ import annotations

import os

from pytest_fsperf import units
from pytest_fsperf.figures import METRICS, Fig
from pytest_fsperf.report import fuseview
from pytest_fsperf.report.cells import daemon_cells, rate_cells
from pytest_fsperf.report.model import (
    Bar,
    Chart,
    Row,
    Section,
    Table,
    figure_cell,
    label,
    metric_name,
    short_test,
)
from pytest_fsperf.result.comparison import Comparison
from pytest_fsperf.result.environment import Environment, Priced
from pytest_fsperf.result.judged import Described
from pytest_fsperf.result.parts import ClientStats
from pytest_fsperf.scenarios.library import SCENARIOS
from pytest_fsperf.stats import median
from pytest_fsperf.vocab import CompareKind

SHOWN_RUNS = 6  # an A/B of 90 short pairs would print 90 figures per cell


def _runs(metric: str, values: list[float | None]) -> str:
    """A side's runs, in pair order; past SHOWN_RUNS the first ones and a count (all are in
    the JSON file)."""
    shown = ", ".join(figure_cell(metric, v) for v in values[:SHOWN_RUNS])
    more = len(values) - SHOWN_RUNS
    return f"{shown}, ... ({len(values)} runs)" if more > 0 else shown


def requests_table(results: list[Row], price: Priced | None) -> Section | None:
    """Requests by kind, amplification and cost of every workload the store counted for."""
    counted = [r for r in results if r.requests]
    if not counted:
        return None
    currency = next((r.cost.currency for r in counted if r.cost), "")
    head = ("test", "workload", "requests", "GET", "HEAD", "LIST", "PUT", "other",
            "per file", "per MiB", f"cost {currency}".strip(), "per TB moved")
    rows = []
    for r in counted:
        q = r.requests
        assert q is not None  # counted: those with requests
        kinds = q.by_kind
        other = q.total - sum(kinds[k] for k in ("GET", "HEAD", "LIST", "PUT"))
        rows.append((short_test(r), r.name, str(q.total),
                     *(str(kinds[k]) for k in ("GET", "HEAD", "LIST", "PUT")), str(other),
                     *(figure_cell(k, r.median(k)) for k in (Fig.REQ_PER_FILE, Fig.REQ_PER_MIB, Fig.COST,
                                                            Fig.COST_PER_TB))))
    sources = sorted({r.requests.source for r in counted if r.requests})
    lines = [f"counted by {' and '.join(sources)} around each measured window (not layout or "
             "remounts); 'other' includes multipart, COPY and DELETE"]
    if price:
        lines.append(f"cost at {price.title} prices ({price.name}, {price.currency}, "
                     f"checked {price.checked}, {price.origin}); source: {price.source}")
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


def ceilings_table(results: list[Row]) -> Section | None:
    """Each workload as a fraction of what the store, FUSE with nothing behind it and tmpfs
    moved for the same job (--fsperf-ceilings); how each ceiling was measured, once."""
    found = [r for r in results if r.ceilings]
    if not found:
        return None
    rows: list[tuple[str, ...]] = []
    bars: list[Bar] = []  # each workload's share of each ceiling; the tick at 100% is the ceiling
    said: dict[str, str] = {}
    for r in found:
        by_path = {str(c.path): c for c in r.ceilings}
        bw = r.headline.bw_bytes
        cells = []
        for path in CEILING_PATHS:
            c = by_path.get(path)
            if c is None or c.unavailable or not c.bw_bytes:
                cells.append("-")
            else:
                ceiling = units.format_rate(c.bw_bytes)
                cells.append(f"{100 * bw / c.bw_bytes:.0f}% of {ceiling}")
                bars.append(Bar(f"{short_test(r)} {r.name}: of the {path}",
                                100 * bw / c.bw_bytes, limit=100.0,
                                limit_text=f"the {path} ceiling, {ceiling}",
                                failing=r.verdict.failing))
            if c is not None:
                said.setdefault(c.how or c.unavailable, (
                    f"{path}: {c.how} ({c.seconds:.0f} s to measure)" if not c.unavailable
                    else f"{path}: not measured: {c.unavailable}"))
        rows.append((short_test(r), str(r.name), units.format_rate(bw), *cells))
    return Section("Ceilings: the same job straight to the store, through FUSE with nothing "
                   "behind it, and on tmpfs (--fsperf-ceilings or min_efficiency)", tuple(said.values()),
                   Table(("test", "workload", "bandwidth", *CEILING_PATHS), tuple(rows),
                         frozenset({2, 3, 4, 5})),
                   Chart("Share of each ceiling (the tick: the ceiling itself)",
                         METRICS[Fig.EFFICIENCY], tuple(bars)) if bars else None)


def _client_bw(c: ClientStats) -> float:
    return float(sum(d.bw_bytes for d in (c.read, c.write) if d))


def _client_cells(c: ClientStats, whole: float) -> tuple[str, ...]:
    bw = _client_bw(c)
    iops = sum(d.iops for d in (c.read, c.write) if d)
    d = c.daemon
    cpu = (units.format_percent(cpu) if d and (cpu := d.countable_cpu) is not None
           else "-" if d else "not measured")
    mem = units.format_mb(d.peak_rss_bytes) if d else "not measured"
    return (units.format_rate(bw), units.format_count(iops),
            f"{100 * bw / whole:.0f}%" if whole else "-", cpu, mem)


def clients_table(results: list[Row]) -> Section | None:
    """A many-client run: the aggregate, each client under it, and how even they were."""
    many = [r for r in results if r.clients]
    if not many:
        return None
    head: tuple[str, ...] = ("test", "workload", "client", "mount", "bandwidth", "IOPS", "share",
                             "daemon CPU", "daemon peak mem")
    counted = any(c.requests for r in many for c in r.clients)
    if counted:
        head += ("requests",)
    rows: list[tuple[str, ...]] = []
    lines = ["each client: its own mount, daemon and fio server; bandwidth and IOPS as fio "
             "reported for it; share: of the clients' summed bandwidth; the aggregate row is "
             "fio's 'All clients' (its bytes over the longest client's time) and the daemons' sum"]
    for r in many:
        clients = r.clients
        bws = [_client_bw(c) for c in clients]
        summed = sum(bws)
        cpu, mem = daemon_cells(r)
        bw, rate = rate_cells(r)
        q = r.requests
        rows.append((short_test(r), r.name, f"all {len(clients)}", "", bw, rate, "", cpu, mem,
                     *([str(q.total) if q else "-"] if counted else [])))
        rows += [("", "", c.server, c.directory.split(f"{os.sep}fsperf-work-")[0],
                  *_client_cells(c, summed),
                  *([str(c.requests.total) if c.requests else "-"] if counted else []))
                 for c in clients]
        if len(bws) > 1 and max(bws):
            lines.append(f"{label(r)}: imbalance {100 * (1 - min(bws) / max(bws)):.0f}% (the "
                         f"slowest client {units.format_rate(min(bws))}, the fastest "
                         f"{units.format_rate(max(bws))})")
    if counted:
        lines.append("requests: the object requests each client's daemon counted itself "
                     "(JuiceFS's .stats); the aggregate row's as in Object-store requests")
    return Section("Clients", tuple(lines), Table(head, tuple(rows), frozenset(range(4, len(head)))))


def comparison(c: Comparison) -> Section:
    """One A/B comparison: medians side by side, B/A over the pairs, and the runs behind them."""
    a = " ".join(c.a_options) or "(defaults)"
    b = " ".join(c.b_options) or "(defaults)"
    rows = []
    for metric, m in c.metrics.items():
        ratio = f"{m.ratio:.2f}" if m.ratio is not None else "-"
        band = "-"
        if m.ci_low is not None and m.ci_high is not None:
            level = f"{100 * m.level:.4g}%{' anytime' if m.anytime else ''}: " if m.level else ""
            band = f"{level}{m.ci_low:.2f}-{m.ci_high:.2f}"
        rows.append((metric_name(metric), figure_cell(metric, m.a_median),
                     figure_cell(metric, m.b_median), ratio, band, str(m.outcome),
                     _runs(metric, list(m.a)), _runs(metric, list(m.b))))
    table = Table(("metric", "A median", "B median", "B/A", "interval", "outcome", "A runs",
                   "B runs"), tuple(rows), frozenset((1, 2, 3)))
    bw = c.metrics.get(Fig.BW)
    chart = None
    if bw:
        # each pair's A and B side by side: the pairs are what is judged
        bars = [Bar(f"pair {i + 1} {side.upper()}", v, side)
                for i, (a_run, b_run) in enumerate(zip(bw.a, bw.b, strict=True))
                for side, v in (("a", a_run), ("b", b_run)) if v]
        chart = Chart("bandwidth per pair, A (blue) beside B (red)", METRICS[Fig.BW], tuple(bars))
    what = "release gate" if c.kind.is_gate else "A/B"
    cold = "page-cache drop" if c.kind == CompareKind.MOUNT_GATE else "cold remount"
    how = f"{c.rounds} pairs, order {c.order}, {cold} before each run"
    if c.placement:
        how += f", {c.placement}"
    if c.machine:
        how += f"; {c.machine}"
    if c.stopped:
        how += f"; {c.stopped} ({c.seconds:.0f} s)"
    lines: tuple[str, ...] = (f"A: {a}", f"B: {b}")
    if c.decided_by:
        deciding = c.deciding or (c.decided_by,)
        names = ", ".join(metric_name(f) for f in deciding)
        lines += (f"decided on {names}{' together' if len(deciding) > 1 else ''}: the comparison "
                  f"is {metric_name(c.decided_by)}'s outcome (any figure worse decides, then a "
                  "request shape changed, then any undecided); B/A is the geometric mean of the "
                  "pairs' ratios; interval: on their logs, paired t (judged once) or an anytime "
                  "confidence sequence (looked at after every pair, valid at every look)",
                  "the other figures' outcomes are shown for information (an 'inconclusive' "
                  "among them does not make the comparison undecided)")
        if c.accepted:
            lines += (f"accepted by the test (gate_accept): {', '.join(map(metric_name, c.accepted))}"
                      " may change",)
    lines += tuple(line for line in (
        c.short, c.needed and f"inconclusive: {c.needed}",
        c.unstable and f"the measurement is unstable, nothing decided: {c.unstable}", c.crashed,
        c.where and ("where, in the FUSE requests (medians of each side's runs): "
                     + "; ".join(c.where)),
        c.profile and ("where, in the daemon's profile (share of its samples, A -> B): "
                       + "; ".join(p.removeprefix("daemon samples: ") for p in c.profile)),
        c.profile_note,
        c.dropped and (f"{len(c.dropped)} runs not used (x in the order: a pair dropped): "
                       + "; ".join(c.dropped)),
        c.expectation and "documented gain " + c.expectation.message()) if line)
    profiles = c.profiles
    return Section(f"{what} {short_test(c)} {c.name} on {c.backend}: {how}", lines, table, chart,
                   profiles if profiles and profiles.get("A") and profiles.get("B") else None)


def baseline_checks(results: list[Row], gated: bool, env: Environment | None) -> Section | None:
    """Measured / documented per scenario and figure, for every baseline a test named; the
    workloads it has no figure for; where the figures came from."""
    named = [r for r in results if r.baseline or r.baseline_checks]
    if not named:
        return None
    infos = {info.name: info for r in named for info in _infos(r)}
    how = "gated (--fsperf-gate=baseline)" if gated else "shown, not gated (--fsperf-gate=baseline gates)"
    used = " ".join([*(env.daemon.cmdline if env and env.daemon else ()),
                     *(o for r in named if r.mount for o in r.mount.options)])
    lines = [_origin(info, env) + _options_differ(info, used) for info in infos.values()]
    missing = sorted({f"{r.baseline_key} ({r.baseline.name})" for r in named
                      if r.baseline and not r.baseline_checks})
    if missing:
        lines.append(f"no documented figure, not compared: {', '.join(missing)}")
    checked = sorted({c.key for r in named for c in r.baseline_checks})
    lines += [f"{key} {SCENARIOS[key].fidelity}" for key in checked
              if key in SCENARIOS and SCENARIOS[key].differs]
    rows = []
    for r in named:
        for c in r.baseline_checks:  # shown as the failure message shows it
            ratio = f"{c.ratio:.2f}" if c.ratio is not None else "-"
            mark = {True: "ok", False: "below" if c.figure.bigger_is_better else "above", None: ""}[c.ok]
            mark = "; ".join(m for m in (mark, c.note) if m) or "-"
            rows.append((short_test(r), c.key, c.metric, c.measured_shown, c.shown, ratio, mark))
    saved = all(info.origin not in ("shipped", "") for info in infos.values())
    column = "saved" if saved else "documented"
    table = (Table(("test", "scenario", "figure", "measured", column, "ratio", ""), tuple(rows),
                   frozenset((3, 4, 5))) if rows else None)
    return Section(f"baseline {', '.join(infos)}: measured / {column}, {how}", tuple(lines), table)


def _infos(r: Row) -> list[Described]:
    if r.baseline:
        return [r.baseline]
    return [Described(c.baseline) for c in r.baseline_checks]


def _machine_differs(info: Described, env: Environment | None) -> str:
    """The conditions of a baseline's source this machine does not share, named."""
    said = []
    conditions = info.conditions
    cpus, mem = (env.machine.cpus, env.machine.mem_total_bytes) if env else (None, None)
    if conditions.get("vcpu") and cpus and cpus != conditions["vcpu"]:
        said.append(f"{cpus} CPUs here, {conditions['vcpu']} vCPU documented")
    gib = conditions.get("memory_gib")
    if isinstance(gib, int | float) and gib and mem and abs(mem / 2**30 - gib) > 1:
        said.append(f"{mem / 2**30:.0f} GiB here, {conditions['memory_gib']} GiB documented")
    if info.kernel and env and env.kernel != info.kernel:
        said.append(f"kernel {env.kernel} here, {info.kernel} documented")
    return "; ".join(said)


def _options_differ(info: Described, used: str) -> str:
    """The documented mount options not found on this daemon's command line or among the
    options the plugin mounted with (an option inside a config file is not seen here)."""
    documented = info.conditions.get("options")
    missing = [o for o in documented if o not in used] if isinstance(documented, list) else []
    return (f"; documented with {', '.join(missing)}, not seen on this daemon's command line "
            "or mount options" if missing else "")


def _origin(info: Described, env: Environment | None) -> str:
    here = f"measured here at scale {env.scale:g}" if env else "measured here"
    if not info.origin:
        return f"{info.name}: {here}"
    if info.origin == "shipped":
        differ = _machine_differs(info, env)
        return (f"{info.name}: documented at full scale on {info.hardware or '?'}; "
                f"{here}" + (f" ({differ})" if differ else "")
                + ": read the ratios as shapes, not as a verdict on this machine")
    return (f"{info.name}: saved by an earlier run ({info.origin}) at scale "
            f"{info.scale} on {info.hardware or '?'}; {here}")


def run_comparisons(results: list[Row]) -> Section | None:
    """This run against a saved one, per workload: the outcome and the ratio behind it."""
    found = [(r, c) for r in results if (c := r.run_comparison) is not None]
    if not found:
        return None
    rows, bars = [], []
    for r, c in found:
        ratio = f"{c.ratio:.3f}" if c.ratio is not None else "-"
        band = f"{c.ci_low:.3f}-{c.ci_high:.3f}" if c.ci_low is not None and c.ci_high is not None else "-"
        outcome = str(c.outcome) + (f" ({', '.join(c.differs)} differ)" if c.differs else "")
        rows.append((short_test(r), r.name, c.metric, ratio, band, f"{len(c.new)} vs {len(c.old)}",
                     outcome))
        if c.ratio is not None:
            bars += [Bar(f"{label(r)} saved", median(c.old), "saved"),
                     Bar(f"{label(r)} now", median(c.new), "now")]
    table = Table(("test", "workload", "figure", "ratio", "interval", "rounds", "outcome"), tuple(rows))
    return Section(f"against saved run {found[0][1].run!r} (median ratio this / saved, 95% interval)",
                   (), table, Chart("median, saved against now", METRICS[Fig.BW], tuple(bars)))
