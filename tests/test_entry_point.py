"""The entry point costs nothing where the plugin is not used: it declares flags, ini keys,
markers and fixtures (declared.py) and registers the session's hooks (session_plugin.py) only
when a session uses the plugin. The cost in time and memory: benchmarks/entry_cost.py."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

from pytest_fsperf import declared
from pytest_fsperf.options import declare
from pytest_fsperf.options.table import OPTIONS

TIER = "fio"  # inner pytest sessions in processes of their own

# what the entry point may load of the package where the plugin is not used: no stage of it
# but the reader of an ini file's keys (standard library and iniconfig: is an fsperf key set?)
ENTRY = {"pytest_fsperf", "pytest_fsperf.errors", "pytest_fsperf.version", "pytest_fsperf.declared",
         "pytest_fsperf.hooks", "pytest_fsperf.plugin", "pytest_fsperf.infra", "pytest_fsperf.infra.inputs"}

# Printed as each inner session ends: which of the package's modules it loaded, whether the
# session's hooks were registered.
PROBE = textwrap.dedent("""
    import json, sys
    def pytest_unconfigure(config):
        loaded = sorted(m for m in sys.modules if m.startswith("pytest_fsperf"))
        used = config.pluginmanager.get_plugin("fsperf-session") is not None
        sys.stdout.write("PROBE " + json.dumps({"loaded": loaded, "used": used}) + "\\n")
""")


def probe(result: pytest.RunResult) -> dict[str, object]:
    line = next(x for x in result.outlines if x.startswith("PROBE "))
    found: dict[str, object] = json.loads(line.removeprefix("PROBE "))
    return found


@pytest.mark.unit
def test_the_declaration_is_written_from_the_option_table() -> None:
    """declared.py is generated (python3 -m pytest_fsperf.options.declare): stale, it fails here."""
    assert declare.PATH.read_text() == declare.render(), "run: python3 -m pytest_fsperf.options.declare"
    assert [(o.name, o.metavar, o.help) for o in OPTIONS] == list(declared.OPTIONS)


def test_importing_the_entry_point_loads_no_stage_of_the_package() -> None:
    code = ("import sys, pytest_fsperf.plugin; "
            "print('\\n'.join(m for m in sys.modules if m.startswith('pytest_fsperf')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert set(out.stdout.split()) <= ENTRY, sorted(set(out.stdout.split()) - ENTRY)


def test_a_session_that_does_not_use_the_plugin_loads_nothing_of_it(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(PROBE)
    pytester.makepyfile("def test_plain(tmp_path):\n    assert tmp_path.exists()\n")
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)
    found = probe(result)
    assert found["used"] is False
    assert set(found["loaded"]) <= ENTRY, found  # type: ignore[call-overload]
    assert "fsperf decision" not in result.stdout.str()


@pytest.mark.parametrize("how", ["fixture", "settings", "marker", "flag", "ini"])
def test_any_use_registers_the_session(pytester: pytest.Pytester, how: str) -> None:
    """A test taking a fixture of the plugin's, a test marked, a flag or an ini key: the
    session's hooks run."""
    pytester.makeconftest(PROBE)
    body = {"fixture": "def test_x(fsperf):\n    pass\n",
            "settings": "def test_x(fsperf_settings):\n    assert fsperf_settings.scale == 1\n",
            "marker": "import pytest\n\n@pytest.mark.fsperf(min_bw='1MB/s')\ndef test_x(fsperf):\n    pass\n"}
    pytester.makepyfile(body.get(how, "def test_x():\n    pass\n"))
    if how == "ini":
        pytester.makeini("[pytest]\nfsperf_scale = 1\n")
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", *(["--fsperf-scale=1"] if how == "flag" else []))
    assert probe(result)["used"] is True, result.stdout.str()
    if how == "marker":  # a bound with nothing measured: the session's decision says so
        result.stdout.fnmatch_lines(["fsperf decision: FAIL: *1 test failed or errored"])
    else:
        assert result.ret == pytest.ExitCode.OK, result.stdout.str()


def test_a_misspelt_ini_key_is_still_named(pytester: pytest.Pytester) -> None:
    """A typo in an fsperf key would run the defaults (scale 1) silently: the session is used,
    and names it."""
    pytester.makeini("[pytest]\nfsperf_scal = 0.1\n")
    pytester.makepyfile("def test_x():\n    pass\n")
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*fsperf_scal (ini file *): unknown setting; did you mean fsperf_scale?*"])


def test_the_help_lists_every_flag_without_using_the_plugin(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(PROBE)
    result = pytester.runpytest_subprocess("--help")
    text = result.stdout.str()
    assert all(o.flag in text for o in OPTIONS)
    assert probe(result)["used"] is False


def test_xdist_s_controller_uses_it_as_its_workers_may(pytester: pytest.Pytester) -> None:
    pytest.importorskip("xdist")
    pytester.makepyfile("def test_x(fsperf):\n    pass\n\ndef test_y():\n    pass\n")
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-n", "2")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["fsperf: precedence *"])  # the controller's session is used


@pytest.mark.unit
def test_the_fixtures_that_mark_a_session_used_are_those_the_entry_point_declares() -> None:
    from _pytest.fixtures import FixtureFunctionDefinition

    from pytest_fsperf import plugin

    declared_here = {name for name, obj in vars(plugin).items() if isinstance(obj, FixtureFunctionDefinition)}
    assert declared_here == plugin.FIXTURES
