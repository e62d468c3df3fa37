"""pytest-fsperf: filesystem performance regression tests for FUSE mounts."""

from __future__ import annotations

import pytest

from .backends.request import mount_params, option_id
from .backends.spec import Backend

__version__ = "0.1.0"

#: The threshold marker: ``@fsperf(min_bw="2GB/s", max_cpu="250%", max_rss="2.2GB")``.
fsperf = pytest.mark.fsperf

#: Mount a backend for the test: ``@fsperf_mount("s3fs", options=["-o", "parallel_count=20"])``.
fsperf_mount = pytest.mark.fsperf_mount

__all__ = ["Backend", "__version__", "fsperf", "fsperf_mount", "mount_params", "option_id"]
