"""Repository-level pytest configuration: the plugin's own test suite lives in tests/."""

from importlib.metadata import entry_points
from importlib.util import find_spec

collect_ignore = ["examples", "benchmarks"]

# A checkout typed at before `pip install` (`python3 -m pytest --help`, the first thing a new
# user tries) showed pytest's help without the plugin and without a word why: load the
# plugin from here when no installed one registers itself. Installed, the entry point does.
if not any(ep.value == "pytest_fsperf.plugin" for ep in entry_points(group="pytest11")):
    missing = [m for m in ("psutil", "prometheus_client") if find_spec(m) is None]
    if missing:
        raise ImportError(f"pytest-fsperf is not installed in this Python, and the checkout's "
                          f"copy needs {', '.join(missing)}: pip install -e '.[test]'")
    pytest_plugins = ["pytest_fsperf.plugin"]
