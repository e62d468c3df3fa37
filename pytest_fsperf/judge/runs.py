"""Saved runs (.fsperf/runs/NAME.json) and the comparison of this run with them.

A workload is compared only with the same workload of a run whose fingerprint matches:
the workload (scenario or options), scale, fs type, mount options, kernel and machine.
Regression = the median ratio is past the tolerance AND its 95% bootstrap interval lies
wholly below 1 (both sides need 2 or more values for that); improvement likewise above.
Against the last N matching runs, the verdict asks where one more run would fall: the
prediction interval of a run's median from theirs (`predicted`), so that how much runs
vary from each other, not only rounds within one, decides. Before any of that,
the machine canary (canary.py) of both runs is compared: when it moved by more than half
the tolerance, the outcome is "machine changed", not a verdict on the filesystem.
"""

from __future__ import annotations

import hashlib
import json
import math
import statistics
from collections.abc import Mapping
from typing import Any

from pytest_fsperf.figures import METRICS, Fig
from pytest_fsperf.judge.paired import t_quantile
from pytest_fsperf.measure import canary
from pytest_fsperf.result.environment import Environment
from pytest_fsperf.result.judged import RunComparison
from pytest_fsperf.result.machine import Mounted
from pytest_fsperf.saved.runs import SavedResult
from pytest_fsperf.stats import direction, mad, shift
from pytest_fsperf.vocab import Direction, RunOutcome

Z_975, Z_80 = 1.96, 0.8416  # a two-sided 5% test with 80% power


def fingerprint(scenario: str | None, options: Mapping[str, str], mount: Mounted | None,
                env: Environment | None) -> dict[str, Any]:
    """What must be equal for two measurements to be compared: the workload (scenario id or
    its options), scale, filesystem, mount options and store conditions, kernel and machine."""
    env_mount = env.mount if env is not None else None
    mount_options = (" ".join(mount.options) if mount
                     else env_mount.super_options if env_mount is not None else "")
    if mount is not None and mount.store:  # another store's conditions: another measurement
        mount_options += f" store={mount.store}"
    m = env.machine if env is not None else None
    return {
        "workload": scenario or json.dumps(dict(options), sort_keys=True),
        "scale": env.scale if env is not None else None,
        "fs": mount.backend if mount else env_mount.fstype if env_mount is not None else None,
        "mount_options": hashlib.sha256(mount_options.encode()).hexdigest()[:16],
        "kernel": env.kernel if env is not None else None,
        "machine": (f"{m.cpu_model} x{m.cpus} {m.mem_total_bytes}" if m is not None
                    else "None xNone None"),
    }


# the counts a saved run's comparison judges beside the deciding rate, as the registry says
# (figures.METRICS: Metric.saved)
SAVED = tuple(key for key, m in METRICS.items() if m.saved)


def _more(run: str, key: str, old: SavedResult, new: SavedResult,
          history: list[tuple[str, SavedResult]], tolerance: float) -> RunComparison | None:
    """A count a build and its options fix (the object-store requests, the FUSE requests)
    more than the tolerance higher in every round than in any saved one is a regression in
    what the workload costs, even at the same speed: the first such figure."""
    for metric in SAVED:
        a = ([statistics.median(v) for _n, r in history if (v := r.values(metric))]
             if len(history) > 1 else old.values(metric))
        b = new.values(metric)
        if not a or not b:
            continue
        then, now = statistics.median(a), statistics.median(b)
        if now <= then * (1 + tolerance) or min(b) <= max(a):
            continue
        ratio = (now + 0.5) / (then + 0.5) if then == 0 else now / then
        low = (min(b) + 0.5) / (max(a) + 0.5) if max(a) == 0 else min(b) / max(a)
        high = (max(b) + 0.5) / (min(a) + 0.5) if min(a) == 0 else max(b) / min(a)
        return RunComparison(run, key, metric, RunOutcome.REGRESSION, a, b, ratio, low, high, [],
                             [n for n, _r in history],
                             note=f"{METRICS[metric].label} {then:.0f} -> {now:.0f}, more in "
                                  "every round (the range shown is min/max, not an interval)")
    return None


def rounds_needed(spread: float, tolerance: float) -> int:
    """Rounds on each side for a two-sided 5% test to see a change of `tolerance` 80% of the
    time, where one round varies by `spread` (relative standard deviation)."""
    effect = math.log(1 + tolerance)
    return max(2, math.ceil(2 * ((Z_975 + Z_80) * spread / effect) ** 2))


def _spread(*sides: list[float]) -> float | None:
    found = [statistics.stdev(v) / statistics.fmean(v) for v in sides if len(v) > 1 and statistics.fmean(v)]
    return max(found) if found else None


def _one_round_note(a: list[float], b: list[float], tolerance: float) -> str:
    spread = _spread(a, b)
    needed = rounds_needed(spread if spread is not None else 0.10, tolerance)
    seen = (f"at the spread seen here ({100 * spread:.0f}% per round)" if spread is not None
            else "at a 10% spread per round (none seen: one round each)")
    return (f"one round cannot show a difference: it has no spread to judge it by; "
            f"{seen}, about {needed} rounds on each side would tell a {100 * tolerance:g}% change "
            f"(--fsperf-rounds={needed})")


def predicted(new: list[float], medians: list[float], tolerance: float,
              ) -> tuple[float, float | None, float | None, Direction]:
    """This run against the medians of the last k runs (k >= 2): where would a run of the
    same filesystem on the same machine fall? The 95% prediction interval of one more run's
    median (log scale, t with k-1 degrees of freedom, sd(runs) * sqrt(1 + 1/k)), so that how
    much runs differ from each other, not only rounds within one, decides. The runs' spread
    is taken as at least this run's own standard error of its median (three runs that
    happened to agree do not make a narrow gate). Judged by stats.direction, as shift is."""
    logs = [math.log(m) for m in medians if m > 0]
    here = [math.log(v) for v in new if v > 0]
    if len(logs) < 2 or not here:
        return shift(new, medians, tolerance)
    k = len(logs)
    centre = statistics.fmean(logs)
    spread = statistics.stdev(logs)
    if len(here) > 1:  # the median's standard error, from the rounds' MAD
        spread = max(spread, 1.253 * 1.4826 * mad(here) / math.sqrt(len(here)))
    half = t_quantile(0.975, k - 1) * spread * math.sqrt(1 + 1 / k)
    x = statistics.median(here) - centre
    ratio, lo, hi = math.exp(x), math.exp(x - half), math.exp(x + half)
    return ratio, lo, hi, direction(ratio, lo, hi, tolerance)


def compare(run: str, key: str, old: SavedResult, new: SavedResult, tolerance: float,
            history: list[tuple[str, SavedResult]] | None = None) -> RunComparison:
    """This run's workload against a saved one (`old`), or against the last matching runs
    (`history`, newest first, `old` among them): machine canary first, then the shift rule."""
    metric = Fig.BW if new.total is not None and new.total.io_bytes else Fig.OPS
    differs = [k for k, v in new.fingerprint.items() if old.fingerprint.get(k) != v]
    history = history or [(run, old)]
    names = [name for name, _r in history]
    if len(history) > 1:
        a = [statistics.median(v) for _n, r in history if (v := r.values(metric))]
    else:
        a = old.values(metric)
    b = new.values(metric)
    if differs or not a or not b or min(a) <= 0 or min(b) <= 0:  # no ratio of a zero
        return RunComparison(run, key, metric, RunOutcome.INCOMPARABLE, a, b, None, None, None,
                             differs or ["figures"], names)
    now, then = list(new.canary), [x for _n, r in history for x in r.canary]
    machine = canary.moved(now, then)
    if canary.changed(now, then, tolerance):
        return RunComparison(run, key, metric, RunOutcome.MACHINE_CHANGED, a, b, None, None, None, [], names,
                             machine)
    ratio, lo, hi, direction = shift(b, a, tolerance) if len(history) < 2 else predicted(b, a, tolerance)
    outcome = {Direction.UP: RunOutcome.IMPROVEMENT, Direction.DOWN: RunOutcome.REGRESSION,
               Direction.SAME: RunOutcome.PASS}.get(direction, RunOutcome.INCONCLUSIVE)
    if outcome == RunOutcome.INCONCLUSIVE and lo is not None and lo >= 1 - tolerance:
        outcome = RunOutcome.PASS  # no slowdown beyond tolerance is possible; a speed-up is not proven
    if outcome != RunOutcome.REGRESSION and (more := _more(run, key, old, new, history, tolerance)):
        return more
    note = _one_round_note(a, b, tolerance) if min(len(a), len(b)) < 2 else ""
    if note and len(history) < 2:  # one round against one run: no spread, nothing decided
        outcome, lo, hi = RunOutcome.INCONCLUSIVE, None, None
    return RunComparison(run, key, metric, outcome, a, b, ratio, lo, hi, [], names, machine, note)
