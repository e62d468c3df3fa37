"""One pull-request comment from a session's JSON: the decision first, a line per compared
workload (B/A, interval, outcome, pairs, time, where B's time went when it is worse), what
else failed, the cost, a link to the artifacts. It fits GitHub's 65,536 characters whatever
the number of workloads; the same text serves as the job summary. `fsperf comment` prints it
and exits with the code of the decision (vocab.ExitCode)."""

from __future__ import annotations

import re
from collections.abc import Sequence

from pytest_fsperf.figures import METRICS, Fig
from pytest_fsperf.judge.comparison import settled
from pytest_fsperf.judge.paired import ALPHA, PASS_ALPHA, SAME_LEVEL
from pytest_fsperf.report.model import metric_name, short_test
from pytest_fsperf.report.view import build, unexplained
from pytest_fsperf.result.comparison import Comparison, MetricComparison
from pytest_fsperf.result.document import Document
from pytest_fsperf.vocab import Decision, Difference, ExitCode, Outcome

MARKER = "<!-- pytest-fsperf -->"  # how the CI step finds its own comment to update it
LIMIT = 65536  # GitHub's largest comment, in characters
LINE = 2000  # the most characters of the decision, of a link and of any other line
WHERE = 160  # characters of "where the time went" per workload
REFERENCE = re.compile(r"([#!~$%])(?=[\w\"])")  # a sign GitHub or GitLab reads a reference after


def _cell(text: object) -> str:
    """Text safe in a Markdown table cell (no pipe, no new line, no HTML, no link)."""
    text = str(text).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    # no cross-reference: #12, owner/repo#12, GH-12 (GitHub), !12, ~label (GitLab)
    text = REFERENCE.sub(lambda m: f"&#{ord(m.group(1))};", text).replace("GH-", "GH&#45;")
    for c in "\\|[]`":
        text = text.replace(c, "\\" + c)
    # no mention, no bare link (a test id naming @someone or http://... pings or links nothing)
    text = text.replace("@", "&#64;").replace("://", "&#58;//").replace("www.", "www&#46;")
    return text.replace("\n", " ").replace("\r", " ")


def _clip(text: str, most: int) -> str:
    return text if len(text) <= most else text[: most - 1] + "…"


def _deciding(c: Comparison) -> MetricComparison | None:
    return c.metrics.get(c.decided_by or Fig.BW)


def _rank(c: Comparison) -> int:
    """B worse (or crashed) first, then the undecided, then the rest."""
    said = settled(c)
    return 0 if said.worse else 1 if said.undecided else 2


def _line(c: Comparison) -> str:
    m = _deciding(c)
    ratio = f"{m.ratio:.3f}" if m is not None and m.ratio is not None else "-"
    band = "-"
    if m is not None and m.ci_low is not None and m.ci_high is not None:
        named = m.interval
        band = f"{m.ci_low:.3f}-{m.ci_high:.3f}" + (f" ({named})" if named != "interval" else "")
    where = ""
    if settled(c).worse:
        said = [c.crashed] if c.crashed else []
        said += list(c.where[:2])
        said += [p.removeprefix("daemon samples: ") for p in c.profile[:1]]
        where = "; ".join(said)
        where = where if len(where) <= WHERE else where[: WHERE - 1] + "…"
    outcome = str(settled(c))
    shown = f"**{outcome}**" if _rank(c) < 2 else outcome
    name = f"{short_test(c)} {c.name}"
    return (f"| {_cell(name)} | {_cell(metric_name(m.metric if m else Fig.BW))} | "
            f"{_cell(_medians(m))} | {ratio} | {_cell(band)} | {shown} | "
            f"{c.rounds} | {c.seconds:.0f} s | {_cell(where) or '-'} |")


def _medians(m: MetricComparison | None) -> str:
    """'10.0k -> 14.3k files/s': A's and B's medians over the pairs, in the figure's units."""
    metric = METRICS.get(m.metric) if m is not None else None
    if m is None or metric is None or m.a_median is None or m.b_median is None:
        return "-"
    return f"{metric.show(m.a_median)} → {metric.show(m.b_median)}"


HEAD = ("| workload | figure | A → B (medians) | B/A | interval | outcome | pairs | time | "
        "where B's time went |", "|---|---|---|---|---|---|---|---|---|")


def _legend(gates: Sequence[Comparison], not_judged: int) -> list[str]:
    """What the reader needs to read the table: the intervals it shows, and the rows the
    decision counts as not judged."""
    kinds = sorted({m.interval for c in gates if (m := _deciding(c)) and m.ci_low is not None})
    out = []
    if kinds:
        out.append(f"interval: where B/A lies, at the confidence it names ({', '.join(kinds)}). "
                   f"B worse needs the {100 * (1 - ALPHA):g}% interval below 1 - tolerance; same "
                   f"or not worse needs the pass interval ({100 * (1 - PASS_ALPHA):g}% anytime, "
                   f"{100 * SAME_LEVEL:g}% for one look) inside the tolerance: a "
                   "good build is called good sooner than a bad one bad. Anytime intervals stay "
                   "valid however many pairs were looked at.")
    if not_judged:
        out.append(f"not judged: {not_judged} workload{'s' * (not_judged != 1)} measured without "
                   "a threshold of their own" + (" (the reference's runs, A, are among them: "
                   "measured to compare against, never judged themselves)" if gates else ""))
    return out


def render(read: Document, inconclusive_fails: bool, link: str | None = None,
           limit: int = LIMIT) -> str:
    """The comment's Markdown, at most `limit` characters, the decision always first."""
    comparisons = list(read.comparisons)
    view = build(read.environment, read.results, comparisons,
                 gated=False, inconclusive_fails=inconclusive_fails, failed_tests=read.failed_tests)
    decision, *rest = view.summary or (str(view.decision),)
    gates = sorted(comparisons, key=lambda c: (_rank(c), short_test(c), c.name))
    seconds = sum(c.seconds for c in gates)
    pairs = sum(c.rounds for c in gates)
    head = [MARKER, f"### pytest-fsperf: {_clip(_cell(decision), LINE)}", ""]
    if gates:
        kinds = {c.kind.is_gate for c in gates}
        what = "release gate" if kinds == {True} else "comparisons"
        roles = "; B = this change, A = the reference" if what == "release gate" else ""
        head.append(f"{what}: {len(gates)} workload{'s' * (len(gates) != 1)} compared, "
                    f"{pairs} pairs, {seconds:.0f} s{roles}")
        head.append("")
    others = [f"- {_clip(_cell(line), LINE)}" for line in rest
              if not line.startswith(("release gate ", "A/B "))]
    others = [*(f"- {_clip(_cell(line), LINE)}" for line in _accepted(gates)), *others]
    legend = _legend(gates, sum(1 for r in read.results if r.verdict is Outcome.NOT_JUDGED))
    tail = ["", *(f"<sub>{_cell(line)}</sub>" for line in legend)] if legend else [""]
    if link and len(link) <= LINE and not any(c in link for c in " ()<>\n\r"):
        tail.append(f"[The report, the JSON and every figure]({link})")
    if gates:  # what a comparison is; a run of thresholds alone had none
        tail.append("<sub>pytest-fsperf: interleaved pairs, each after a cold start; B/A is the "
                    "geometric mean of the pairs' ratios</sub>")
    return _fit(head, [*HEAD, *map(_line, gates)] if gates else [], others, tail, limit)


def _accepted(gates: Sequence[Comparison]) -> list[str]:
    """Request shapes a test let change (gate_accept=): a reviewer's decision, said."""
    return [f"{short_test(c)} {c.name}: {metric_name(f)} changed "
            f"{m.ratio:.3g}x, accepted by the test (gate_accept)"
            for c in gates for f in c.accepted
            if (m := c.metrics.get(f)) is not None and m.outcome == Difference.CHANGED
            and m.ratio is not None]


def _fit(head: list[str], table: list[str], others: list[str], tail: list[str], limit: int) -> str:
    """Whole lines while they fit, the table's first (it is ranked), then the other lines;
    what is left out is counted."""
    budget = limit - len("\n".join(head + tail)) - 200  # room for the two 'more' lines
    kept_table, budget = _take(table, budget)
    if 0 < len(kept_table) <= len(HEAD):  # no row fits: no header either
        budget += sum(len(x) + 1 for x in kept_table)
        kept_table = []
    kept_others, budget = _take(others, budget)
    body = list(head) + kept_table
    left = len(table) - len(kept_table) - (len(HEAD) if table and not kept_table else 0)
    if left:
        body.append(f"\n… and {left} more workloads: in the artifacts")
    if kept_others:
        body += ["", *kept_others]
    if len(others) > len(kept_others):
        body.append(f"- … and {len(others) - len(kept_others)} more lines: in the artifacts")
    text = "\n".join(body + tail) + "\n"
    if len(text) > limit:  # never past the limit, whatever the lines held
        text = text[: limit - 40].rsplit("\n", 1)[0] + "\n… (cut at the limit)\n"
    return text


def _take(lines: list[str], budget: int) -> tuple[list[str], int]:
    """The first lines that fit in `budget` characters (each with its new line), and what is left."""
    kept: list[str] = []
    for line in lines:
        if len(line) + 1 > budget:
            break
        kept.append(line)
        budget -= len(line) + 1
    return kept, budget


def exit_code(read: Document, inconclusive_fails: bool,
              machine_changed_fails: bool | None = None) -> ExitCode:
    """The decision as a CI branches on it: a failure or regression first, then a changed
    machine, then anything undecided; `warn` makes the undecided pass (the comment still
    says them)."""
    comparisons, results, failed = list(read.comparisons), list(read.results), read.failed_tests
    verdicts = {r.verdict for r in results}
    changed_fails = inconclusive_fails if machine_changed_fails is None else machine_changed_fails
    # B worse decides for a gate; an A/B of the test's own is the test's to assert
    if (any(v.failing for v in verdicts)
            or unexplained(results, failed, comparisons, inconclusive_fails, changed_fails)
            or any(_rank(c) == 0 for c in comparisons if c.kind.is_gate)):
        return ExitCode.FAILED
    if Outcome.MACHINE_CHANGED in verdicts and changed_fails:
        return ExitCode.MACHINE_CHANGED
    undecided = any(v.unsure and v is not Outcome.MACHINE_CHANGED for v in verdicts) or any(
        _rank(c) == 1 for c in comparisons)
    if undecided and inconclusive_fails:
        return ExitCode.INCONCLUSIVE
    view = build(None, results, comparisons, gated=False,
                 inconclusive_fails=inconclusive_fails, failed_tests=failed)
    if view.decision is Decision.NOTHING_JUDGED and not undecided:
        return ExitCode.NOTHING_JUDGED
    return ExitCode.PASS


def describe_codes() -> Sequence[str]:
    return [f"  {int(c):<3} {c.meaning}" for c in ExitCode]
