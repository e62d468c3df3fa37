"""Where the plugin keeps its state: one config.stash key for the session, and per test
item its plan, its mount request and its one record."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from pytest_fsperf.ceilings.cache import Ceilings
from pytest_fsperf.judge import Judgement
from pytest_fsperf.mounts.request import MountRequest
from pytest_fsperf.plan.marker import Plan
from pytest_fsperf.result.comparison import Comparison
from pytest_fsperf.result.workload import WorkloadResult
from pytest_fsperf.session.second_pass import SecondPass
from pytest_fsperf.session.state import FsperfSession


@dataclass
class ItemRecord:
    """What one test measured and how it was judged: filled by the fsperf fixture and, once,
    by the call hook; the report rows are rendered from it."""

    results: list[WorkloadResult] = field(default_factory=list)
    comparisons: list[Comparison] = field(default_factory=list)
    judgement: Judgement | None = None


STATE = pytest.StashKey[FsperfSession]()
CEILINGS = pytest.StashKey[Ceilings]()  # --fsperf-ceilings: measured once per session and shape
PLAN = pytest.StashKey[Plan]()
PLAN_ERROR = pytest.StashKey[str]()
USAGE = pytest.StashKey[bool]()  # the test failed on a usage error: the session exits 4
MOUNT = pytest.StashKey[MountRequest]()
RECORD = pytest.StashKey[ItemRecord]()
PASSES = pytest.StashKey[SecondPass]()  # a gated session's second pass
