"""`fsperf bisect`'s command line and its reports (terminal, JSON, HTML)."""

from __future__ import annotations

import argparse
import html
import json
import os
import shlex
import signal
from pathlib import Path

from pytest_fsperf import units
from pytest_fsperf.bisect.plan import Plan
from pytest_fsperf.bisect.run import Bisection, git, line, resolve, run
from pytest_fsperf.errors import UsageError
from pytest_fsperf.infra import outfile, trust

EXIT = ("exit codes: 0 a first bad commit named; 1 no regression between good and bad (that "
        "gate decided: same or not worse), or none named (skips, time); 3 the first gate (bad "
        "against good) could not decide: nothing bisected; 4 a usage error")


def seconds(text: str) -> float:
    """An argparse type: seconds above 0, at most a week, written plainly."""
    try:
        value = units.plain_number(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    if not 0 < value <= 7 * 86_400:
        raise argparse.ArgumentTypeError(f"{text[:30]!r} must be above 0 and at most a week")
    return value


def add(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser(
        "bisect", formatter_class=argparse.RawDescriptionHelpFormatter, epilog=EXIT,
        help="the commit that made it slower: git bisect driven by the release gate",
        description="Bisects --good..--bad of the filesystem's repository in a private worktree "
                    "(your checkout is not touched): each step builds the midpoint (--build, "
                    "cached by commit) and gates it against the good build in one pytest "
                    "session (interleaved pairs, cold starts). B worse: bad; same or not worse: "
                    "good; undecided: measured once more with twice the time, then skipped; a "
                    "build that fails: skipped. Bad is gated against good first: without a "
                    "regression there is nothing to bisect.")
    p.add_argument("--repo", default=".", help="the filesystem's git checkout (default .)")
    p.add_argument("--good", required=True, metavar="REV", help="a commit known fast")
    p.add_argument("--bad", required=True, metavar="REV", help="a commit known slow")
    p.add_argument("--build", required=True, metavar="COMMAND",
                   help="builds the daemon in a checkout's root (sh -c), e.g. 'make'")
    p.add_argument("--binary", required=True, metavar="PATH",
                   help="the daemon it builds, relative to the checkout (copied to the cache)")
    p.add_argument("--backend", required=True, metavar="NAME",
                   help="how the plugin mounts a build (--fsperf-backend)")
    p.add_argument("--test", required=True, metavar="ARGS",
                   help="what to measure, as pytest arguments: a node id "
                        "('perf/test_read.py::test_read') or a shipped scenario "
                        "('--pyargs pytest_fsperf.suites.ossfs2 -k seq_read_1t')")
    p.add_argument("--step-seconds", type=seconds, default=300.0, metavar="S",
                   help="each step's gate budget (default 300; doubled once when undecided)")
    p.add_argument("--seconds", type=seconds, default=3600.0, metavar="S",
                   help="the whole bisection's (default 3600)")
    p.add_argument("--tolerance", default="10%", metavar="PERCENT", help="default 10%%")
    p.add_argument("--json", metavar="PATH", help="write the steps and the answer as JSON")
    p.add_argument("--html", metavar="PATH", help="write them as an HTML page")


def plan_of(a: argparse.Namespace, extra: list[str]) -> Plan:
    repo = os.path.realpath(a.repo)
    if not os.path.isdir(os.path.join(repo, ".git")) and not os.path.isfile(os.path.join(repo, ".git")):
        raise UsageError(f"fsperf bisect: --repo {a.repo!r} is not a git checkout")
    for name in ("step_seconds", "seconds"):
        if not 0 < getattr(a, name) <= 86400:
            raise UsageError(f"fsperf bisect: --{name.replace('_', '-')} must be from 0 to 86400")
    try:
        test = tuple(shlex.split(a.test))
        tolerance = units.parse_tolerance(a.tolerance)
    except ValueError as exc:
        raise UsageError(f"fsperf bisect: --test or --tolerance: {exc}") from None
    git(repo, "rev-parse", "--git-dir")  # git's own refusal (another user's checkout) said
    return Plan(repo, resolve(repo, a.good, "good"), resolve(repo, a.bad, "bad"), a.build,
                a.binary, a.backend, tuple(_test_path(w) for w in test), a.step_seconds,
                a.seconds, tolerance, tuple(extra))


def _test_path(word: str) -> str:
    """A test file named relative to here, made absolute (the gate runs in the repository),
    and checked: root runs it, and the conftest.py files beside it."""
    head, sep, rest = word.partition("::")
    if word.startswith("-") or not head or not os.path.exists(head):
        return word
    real, why = trust.resolved(head)
    if why:
        raise UsageError(f"fsperf bisect: --test {head}: {why}; it would run as you")
    return real + sep + rest


def _stop(signum: int, _frame: object) -> None:
    raise SystemExit(128 + signum)  # unwinds: the worktree and its bisect state are removed


def main(a: argparse.Namespace) -> int:
    plan = plan_of(a, list(a.pytest_args))
    signal.signal(signal.SIGTERM, _stop)
    try:
        result = run(plan)
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
    print(f"fsperf bisect: {result.verdict}")
    print(f"  {result.sure}; {len(result.steps)} steps, {result.seconds:.0f} s")
    if a.json:
        outfile.write(Path(a.json), json.dumps(result.to_dict(), indent=1) + "\n")
    if a.html:
        outfile.write(Path(a.html), page(result))
    return 0 if result.first_bad else 3 if result.undecided else 1


def page(b: Bisection) -> str:
    rows = "".join(
        f"<tr><td><code>{html.escape(s.commit[:12])}</code></td><td>{html.escape(s.verdict)}</td>"
        f"<td>{'' if s.ratio is None else f'{s.ratio:.3f}'}</td>"
        f"<td>{'' if s.low is None or s.high is None else f'{s.low:.3f}-{s.high:.3f}'}</td>"
        f"<td>{s.pairs}</td><td>{s.seconds:.0f} s</td><td>{html.escape(s.why)}"
        f"{' (on the edge)' if s.edge else ''}</td><td>{html.escape(s.subject)}</td></tr>"
        for s in b.steps)
    return ("<!doctype html><meta charset=utf-8><title>fsperf bisect</title>"
            "<style>body{font:14px sans-serif;margin:2em}td,th{padding:2px 8px;text-align:left}"
            "</style>"
            f"<h1>fsperf bisect: {html.escape(b.verdict)}</h1><p>{html.escape(b.sure)}; "
            f"{len(b.steps)} steps, {b.seconds:.0f} s; {html.escape(b.plan.good[:12])}.."
            f"{html.escape(b.plan.bad[:12])}</p><table><tr><th>commit</th><th>verdict</th>"
            "<th>B/A</th><th>interval</th><th>pairs</th><th>time</th><th>why</th><th>subject</th>"
            f"</tr>{rows}</table>\n")


__all__ = ["add", "line", "main"]
