"""The test tiers: each test in exactly one; nothing that needs more than logic is `unit`."""

from __future__ import annotations

import subprocess

import pytest

from pytest_fsperf.infra import lock
from tests.conftest import tier_of


def test_an_explicit_marker_wins_over_the_module_and_the_fixtures_imply_the_rest() -> None:
    assert tier_of(set(), {"fio"}, "fuse", "t") == "fio"
    assert tier_of({"bindfs"}, set(), "fio", "t") == "fuse"
    assert tier_of({"minio"}, set(), "fuse", "t") == "s3"
    assert tier_of({"pytester"}, set(), "unit", "t") == "fio"
    assert tier_of(set(), {"integration"}, "unit", "t") == "fuse"
    assert tier_of(set(), set(), "unit", "t") == "unit"


def test_two_tiers_or_a_unit_test_that_needs_more_is_refused() -> None:
    with pytest.raises(pytest.UsageError, match="two test tiers"):
        tier_of(set(), {"unit", "fio"}, "unit", "t")
    with pytest.raises(pytest.UsageError, match="need the fio tier"):
        tier_of({"pytester"}, {"unit"}, "unit", "t")


def test_a_unit_test_cannot_start_a_process_or_take_the_machine_lock(tmp_path) -> None:
    with pytest.raises(AssertionError, match="started a process"):
        subprocess.run(["true"], check=False)
    with pytest.raises(AssertionError, match="machine lock"), lock.machine_lock(timeout=0):
        pass
    with lock.machine_lock(str(tmp_path / "own.lock"), timeout=0):  # a lock of its own is logic
        pass
