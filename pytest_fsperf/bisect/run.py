"""`fsperf bisect`: from "it got slower" to "this commit". `git bisect` driven in a private
worktree of the user's repository (its bisect state is that worktree's own: the user's
checkout, branch and state are not touched), each step the midpoint's build gated against
the good build in one pytest session (interleaved pairs, the release gate), builds cached by
commit. B worse: bad; same or not worse: good; undecided: measured once more with twice the
time, then skipped; a build that fails: skipped, and said."""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pytest_fsperf.bisect.builds import Builds, check_repo
from pytest_fsperf.bisect.builds import git as git_program
from pytest_fsperf.bisect.plan import Plan
from pytest_fsperf.errors import UsageError
from pytest_fsperf.figures import Fig
from pytest_fsperf.infra import elf, leftovers
from pytest_fsperf.judge.comparison import settled
from pytest_fsperf.result.comparison import Comparison, MetricComparison
from pytest_fsperf.vocab import BisectVerdict, CompareKind, Settled

SAFE_PATH = "-P" if sys.version_info >= (3, 11) else "-I"  # no cwd on sys.path
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")
EDGE = 0.02  # an interval bound this close to the tolerance's line: decided on the edge


@dataclass(frozen=True)
class Step:
    commit: str
    subject: str
    verdict: BisectVerdict  # good, bad or skip
    why: str
    ratio: float | None = None
    low: float | None = None
    high: float | None = None
    pairs: int = 0
    seconds: float = 0.0
    edge: bool = False  # decided with an interval bound at the tolerance's line


@dataclass
class Bisection:
    plan: Plan
    steps: list[Step] = field(default_factory=list)
    first_bad: str | None = None
    subject: str = ""
    candidates: tuple[str, ...] = ()  # where skips left more than one
    verdict: str = ""
    sure: str = ""
    seconds: float = 0.0
    undecided: bool = False  # the first gate (bad against good) did not decide

    def to_dict(self) -> dict[str, Any]:
        return {"repo": self.plan.repo, "good": self.plan.good, "bad": self.plan.bad,
                "first_bad": self.first_bad, "subject": self.subject,
                "candidates": list(self.candidates), "verdict": self.verdict, "sure": self.sure,
                "seconds": self.seconds, "undecided": self.undecided,
                "steps": [dataclasses.asdict(s) for s in self.steps]}


def git(repo: str, *args: str, check: bool = True) -> str:
    done = subprocess.run([git_program(), "-C", repo, *args], capture_output=True, text=True,
                          check=False, timeout=120)
    if check and done.returncode != 0:
        said = (done.stderr or done.stdout).strip().splitlines()
        first = next((s for s in said if s.startswith(("fatal:", "error:"))), said[-1] if said else "")
        raise UsageError(f"fsperf bisect: git {' '.join(args)}: {first or 'failed'}")
    return done.stdout.strip()


def resolve(repo: str, rev: str, what: str) -> str:
    out = subprocess.run([git_program(), "-C", repo, "rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}"],
                         capture_output=True, text=True, check=False)
    if out.returncode != 0:
        raise UsageError(f"fsperf bisect: --{what} {rev!r} is not a commit of {repo}")
    return out.stdout.strip()


def check(plan: Plan) -> None:
    """The plan makes sense before anything is built (one line each, exit 4)."""
    check_repo(plan.repo)  # root builds what it holds: no other user may change it
    if subprocess.run([git_program(), "-C", plan.repo, "merge-base", "--is-ancestor", plan.good, plan.bad],
                      capture_output=True, check=False).returncode != 0:
        raise UsageError(f"fsperf bisect: --good {plan.good[:12]} is not an ancestor of --bad "
                         f"{plan.bad[:12]}")
    if plan.good == plan.bad:
        raise UsageError("fsperf bisect: --good and --bad are the same commit")
    if os.path.isabs(plan.binary) or ".." in Path(plan.binary).parts:
        raise UsageError(f"fsperf bisect: --binary {plan.binary!r} must be a path inside the checkout")


def gate(plan: Plan, good: str, candidate: str, seconds: float, out: str) -> dict[str, Any]:
    """One pytest session: every workload of the test on both builds, interleaved; the
    comparisons of its JSON (the gate's own process, so a crash here is a step's)."""
    # -P: nothing imported from the working directory (a pytest.py planted there ran as
    # root); run in the repository (checked: no other user can change it), not the caller's
    args = [sys.executable, SAFE_PATH, "-m", "pytest", "-p", "no:cacheprovider", *plan.test,
            f"--fsperf-backend={plan.backend}", f"--fsperf-reference={good}",
            f"--fsperf-candidate={candidate}", f"--fsperf-ab-seconds={seconds:g}",
            f"--fsperf-tolerance={100 * plan.tolerance:g}%", "--fsperf-inconclusive=warn",
            f"--fsperf-json={out}", *plan.pytest_args]
    subprocess.run(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False,
                   timeout=seconds * 4 + 600, cwd=plan.repo,
                   env={**os.environ, "PYTHONSAFEPATH": "1"})
    try:
        doc: dict[str, Any] = json.loads(Path(out).read_text())
    except (OSError, ValueError):
        return {"comparisons": [], "failed_tests": [{"message": "the gate's session wrote no results"}]}
    return doc


def judge(doc: dict[str, Any]) -> tuple[BisectVerdict, str, dict[str, Any]]:
    """good, bad or undecided, why, and the deciding figures of the worst workload; the
    gate's comparisons read back as Comparisons (a file it cannot read decides nothing)."""
    try:
        gates = [Comparison.from_dict(c) for c in doc.get("comparisons") or []
                 if c.get("kind") in (CompareKind.GATE, CompareKind.MOUNT_GATE)]
    except ValueError as exc:
        return BisectVerdict.UNDECIDED, f"the gate's results could not be read: {exc}", {}
    if not gates:
        failed = [str(t.get("message", ""))[:200] for t in doc.get("failed_tests") or []]
        return (BisectVerdict.UNDECIDED, "nothing was gated" + (f": {failed[0]}" if failed else ""),
                {})

    def deciding(c: Comparison) -> MetricComparison | None:
        return c.metrics.get(c.decided_by or Fig.BW)

    worst = min(gates, key=lambda c: (d.ratio if (d := deciding(c)) and d.ratio else 1.0))
    d = deciding(worst)
    m = {**(dataclasses.asdict(d) if d else {}), "pairs": worst.rounds, "seconds": worst.seconds,
         "name": worst.name}
    outcomes = [settled(c) for c in gates]
    if any(o.worse for o in outcomes):
        return BisectVerdict.BAD, "regression", m
    if all(o in (Settled.SAME, Settled.NOT_WORSE, Settled.B_BETTER) for o in outcomes):
        return BisectVerdict.GOOD, "not worse", m
    return BisectVerdict.UNDECIDED, ", ".join(sorted({str(o) for o in outcomes})), m


def on_edge(verdict: BisectVerdict, m: dict[str, Any], tolerance: float) -> bool:
    line = 1.0 - tolerance
    bound = m.get("ci_high") if verdict == BisectVerdict.BAD else m.get("ci_low")
    return isinstance(bound, int | float) and abs(bound - line) <= EDGE


def printable(text: str, most: int = 200) -> str:
    """A commit's subject or a build's words as they may reach a terminal or a report: no
    control characters (ANSI escapes), bounded."""
    text = _CONTROL.sub(" ", text)
    return text if len(text) <= most else text[: most - 1] + "…"


def subject_of(repo: str, commit: str) -> str:
    return printable(git(repo, "log", "-1", "--format=%s", commit))


def measure_step(plan: Plan, good_bin: str, commit: str, binary: str, out_dir: str,
                 say: Callable[[str], None]) -> Step:
    subject = subject_of(plan.repo, commit)
    seconds = plan.step_seconds
    for attempt in (1, 2):
        out = os.path.join(out_dir, f"{commit[:12]}-{attempt}.json")
        t0 = time.monotonic()
        verdict, why, m = judge(gate(plan, good_bin, binary, seconds, out))
        took = time.monotonic() - t0
        if verdict != BisectVerdict.UNDECIDED or attempt == 2:
            break
        say(f"  {commit[:12]}: {why}; measuring once more with {2 * seconds:g} s")
        seconds *= 2
    decided = verdict != BisectVerdict.UNDECIDED
    return Step(commit, subject, verdict if decided else BisectVerdict.SKIP,
                why if decided else f"undecided twice ({why})", m.get("ratio"), m.get("ci_low"),
                m.get("ci_high"), int(m.get("pairs") or 0), took,
                on_edge(verdict, m, plan.tolerance))


def line(s: Step) -> str:
    band = f" ({s.low:.3f}-{s.high:.3f})" if s.low is not None and s.high is not None else ""
    ratio = f"B/A {s.ratio:.3f}{band}, " if s.ratio is not None else ""
    edge = "; on the edge of the tolerance" if s.edge else ""
    return (f"{s.commit[:12]} {s.verdict!s:4} {ratio}{s.pairs} pairs, {s.seconds:.0f} s: "
            f"{printable(s.why)}{edge}  [{printable(s.subject, 60)}]")


def command(plan: Plan) -> str:
    """The command that reruns this bisection (for the report)."""
    words = ["fsperf", "bisect", "--repo", plan.repo, "--good", plan.good[:12], "--bad", plan.bad[:12],
             "--build", plan.build, "--binary", plan.binary, "--backend", plan.backend,
             "--test", " ".join(plan.test)]
    return " ".join(shlex.quote(w) for w in words)


def run(plan: Plan, say: Callable[[str], None] = print) -> Bisection:
    """Bisect; the user's checkout is left as it was, the worktree and its bisect state removed."""
    check(plan)
    result = Bisection(plan)
    started = time.monotonic()
    git(plan.repo, "worktree", "prune", check=False)  # a killed bisection's, its folder swept
    private, entry = leftovers.private_dir("pytest-fsperf-bisect-")
    worktree = os.path.join(private, "checkout")
    git(plan.repo, "worktree", "add", "-q", "--detach", worktree, plan.good)
    try:
        builds = Builds(plan, worktree, private, started + plan.seconds)
        good_bin, how = builds.get(plan.good)
        bad_bin, how_bad = builds.get(plan.bad)
        if good_bin is None or bad_bin is None:
            raise UsageError(f"fsperf bisect: {'good' if good_bin is None else 'bad'} commit: "
                             f"{how if good_bin is None else how_bad}")
        say(f"bisecting {plan.good[:12]}..{plan.bad[:12]} "
            f"({len(git(plan.repo, 'rev-list', f'{plan.good}..{plan.bad}').split())} commits)")
        seen = Seen(good_bin)
        first = seen.step(plan, plan.bad, bad_bin, lambda: measure_step(
            plan, good_bin, plan.bad, bad_bin, private, say))
        result.steps.append(first)
        say(line(first))
        if first.verdict == BisectVerdict.SKIP:  # never "no regression" from a gate that did not decide
            result.undecided = True
            result.verdict = (f"could not decide whether {plan.bad[:12]} is slower than "
                              f"{plan.good[:12]}: {first.why}; give --test longer runs (2 s or "
                              "more each) or --step-seconds more time")
            return _end(result, started)
        if first.verdict != BisectVerdict.BAD:
            result.verdict = (f"no regression between good and bad: {plan.bad[:12]} against "
                              f"{plan.good[:12]}: {first.why}")
            return _end(result, started)
        _bisect(plan, result, builds, seen, private, worktree, started, say)
        return _end(result, started)
    finally:
        subprocess.run([git_program(), "-C", worktree, "bisect", "reset", "-q"], capture_output=True,
                       check=False)
        subprocess.run([git_program(), "-C", plan.repo, "worktree", "remove", "--force", worktree],
                       capture_output=True, check=False)
        shutil.rmtree(private, ignore_errors=True)
        leftovers.done(entry)


class Seen:
    """The verdict of each binary already gated, by its bytes: a build identical to one
    measured takes that verdict without measuring; one identical to the good build is good."""

    def __init__(self, good_bin: str) -> None:
        self.good_bin = good_bin
        self.by_hash: dict[str, Step] = {digest(good_bin): Step("", "", BisectVerdict.GOOD, "the good build")}

    def step(self, plan: Plan, commit: str, binary: str, measure: Callable[[], Step]) -> Step:
        key = digest(binary)
        known = self.by_hash.get(key)
        subject = subject_of(plan.repo, commit)
        if known is not None and known.verdict != BisectVerdict.SKIP:
            same = known.commit[:12] or plan.good[:12]
            return Step(commit, subject, known.verdict,
                        f"byte-identical to {same}'s build, its bundled libraries too "
                        f"({known.verdict}): not measured",
                        known.ratio, known.low, known.high)
        found = measure()
        if found.verdict != BisectVerdict.SKIP:
            self.by_hash[key] = found
        return found


def digest(path: str) -> str:
    """A build's identity: the binary's bytes and those of each library it ships beside
    itself (found through its $ORIGIN RUNPATH: ossfs2 ships libfuse3), names included."""
    h = hashlib.sha256()
    for part in [path, *elf.bundled(os.path.realpath(path))]:
        h.update(os.path.basename(part).encode() + b"\0")
        with open(part, "rb") as f:
            for chunk in iter(lambda: f.read(1 << 20), b""):
                h.update(chunk)
    return h.hexdigest()


def _bisect(plan: Plan, result: Bisection, builds: Builds, seen: Seen, private: str,
            worktree: str, started: float, say: Callable[[str], None]) -> None:
    git(worktree, "bisect", "start", plan.bad, plan.good)
    while True:
        first, left = _state(worktree)
        if first is not None:
            result.first_bad = first
            result.subject = subject_of(plan.repo, first)
            return
        if left:
            result.candidates = left
            return
        if time.monotonic() - started > plan.seconds:
            result.candidates = tuple(git(worktree, "rev-list", "--bisect-all", "refs/bisect/bad",
                                          "--not", *_goods(worktree)).split()[::2])
            result.sure = f"ran out of time ({plan.seconds:g} s)"
            return
        commit = git(worktree, "rev-parse", "HEAD")
        binary, how = builds.get(commit)
        if binary is None:
            step = Step(commit, subject_of(plan.repo, commit), BisectVerdict.SKIP, printable(how))
        else:
            step = seen.step(plan, commit, binary, functools.partial(
                measure_step, plan, seen.good_bin, commit, binary, private, say))
        result.steps.append(step)
        say(line(step))
        git(worktree, "bisect", step.verdict, check=False)


def _state(worktree: str) -> tuple[str | None, tuple[str, ...]]:
    """From git's refs, never its messages (a commit's subject is in those): the first bad
    commit, or the commits it may be when only skipped ones are left, or (None, ())."""
    bad = git(worktree, "rev-parse", "--verify", "-q", "refs/bisect/bad", check=False)
    left = git(worktree, "rev-list", bad, "--not", *_goods(worktree), check=False).split()
    skipped = set(git(worktree, "for-each-ref", "--format=%(objectname)", "refs/bisect/skip-*",
                      check=False).split())
    if left == [bad]:
        return bad, ()
    if left and set(left) - {bad} <= skipped:
        return None, tuple(left)
    return None, ()


def _goods(worktree: str) -> list[str]:
    refs = git(worktree, "for-each-ref", "--format=%(objectname)", "refs/bisect/good-*", check=False)
    return refs.split()


def _end(result: Bisection, started: float) -> Bisection:
    result.seconds = time.monotonic() - started
    skips = [s for s in result.steps if s.verdict == BisectVerdict.SKIP]
    edges = [s for s in result.steps if s.edge]
    if result.first_bad:
        result.verdict = f"first bad commit: {result.first_bad[:12]} {result.subject}"
    elif result.candidates and not result.verdict:
        result.verdict = ("the first bad commit is one of " +
                          ", ".join(c[:12] for c in result.candidates))
    doubts = [f"{len(skips)} commit{'s' * (len(skips) > 1)} skipped" if skips else "",
              f"{len(edges)} step{'s' * (len(edges) > 1)} decided on the edge of the tolerance"
              if edges else "", result.sure]
    said = "; ".join(d for d in doubts if d)
    result.sure = f"less sure: {said}" if said else "sure: every step decided clear of the tolerance"
    return result

