"""Where the plugin keeps its state: config.stash and item.stash keys."""

from __future__ import annotations

import pytest

from . import runs
from .backends.request import MountRequest
from .baselines.check import Check
from .compare import Comparison
from .plan import Plan
from .result import WorkloadResult
from .session import FsperfSession

STATE = pytest.StashKey[FsperfSession]()
PLAN = pytest.StashKey[Plan]()
PLAN_ERROR = pytest.StashKey[str]()
RESULTS = pytest.StashKey[list[WorkloadResult]]()
COMPARISONS = pytest.StashKey[list[Comparison]]()
MOUNT = pytest.StashKey[MountRequest]()
CHECKS = pytest.StashKey[dict[str, list[Check]]]()
RUN_CMP = pytest.StashKey[dict[str, "runs.RunComparison"]]()
VERDICTS = pytest.StashKey[dict[str, tuple[str, list[str]]]]()

