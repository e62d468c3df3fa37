"""Where the plugin keeps its state: one config.stash key for the session, and per test
item its plan, its mount request and its one record; and the id a test item is known by."""

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


def test_id(item: pytest.Item) -> str:
    """The test's id in results and saved runs: its node id, or - for a test module outside
    the rootdir (--pyargs pytest_fsperf.suites.X, as fsperf bench runs), whose node id has
    no file part ('::test_x') - the module's import name in front."""
    if item.nodeid.startswith("::"):
        module = getattr(getattr(item, "module", None), "__name__", "")
        return f"{module}{item.nodeid}"
    return item.nodeid
