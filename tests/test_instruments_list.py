"""The window's meters are made from one list (runner/instruments.INSTRUMENTS, issue 76.2):
no meter is built by hand in the window but the daemons' and the sampler's, which it is
about, and every meter of the list follows the one protocol."""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

import pytest

from pytest_fsperf.measure.reading import When
from pytest_fsperf.runner import instruments

pytestmark = pytest.mark.unit
WINDOW = Path(instruments.__file__).with_name("window.py")
OWN = {"Daemons", "Sampled", "CacheDisk", "Context"}  # the window's own, and what makes the rest


def test_no_meter_is_made_by_hand_in_the_window() -> None:
    meters = {name for name, obj in vars(instruments).items()
              if inspect.isclass(obj) and obj.__module__ == instruments.__name__}
    made = {node.func.id for node in ast.walk(ast.parse(WINDOW.read_text()))
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in meters}
    assert made <= OWN, made - OWN


def test_every_listed_meter_runs_at_a_declared_time() -> None:
    assert [when for when, _ in instruments.INSTRUMENTS] == sorted(
        (when for when, _ in instruments.INSTRUMENTS), key=[When.AROUND, When.PINNED].index)
