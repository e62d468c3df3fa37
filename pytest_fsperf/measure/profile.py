"""The daemon's CPU profile over a window: `perf record -g` on every process of the daemon
(sampling its threads' CPU time, kernel and user, with call chains), folded into stacks
(`comm;outer;...;leaf count`, the format flame graph tools read), and two profiles compared
by each function's share of the daemon's samples.

perf comes from the distribution (Debian: linux-perf). It runs as root, in a session of its
own, noted in the leftovers record; its data file lives in the session's private directory.
"""

from __future__ import annotations

import contextlib
import enum
import os
import re
import signal
import subprocess
import time
from collections import Counter
from collections.abc import Iterable

import psutil

from pytest_fsperf.infra import leftovers, trust
from pytest_fsperf.infra.procs import Proc
from pytest_fsperf.result.daemon import Profile

FREQUENCY = 499  # samples per second per thread: odd, off the kernel's timer ticks
KERNEL = "[kernel.kallsyms]"
UNKNOWN = "[unknown]"
SHOWN = 3
MIN_CHANGE = 0.03  # a function's share must move by 3 points of the daemon's samples
MIN_SAMPLES = 50  # per side, before shares are compared
_FRAME = re.compile(r"^\s*[0-9a-f]+ (.+?)(?:\+0x[0-9a-f]+)? \((.*)\)$")


def unavailable() -> str | None:
    """Why the daemon cannot be profiled here, or None."""
    if os.geteuid() != 0:
        return "not root"
    found, why = trust.which("perf")
    if found is None:
        return (f"perf is not run: {why}" if why
                else "perf is not installed (Debian: apt-get install linux-perf)")
    return None


def refused(pids: Iterable[int]) -> str | None:
    """Why these daemon processes are not profiled: perf, as root, reads the binaries a
    profiled process maps to name its functions; those of a daemon running as another user
    may be that user's, made to attack the parser. Root's own daemons (every mount the
    plugin owns) are profiled."""
    for pid in pids:
        try:
            uids = psutil.Process(pid).uids()
        except psutil.Error:
            return f"daemon process {pid} is gone"
        if uids.real or uids.effective:
            return (f"daemon process {pid} runs as uid {uids.effective or uids.real}: perf, as "
                    "root, would parse binaries that user may have made")
    return None


def fold(script: str) -> Profile:
    """`perf script` output (a header line, frames leaf first, a blank line per sample)."""
    stacks: Counter[str] = Counter()
    leaves: Counter[str] = Counter()
    kernel = unknown_user = user = 0
    for block in script.split("\n\n"):
        lines = [line for line in block.splitlines() if line.strip()]
        if not lines:
            continue
        comm = lines[0].split()[0] if lines[0].split() else "?"
        frames = [m.groups() for line in lines[1:] if (m := _FRAME.match(line))]
        if not frames:
            continue
        names = [sym if sym != UNKNOWN else UNKNOWN if dso == UNKNOWN else
                 f"[{os.path.basename(dso)}]" for sym, dso in frames]
        leaf_sym, leaf_dso = frames[0]
        if leaf_dso == KERNEL:
            kernel += 1
        else:
            user += 1
            unknown_user += leaf_sym == UNKNOWN
        stacks[";".join([comm, *reversed(names)])] += 1
        leaves[names[0]] += 1
    total = sum(leaves.values())
    if not total:
        return Profile(0, 0.0, 0.0, {}, ())
    return Profile(total, kernel / total, unknown_user / user if user else 0.0,
                   {name: n / total for name, n in leaves.items()},
                   tuple(stacks.most_common()))


class Profiling(enum.Enum):
    AUTO = "auto"  # an A/B whose B is worse profiles one more pair, to say where
    ON = "on"  # every A/B profiles one more pair
    OFF = "off"


class Profiler:
    """perf record -g on the daemon's processes from start() to stop() -> Profile."""

    def __init__(self, pids: Iterable[int], data: str) -> None:
        self.pids = sorted(set(pids))
        self.data = data
        self._proc: subprocess.Popen[bytes] | None = None
        self._entry: leftovers.Entry = None

    def start(self) -> None:
        perf = trust.which("perf")[0] or "perf"
        self._proc = subprocess.Popen(
            # -N: no build-id cache in root's home (nothing written outside the session's dir)
            [perf, "record", "-q", "-N", "-g", "-F", str(FREQUENCY), "-o", self.data,
             "-p", ",".join(map(str, self.pids))],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
            start_new_session=True, cwd="/")
        self._entry = leftovers.note_process(Proc.of(self._proc.pid))
        deadline = time.monotonic() + 5
        while not os.path.exists(self.data) and self._proc.poll() is None:
            if time.monotonic() > deadline:
                break
            time.sleep(0.02)
        time.sleep(0.1)  # perf writes its header before it has attached to every thread

    def stop(self) -> Profile:
        assert self._proc is not None
        with contextlib.suppress(ProcessLookupError):
            self._proc.send_signal(signal.SIGINT)
        try:
            _, err = self._proc.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            self.close()
            raise OSError("perf record did not stop within 60 s") from None
        leftovers.done(self._entry)
        if not os.path.exists(self.data):
            raise OSError(f"perf record wrote nothing: {err.decode(errors='replace').strip()}")
        out = subprocess.run([trust.which("perf")[0] or "perf", "script", "-i", self.data,
                              "-F", "comm,ip,sym,dso"],
                             capture_output=True, timeout=300, check=False, cwd="/")
        if out.returncode:
            raise OSError(f"perf script failed: {out.stderr.decode(errors='replace').strip()}")
        return fold(out.stdout.decode(errors="replace"))

    def close(self) -> None:
        if self._proc is not None and self._proc.poll() is None:
            self._proc.kill()
            self._proc.wait()
        leftovers.done(self._entry)


def diff(a: Profile, b: Profile, shown: int = SHOWN) -> tuple[str, ...]:
    """The functions whose share of the daemon's samples moved most, A to B, and the
    kernel's share where it moved: 'fuse_copy_fill 12% -> 19% of the daemon's samples'."""
    if not a.samples or not b.samples:
        return ()
    if min(a.samples, b.samples) < MIN_SAMPLES:
        return (f"too few samples to compare ({a.samples} of A's daemon, {b.samples} of B's, "
                f"at {FREQUENCY} Hz; under {MIN_SAMPLES} on a side, shares say little): a "
                "longer workload gives more",)
    moved = []
    for name in set(a.self_share) | set(b.self_share):
        sa, sb = a.self_share.get(name, 0.0), b.self_share.get(name, 0.0)
        if abs(sb - sa) >= MIN_CHANGE:
            moved.append((abs(sb - sa), f"{name} {100 * sa:.0f}% -> {100 * sb:.0f}%"))
    moved.sort(key=lambda x: -x[0])
    said = [text for _d, text in moved[:shown]]
    if abs(b.kernel - a.kernel) >= MIN_CHANGE:
        said.append(f"kernel {100 * a.kernel:.0f}% -> {100 * b.kernel:.0f}%")
    if said:
        said[0] = "daemon samples: " + said[0]
    if max(a.stripped, b.stripped) > 0.5:
        said.append(f"{100 * max(a.stripped, b.stripped):.0f}% of the daemon's user-space samples "
                    "have no symbol (a stripped binary)")
    return tuple(said)


def top(profile: Profile, n: int = 200) -> list[tuple[str, int]]:
    """The n stacks with the most samples (for the JSON report)."""
    return list(profile.folded[:n])
