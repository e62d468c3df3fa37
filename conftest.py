"""Repository-level pytest configuration: the plugin's own test suite lives in tests/."""

import os
import shlex
import sys
from importlib.util import find_spec

import pytest

collect_ignore = ["examples", "benchmarks"]

# `python3 -m pytest --help` from the checkout, the first thing a new user types, showed
# pytest's help without the plugin and without a word why, exit 0: before `pip install`, and
# with PYTEST_DISABLE_PLUGIN_AUTOLOAD=1 (the installed entry point not loaded). So the test is
# whether the plugin was loaded by the time this file is (entry points load before any
# conftest), not whether it is installed: if not, and not blocked (-p no:fsperf), it is
# loaded from here. Without its dependencies it cannot be. Then `--help` shows pytest's help
# and ends with the one line that says what to install (an error raised here would be
# swallowed by --help into "could not load initial conftests"); any other run stops on that
# line, here, before tests/conftest.py fails on the first missing import.
NOT_LOADED = ""
_args = sys.argv[1:] + shlex.split(os.environ.get("PYTEST_ADDOPTS", ""))
if "pytest_fsperf.plugin" not in sys.modules and not any(a.endswith("no:fsperf") for a in _args):
    missing = [m for m in ("psutil", "prometheus_client", "dacite", "jsonschema")
               if find_spec(m) is None]
    if missing:
        NOT_LOADED = (f"pytest-fsperf is not installed in this Python, and the checkout's copy "
                      f"needs {', '.join(missing)}: pip install -e '.[test]'")
        if not {"-h", "--help"} & set(_args):
            raise pytest.UsageError(NOT_LOADED)
    else:
        pytest_plugins = ["pytest_fsperf.plugin"]


def pytest_unconfigure(config: pytest.Config) -> None:
    if NOT_LOADED and config.option.help:  # the help's last line, where the eye lands
        config.get_terminal_writer().line(f"fsperf: {NOT_LOADED}", red=True)
