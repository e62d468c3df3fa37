"""Paired statistics for interleaved A/B runs, and when to stop adding pairs.

Each pair ran A and B back to back on the same machine, so slow drift of the machine (a
neighbour's job, thermal state, a filling disk) hits both alike. The statistic is the
per-pair log ratio d_i = ln(B_i / A_i); the estimate is exp(mean d), the geometric mean of
the pair ratios; its interval is Student's t interval of the mean of d, turned back into a
ratio (a paired t-test on the log scale: ratios are multiplicative and skewed, their logs
roughly symmetric).

Outcomes (the tolerance rule shared with saved-run comparisons):
  better/worse  the estimate is past the tolerance AND the interval excludes 1;
  same          the interval lies inside [1 - tolerance, 1 + tolerance];
  not worse     (a release gate only) the interval's worse end is inside the tolerance;
  inconclusive  otherwise.

A release gate asks one question: is the candidate worse than the reference by more than
the tolerance? "Not worse" answers it with a one-sided 95% bound (the worse end of the 90%
interval), and lets the gate stop there; it does not wait for the other end to prove "same",
which at 6% noise per pair and a 5% tolerance takes about twice the pairs.

Stopping early: after each pair from `min_pairs` on, the comparison is looked at; it stops
at the first decisive look. Looking many times inflates false alarms, so a look can only
flag a difference with a (1 - ALPHA / L) interval, L the number of looks the budget allows
(Bonferroni): the chance that an A/A comparison flags at any look is at most ALPHA,
whatever the stopping, and lower still because the estimate must also be past the
tolerance. "same" needs the plain 90% interval inside the tolerance (two one-sided tests
at 5%), "not worse" its worse end inside: each a one-sided test at 5% per look, not widened
for the looks. Calling either wrongly is a missed slowdown, and that is what the budget
trades: a candidate exactly at the tolerance passes at some look more often than 5%, one
twice past it (a 10% slowdown against 5%) in well under 1% (tests/test_paired.py).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from .vocab import Text

ALPHA = 0.02  # at most this share of A/A comparisons flags a difference, over all looks
SAME_LEVEL = 0.90


def t_cdf(x: float, df: int) -> float:
    """Student's t distribution function for whole df (closed forms, Abramowitz & Stegun 26.7.3-4)."""
    theta = math.atan(abs(x) / math.sqrt(df))
    c2 = math.cos(theta) ** 2
    total, term = 1.0, 1.0
    if df % 2:  # odd: (2/pi) (theta + sin cos (1 + 2/3 c2 + 2*4/(3*5) c2^2 + ...))
        for k in range(1, (df - 3) // 2 + 1):
            term *= c2 * (2 * k) / (2 * k + 1)
            total += term
        inner = theta + (math.sin(theta) * math.cos(theta) * total if df > 1 else 0.0)
        a = 2 / math.pi * inner
    else:  # even: sin (1 + 1/2 c2 + 1*3/(2*4) c2^2 + ...)
        for k in range(1, (df - 2) // 2 + 1):
            term *= c2 * (2 * k - 1) / (2 * k)
            total += term
        a = math.sin(theta) * total
    return 0.5 + a / 2 if x >= 0 else 0.5 - a / 2


def t_quantile(p: float, df: int) -> float:
    """The t value below which a share p of the distribution lies (bisection on t_cdf)."""
    if not 0 < p < 1:
        raise ValueError("p must be inside (0, 1)")
    if p < 0.5:
        return -t_quantile(1 - p, df)
    lo, hi = 0.0, 1.0
    while t_cdf(hi, df) < p:
        hi *= 2
    for _ in range(200):
        mid = (lo + hi) / 2
        if t_cdf(mid, df) < p:
            lo = mid
        else:
            hi = mid
        if hi - lo < 1e-10 * max(1.0, hi):
            break
    return (lo + hi) / 2


class Direction(Text):
    """Where B lies against A, as far as the pairs can tell."""

    UP = "up"  # bigger, past the tolerance
    DOWN = "down"
    SAME = "same"  # within the tolerance both ways
    UNCLEAR = "unclear"


@dataclass(frozen=True)
class Paired:
    n: int  # pairs with a figure on both sides
    ratio: float | None  # geometric mean of B_i / A_i
    low: float | None  # the interval at `level`
    high: float | None
    level: float
    direction: Direction
    not_down: bool = False  # the 90% interval's low end is inside the tolerance
    not_up: bool = False  # its high end is


def log_ratios(a: Sequence[float | None], b: Sequence[float | None]) -> list[float]:
    """ln(B/A) per pair; a pair with a zero (a count of requests an option removed) is taken
    as (B + 0.5) / (A + 0.5), so that 300 against 0 is a large change and 0 against 0 none."""
    return [math.log(y / x) if x > 0 and y > 0 else math.log((y + 0.5) / (x + 0.5))
            for x, y in zip(a, b, strict=True)
            if x is not None and y is not None and x >= 0 and y >= 0]


def _interval(d: list[float], level: float) -> tuple[float, float, float]:
    n = len(d)
    mean = sum(d) / n
    sd = math.sqrt(sum((v - mean) ** 2 for v in d) / (n - 1))
    half = t_quantile((1 + level) / 2, n - 1) * sd / math.sqrt(n)
    return math.exp(mean), math.exp(mean - half), math.exp(mean + half)


def paired(a: Sequence[float | None], b: Sequence[float | None], tolerance: float,
           looks: int = 1) -> Paired:
    """B against A over interleaved pairs; `looks`: how many times the comparison may be
    looked at in all (the flag's interval is widened for it; see the module's text)."""
    d = log_ratios(a, b)
    if not d:
        return Paired(0, None, None, None, 0.0, Direction.UNCLEAR)
    if len(d) < 2:
        return Paired(1, math.exp(d[0]), None, None, 0.0, Direction.UNCLEAR)
    flag_level = 1 - ALPHA / max(1, looks)
    ratio, lo, hi = _interval(d, flag_level)
    if ratio > 1 + tolerance and lo > 1:
        return Paired(len(d), ratio, lo, hi, flag_level, Direction.UP)
    if ratio < 1 - tolerance and hi < 1:
        return Paired(len(d), ratio, lo, hi, flag_level, Direction.DOWN)
    ratio, lo, hi = _interval(d, SAME_LEVEL)
    not_down, not_up = lo >= 1 - tolerance, hi <= 1 + tolerance
    direction = Direction.SAME if not_down and not_up else Direction.UNCLEAR
    return Paired(len(d), ratio, lo, hi, SAME_LEVEL, direction, not_down, not_up)


@dataclass(frozen=True)
class Budget:
    """How long an interleaved comparison may go on before it says inconclusive."""

    min_pairs: int = 3
    max_pairs: int = 12
    seconds: float = 300.0  # wall time of the whole comparison: layout, cold starts, runs

    @property
    def looks(self) -> int:
        return max(1, self.max_pairs - self.min_pairs + 1)

    def spent(self, pairs: int, seconds: float) -> bool:
        return pairs >= self.max_pairs or seconds >= self.seconds


def should_stop(decided: bool, budget: Budget, pairs: int, seconds: float,
                next_pair: float = 0.0) -> bool:
    """Stop at the first decisive look (never before min_pairs), at the cap on pairs, or
    when the time budget is spent or the next pair (next_pair s, as the last ones took)
    would not fit in it: the budget bounds the wall time, even before min_pairs."""
    if seconds + next_pair > budget.seconds:
        return True
    if pairs < budget.min_pairs:
        return False
    return decided or budget.spent(pairs, seconds)


def order(pair: int) -> str:
    """A B, then B A, alternating (ABBA ABBA ...): neither side always runs first, so a
    warm-up or a drift within a pair does not favour one."""
    return "AB" if pair % 2 == 0 else "BA"
