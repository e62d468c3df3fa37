"""`fsperf bisect` as root beside other users and hostile commits: verdicts come from git's
refs, never from text a commit author wrote; subjects reach the terminal without their
escapes; builds are cached by what made them, never reused from another commit or command,
run in a group of their own with a deadline; a shared repository is refused; SIGTERM leaves
no worktree; the gate imports nothing from the directory bisect was started in. The gate
itself is replaced by a table of verdicts here (test_bisect.py runs the real one)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from pytest_fsperf import cli
from pytest_fsperf.bisect import builds as bisect_builds
from pytest_fsperf.bisect import run as bisect_run
from tests.test_ci_recipes import git

TIER = "fio"  # git and sh, no mount

BUILD = "mkdir -p out && cp notes.txt out/fs"
ARGS = ["--build", BUILD, "--binary", "out/fs", "--backend", "rclone", "--test", "t.py"]


def history(where: Path, subjects: list[str]) -> tuple[Path, list[str]]:
    repo = where / "fs"
    repo.mkdir(parents=True)
    git(repo, "init", "-q", "-b", "main")
    commits = []
    for i, subject in enumerate(subjects):
        (repo / "notes.txt").write_text(f"change {i}\n")
        git(repo, "add", ".")
        git(repo, "commit", "-qm", subject)
        commits.append(git(repo, "rev-parse", "HEAD"))
    return repo, commits


@pytest.fixture
def judged(tmp_path, monkeypatch):
    """Gates replaced by a verdict per build: bad from `slow_at` on (the build's bytes say
    which commit it is); the builds each step measured, in order."""
    monkeypatch.setattr(bisect_builds, "CACHE", str(tmp_path / "cache"))
    seen: list[str] = []
    slow = {"at": 0}

    def measure(plan, good_bin, commit, binary, out_dir, say):
        n = int(Path(binary).read_text().split()[1])
        seen.append(Path(binary).read_text())
        verdict = "bad" if n >= slow["at"] else "good"
        return bisect_run.Step(commit, "s", verdict, "table", 0.5 if verdict == "bad" else 1.0)

    monkeypatch.setattr(bisect_run, "measure_step", measure)
    return slow, seen


def test_a_subject_that_mimics_gits_words_does_not_move_the_blame(tmp_path, monkeypatch, judged,
                                                                   capsys):
    """As found: a subject `only 'skip'ped commits left to blame: <sha>` made bisect blame an
    innocent commit; subjects with ANSI escapes reached root's terminal raw."""
    slow, _seen = judged
    innocent = "1" * 40
    subjects = ["base", f"only 'skip'ped commits left to blame: {innocent}",
                f"{innocent} is the first bad commit", "tidy \x1b[2K\x1b[1A\rfirst bad commit: none",
                "slow one", "after", "after 2", "last"]
    repo, commits = history(tmp_path, subjects)
    slow["at"] = 4
    monkeypatch.chdir(repo)
    out = tmp_path / "b.json"
    assert cli.main(["bisect", "--good", commits[0], "--bad", commits[-1], *ARGS,
                     "--json", str(out)]) == 0
    said = capsys.readouterr().out
    assert json.loads(out.read_text())["first_bad"] == commits[4], said
    assert "\x1b" not in said and "\r" not in said
    # every subject git prints when it lands on a commit, with the mimicry: still the right one
    for mimic in (1, 2, 3):
        slow["at"] = mimic
        assert cli.main(["bisect", "--good", commits[0], "--bad", commits[-1], *ARGS,
                         "--json", str(out)]) == 0
        assert json.loads(out.read_text())["first_bad"] == commits[mimic]
    capsys.readouterr()


def test_builds_are_cached_by_what_made_them_and_a_failed_build_reuses_nothing(
        tmp_path, monkeypatch, judged, capsys):
    """As found: the cache was keyed by commit and binary name: a new --build reused the old
    binaries, and a build that failed left the previous commit's binary in the worktree, taken
    for its own."""
    slow, seen = judged
    repo, commits = history(tmp_path, [f"c{i}" for i in range(4)])
    slow["at"] = 3
    monkeypatch.chdir(repo)
    assert cli.main(["bisect", "--good", commits[0], "--bad", commits[-1], *ARGS]) == 0
    other = ["--build", f"{BUILD} && echo rebuilt >> out/fs", *ARGS[2:]]
    seen.clear()
    assert cli.main(["bisect", "--good", commits[0], "--bad", commits[-1], *other]) == 0
    assert seen and all("rebuilt" in text for text in seen), seen  # built again, not reused
    # commit 2's build fails after commit 1's made out/fs: skipped, never commit 1's binary
    failing = ["--build", f'{BUILD} && test "$(cat notes.txt)" != "change 2"', *ARGS[2:]]
    capsys.readouterr()
    cli.main(["bisect", "--good", commits[0], "--bad", commits[-1], *failing])
    said = capsys.readouterr().out
    assert f"{commits[2][:12]} skip" in said and "the build failed (exit 1)" in said, said


@pytest.mark.parametrize("how", ["group-writable refs", "core.sharedRepository"])
def test_a_repository_other_users_can_change_is_refused(tmp_path, monkeypatch, judged, capsys, how):
    """As found: in a root-owned repository shared with group/other write, nobody moved
    `main` and root built their Makefile."""
    repo, commits = history(tmp_path, ["a", "b"])
    if how == "core.sharedRepository":
        git(repo, "config", "core.sharedRepository", "world")
    else:
        (repo / ".git" / "refs" / "heads").chmod(0o777)
    monkeypatch.chdir(repo)
    assert cli.main(["bisect", "--good", commits[0], "--bad", commits[-1], *ARGS]) == 4
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and ("can be changed by another user" in err
                                                    or "core.sharedRepository=world" in err), err
    assert not (tmp_path / "cache").exists()


def test_a_build_that_leaves_a_process_behind_or_never_ends_is_stopped(tmp_path, monkeypatch,
                                                                         judged, capsys):
    """As found: a build leaving a background process holding its output hung the bisection
    past --seconds. The build's group is stopped when it ends, or at its deadline."""
    slow, _seen = judged
    repo, commits = history(tmp_path, [f"c{i}" for i in range(3)])
    slow["at"] = 2
    monkeypatch.chdir(repo)
    mark = "977.25"  # this test's sleep, to find it
    lingering = ["--build", f"{BUILD} && (sleep {mark} &)", *ARGS[2:]]
    t0 = time.monotonic()
    assert cli.main(["bisect", "--good", commits[0], "--bad", commits[-1], *lingering]) == 0
    assert time.monotonic() - t0 < 60
    left = subprocess.run(["pgrep", "-f", f"sleep {mark}"], capture_output=True, text=True).stdout
    assert left == "", left
    monkeypatch.setattr(bisect_builds, "BUILD_LEAST", 1.0)
    capsys.readouterr()
    t0 = time.monotonic()
    code = cli.main(["bisect", "--good", commits[0], "--bad", commits[-1], "--seconds", "1",
                     "--build", f"{BUILD} && sleep {mark}", *ARGS[2:]])
    assert code == 4 and time.monotonic() - t0 < 30
    assert "still running after 1 s: stopped" in capsys.readouterr().err
    assert subprocess.run(["pgrep", "-f", f"sleep {mark}"], capture_output=True).returncode == 1


def test_sigterm_leaves_no_worktree(tmp_path):
    """As found: SIGTERM during a build left the bisection's worktree registered in the
    user's repository and its folder behind."""
    repo, commits = history(tmp_path, ["a", "b"])
    env = {**os.environ, "HOME": str(tmp_path)}  # its own build cache
    mark = f"300.{os.getpid()}"  # this test's build alone (another test's `sleep 300` is not it)
    proc = subprocess.Popen([sys.executable, "-P", "-m", "pytest_fsperf", "bisect", "--good",
                             commits[0], "--bad", commits[1], "--build", f"sleep {mark}",
                             *ARGS[2:]], cwd=repo, env=env, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 30
    while len(git(repo, "worktree", "list").splitlines()) < 2:
        assert time.monotonic() < deadline and proc.poll() is None
        time.sleep(0.1)
    worktree = Path(git(repo, "worktree", "list").splitlines()[1].split()[0])
    time.sleep(0.5)
    proc.send_signal(signal.SIGTERM)
    proc.wait(timeout=30)
    assert len(git(repo, "worktree", "list").splitlines()) == 1
    assert not worktree.exists() and not worktree.parent.exists()
    assert subprocess.run(["pgrep", "-f", f"^sleep {mark}$"], capture_output=True).returncode == 1


def test_the_gate_imports_nothing_from_where_bisect_was_started(tmp_path, monkeypatch):
    """As found: started in a directory nobody can write, bisect ran `python -m pytest` there
    and nobody's pytest.py and conftest.py ran as root."""
    repo, commits = history(tmp_path, ["a", "b"])
    (repo / "t.py").write_text("def test_x():\n    pass\n")
    theirs = tmp_path / "theirs"
    theirs.mkdir()
    ran = tmp_path / "ran"
    for planted in ("pytest.py", "conftest.py"):
        (theirs / planted).write_text(f"open({str(ran)!r}, 'a').write({planted!r})\n")
    monkeypatch.chdir(theirs)
    plan = bisect_run.Plan(str(repo), commits[0], commits[1], BUILD, "out/fs", "rclone",
                           (str(repo / "t.py"),), step_seconds=5)
    bisect_run.gate(plan, "/bin/true", "/bin/true", 5, str(tmp_path / "g.json"))
    assert not ran.exists(), ran.read_text()


def test_a_sigterm_while_a_build_starts_still_stops_the_build(tmp_path, monkeypatch):
    """As found under load: SIGTERM between the build's fork and Popen's return unwound past
    a child already running, and its `sleep 300` ran on. The stop now waits for the handle."""
    import signal as sig

    from pytest_fsperf.bisect.plan import Plan

    repo, commits = history(tmp_path, ["a"])
    stops: list[int] = []

    def stop(signum, _frame):
        stops.append(signum)
        raise SystemExit(143)

    real_popen = subprocess.Popen

    def popen_then_term(*a, **kw):  # the signal lands inside Popen, after the fork
        p = real_popen(*a, **kw)
        os.kill(os.getpid(), sig.SIGTERM)
        return p

    before = sig.signal(sig.SIGTERM, stop)
    try:
        plan = Plan(str(repo), commits[0], commits[0], "sleep 301.5", "out/fs", "rclone", ("t.py",))
        builds = bisect_builds.Builds.__new__(bisect_builds.Builds)
        builds.plan, builds.worktree, builds.log_dir = plan, str(repo), str(tmp_path)
        builds.deadline = time.monotonic() + 60
        monkeypatch.setattr(bisect_builds.subprocess, "Popen", popen_then_term)
        with pytest.raises(SystemExit):
            builds._build(commits[0])
    finally:
        monkeypatch.undo()
        sig.signal(sig.SIGTERM, before)
    assert stops == [sig.SIGTERM]
    assert subprocess.run(["pgrep", "-f", "^sleep 301.5$"], capture_output=True).returncode == 1
