"""Each commit's build once, kept in a private cache by what made it (the commit, the build
command and the binary's path: a new --build never reuses an old binary), built in a
checkout of the bisection's own, in a process group of its own with a deadline (a build that
leaves a background process holding its output ends at its deadline, and the group goes
with it). And the repository: root builds what it holds, so no other user may change it."""

from __future__ import annotations

import contextlib
import functools
import hashlib
import os
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Iterator

from pytest_fsperf.bisect.plan import Plan
from pytest_fsperf.errors import UsageError
from pytest_fsperf.infra import elf, trust

CACHE = os.path.join(os.path.expanduser("~"), ".cache", "pytest-fsperf", "bisect")
BUILD_MOST = 3600.0  # s one build may take
BUILD_LEAST = 60.0  # s a build gets even when the bisection's time is nearly spent
GIT_PARTS = ("", "HEAD", "config", "refs", "refs/heads", "refs/tags", "objects", "packed-refs",
             "hooks", "info")


@functools.lru_cache(maxsize=1)
def git() -> str:
    """git as root runs it: found on PATH once, its real path checked."""
    found, why = trust.which("git")
    if found is None:
        raise UsageError(f"fsperf bisect: git is not run: {why}" if why else
                         "fsperf bisect: git is not installed")
    return found


def git_out(repo: str, *args: str) -> tuple[int, str]:
    done = subprocess.run([git(), "-C", repo, *args], capture_output=True, text=True,
                          check=False, timeout=120)
    return done.returncode, done.stdout.strip()


def check_repo(repo: str) -> None:
    """A repository another user can change is refused, as another user's checkout is: in
    one shared with group or other write, nobody moved `main` and root built their Makefile."""
    code, common = git_out(repo, "rev-parse", "--path-format=absolute", "--git-common-dir")
    places = [repo] + ([os.path.join(common, p) for p in GIT_PARTS] if code == 0 else [])
    for place in places:
        if not os.path.lexists(place):
            continue
        why = trust.untrusted(place)
        if why:
            raise UsageError(f"fsperf bisect: the repository can be changed by another user: "
                             f"{why}; root would build what they put there")
    code, shared = git_out(repo, "config", "--get", "core.sharedRepository")
    if code == 0 and shared.lower() not in ("", "false", "umask", "0", "no", "off"):
        raise UsageError(f"fsperf bisect: the repository is shared (core.sharedRepository="
                         f"{shared}): other users may change its refs; root would build them")


_DEFERRED: list[int] = []  # signals that arrived while a build was being started


@contextlib.contextmanager
def stopping_deferred() -> Iterator[None]:
    """While a build starts, SIGTERM (the bisection's stop) waits until Popen has returned
    its handle: raised earlier, it unwound past a child already forked, which ran on (the
    test's `sleep 300` outlived a SIGTERM once under load). Main thread only (signals)."""
    def later(signum: int, _frame: object) -> None:
        _DEFERRED.append(signum)

    before = signal.signal(signal.SIGTERM, later)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, before)
        if _DEFERRED and callable(before):
            before(_DEFERRED.pop(), None)  # the caller's handler, now the build is held


class Builds:
    """Each commit's build once, kept by what made it in a private cache (root runs these)."""

    def __init__(self, plan: Plan, worktree: str, log_dir: str, deadline: float) -> None:
        self.plan, self.worktree, self.log_dir, self.deadline = plan, worktree, log_dir, deadline
        recipe = hashlib.sha256(f"{plan.build}\0{plan.binary}\0bundled".encode()).hexdigest()[:16]
        self.recipe = recipe
        root = os.path.join(CACHE, hashlib.sha256(os.path.realpath(plan.repo).encode()).hexdigest()[:16])
        # where it will be made checked before anything is made there, the cache itself after
        made = root
        while not os.path.lexists(made):
            made = os.path.dirname(made)
        why = trust.untrusted(made)
        if not why:
            os.makedirs(root, 0o700, exist_ok=True)
            root, why = trust.resolved(root)
        if why:
            raise UsageError(f"fsperf bisect: the build cache is not private: {why}")
        self.root = root

    def kept(self, commit: str) -> str:
        return os.path.join(self.root, f"{commit}-{self.recipe}", os.path.basename(self.plan.binary))

    def get(self, commit: str) -> tuple[str | None, str]:
        """The commit's daemon binary, or None and why (the build failed)."""
        kept = self.kept(commit)
        if os.path.isfile(kept) and not trust.untrusted(kept):
            return kept, "cached"
        self._checkout(commit)
        built = os.path.join(self.worktree, self.plan.binary)
        code, said = self._build(commit)
        if code != 0 or not os.path.isfile(built):
            return None, (f"the build failed ({said}): {self._last_line(commit)}"
                          if code != 0 else f"the build made no {self.plan.binary}")
        with tempfile.TemporaryDirectory(dir=self.root) as tmp:  # all or nothing
            os.chmod(tmp, 0o700)
            # the libraries it ships beside itself ($ORIGIN) go with it: the copy runs with
            # this commit's, not none or the system's
            for lib in elf.bundled(os.path.realpath(built)):
                shutil.copy2(lib, os.path.join(tmp, os.path.basename(lib)))
            shutil.copy2(built, os.path.join(tmp, os.path.basename(kept)))
            place = os.path.dirname(kept)
            if os.path.isdir(place):  # an incomplete earlier copy: replaced whole
                shutil.rmtree(place)
            os.replace(tmp, place)
            os.makedirs(tmp, 0o700)  # for TemporaryDirectory's own clean-up
        return kept, "built"

    def _checkout(self, commit: str) -> None:
        subprocess.run([git(), "-C", self.worktree, "checkout", "-q", "--detach", commit],
                       capture_output=True, check=True, timeout=600)
        built = os.path.join(self.worktree, self.plan.binary)
        tracked = git_out(self.worktree, "ls-files", "--error-unmatch", "--", self.plan.binary)[0] == 0
        if os.path.lexists(built) and not tracked:  # an earlier commit's: never taken for this one's
            os.unlink(built)

    def _build(self, commit: str) -> tuple[int, str]:
        """Run the build in its own process group; (exit code, how it ended)."""
        budget = max(BUILD_LEAST, min(BUILD_MOST, self.deadline - time.monotonic()))
        proc: subprocess.Popen[bytes] | None = None
        with open(self._log(commit), "wb") as log:
            try:
                with stopping_deferred():  # a SIGTERM during Popen: raised once it returned
                    proc = subprocess.Popen(["sh", "-c", self.plan.build], cwd=self.worktree,
                                            stdin=subprocess.DEVNULL, stdout=log, stderr=log,
                                            start_new_session=True)
                code = proc.wait(timeout=budget)
                said = f"exit {code}"
            except subprocess.TimeoutExpired:
                code, said = -1, f"still running after {budget:.0f} s: stopped"
            finally:  # the build and anything it left in its group (a background daemon)
                if proc is not None:
                    with contextlib.suppress(ProcessLookupError):
                        os.killpg(proc.pid, signal.SIGKILL)
                    proc.wait()
        return code, said

    def _log(self, commit: str) -> str:
        return os.path.join(self.log_dir, f"build-{commit[:12]}.log")

    def _last_line(self, commit: str) -> str:
        try:
            with open(self._log(commit), "rb") as f:
                lines = f.read()[-4096:].decode(errors="replace").strip().splitlines()
        except OSError:
            lines = []
        return (lines[-1][:200] if lines else "no output")
