"""Repository-level pytest configuration: the plugin's own test suite lives in tests/."""

import sys
from importlib.metadata import entry_points
from importlib.util import find_spec

import pytest

collect_ignore = ["examples", "benchmarks"]

# A checkout typed at before `pip install` (`python3 -m pytest --help`, the first thing a new
# user tries) showed pytest's help without the plugin and without a word why: load the
# plugin from here when no installed one registers itself. Installed, the entry point does.
# Without the plugin's dependencies it cannot load. Then `--help` shows pytest's help and
# ends with the one line that says what to install (an error raised here would be swallowed
# by --help into "could not load initial conftests"); any other run stops on that line,
# here, before tests/conftest.py fails on the first missing import.
NOT_LOADED = ""
if not any(ep.value == "pytest_fsperf.plugin" for ep in entry_points(group="pytest11")):
    missing = [m for m in ("psutil", "prometheus_client") if find_spec(m) is None]
    if missing:
        NOT_LOADED = (f"pytest-fsperf is not installed in this Python, and the checkout's copy "
                      f"needs {', '.join(missing)}: pip install -e '.[test]'")
        if not {"-h", "--help"} & set(sys.argv[1:]):
            raise pytest.UsageError(NOT_LOADED)
    else:
        pytest_plugins = ["pytest_fsperf.plugin"]


def pytest_unconfigure(config: pytest.Config) -> None:
    if NOT_LOADED and config.option.help:  # the help's last line, where the eye lands
        config.get_terminal_writer().line(f"fsperf: {NOT_LOADED}", red=True)
