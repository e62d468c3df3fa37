"""The one view of a session's results that every renderer draws: tables of cells, notes,
charts of figures. Figures are named, formatted and directed by the metric registry; the
terminal, Markdown and HTML renderers only lay this out."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from pytest_fsperf import units
from pytest_fsperf.figures import METRICS, Fig
from pytest_fsperf.judge.paired import ALPHA
from pytest_fsperf.plan.conditions import conditions_text
from pytest_fsperf.report import fuseview
from pytest_fsperf.report.cells import bounded, row
from pytest_fsperf.report.charts import bar_charts, timelines
from pytest_fsperf.report.model import (
    HEADER,
    Row,
    Table,
    View,
    label,
    metric_name,
    short_test,
)
from pytest_fsperf.report.tables import (
    baseline_checks,
    ceilings_table,
    clients_table,
    comparison,
    fuse_table,
    requests_table,
    run_comparisons,
)
from pytest_fsperf.result import readers
from pytest_fsperf.result.comparison import Comparison
from pytest_fsperf.result.daemon import SHORT_WINDOW, countable_cpu
from pytest_fsperf.result.document import FailedTest, ResultRow
from pytest_fsperf.result.environment import Environment, FuseKernel
from pytest_fsperf.vocab import Decision, Difference, Outcome


def in_comparisons(results: list[Row], comparisons: Iterable[Comparison]) -> set[tuple[str, str]]:
    """The runs behind A/B comparisons (shown in their sections, not as workloads)."""
    return {(c.test, name) for c in comparisons for name in (*c.a_results, *c.b_results, *c.runs)}


def unexplained(results: Sequence[Row], failed_tests: Iterable[FailedTest],
                comparisons: Iterable[Comparison] = (), unsure_fails: bool = True,
                changed_fails: bool | None = None) -> list[FailedTest]:
    """Failed tests whose failure no failing workload row (or undecided verdict or A/B, where
    those fail their tests) explains: an error in setup or teardown, or a test that failed
    without one (no space left, a crashed daemon, the user's own assertion)."""
    changed = unsure_fails if changed_fails is None else changed_fails
    explained = {r.test for r in results if (v := r.verdict).failing or (
        v.unsure and (changed if v is Outcome.MACHINE_CHANGED else unsure_fails))}
    explained |= {c.test for c in comparisons if c.open_question and unsure_fails}
    return [t for t in failed_tests if t.when != "call" or t.test not in explained]


def summary(results: list[Row], comparisons: Iterable[Comparison],
            inconclusive_fails: bool,
            failed_tests: Iterable[FailedTest] = ()) -> tuple[Decision, tuple[str, ...]]:
    """The decision first: what failed and why, what could not be decided, every A/B, and
    every test that failed for a reason no workload shows (the decision is never greener
    than pytest)."""
    comparisons = list(comparisons)
    errors = unexplained(results, failed_tests, comparisons, inconclusive_fails)
    verdicts = [r.verdict for r in results]
    open_ab = sum(c.open_question for c in comparisons)
    failing = sum(v.failing for v in verdicts)
    unsure = sum(v.unsure for v in verdicts)
    passed = sum(v is Outcome.PASS for v in verdicts)
    in_part = sum(v is Outcome.PARTIAL for v in verdicts)  # passed what could be judged
    partial = [n for r, v in zip(results, verdicts, strict=True)
               if v == Outcome.PARTIAL for n in r.not_judged or ()]
    decided_ab = [c for c in comparisons if _decided(c)]
    if failing or errors or ((unsure or open_ab) and inconclusive_fails):
        decision = Decision.FAIL
    elif unsure or open_ab:
        decision = Decision.WARNINGS
    elif not passed and not in_part and not decided_ab:
        decision = Decision.NOTHING_JUDGED
    elif in_part:
        decision = Decision.PARTIAL
    else:
        decision = Decision.PASS
    said = (f"{decision} ({'; '.join(sorted(set(partial)))})" if decision is Decision.PARTIAL and partial
            else str(decision))
    how = ""
    if unsure:
        how = (" (these fail their tests: --fsperf-inconclusive=fail)" if inconclusive_fails
               else " (warnings: --fsperf-inconclusive=warn)")
    count = f"{len(results)} workload{'' if len(results) == 1 else 's'}"
    lines = [f"{said}: {count}: {failing} failing, {unsure} inconclusive"
             f"{how}, {passed} passed" + (f", {in_part} passed in part" if in_part else "")
             + f", {len(results) - failing - unsure - passed - in_part} not judged"
             + (f"; {len(comparisons)} comparison{'' if len(comparisons) == 1 else 's'}: "
                f"{len(decided_ab)} decided, {len(comparisons) - len(decided_ab)} undecided"
                + (f" ({open_ab} of them {'fail' if inconclusive_fails else 'warn'}: "
                   f"--fsperf-inconclusive={'fail' if inconclusive_fails else 'warn'})"
                   if open_ab else "")
                if comparisons else "")
             + (f"; {len(errors)} test{'' if len(errors) == 1 else 's'} failed or errored"
                if errors else "")]
    lines += [f"FAIL: {t.test.rsplit('/', 1)[-1]} ({t.when}): {t.message}" for t in errors]
    for r, v in zip(results, verdicts, strict=True):
        if v.failing or v.unsure:
            lines += [f"{v}: {short_test(r)} {line}" for line in r.failures or [r.name]]
    for c in comparisons:
        m = c.metrics.get(c.decided_by or Fig.BW)
        if not m or m.ratio is None:
            continue
        band = (f", {m.interval} {m.ci_low:.3f} to {m.ci_high:.3f}"
                if m.ci_low is not None and m.ci_high is not None else "")
        lines.append(f"{'release gate' if c.kind.is_gate else 'A/B'} {short_test(c)} {c.name}: "
                     f"{metric_name(m.metric)} B/A {m.ratio:.3f}{band}: {m.outcome} "
                     f"({c.rounds} pairs)")
    return decision, tuple(lines)


def time_spent(comparisons: Iterable[Comparison], budget: float | None,
               elapsed: float | None) -> list[str]:
    """How a gated session's time went: each gated workload's seconds, pairs and outcome,
    against the session's budget (--fsperf-gate-seconds) where it has one."""
    gates = [c for c in comparisons if c.kind.is_gate]
    if not gates:
        return []
    spent = sum(c.seconds for c in gates)
    each = "; ".join(
        f"{short_test(c)} {c.name} {c.seconds:.0f} s, {c.rounds} pairs, "
        f"{m.outcome if (m := c.metrics.get(c.decided_by or Fig.BW)) else '-'}"
        for c in gates)
    whole = f" of the session's {elapsed:.0f} s" if elapsed is not None else ""
    cap = f" (budget {budget:.0f} s, --fsperf-gate-seconds)" if budget is not None else ""
    held = (f"false alarms: at most {100 * ALPHA:g}% for the session's gated workloads together, "
            "each flagging at its share of it (split over the session's tests: "
            "docs/explanation/statistics.md)")
    return [f"time: {len(gates)} gated workload{'' if len(gates) == 1 else 's'} took "
            f"{spent:.0f} s{whole}{cap}: {each}", held]


def _decided(c: Comparison) -> bool:
    """An A/B or gate that reached an outcome on its deciding figure (and is not unstable)."""
    m = c.metrics.get(c.decided_by or Fig.BW)
    return bool(c.crashed) or (m is not None and not c.unstable
                               and m.outcome != Difference.INCONCLUSIVE)


def latency_notes(results: list[Row]) -> list[str]:
    """Which latency fio's p99 is: total unless the test asked for completion latency."""
    kinds = {(label(r), d.lat_kind) for r in results for d in (r.read, r.write)
             if d is not None and d.lat_kind}
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
    if any(not r.daemon for r in results):
        seen = sorted({r.daemon_note for r in results if not r.daemon})
        out += [f"daemon figures missing: {n}" for n in seen]
    if any(r.daemon and r.daemon.peak_rss_method != "VmHWM" for r in results):
        out.append("(sampled): the kernel refused to reset VmHWM; peak memory is the highest "
                   "RSS sampled every 0.25 s and may miss short peaks")
    if any(d and countable_cpu(d.cpu_window_seconds or d.wall_seconds, 0.0, d.cpu_exact) is None
           for r in results if (d := r.daemon)):
        out.append(f"daemon CPU '-': I/O ran under {SHORT_WINDOW:g} s, too short for CPU "
                   "time counted in 10 ms ticks")
    if any(r.daemon and r.daemon.cpu_window == "I/O" for r in results):
        out.append("daemon CPU: over the time I/O ran, not the tool's start-up and teardown")
    out += latency_notes(results)
    out += _folded([(label(r), n) for r in results for n in r.notes])
    out += [f"{label(r)}: {line}" for r in results if (line := processes_line(r))]
    out += [f"{label(r)}: {line}" for r in results if (line := own_counters_line(r))]
    out += [f"{label(r)}: {line}" for r in results if (line := requests_line(r))]
    out += fuseview.unavailable(results)
    out += [f"{label(r)}: daemon cache disk peak {units.format_mb(r.cache_disk_peak_bytes)}"
            for r in results if r.cache_disk_peak_bytes]  # 0: no cache disk was used
    rounds = sorted({len(r.rounds) for r in results if r.rounds})
    if rounds:
        out.append(f"over {', '.join(map(str, rounds))} rounds: figures are medians; [low-high]: "
                   "the 95% interval of the median, which threshold verdicts use")
    out += load_generator_lines(results)
    out += memory_lines(results)
    out.append("CPU: 100% = one fully busy core; bandwidth and memory in powers of 1000")
    return list(dict.fromkeys(out))  # each note once


def load_generator_lines(results: list[Row]) -> list[str]:
    """The load generator's own CPU beside the daemon's, over the window: fio's processes for
    fio; for the engines the plugin's whole process (its meters too) and the compiled worker.
    And where small files were moved by Python threads, why."""
    each = [f"{label(r)} {units.format_percent(r.tool_cpu_percent)}" for r in results
            if r.tool_cpu_percent is not None and r.judged]
    out = ([f"load generator CPU (fio's processes; for the engines the plugin's process and its "
            f"worker): {', '.join(each)}"] if each else [])
    python = sorted({r.ops.generator for r in results
                     if r.ops and r.ops.generator.startswith("python (")})
    out += [f"small files moved by Python threads, not the compiled worker: {g[len('python ('):-1]}"
            for g in python]
    return out


def memory_lines(results: list[Row]) -> list[str]:
    """A daemon run under a memory limit: its cgroup's peak against the limit, OOM kills."""
    each = []
    for r in results:
        m = r.memory
        if not m or not m.limit:
            continue
        peak = f"peak {units.format_mb(m.peak)} of " if m.peak is not None else ""
        kills = f", {m.oom_kills} OOM kills" if m.oom_kills else ""
        each.append(f"{label(r)} {peak}{units.format_limit(m.limit)}{kills}")
    out = ([f"daemon memory limit (its cgroup's own counters, page cache it owns included): "
            f"{', '.join(each)}"] if each else [])
    back = [f"{label(r)} {units.format_mb(r.rss_before)} before, {units.format_mb(r.rss_after)} "
            "after" for r in results if r.rss_after is not None and r.rss_before is not None]
    if back:
        out.append(f"daemon memory given back (RSS just before the window, and settled after "
                   f"it): {', '.join(back)}")
    taken = [f"{label(r)} {units.format_mb(r.page_cache)}" for r in results if r.page_cache is not None]
    if taken:
        out.append(f"page cache taken (charged to fio's processes, at the window's end): "
                   f"{', '.join(taken)}")
    return out


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
    q = r.requests
    if not q:
        note = r.requests_note
        return f"object-store requests not available: {note}" if r.mount and note else ""
        # (an existing mount's note stays in the JSON: its store is not the plugin's to know)
    parts = []
    # a HEAD answered 4xx is a lookup of a name not there yet (how s3fs creates a file): said
    # apart from the errors, which are what else the store refused or failed
    lookups = min(q.errors_by_kind.get("HEAD", 0), q.errors_4xx)
    if lookups:
        parts.append(f"{lookups} lookup{'s' * (lookups > 1)} of names not there (HEAD answered 4xx)")
    errors = q.errors_4xx - lookups + q.errors_5xx
    if errors:
        parts.append(f"{errors} answered with errors: {q.errors_4xx - lookups} 4xx, "
                     f"{q.errors_5xx} 5xx"
                     + (" (a 503 SlowDown is a 5xx: the store throttled)" if q.errors_5xx else ""))
    if q.errors_unclassified:
        parts.append(f"{q.errors_unclassified} failed ({q.source} does not say how)")
    if q.sent_bytes is not None:
        parts.append(f"store sent {units.format_size(q.sent_bytes)}, received "
                     f"{units.format_size(q.received_bytes or 0)}")
    stored = readers.READ[Fig.STORED_BW](r)  # this row's own, as its line names its time
    if stored is not None and q.stored_after is not None:
        parts.append(f"what it wrote was in the store {q.stored_after:.2f} s after its writes "
                     f"began: {units.format_rate(stored)} to the store")
    if q.get_bytes_mean:
        parts.append(f"GETs of {units.format_size(q.get_bytes_mean)} on average")
    if q.conditions:
        parts.append("under the store conditions " + conditions_text(q.conditions))
    if q.ttfb_at_most:
        parts.append("server TTFB " + ", ".join(
            f"{k} <= {units.format_duration(v * 1e9)}" for k, v in q.ttfb_at_most.items()))
    cost = r.cost
    if cost and cost.egress:
        parts.append(f"egress {units.format_money(cost.egress)} {cost.currency} "
                     "were it served to the internet")
    return f"object-store requests {q.total}: " + "; ".join(parts) if parts else ""


def header(env: Environment | None) -> tuple[tuple[str, str], ...]:
    """What was measured, where and when: the facts a reader needs before any figure."""
    if env is None:  # no workload ran: no `?: None CPUs (None)` to print
        return (("measured", "nothing: no workload ran, so no machine, mount or tools to show"),)
    m, mount, daemon, backend = env.machine, env.mount, env.daemon, env.backend
    path, point = (mount.path, mount.mount_point) if mount else ("?", "?")
    fs = f"{mount.fstype if mount else '?'} at {path}" + (f", mounted at {point}" if point != path else "")
    if env.embedded_default:
        fs += "; the embedded default: a fresh directory on the local disk, no FUSE daemon"
    source = (mount.source if mount else "") or "-"
    if env.source_note:
        source += f" ({env.source_note})"
    mem = m.mem_total_bytes
    facts = [
        ("filesystem", fs),
        ("backend", f"{backend}, mounted by the plugin" if backend else "an existing mount"),
        ("source", source),
        ("mount options", (" ".join(o for o in (mount.options, mount.super_options) if o)
                           if mount else "") or "-"),
        ("daemon", (f"{' '.join(daemon.cmdline)} (PID {daemon.pid})"
                    if daemon else env.daemon_note or "none found")),
        ("machine", f"{m.hostname}: {m.cpus} CPUs ({m.cpu_model}), "
                    + (f"{float(mem) / 2**30:.0f} GiB RAM, " if mem else "")
                    + f"{env.os or '?'}, kernel {env.kernel}"),
        *((("kernel FUSE", fuse_facts(env.fuse_kernel)),) if env.fuse_kernel else ()),
        ("tools", f"fio {env.fio or '-'}, pytest-fsperf {env.pytest_fsperf}"),
        ("date", env.date or "-"),
        ("scale", _scale(env.scale)),
    ]
    return tuple(facts)


def store_fact(results: Sequence[Row]) -> tuple[tuple[str, str], ...]:
    """The store conditions the plugin's mounts ran under (round trip, first byte, limits,
    TLS), as the header names the scale: one line, each set of conditions with its rows;
    none where no row ran under any (a bare store, a backend with no store, a mount given)."""
    counts: dict[str, int] = {}
    for r in results:
        if r.mount is not None:
            counts[r.mount.store] = counts.get(r.mount.store, 0) + 1
    if not any(counts):
        return ()
    if len(counts) == 1:
        return (("store", next(iter(counts))),)
    return (("store", "; ".join(f"{k or 'none'} ({n} row{'s' * (n > 1)})"
                                for k, n in counts.items())),)


def elsewhere(env: Environment | None, results: Sequence[Row]) -> tuple[tuple[str, str], ...]:
    """The mounts the plugin made for some tests (a marker's backend, fsperf_mount): the
    header's filesystem is the session's, and those rows ran elsewhere."""
    session = env.backend if env is not None else None
    counts: dict[str, int] = {}
    for r in results:
        if r.mount is not None and r.mount.backend != session:
            key = r.mount.backend + (f" under {r.mount.store}" if r.mount.store else "")
            counts[key] = counts.get(key, 0) + 1
    if not counts:
        return ()
    return (("also ran on", ", ".join(f"{k} ({n} row{'s' * (n > 1)})" for k, n in counts.items())
             + ": mounted by the plugin for their tests (each row's mount in the JSON)"),)


def fuse_facts(k: FuseKernel) -> str:
    pages = k.max_pages_limit
    return (f"requests up to {pages} pages (fs.fuse.max_pages_limit)" if pages else
            "max_pages_limit unknown") + f"; io_uring: {k.io_uring}; passthrough: {k.passthrough}"


def _scale(scale: object) -> str:
    if not isinstance(scale, int | float):
        return "-"
    if scale == 1:
        return "1: sizes and file counts as written (a shipped scenario's documented ones, or your test's)"
    return (f"{scale:g}: sizes and file counts as written times {scale:g} (a shipped scenario's "
            "documented ones, or your test's)")


def build(env: Environment | None, given: Sequence[ResultRow],
          given_comparisons: Iterable[Comparison], gated: bool,
          inconclusive_fails: bool = True,
          failed_tests: Iterable[FailedTest] = (),
          clock: tuple[float | None, float | None] = (None, None)) -> View:
    """The view of a session: its results (their JSON form, made into rows here, once), its
    A/B comparisons, and the tests that failed."""
    results, comparisons = list(given), list(given_comparisons)
    sections = [comparison(c) for c in comparisons]
    behind = in_comparisons(results, comparisons)
    shown = [r for r in results if (str(r.test), str(r.name)) not in behind]
    sections += [s for s in (clients_table(shown), requests_table(shown, env.price if env else None),
                             fuse_table(shown), ceilings_table(shown),
                             baseline_checks(results, gated, env),
                             run_comparisons(results)) if s]
    saved = any(r.run_comparison for r in shown)
    extra = bounded(shown)
    head = (*HEADER[:8], *(METRICS[key].column for key in extra), *HEADER[8:],
            *(("vs saved run",) if saved else ()))
    told = ([f"{len(results) - len(shown)} runs of A/B comparisons: in their sections below"]
            if len(shown) < len(results) else [])
    decision, said = summary(shown, comparisons, inconclusive_fails, failed_tests)
    told += time_spent(comparisons, *clock)
    return View(header(env) + store_fact(results) + elsewhere(env, results),
                Table(head, tuple(row(r, saved, extra) for r in shown),
                      frozenset(range(2, 8 + len(extra)))),
                tuple(r.verdict for r in results),
                tuple(notes(shown) + told) if results else (),
                bar_charts(shown, references(results, shown, comparisons)), tuple(sections),
                said, timelines(results, comparisons, behind), decision)


def references(results: list[Row], shown: list[Row],
               comparisons: list[Comparison]) -> dict[tuple[str, str], Row]:
    """Each gated workload shown (test, name) -> its reference's (A's) first run, for the
    charts."""
    by = {(str(r.test), str(r.name)): r for r in results}
    out: dict[tuple[str, str], Row] = {}
    for c in comparisons:
        if not c.kind.is_gate or not c.a_results:
            continue
        b = next((r for r in shown if r.test == c.test and r.name == c.name), None)
        a = by.get((c.test, c.a_results[0]))
        if a is not None and b is not None:
            out[(str(b.test), str(b.name))] = a
    return out


def processes_line(r: Row) -> str:
    """A daemon of several processes: each one, and that the figures are their sums."""
    procs = r.daemon.processes if r.daemon else ()
    if not procs:
        return ""
    each = "; ".join(
        f"{p.role} PID {p.pid}: {p.cpu_seconds:.2f} CPU-s, peak "
        + (units.format_mb(p.peak_rss_bytes) if p.peak_rss_bytes is not None else "-")
        for p in procs)
    return f"daemon of {len(procs)} processes, figures summed: {each}"


def own_counters_line(r: Row) -> str:
    """What the daemon says of itself over the window (JuiceFS's .stats)."""
    c = r.daemon_counters
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
