"""Error types: user mistakes and measurement faults are told apart."""

from __future__ import annotations


class UsageError(Exception):
    """A user mistake. The message is one line and names where the value came from."""


class MeasurementError(Exception):
    """A fault while measuring: fio failed, the daemon died, the mount went away."""
