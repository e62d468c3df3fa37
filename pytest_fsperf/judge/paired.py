"""Paired statistics for interleaved A/B runs, and when to stop adding pairs.

Each pair ran A and B back to back on the same machine, so slow drift of the machine (a
neighbour's job, thermal state, a filling disk) hits both alike. The statistic is the
per-pair log ratio d_i = ln(B_i / A_i); the estimate is exp(mean d), the geometric mean of
the pair ratios (ratios are multiplicative and skewed, their logs roughly symmetric).

Outcomes (the tolerance rule shared with saved-run comparisons):
  better/worse  the estimate is past the tolerance AND the flag interval excludes 1;
  same          the pass interval lies inside [1 - tolerance, 1 + tolerance];
  not worse     (a release gate only) the pass interval's worse end is inside the tolerance;
  inconclusive  otherwise.

One look (a fixed number of pairs, judged once): Student's t interval of the mean of d,
at 1 - ALPHA to flag, at SAME_LEVEL to pass.

Many looks (pairs added until decided or out of time, looked at after each): the
intervals are confidence sequences, valid at every look at once, so looking after every
pair, for as long as the time budget lasts, costs nothing more. They come from Lai's
t-mixture (Lai 1976; Wang & Ramdas 2023): with d_i ~ N(mu, s^2), s unknown, the Bayes
factor of "mean = m" against a N(0, g) prior on the standardized effect (mu - m)/s and the
right-Haar prior ds/s on s,
    BF_n(t) = (1 + n g)^(-1/2) * ((1 + t^2/(n-1)) / (1 + t^2/((n-1)(1 + n g))))^(n/2),
t the usual t statistic of m, is a nonnegative martingale with BF_1 = 1 under "mean = m"
(in the filtration of the scale-free shape of the data), and so is an average of such
over several g. Ville's inequality gives P(BF_n >= 1/alpha at any n) <= alpha, so
{m : BF_n < 1/alpha} holds the true mean at every n at once with chance >= 1 - alpha; a
statement about all n at once holds at any stopping time, whatever the rule. The set is
mean +- radius(n, alpha) standard errors; it is unbounded until 3 pairs.

A/A comparisons flag a difference with chance at most ALPHA over all looks (about half
each way: a gate's false alarm <= 1%), less still because the estimate must also be past
the tolerance. A candidate slower than the tolerance passes ("not worse") with chance at
most about PASS_ALPHA / 2 at any look: 10% at exactly the tolerance, under 1% at twice it
in the simulation (tests/test_paired.py; docs/explanation/statistics.md). The pass level is
lower than the flag level on purpose: calling a good build good late costs minutes,
calling it bad costs trust.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from dataclasses import dataclass

from pytest_fsperf.stats import direction
from pytest_fsperf.vocab import Direction

ALPHA = 0.02  # at most this share of A/A comparisons flags a difference, over all looks
SAME_LEVEL = 0.90  # one look: the plain interval that passes
PASS_ALPHA = 0.30  # many looks: the confidence sequence that passes
# g, the prior variance of the standardized effect, chosen in the simulation: 1 is tightest
# for 10% effects at 5-10% noise per pair; the flag's mixture adds 100 so that a gross
# regression (0.5x at 3% noise) is flagged after 3 pairs, not 6.
PASS_MIXTURE = (1.0,)
FLAG_MIXTURE = (1.0, 100.0)


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


@dataclass(frozen=True)
class Paired:
    n: int  # pairs with a figure on both sides
    ratio: float | None  # geometric mean of B_i / A_i
    low: float | None  # the interval at `level`
    high: float | None
    level: float
    direction: Direction
    not_down: bool = False  # the pass interval's low end is inside the tolerance
    not_up: bool = False  # its high end is
    anytime: bool = False  # the interval is a confidence sequence (valid at every look)


def log_ratios(a: Sequence[float | None], b: Sequence[float | None],
               offsets: Sequence[float] = (), floor: float = 0.0) -> list[float]:
    """ln(B/A) per pair, less the pair's offset where given (judge/neighbours.py); a pair
    with a zero (a count of requests an option removed) is taken as (B + 0.5) / (A + 0.5),
    so that 300 against 0 is a large change and 0 against 0 none. floor: a figure below it
    counts as it (a figure's registry floor: 3% against 1% of a core is no change, 100%
    against 5% is 10x)."""
    less = list(offsets) + [0.0] * (len(a) - len(offsets))
    return [(math.log(max(y, floor) / max(x, floor)) if floor > 0 else
             math.log(y / x) if x > 0 and y > 0 else math.log((y + 0.5) / (x + 0.5))) - o
            for x, y, o in zip(a, b, less, strict=True)
            if x is not None and y is not None and x >= 0 and y >= 0]


COUNT_PAIRS = 2  # an exact count decides on its own rule from this many pairs on


def counted(a: Sequence[float | None], b: Sequence[float | None], tolerance: float,
            floor: float = 0.0) -> Direction | None:
    """An exact count (requests, FUSE requests per MiB) judged as a count: from COUNT_PAIRS
    pairs on, every pair's B/A past the tolerance the same way is UP or DOWN, every pair's
    within it SAME; otherwise None (judged by the intervals, as a timing is). A count that
    varies from run to run by chance rarely moves past the tolerance the same way in every
    pair: tests/test_paired.py simulates Poisson counts (docs/explanation/statistics.md)."""
    d = log_ratios(a, b, floor=floor)
    if len(d) < COUNT_PAIRS:
        return None
    up, down = math.log(1 + tolerance), math.log(1 - tolerance)
    if all(v > up for v in d):
        return Direction.UP
    if all(v < down for v in d):
        return Direction.DOWN
    if all(down <= v <= up for v in d):
        return Direction.SAME
    return None


@functools.lru_cache(maxsize=4096)
def radius(n: int, alpha: float, mixture: tuple[float, ...] = PASS_MIXTURE) -> float:
    """Half-width, in standard errors of the mean, of the 1 - alpha confidence sequence at
    pair n: the |t| where the mixture's BF_n(t) reaches 1/alpha (module text), inf while
    the sequence cannot bound the mean yet (BF_n stays below 1/alpha however large |t|)."""
    bound = -math.log(alpha)
    if n < 2 or log_bf(n, math.inf, mixture) < bound:
        return math.inf
    lo, hi = 0.0, 1.0
    while log_bf(n, hi, mixture) < bound:  # BF_n grows with |t|
        hi *= 2
    while hi - lo > 1e-9 * hi:
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if log_bf(n, mid, mixture) < bound else (lo, mid)
    return hi


def log_bf(n: int, t: float, mixture: tuple[float, ...]) -> float:
    """ln of the average over the prior variances g in `mixture` of BF_n(t) (module text):
    the evidence against "mean = m" at t statistic t. An average of test martingales is one."""
    nu = n - 1
    logs = []
    for g in mixture:
        k = 1 + n * g
        ratio = k if math.isinf(t) else (1 + t * t / nu) / (1 + t * t / (nu * k))
        logs.append(-0.5 * math.log(k) + n / 2 * math.log(ratio))
    top = max(logs)
    return top + math.log(sum(math.exp(v - top) for v in logs) / len(logs))


def _exp(x: float) -> float:
    return 0.0 if x == -math.inf else math.inf if x == math.inf else math.exp(min(x, 700.0))


def paired(a: Sequence[float | None], b: Sequence[float | None], tolerance: float,
           anytime: bool = False, alpha: float = ALPHA, offsets: Sequence[float] = (),
           floor: float = 0.0) -> Paired:
    """B against A over interleaved pairs; anytime: the pairs are looked at after each one
    and the intervals must hold at every look (confidence sequences; see the module's text);
    alpha: the flag's error (a release gate's share of its suite's: suite_alpha); offsets:
    per pair, taken off its ln(B/A) (the neighbours adjusted for: judge/neighbours.py);
    floor: the figure's, added to both sides (log_ratios)."""
    d = log_ratios(a, b, offsets, floor)
    if not d:
        return Paired(0, None, None, None, 0.0, Direction.UNCLEAR)
    n = len(d)
    if n < 2:
        return Paired(1, math.exp(d[0]), None, None, 0.0, Direction.UNCLEAR)
    mean, sd = _mean_sd(d)
    se = sd / math.sqrt(n)
    ratio = math.exp(mean)

    def bounds(width: float) -> tuple[float, float]:
        """The interval, as ratios, `width` standard errors either side; unbounded while a
        sequence has too few pairs, even for figures that never vary."""
        half = width * se if math.isfinite(width) else math.inf
        return _exp(mean - half), _exp(mean + half)

    flag_level = 1 - alpha
    lo, hi = bounds(radius(n, alpha, FLAG_MIXTURE) if anytime
                    else t_quantile(1 - alpha / 2, n - 1))
    flagged = direction(ratio, lo, hi, tolerance)  # the flag interval: past the tolerance?
    if flagged in (Direction.UP, Direction.DOWN):
        return Paired(n, ratio, lo, hi, flag_level, flagged, anytime=anytime)
    level = 1 - PASS_ALPHA if anytime else SAME_LEVEL
    lo, hi = bounds(radius(n, PASS_ALPHA, PASS_MIXTURE) if anytime
                    else t_quantile((1 + SAME_LEVEL) / 2, n - 1))
    not_down, not_up = lo >= 1 - tolerance, hi <= 1 + tolerance
    same = direction(ratio, lo, hi, tolerance) is Direction.SAME  # the pass interval: within it?
    found = Direction.SAME if same else Direction.UNCLEAR
    if not (math.isfinite(hi) and lo > 0):  # not bounded yet: no interval to show
        return Paired(n, ratio, None, None, level, found, anytime=anytime)
    return Paired(n, ratio, lo, hi, level, found, not_down, not_up, anytime)


@dataclass(frozen=True)
class Budget:
    """How long an interleaved comparison may go on before it says inconclusive."""

    min_pairs: int = 3
    max_pairs: int = 100  # a safety cap: the time budget decides how many pairs fit
    seconds: float = 300.0  # wall time of the whole comparison: layout, cold starts, runs
    alpha: float = ALPHA  # the flag's error: a release gate's share of its suite's (suite_alpha)

    @property
    def anytime(self) -> bool:
        """Looked at after each pair from min_pairs on: the intervals must hold at every look."""
        return self.max_pairs > self.min_pairs

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


MOST_PAIRS = 100_000  # beyond this, "more pairs" is no advice


def pairs_needed(a: Sequence[float | None], b: Sequence[float | None], tolerance: float,
                 gate: bool, bigger_is_better: bool = True, flag_alpha: float = ALPHA) -> int | None:
    """How many pairs in all an inconclusive sequence would need to decide, were the pairs to
    come on as they have (their mean and spread): the first n where the flag interval clears
    1 (the estimate past the tolerance) or the pass interval clears the tolerance's edge.
    None: no number would (the estimate sits on the tolerance's edge, or too few pairs)."""
    d = log_ratios(a, b)
    if len(d) < 2:
        return None
    mean, sd = _mean_sd([v if bigger_is_better else -v for v in d])  # mean < 0: B worse
    low, high = math.log(1 - tolerance), math.log(1 + tolerance)
    if sd == 0:
        return None
    mixture: tuple[float, ...]
    if mean < low or mean > high:  # past the tolerance: the flag interval must clear 0
        margin, alpha, mixture = abs(mean), flag_alpha, FLAG_MIXTURE
    else:  # inside: the pass interval must clear the edge(s)
        margin = mean - low if gate else min(mean - low, high - mean)
        alpha, mixture = PASS_ALPHA, PASS_MIXTURE
    if margin <= 0:
        return None

    def enough(n: int) -> bool:
        return radius(n, alpha, mixture) * sd / math.sqrt(n) < margin

    if not enough(MOST_PAIRS):
        return None
    lo, hi = len(d), MOST_PAIRS  # bisection: the half-width shrinks as n grows
    while lo < hi:
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if enough(mid) else (mid + 1, hi)
    return lo


def spread_of(a: Sequence[float | None], b: Sequence[float | None]) -> float:
    """The pair ratios' spread as a fraction (0.12: each pair's B/A is off by about 12%): the
    standard deviation of their logs, as a ratio less one."""
    d = log_ratios(a, b)
    return math.exp(_mean_sd(d)[1]) - 1 if len(d) >= 2 else 0.0


def _mean_sd(d: Sequence[float]) -> tuple[float, float]:
    mean = sum(d) / len(d)
    return mean, math.sqrt(sum((v - mean) ** 2 for v in d) / (len(d) - 1))


def suite_alpha(tests: int, nth: int) -> float:
    """A release gate's flag error for the nth gated workload (from 1) of a test, in a
    session gating `tests` tests: ALPHA split over the tests (Bonferroni: the suite's false
    alarms, over every look of every comparison, stay under ALPHA), and a test's share over
    its workloads as 6 / (pi^2 nth^2), which sums to the share however many there are."""
    return ALPHA / max(1, tests) * 6 / (math.pi ** 2 * max(1, nth) ** 2)
