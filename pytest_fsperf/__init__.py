"""pytest-fsperf: filesystem performance regression tests for FUSE mounts.

PYTEST_DONT_REWRITE: the plugin's own asserts need no rewriting, and the `fsperf` command
imports the package before pytest would mark it (which warned on every run).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from pytest_fsperf.errors import UsageError
from pytest_fsperf.version import __version__

if TYPE_CHECKING:
    from pytest_fsperf.mounts.request import option_id
    from pytest_fsperf.mounts.spec import Backend

# The markers, made on first use, so that importing the measuring core (as benchmarks do)
# does not import pytest:
#   fsperf: thresholds, ``@fsperf(min_bw="2GB/s", max_cpu="250%", max_rss="2.2GB")``
#   fsperf_mount: a backend to mount, ``@fsperf_mount("s3fs", options=["-o", "parallel_count=20"])``
_MARKERS = ("fsperf", "fsperf_mount")


# Made on first use too: reading a results file imports the package, not the mount code.
_LAZY = {"Backend": "pytest_fsperf.mounts.spec", "option_id": "pytest_fsperf.mounts.request"}


def __getattr__(name: str) -> Any:
    if name in _MARKERS:
        import pytest

        return getattr(pytest.mark, name)
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'pytest_fsperf' has no attribute {name!r}")


def mount_params(backend: str, *option_sets: Sequence[str] | str,
                 ids: Sequence[str] | None = None, config: Mapping[str, str] | str | None = None,
                 ) -> list[Any]:
    """For @pytest.mark.parametrize: one test per option set, each mounting `backend` with it,
    with readable ids. The parameter's value is the option list."""
    if ids is not None and len(ids) != len(option_sets):
        raise UsageError(f"mount_params({backend!r}): {len(ids)} ids for {len(option_sets)} option sets")
    import pytest  # here only: importing the package (as the `fsperf` command does) needs no pytest

    from pytest_fsperf.mounts import request

    params = []
    for n, opts in enumerate(option_sets):
        words = request.parse_options(opts, f"mount_params({backend!r})")
        mark = getattr(pytest.mark, request.MARKER)(backend, options=list(words), config=config)
        params.append(pytest.param(list(words), marks=mark, id=ids[n] if ids else request.option_id(words)))
    return params


__all__ = ["Backend", "__version__", "fsperf", "fsperf_mount", "mount_params", "option_id"]
