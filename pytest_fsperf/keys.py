"""Where the plugin keeps its state: one config.stash key for the session, and per test
item its plan, its mount request and its one record."""

from __future__ import annotations

import pytest

from pytest_fsperf.ceilings.cache import Ceilings
from pytest_fsperf.mounts.request import MountRequest
from pytest_fsperf.plan.marker import Plan
from pytest_fsperf.session.second_pass import SecondPass
from pytest_fsperf.session.state import FsperfSession
from pytest_fsperf.session.verdict import ItemRecord

STATE = pytest.StashKey[FsperfSession]()
CEILINGS = pytest.StashKey[Ceilings]()  # --fsperf-ceilings: measured once per session and shape
PLAN = pytest.StashKey[Plan]()
PLAN_ERROR = pytest.StashKey[str]()
USAGE = pytest.StashKey[bool]()  # the test failed on a usage error: the session exits 4
MOUNT = pytest.StashKey[MountRequest]()
RECORD = pytest.StashKey[ItemRecord]()
PASSES = pytest.StashKey[SecondPass]()  # a gated session's second pass
