"""The plugin's words as types: the outcome of a judgement, the states a workload met (the
figures it judges are in figures.py).

Outcome values are what the reports print (and what travels in JSON and through xdist);
code compares members, never text.
"""

from __future__ import annotations

from enum import Enum, IntEnum


class Text(str, Enum):
    """An enum whose members are the words reports print: str() is the value (as StrEnum in
    Python 3.11+), and JSON carries the value."""

    def __str__(self) -> str:
        return str(self.value)


class AB(Text):
    """Which side of an A/B comparison: A the reference (or options a), B the candidate."""

    A = "A"
    B = "B"


class Outcome(Text):
    """A workload's verdict, from no judgement to a failing one."""

    NOT_JUDGED = "-"
    PASS = "pass"
    PARTIAL = "partial"  # passed all it could be judged on; a daemon figure could not be
    INCONCLUSIVE = "INCONCLUSIVE"  # an interval straddles a limit, or a saved run cannot decide
    INCOMPARABLE = "INCOMPARABLE"  # the saved run measured something else
    MACHINE_CHANGED = "MACHINE CHANGED"  # the canary moved: not judged against the filesystem
    CHANGED = "CHANGED"  # a gate found a request shape moved: fails until the test accepts it
    REGRESSION = "REGRESSION"  # slower than the saved run, beyond the tolerance
    FAIL = "FAIL"  # a threshold, or a gated baseline, missed

    @property
    def severity(self) -> int:
        return list(Outcome).index(self)

    @property
    def failing(self) -> bool:
        return self in (Outcome.FAIL, Outcome.REGRESSION, Outcome.CHANGED)

    @property
    def unsure(self) -> bool:
        return self in (Outcome.INCONCLUSIVE, Outcome.INCOMPARABLE, Outcome.MACHINE_CHANGED)

    def worst(self, other: Outcome) -> Outcome:
        return self if self.severity >= other.severity else other

    @classmethod
    def of(cls, text: object) -> Outcome:
        """A verdict as a report row carries it (a string); unknown text is not judged."""
        try:
            return cls(text)
        except ValueError:
            return cls.NOT_JUDGED


class Decision(Text):
    """The session's decision, first in every report."""

    PASS = "PASS"
    PARTIAL = "PARTIAL"  # passed all it could judge; some figure could not be
    NOTHING_JUDGED = "NOTHING JUDGED"  # no threshold, baseline or comparison decided anything
    WARNINGS = "PASS with warnings"  # undecided verdicts, let pass (--fsperf-inconclusive=warn)
    FAIL = "FAIL"

    @property
    def tone(self) -> str:
        """How a page colours it: good, bad, or unsure."""
        return {Decision.PASS: "good", Decision.FAIL: "bad"}.get(self, "unsure")


class ExitCode(IntEnum):
    """`fsperf comment`'s exit status: the session's decision as a CI branches on it."""

    PASS = 0
    FAILED = 1  # a regression, a missed threshold, a crashed build, a test that failed or errored
    INTERNAL = 3  # the plugin's own error
    USAGE = 4  # a wrong flag or file (one line on stderr says which)
    NOTHING_JUDGED = 5  # no threshold, baseline or comparison decided anything
    INCONCLUSIVE = 8  # undecided (inconclusive, unstable, incomparable), with --inconclusive=fail
    MACHINE_CHANGED = 9  # the machine canary moved, with --machine-changed=fail

    @property
    def meaning(self) -> str:
        return {
            ExitCode.PASS: "pass (undecided workloads too, with --inconclusive=warn: the text says them)",
            ExitCode.FAILED: "a regression or a failure: B worse, a threshold missed, a build that "
                             "crashed, a test that failed or errored",
            ExitCode.INTERNAL: "an internal error of the plugin",
            ExitCode.USAGE: "a usage error: a flag or file was wrong (one line on stderr says which)",
            ExitCode.NOTHING_JUDGED: "nothing was judged (no threshold, baseline or comparison)",
            ExitCode.INCONCLUSIVE: "inconclusive: a gate or threshold could not decide "
                                   "(--inconclusive=fail, the default)",
            ExitCode.MACHINE_CHANGED: "the machine changed (its canary moved), not the filesystem",
        }[self]


class Difference(Text):
    """What an A/B found for one figure, B against A."""

    B_BETTER = "B better"
    B_WORSE = "B worse"
    SAME = "same"
    NOT_WORSE = "not worse"  # a release gate's pass: B is not worse beyond the tolerance
    INCONCLUSIVE = "inconclusive"
    CHANGED = "changed"  # a figure with no better direction (a request shape) moved either way


class Settled(Text):
    """What one comparison came to as a whole: its deciding figure's outcome (Difference's
    words), or why it has none. Reports, `fsperf comment` and bisect read it from here."""

    B_BETTER = "B better"
    B_WORSE = "B worse"
    SAME = "same"
    NOT_WORSE = "not worse"
    INCONCLUSIVE = "inconclusive"
    CHANGED = "changed"  # a request shape moved: a finding that fails a gate until accepted
    CRASHED = "crashed"  # a side's daemon died in its runs
    UNSTABLE = "unstable"  # too many pairs dropped: nothing decided
    NOT_MEASURED = "-"  # no deciding figure

    @property
    def worse(self) -> bool:
        return self in (Settled.B_WORSE, Settled.CRASHED, Settled.CHANGED)

    @property
    def undecided(self) -> bool:
        return self in (Settled.INCONCLUSIVE, Settled.UNSTABLE, Settled.NOT_MEASURED)


class BisectVerdict(Text):
    """What a bisection step said of a commit (git bisect's own words), or that it could not."""

    GOOD = "good"
    BAD = "bad"
    SKIP = "skip"
    UNDECIDED = "undecided"


class Direction(Text):
    """Where a ratio lies against 1 and the tolerance, as far as its interval can tell: the
    one tolerance rule (stats.direction) every comparison uses."""

    UP = "up"  # bigger, past the tolerance
    DOWN = "down"
    SAME = "same"  # within the tolerance both ways
    UNCLEAR = "unclear"


class RunOutcome(Text):
    """A workload against saved runs (--fsperf-compare, fsperf compare-runs)."""

    PASS = "pass"
    REGRESSION = "regression"
    IMPROVEMENT = "improvement"
    INCONCLUSIVE = "inconclusive"
    INCOMPARABLE = "incomparable"  # the runs measured something else
    MACHINE_CHANGED = "machine changed"  # the canary moved

    @property
    def verdict(self) -> Outcome:
        """The verdict it gives the workload (a pass or an improvement: none of its own)."""
        return {RunOutcome.REGRESSION: Outcome.REGRESSION, RunOutcome.INCONCLUSIVE: Outcome.INCONCLUSIVE,
                RunOutcome.INCOMPARABLE: Outcome.INCOMPARABLE,
                RunOutcome.MACHINE_CHANGED: Outcome.MACHINE_CHANGED}.get(self, Outcome.NOT_JUDGED)

    @property
    def unsure(self) -> bool:
        return self in (RunOutcome.INCONCLUSIVE, RunOutcome.INCOMPARABLE, RunOutcome.MACHINE_CHANGED)


class Unsure(Text):
    """What an undecided verdict does to its test (--fsperf-inconclusive, --fsperf-machine-changed)."""

    FAIL = "fail"
    WARN = "warn"


class Missing(Text):
    """What a test whose backend's daemon is not installed does (--fsperf-missing-backend)."""

    FAIL = "fail"  # a CI job that measured nothing is not green
    SKIP = "skip"


class Gate(Text):
    """What --fsperf-gate judges besides the thresholds."""

    NONE = "none"
    BASELINE = "baseline"  # a shipped baseline's figures pass or fail the test


class EngineKind(Text):
    """Which load generator measured a workload."""

    FIO = "fio"
    FILES = "files"  # the small-file engine
    META = "meta"  # the metadata engine (and mdtest's phases)
    SYSBENCH = "sysbench"


class FilesOp(Text):
    """What the small-file engine did (OpStats.operation of its results)."""

    READ = "read files"
    WRITE = "write files"
    HOLD = "hold files open, idle"  # mode="hold": the window is the idle time


# OpStats.operation of the engines' runs that only read (the cold-read checks apply)
READ_ONLY_OPERATIONS = frozenset({FilesOp.READ.value, "sysbench seqrd", "sysbench rndrd"})


class CompareKind(Text):
    """What an interleaved A/B compared."""

    OPTIONS = "options"  # fsperf.compare of mount options
    BUILDS = "builds"  # fsperf.compare with a_build/b_build
    GATE = "gate"  # --fsperf-reference: two builds of the backend's daemon
    MOUNT_GATE = "mount gate"  # --fsperf-reference-mount: two existing mounts

    @property
    def is_gate(self) -> bool:
        return self in (CompareKind.GATE, CompareKind.MOUNT_GATE)


# -- the cache state before a workload (measure/cache.py makes it; results and reports say it)


class PageCache(Text):
    """The kernel page cache before a workload; the value is what results and reports say."""

    DROPPED = "cold: drop_caches"
    FADVISED = "cold: fadvise"
    # On FUSE, fadvise drops the FUSE file's page cache, not that of what the daemon reads from
    # (bindfs over a local disk read at warm speed, 2.53 vs 2.41 GB/s): not cold.
    FADVISED_FUSE = "not cold: fadvise on FUSE (the daemon's backing files stay cached; needs root)"
    # --fsperf-store-cache=keep: the FUSE files' pages dropped (and the daemon remounted,
    # where the plugin owns it), the machine's page cache not: what the daemon reads from (a
    # local backing directory, a local object store's disk) stays in memory, asked for
    STORE_KEPT = "cold: FUSE only, the store's cache kept (--fsperf-store-cache=keep)"
    # the same, by default, in a release gate between two builds of the daemon: the gate
    # compares the daemons; a local store's disk and the VM's memory are the same for both
    STORE_KEPT_GATE = ("cold: FUSE only, the store's cache kept (a gate between builds: "
                       "--fsperf-store-cache=auto)")
    WARM = "warm"

    @property
    def cold(self) -> bool:
        return self in (PageCache.DROPPED, PageCache.FADVISED, PageCache.STORE_KEPT,
                        PageCache.STORE_KEPT_GATE)

    @property
    def method(self) -> str:
        """As a cold step: drop_caches, fadvise."""
        return {PageCache.DROPPED: "drop_caches", PageCache.FADVISED: "fadvise",
                PageCache.FADVISED_FUSE: "fadvise (FUSE: not cold)",
                PageCache.STORE_KEPT: "fadvise (the store's cache kept)",
                PageCache.STORE_KEPT_GATE: "fadvise (the store's cache kept)"}.get(self, "warm")


class StoreCache(Enum):
    """--fsperf-store-cache: what a cold start does to the page cache of what the daemon
    reads from."""

    DROP = "drop"  # drop_caches: the whole machine's page cache
    # only the FUSE files' pages: a local store's files stay in memory, so that every run
    # meets one state of it (a VM's virtual disk and free page reporting do not steady)
    KEEP = "keep"
    AUTO = "auto"  # the default: keep in a release gate between builds, drop otherwise


class ColdRead(Text):
    """Whether a cold read was served by the daemon, by what it sent through /dev/fuse."""

    UNCHECKED = "-"  # not a cold read, no daemon, or no counter to tell
    VERIFIED = "verified"  # the daemon sent at least 0.75x the bytes read
    NOT_COLD = "NOT cold"  # less: the rest came from the page cache


class DaemonCache(Text):
    """The FUSE daemon's own cache before a workload."""

    WIPED = "cold: remounted, disk cache wiped"
    REMOUNTED = "cold: remounted"  # a daemon with no disk cache to wipe
    KEPT = "not cold: remounted, but its disk cache was kept"  # a dir the user named (cold_steps)
    PAGE_ONLY = "kept: only the page cache was dropped"
    UNKNOWN = "unknown: existing mount, daemon not restarted"
    # a cold read the daemon served from its own memory or disk (the evidence in the notes)
    SERVED_ITSELF = "warm in the daemon: not a cold read"
    WARM = "warm"
    NO_DAEMON = "n/a: no daemon"

    @classmethod
    def of(cls, text: object) -> DaemonCache | None:
        """A daemon cache state as a report row carries it (a string)."""
        try:
            return cls(text)
        except ValueError:
            return None
