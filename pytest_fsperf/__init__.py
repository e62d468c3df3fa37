"""pytest-fsperf: filesystem performance regression tests for FUSE mounts."""

from __future__ import annotations

import pytest

__version__ = "0.1.0"

#: The threshold marker: ``@fsperf(min_bw="2GB/s", max_cpu="250%", max_rss="2.2GB")``.
fsperf = pytest.mark.fsperf

__all__ = ["__version__", "fsperf"]
