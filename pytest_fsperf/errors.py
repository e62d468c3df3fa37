"""Error types: user mistakes and measurement faults are told apart. The plugin turns
either into a one-line test failure (plugin.py); the measuring core only raises them."""

from __future__ import annotations


class UsageError(Exception):
    """A user mistake. The message is one line and names where the value came from."""


class MeasurementError(Exception):
    """A fault while measuring: fio failed, the daemon died, the mount went away."""


class MountError(MeasurementError):
    """A backend could not be mounted (or prepared, or unmounted)."""


class NotCompared(MeasurementError, LookupError):
    """An A/B asked for a figure it could not compare (every pair dropped, or the figure not
    measured); the message says what happened and why."""


class DataLost(MeasurementError):
    """What a workload wrote did not read back as written (checked under a faulty store)."""


class WorkloadHung(MeasurementError):
    """A workload ran past its deadline: the filesystem stopped answering."""


def message(exc: UsageError | MeasurementError) -> str:
    """The one line a test fails with."""
    return f"usage error: {exc}" if isinstance(exc, UsageError) else str(exc)
