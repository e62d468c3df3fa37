"""One test's settings resolved in one place, by the one precedence rule (command line >
marker > ini file > default), into the frozen PerTest its Workspace measures with."""

from __future__ import annotations

from pytest_fsperf.judge.deciding import Deciding, bounded_by
from pytest_fsperf.options.config import Settings, for_item
from pytest_fsperf.options.parse import RULE
from pytest_fsperf.plan.marker import Plan
from pytest_fsperf.runner.space import PerTest, Release
from pytest_fsperf.runner.target import Target


def per_test(s: Settings, plan: Plan | None, target: Target,
             reference: tuple[Target, str] | None = None) -> PerTest:
    """reference: the reference mount and its work dir, in a gate between two mounts."""
    rounds = for_item(s, "rounds", plan and plan.rounds, f"fsperf marker rounds={plan and plan.rounds}")
    warmup = for_item(s, "warmup", plan and plan.warmup, f"fsperf marker warmup={plan and plan.warmup}")
    tolerance = for_item(s, "tolerance", plan and plan.tolerance,
                         f"fsperf marker tolerance={plan and plan.tolerance}")
    gate_on = for_item(s, "gate_on", plan and plan.gate_on,
                       f"fsperf marker gate_on={plan and plan.gate_on}")
    deciding = Deciding(gate_on.value or (), bounded_by(t.keyword for t in plan.thresholds)
                        if plan else (), plan.gate_accept if plan else ())
    wants = plan is not None and plan.wants_rss_after
    release = None
    if s.reference is not None:
        owned = target.owned
        assert owned is not None  # --fsperf-reference needs --fsperf-backend
        release = Release(s.reference, s.candidate or owned.build)
    elif reference is not None:
        release = Release(reference[0].path, target.path, reference)
    return PerTest(
        rounds.value, warmup.value, tolerance.value,
        s.rss_settle if s.rss_settle is not None else 2.0 if wants else 1.0 if release else 0.0,
        s.page_cache,
        tuple(f"{c.describe(n)} ({RULE})" for n, c in
              (("rounds", rounds), ("warmup", warmup), ("tolerance", tolerance),
               ("gate_on", gate_on)) if c.over),
        release, deciding)
