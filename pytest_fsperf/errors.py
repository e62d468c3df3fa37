"""Error types: user mistakes and measurement faults are told apart."""

from __future__ import annotations

from collections.abc import Callable
from typing import NoReturn, TypeVar

import pytest

T = TypeVar("T")


class UsageError(Exception):
    """A user mistake. The message is one line and names where the value came from."""


class MeasurementError(Exception):
    """A fault while measuring: fio failed, the daemon died, the mount went away."""


class WorkloadHung(MeasurementError):
    """A workload ran past its deadline: the filesystem stopped answering."""


def fail(message: str) -> NoReturn:
    pytest.fail(message, pytrace=False)


def or_fail(call: Callable[[], T]) -> T:
    """Run call; a usage error or fault fails the test in one line, without a traceback."""
    try:
        return call()
    except UsageError as exc:
        message = f"usage error: {exc}"
    except MeasurementError as exc:
        message = str(exc)
    fail(message)  # outside `except`, so pytest shows no chained exception
