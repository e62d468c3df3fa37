"""Hooks pytest-fsperf offers to conftest.py files and plugins."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:  # the entry point imports this before a session uses the plugin
    from pytest_fsperf.mounts.spec import Backend


@pytest.hookspec
def pytest_fsperf_backends() -> Sequence[Backend]:  # type: ignore[empty-body]
    """Return backends to add (or replace, by name) next to the built-in ones."""
