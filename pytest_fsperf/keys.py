"""Where the plugin keeps its state: one config.stash key for the session, and per test
item its plan, its mount request and its one record."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from .comparison import Comparison
from .judge import Judgement
from .mounts.request import MountRequest
from .plan import Plan
from .result import WorkloadResult
from .session import FsperfSession


@dataclass
class ItemRecord:
    """What one test measured and how it was judged: filled by the fsperf fixture and, once,
    by the call hook; the report rows are rendered from it."""

    results: list[WorkloadResult] = field(default_factory=list)
    comparisons: list[Comparison] = field(default_factory=list)
    judgement: Judgement | None = None


STATE = pytest.StashKey[FsperfSession]()
PLAN = pytest.StashKey[Plan]()
PLAN_ERROR = pytest.StashKey[str]()
MOUNT = pytest.StashKey[MountRequest]()
RECORD = pytest.StashKey[ItemRecord]()
