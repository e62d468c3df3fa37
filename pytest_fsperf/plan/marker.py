"""The fsperf marker, read once into a frozen plan of thresholds.

Every threshold applies to each judged workload of the test: a test that runs a
write and a read with min_bw needs both to clear it. Mark a preparation workload
with fsperf.fio(..., judged=False) to keep it out of the verdict (it is still
measured and reported).
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace

from pytest_fsperf import units
from pytest_fsperf.errors import UsageError
from pytest_fsperf.figures import METRICS, OPCODES, Fig, Metric

# bounds on the daemon's memory (issue 74.1: a peak carried in from an earlier test is not this one's)
MEMORY_BOUNDS = frozenset({"max_rss", "max_rss_after", "max_rss_per_handle", "max_rss_round_growth"})

@dataclass(frozen=True)
class Keyword:
    """A marker keyword: a bound on one figure of the metric registry (figures.METRICS)."""

    figure: Metric
    bound: str  # "min" or "max"

    @property
    def metric(self) -> str:
        return self.figure.key

    @property
    def label(self) -> str:
        return self.figure.label

    def parse(self, value: object) -> float:
        return self.figure.parse(value)

    def show(self, value: float) -> str:
        return self.figure.show(value)

    def of_part(self, part: str) -> Keyword:
        """The same bound on one part of the figure: a FUSE opcode's
        (max_fuse_per_file={"GETATTR": 1}) or one ceiling's (min_efficiency={"fuse": "40%"})."""
        label = (f"share of the {CEILINGS[part]} ceiling" if self.metric == Fig.EFFICIENCY
                 else self.figure.label.replace("FUSE requests", f"FUSE_{part} requests"))
        return Keyword(replace(self.figure, key=f"{self.metric}:{part}", label=label,
                               series=label), self.bound)


# each figure's bounds, as the registry declares them (figures.METRICS: Metric.keywords)
KEYWORDS: dict[str, Keyword] = {
    name: Keyword(m, name.split("_", 1)[0]) for m in METRICS.values() for name in m.keywords}


# These take a number (all requests) or {opcode: number} (FUSE_<opcode> requests).
PER_OPCODE = frozenset({"max_fuse_requests", "max_fuse_per_file", "max_fuse_per_mib"})
# min_efficiency takes a share of the store's ceiling, or {ceiling: share} for each named.
CEILINGS = {"store": "store's", "fuse": "bindfs over tmpfs", "tmpfs": "tmpfs"}


@dataclass(frozen=True)
class Threshold:
    keyword: str
    text: str  # as the user wrote it, for messages
    limit: float
    # a bound on one part of the figure: a FUSE opcode (max_fuse_per_file={"GETATTR": 1}),
    # a ceiling (min_efficiency={"fuse": "40%"})
    part: str | None = None

    @property
    def spec(self) -> Keyword:
        spec = KEYWORDS[self.keyword]
        return spec if self.part is None else spec.of_part(self.part)

    @property
    def named(self) -> str:
        """The keyword as written: max_fuse_per_file["GETATTR"] for a per-opcode bound."""
        return self.keyword if self.part is None else f'{self.keyword}["{self.part}"]'

    def holds(self, measured: float) -> bool:
        if self.spec.bound == "min":
            return measured >= self.limit
        return measured <= self.limit

    def describe_failure(self, workload: str, measured: float) -> str:
        op = "<" if self.spec.bound == "min" else ">"
        shown = self.spec.show(measured)
        return f"{workload}: {self.spec.label} {shown} {op} {self.named} {self.text}"


@dataclass(frozen=True)
class Plan:
    test: str
    thresholds: tuple[Threshold, ...]
    baseline: str | None = None  # compare with this baseline's figure for each scenario
    tolerance: float | None = None  # None: --fsperf-tolerance (the marker's beats the ini's)
    rounds: int | None = None  # None: --fsperf-rounds
    warmup: bool | None = None
    # the figures its A/Bs decide on (judge/deciding.py); None: the setting's
    gate_on: tuple[str, ...] | None = None
    gate_accept: tuple[str, ...] = ()  # request-shape changes a reviewer accepted

    @property
    def wants_rss_after(self) -> bool:
        return any(t.keyword in ("max_rss_after", "max_rss_round_growth") for t in self.thresholds)

    @property
    def bounds_memory(self) -> bool:
        """A bound on the daemon's memory: judged on a daemon that holds only this test's work."""
        return any(t.keyword in MEMORY_BOUNDS for t in self.thresholds)

    @property
    def wants_ceilings(self) -> bool:
        """A bound on a share of a ceiling: the test's ceilings are measured for it."""
        return any(t.keyword == "min_efficiency" for t in self.thresholds)


BASELINE_KEYS = ("baseline", "tolerance", "rounds", "warmup", "gate_on", "gate_accept")
DECIDING_WORDS = ("primary", "default")  # the bandwidth or rate; the default set


def figure_names(value: object, where: str, words: tuple[str, ...] = DECIDING_WORDS) -> tuple[str, ...]:
    """Figures an A/B decides on, as written (a list, or one text with commas): each a figure
    A/Bs compare (figures.METRICS) or one of `words`; UsageError names the first that is not."""
    items = value.split(",") if isinstance(value, str) else value
    if not isinstance(items, list | tuple) or not items:
        raise UsageError(f"{where}: give figure names, e.g. 'primary,daemon_rss,fuse_per_mib'")
    known = [*words, *(k for k, m in METRICS.items() if m.compared)]
    out: list[str] = []
    for item in items:
        name = str(item).strip()
        if name not in known:
            close = difflib.get_close_matches(name, known, n=1, cutoff=0.5)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise UsageError(f"{where}: {name[:40]!r} is not a figure an A/B compares{hint}; "
                             f"known: {', '.join(known)}")
        out.append(name)
    return tuple(dict.fromkeys(out))


def build_plan(test: str, markers: Iterable[tuple[tuple[object, ...], Mapping[str, object]]]) -> Plan:
    """markers: (args, kwargs) of each fsperf marker, closest first; closest wins."""
    merged: dict[str, object] = {}
    for args, kwargs in markers:
        if args:
            raise UsageError(f"{test}: fsperf marker takes keywords only, got {args[0]!r}")
        for key, value in kwargs.items():
            merged.setdefault(key, value)
    baseline = merged.pop("baseline", None)
    if baseline is not None and (not isinstance(baseline, str)
                                 or not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,127}", baseline)
                                 or ".." in baseline):
        raise UsageError(f"{test}: fsperf marker baseline={str(baseline)[:40]!r} must be a "
                         "baseline name (letters, digits, '.', '_', '-'; not a path)")
    tolerance = None
    if "tolerance" in merged:
        try:
            tolerance = units.parse_tolerance(merged.pop("tolerance"))
        except ValueError as exc:
            raise UsageError(f"{test}: fsperf marker tolerance: {exc}") from None
        if not 0 <= tolerance < 1:
            raise UsageError(f"{test}: fsperf marker tolerance must be from 0% to below 100%")
    rounds = merged.pop("rounds", None)
    if rounds is not None and (isinstance(rounds, bool) or not isinstance(rounds, int)
                               or not 1 <= rounds <= 1000):
        raise UsageError(f"{test}: fsperf marker rounds={rounds!r} must be a whole number from 1 to 1000")
    warmup = merged.pop("warmup", None)
    if warmup is not None and not isinstance(warmup, bool):
        raise UsageError(f"{test}: fsperf marker warmup={warmup!r} must be True or False")
    gate_on = merged.pop("gate_on", None)
    if gate_on is not None:
        gate_on = figure_names(gate_on, f"{test}: fsperf marker gate_on")
    accept = merged.pop("gate_accept", None)
    accepted = (figure_names(accept, f"{test}: fsperf marker gate_accept", ())
                if accept is not None else ())
    thresholds = []
    for key, value in merged.items():
        if key not in KEYWORDS:
            names = [*KEYWORDS, *BASELINE_KEYS]
            close = difflib.get_close_matches(key, names, n=1, cutoff=0.5)
            hint = f"did you mean {close[0]!r}? " if close else ""
            raise UsageError(f"{test}: fsperf marker: unknown keyword {key!r} ({hint}known: "
                             f"{', '.join(names)})")
        if key in PER_OPCODE and isinstance(value, Mapping):
            thresholds += _per_opcode(test, key, value)
            continue
        if key == "min_efficiency" and isinstance(value, Mapping):
            thresholds += _per_ceiling(test, key, value)
            continue
        try:
            limit = KEYWORDS[key].parse(value)
        except ValueError as exc:
            raise UsageError(f"{test}: fsperf marker {key}: {exc}") from None
        thresholds.append(Threshold(key, str(value), limit))
    return Plan(test, tuple(thresholds), baseline, tolerance, rounds, warmup, gate_on, accepted)


def _per_opcode(test: str, key: str, limits: Mapping[object, object]) -> list[Threshold]:
    """{"GETATTR": 1, "LOOKUP": 1}: a bound per FUSE opcode (FUSE_ prefix optional)."""
    if not limits:
        raise UsageError(f"{test}: fsperf marker {key}: an empty mapping bounds nothing")
    out = []
    for name, value in limits.items():
        opcode = str(name).upper().removeprefix("FUSE_")
        if opcode not in OPCODES:
            close = difflib.get_close_matches(opcode, sorted(OPCODES), n=1, cutoff=0.6)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise UsageError(f"{test}: fsperf marker {key}: {name!r} is not a FUSE opcode{hint}")
        try:
            limit = KEYWORDS[key].parse(value)
        except ValueError as exc:
            raise UsageError(f"{test}: fsperf marker {key}[{name!r}]: {exc}") from None
        out.append(Threshold(key, str(value), limit, opcode))
    return out


def _per_ceiling(test: str, key: str, limits: Mapping[object, object]) -> list[Threshold]:
    """{"store": "50%", "fuse": "40%"}: a least share of each ceiling named."""
    if not limits:
        raise UsageError(f"{test}: fsperf marker {key}: an empty mapping bounds nothing")
    out = []
    for name, value in limits.items():
        if name not in CEILINGS:
            raise UsageError(f"{test}: fsperf marker {key}: {name!r} is not a ceiling (known: "
                             f"{', '.join(CEILINGS)})")
        try:
            limit = KEYWORDS[key].parse(value)
        except ValueError as exc:
            raise UsageError(f"{test}: fsperf marker {key}[{name!r}]: {exc}") from None
        out.append(Threshold(key, str(value), limit, None if name == "store" else str(name)))
    return out
