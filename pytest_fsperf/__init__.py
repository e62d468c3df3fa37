"""pytest-fsperf: filesystem performance regression tests for FUSE mounts.

PYTEST_DONT_REWRITE: the plugin's own asserts need no rewriting, and the `fsperf` command
imports the package before pytest would mark it (which warned on every run).
"""

from __future__ import annotations

from typing import Any

from .mounts.request import mount_params, option_id
from .mounts.spec import Backend

__version__ = "0.1.0"

# The markers, made on first use, so that importing the measuring core (as benchmarks do)
# does not import pytest:
#   fsperf: thresholds, ``@fsperf(min_bw="2GB/s", max_cpu="250%", max_rss="2.2GB")``
#   fsperf_mount: a backend to mount, ``@fsperf_mount("s3fs", options=["-o", "parallel_count=20"])``
_MARKERS = ("fsperf", "fsperf_mount")


def __getattr__(name: str) -> Any:
    if name in _MARKERS:
        import pytest

        return getattr(pytest.mark, name)
    raise AttributeError(f"module 'pytest_fsperf' has no attribute {name!r}")

__all__ = ["Backend", "__version__", "fsperf", "fsperf_mount", "mount_params", "option_id"]
