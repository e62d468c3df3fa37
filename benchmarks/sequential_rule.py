"""The simulation behind the release gate's stopping rule (paired.py): how often it cries
wolf, how often it catches a slowdown, and how many pairs it takes, against the rule it
replaced (Bonferroni over the looks a pair cap allows).

Each trial adds pairs one by one, B/A of each pair = true * exp(N(0, noise)), and looks
after each pair, as ab.interleave does; it stops at the first decision or at the cap
(what the time budget allows). Tolerance 5%, as in benchmarks/gate_detection.py.

    python3 benchmarks/sequential_rule.py [--trials 1000] [--cap 60]

Prints, per noise level and rule: A/A flagged (either way), A/A median pairs to a
decision, 10% slowdowns caught, passed and their median pairs, and the share of
candidates exactly at the tolerance that pass.
"""

from __future__ import annotations

import argparse
import math
import random
import statistics

from pytest_fsperf.judge.comparison import judge_metric
from pytest_fsperf.judge.paired import ALPHA, t_quantile
from pytest_fsperf.vocab import Difference

TOLERANCE = 0.05
PASSES = (Difference.NOT_WORSE, Difference.SAME)
FLAGS = (Difference.B_WORSE, Difference.B_BETTER)


def sequence(true: float, noise: float, rng: random.Random, cap: int) -> tuple[Difference, int]:
    """The plugin's rule: confidence sequences, looked at after every pair from 3 on."""
    a: list[float | None] = []
    b: list[float | None] = []
    for n in range(1, cap + 1):
        a.append(1.0)
        b.append(true * math.exp(rng.gauss(0, noise)))
        if n >= 3:
            outcome = judge_metric("bw", a, b, TOLERANCE, anytime=True, gate=True).outcome
            if outcome != Difference.INCONCLUSIVE:
                return outcome, n
    return Difference.INCONCLUSIVE, cap


def bonferroni(true: float, noise: float, rng: random.Random, cap: int) -> tuple[Difference, int]:
    """The rule before: a look may flag only with a 1 - ALPHA/L t interval, L = cap - 2 looks;
    'not worse' on the plain one-sided 95% bound at every look."""
    d: list[float] = []
    looks = cap - 2
    for n in range(1, cap + 1):
        d.append(math.log(true) + rng.gauss(0, noise))
        if n < 3:
            continue
        mean = sum(d) / n
        se = math.sqrt(sum((v - mean) ** 2 for v in d) / (n - 1) / n)
        wide = t_quantile(1 - ALPHA / looks / 2, n - 1) * se
        if mean < math.log(1 - TOLERANCE) and mean + wide < 0:
            return Difference.B_WORSE, n
        if mean > math.log(1 + TOLERANCE) and mean - wide > 0:
            return Difference.B_BETTER, n
        if mean - t_quantile(0.95, n - 1) * se >= math.log(1 - TOLERANCE):
            return Difference.NOT_WORSE, n
    return Difference.INCONCLUSIVE, cap


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--trials", type=int, default=1000)
    ap.add_argument("--cap", type=int, default=60, help="pairs the time budget allows")
    args = ap.parse_args()
    print(f"tolerance {100 * TOLERANCE:g}%, {args.trials} trials per cell, looks after every pair")
    print("| noise per pair | rule | A/A flagged | A/A pairs (median) | 10% slower caught | "
          "10% slower passed | pairs to catch (median) | 5% slower passed |")
    print("|---|---|---|---|---|---|---|---|")
    rules = (("sequence", sequence, args.cap), ("Bonferroni, 16 pairs", bonferroni, 16),
             (f"Bonferroni, {args.cap} pairs", bonferroni, args.cap))
    for noise in (0.03, 0.06, 0.10):
        for name, rule, cap in rules:
            rng = random.Random(1)
            aa = [rule(1.0, noise, rng, cap) for _ in range(args.trials)]
            slow = [rule(0.9, noise, rng, cap) for _ in range(args.trials)]
            edge = [rule(0.95, noise, rng, cap) for _ in range(args.trials)]
            caught = [n for d, n in slow if d == Difference.B_WORSE]
            share = lambda found, what: sum(d in what for d, _ in found) / len(found)  # noqa: E731
            print(f"| {100 * noise:g}% | {name} | {100 * share(aa, FLAGS):.2f}% | "
                  f"{statistics.median(n for _, n in aa):g} | {100 * len(caught) / len(slow):.1f}% | "
                  f"{100 * share(slow, PASSES):.2f}% | "
                  f"{statistics.median(caught) if caught else '-'} | "
                  f"{100 * share(edge, PASSES):.1f}% |", flush=True)


if __name__ == "__main__":
    main()
