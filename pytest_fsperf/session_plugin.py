"""pytest-fsperf's hooks once a session uses the plugin (plugin.py registers this module then,
as pytest-xdist registers its dsession), and the bodies of the fixtures plugin.py declares.
The work happens in the modules these call."""

from __future__ import annotations

import contextlib
import signal
import subprocess
import threading
import warnings
from collections.abc import Callable, Generator, Iterator
from pathlib import Path
from typing import NoReturn

import pytest
from _pytest import junitxml

from pytest_fsperf import stores
from pytest_fsperf.ceilings.cache import Ceilings
from pytest_fsperf.errors import MeasurementError, UsageError, message
from pytest_fsperf.fixture import Fsperf
from pytest_fsperf.infra import leftovers, outfile
from pytest_fsperf.infra import watchdog as infra_watchdog
from pytest_fsperf.infra.lock import machine_lock
from pytest_fsperf.keys import CEILINGS, MOUNT, PASSES, PLAN, PLAN_ERROR, RECORD, STATE, USAGE
from pytest_fsperf.mounts.mounter import BinaryMissing, MountPlan
from pytest_fsperf.mounts.registry import Registry
from pytest_fsperf.mounts.request import MARKER, MountRequest, from_marker, resolve
from pytest_fsperf.options.config import Settings, read_settings
from pytest_fsperf.options.parse import RULE
from pytest_fsperf.plan.marker import Plan, build_plan
from pytest_fsperf.report import benchmark_json, junit
from pytest_fsperf.result.workload import WorkloadResult
from pytest_fsperf.runner.target import Target
from pytest_fsperf.runner.workspace import Workspace
from pytest_fsperf.session.per_test import per_test
from pytest_fsperf.session.reporter import Reporter, live_line
from pytest_fsperf.session.second_pass import HELD, SecondPass
from pytest_fsperf.session.state import FsperfSession
from pytest_fsperf.session.verdict import ItemRecord, judge_test, report_rows
from pytest_fsperf.vocab import Missing, Unsure

__all__ = ["stores"]  # the store fixtures' bodies, for plugin.py


def registry(config: pytest.Config) -> Registry:
    """Built-in backends, then the config file's, then those conftest.py files return."""
    settings = config.stash[STATE].settings
    extra = [b for found in config.hook.pytest_fsperf_backends() for b in found]
    return Registry([*settings.backend_config.backends, *extra])


def pytest_configure(config: pytest.Config) -> None:
    """Run when plugin.py registers this module: in its own pytest_configure (before pytest's
    junitxml takes its path), or at collection, when a test first uses the plugin."""
    try:
        _junitxml(config)
        settings = read_settings(config)
        state = FsperfSession(settings)
        config.stash[STATE] = state
        if settings.backend is not None:
            registry(config).get(settings.backend, settings.where("backend"))
        if settings.baseline is not None:
            state.baseline(settings.baseline, settings.where("baseline"))
        state.load_earlier()
    except UsageError as exc:
        raise pytest.UsageError(f"pytest-fsperf: {exc}") from None
    config.stash[STATE] = state
    state.clock.second_pass = not hasattr(config, "workerinput")  # pytest-xdist's worker
    config.stash[PASSES] = SecondPass(state.clock, test_id)
    _guard(config, state)
    config.pluginmanager.register(Reporter(state, config), "fsperf-reporter")
    if config.pluginmanager.hasplugin("benchmark"):
        config.pluginmanager.register(benchmark_json.BenchmarkJsonHook(state.results), "fsperf-benchmark")


def _junitxml(config: pytest.Config) -> None:
    """pytest writes it, as root: checked as the plugin's own outputs are, and written where
    it was checked, not through a link re-pointed later (junitxml's own writer, where it was
    made before this session used the plugin)."""
    xml = getattr(config.option, "xmlpath", None)
    if not xml:
        return
    writer = config.stash.get(junitxml.xml_key, None)
    try:
        checked = str(outfile.check_theirs(Path(xml)))
    except outfile.OutputError as exc:
        if writer is not None:  # it would write there as the session ends
            config.pluginmanager.unregister(writer)
            del config.stash[junitxml.xml_key]
        raise UsageError(f"--junitxml={xml}: {exc}") from None
    config.option.xmlpath = checked
    if writer is not None:
        writer.logfile = checked


def pytest_report_header(config: pytest.Config) -> list[str]:
    """The settings given and where each came from, under the one precedence rule."""
    state = config.stash.get(STATE, None)
    if state is None:
        return []
    given = state.settings.given
    lines = [f"fsperf: precedence {RULE}"]
    lines += [f"fsperf: {raw.where}" + (f", over {raw.over}" if raw.over else "")
              for raw in given.values()]
    return lines


def _on_term(signum: int, _frame: object) -> None:
    raise KeyboardInterrupt(f"{signal.Signals(signum).name}")


def _guard(config: pytest.Config, state: FsperfSession) -> None:
    """SIGTERM (how CI cancels a job) ends the session as Ctrl-C does, cleaning up; what an
    earlier, killed session left is removed now; a watchdog removes what this one leaves if
    it is killed."""
    if threading.current_thread() is threading.main_thread():
        old = signal.signal(signal.SIGTERM, _on_term)

        def restore() -> None:
            signal.signal(signal.SIGTERM, old)

        config.add_cleanup(restore)
    try:
        if not hasattr(config, "workerinput"):
            state.swept = leftovers.sweep()
        record = leftovers.start()
    except leftovers.StateDirError as exc:  # another user made it: never use it
        raise pytest.UsageError(f"pytest-fsperf: {exc}") from None
    except Exception as exc:  # never let the clean-up of others stop this session
        state.unrecorded = f"{exc}"
        return
    watchdog = infra_watchdog.start(record)

    def stop() -> None:
        leftovers.stop(record)
        assert watchdog.stdin is not None
        watchdog.stdin.close()  # it reads end-of-file and, with nothing left to remove, exits
        with contextlib.suppress(subprocess.TimeoutExpired):
            watchdog.wait(timeout=0.5)

    config.add_cleanup(stop)


def sessionstart(session: pytest.Session) -> None:
    session.config.stash[STATE].progress_write = live_line(session.config)


def test_id(item: pytest.Item) -> str:
    """The test's id in results and saved runs: its node id, or - for a test module outside
    the rootdir (--pyargs pytest_fsperf.suites.X, as fsperf bench runs), whose node id has
    no file part ('::test_x') - the module's import name in front."""
    if item.nodeid.startswith("::"):
        module = getattr(getattr(item, "module", None), "__name__", "")
        return f"{module}{item.nodeid}"
    return item.nodeid


def collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        markers = [(m.args, m.kwargs) for m in item.iter_markers("fsperf")]
        mount = item.get_closest_marker(MARKER)
        try:
            if markers and "fsperf" not in getattr(item, "fixturenames", ()):
                raise UsageError(f"{test_id(item)}: the fsperf marker judges what the fsperf "
                                 "fixture measures, and this test does not take it: add "
                                 "`fsperf` to its arguments")
            if markers:
                item.stash[PLAN] = build_plan(test_id(item), markers)
            if mount is not None:
                item.stash[MOUNT] = from_marker(mount.args, mount.kwargs, f"{test_id(item)}: {MARKER}")
        except UsageError as exc:
            item.stash[PLAN_ERROR] = str(exc)


def pytest_collection_finish(session: pytest.Session) -> None:
    """The tests that share a session's gate budget: those selected (after -k and -m), with
    the fixture."""
    if STATE in session.config.stash:
        clock = session.config.stash[STATE].clock
        clock.tests_left = clock.tests = sum(
            "fsperf" in getattr(item, "fixturenames", ()) for item in session.items)


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> bool | None:
    passes = item.config.stash.get(PASSES, None)
    return passes.protocol(item, nextitem) if passes is not None and passes.wanted(item) else None


@pytest.hookimpl(wrapper=True)
def pytest_runtestloop(session: pytest.Session) -> Generator[None, object, object]:
    """After every test ran: the second pass of a gated session's undecided workloads."""
    passes = session.config.stash.get(PASSES, None)
    try:
        result = yield
    except BaseException:
        if passes is not None:
            passes.release()
        raise
    if passes is not None:
        passes.finish(session)
    return result


FAULTS = (UsageError, MeasurementError)
# The test's own phases are wrapped innermost (INNER): inside pytest's logging and capture,
# whichever was registered first, as when this module was registered by the entry point -
# a usage error failing setup before it yields must not skip logging's own setup.


def fail(text: str) -> NoReturn:
    pytest.fail(text, pytrace=False)


@pytest.hookimpl(wrapper=True, trylast=True)  # INNER
def pytest_runtest_setup(item: pytest.Item) -> Generator[None, None, None]:
    """A usage error or a measuring fault in a fixture (the mount, the work dir, MinIO)
    fails in one line, as in the test body (pytest_runtest_call)."""
    if PLAN_ERROR in item.stash:
        item.stash[USAGE] = True
        fail(f"usage error: {item.stash[PLAN_ERROR]}")
    try:
        return (yield)
    except FAULTS as exc:
        text = _fault(item, exc)
    fail(text)  # outside `except`, so pytest shows no chained exception


def _fault(item: pytest.Item, exc: UsageError | MeasurementError) -> str:
    """The one line a fault fails its test with; a usage error also makes the session exit 4."""
    if isinstance(exc, UsageError):
        item.stash[USAGE] = True
    return message(exc)


@pytest.hookimpl(wrapper=True, trylast=True)  # INNER
def pytest_runtest_teardown(item: pytest.Item) -> Generator[None, None, None]:
    try:
        return (yield)
    except FAULTS as exc:
        text = _fault(item, exc)
    finally:
        if STATE in item.config.stash and "fsperf" in getattr(item, "fixturenames", ()):
            clock = item.config.stash[STATE].clock
            clock.tests_left = max(0, clock.tests_left - 1)
    fail(text)


def _plan(request: pytest.FixtureRequest, req: MountRequest) -> MountPlan:
    config = request.config
    settings = config.stash[STATE].settings
    try:
        return resolve(req, registry(config), settings.backend_config, request.getfixturevalue,
                       settings.mount_timeout)
    except BinaryMissing as exc:
        _missing(settings, exc)


def _open(state: FsperfSession, plan: MountPlan) -> Target:
    try:
        return state.open_target(plan)
    except BinaryMissing as exc:
        _missing(state.settings, exc)


def _missing(settings: Settings, exc: BinaryMissing) -> NoReturn:
    """A backend's daemon that is not installed fails its test, with the install line (a
    session that measured nothing is not green), or skips it (--fsperf-missing-backend=skip)."""
    if settings.missing_backend is Missing.SKIP:
        pytest.skip(str(exc))
    pytest.fail(f"{exc} (--fsperf-missing-backend=skip skips it instead)", pytrace=False)


def settings(request: pytest.FixtureRequest) -> Settings:
    return request.config.stash[STATE].settings


def shared_target(request: pytest.FixtureRequest) -> Iterator[Target]:
    state = request.config.stash[STATE]
    s = state.settings
    if s.backend is None:
        yield state.default_target()
        return
    req = MountRequest(s.backend, s.mount_options, "fsperf_s3" if s.backend_store else None,
                       s.where("backend"))
    target = _open(state, _plan(request, req))
    try:
        yield target
    finally:
        state.close_target(target)


def _say(config: pytest.Config) -> Callable[[str], None]:
    """A line on the terminal, or in the CI log, now: pytest's capture is lifted for it (a
    test's output is captured at the file descriptor, so a plain write would show only in a
    failing test's captured output)."""
    terminal = config.pluginmanager.get_plugin("terminalreporter")
    capture = config.pluginmanager.get_plugin("capturemanager")

    def say(text: str) -> None:
        if terminal is None:
            return
        lifted = (capture.global_and_fixture_disabled() if capture is not None
                  else contextlib.nullcontext())
        with lifted:
            terminal.ensure_newline()
            terminal.write_line(text, yellow=True)

    return say


def fsperf(request: pytest.FixtureRequest) -> Iterator[Fsperf]:
    state = request.config.stash[STATE]
    req = request.node.stash.get(MOUNT, None)
    shared = request.getfixturevalue("fsperf_target") if req is None else None
    with machine_lock(timeout=state.settings.lock_timeout, say=_say(request.config)):
        target = shared or _open(state, _plan(request, req))
        workdir = ref_workdir = None
        handle: Workspace | None = None
        try:
            workdir = target.new_workdir(request.node.name)
            state.environment(target)  # read once while the mount and daemon are up
            plan = request.node.stash.get(PLAN, None)
            s = state.settings
            place = None
            if s.reference is None and s.reference_mount is not None and shared is not None:
                reference = state.reference_target()
                ref_workdir = reference.new_workdir(request.node.name)
                place = (reference, ref_workdir)
            beside = (request.config.stash.setdefault(CEILINGS, Ceilings(state)).beside
                      if s.ceilings or (plan is not None and plan.wants_ceilings) else None)
            config = per_test(s, plan, target, place)  # resolved once, carried in the record
            handle = Workspace(state, target, test_id(request.node), workdir, config, beside)
            if (plan is not None and plan.bounds_memory and shared is not None
                    and target.owned is not None and config.release is None):
                handle.cold_start()  # a fresh daemon: its memory is this test's alone (74.1)
            request.node.stash[RECORD] = ItemRecord(plan or Plan(test_id(request.node), ()), config,
                                                    handle.results, handle.comparisons)
            yield Fsperf(handle, state.settings)
        finally:
            if handle is not None:
                handle.close_peers()  # the other clients' mounts of a many-client run
            problem = target.remove(workdir) if workdir else None
            if problem:
                state.leftovers.append(problem)
            if ref_workdir:
                problem = state.reference_target().remove(ref_workdir)
                if problem:
                    state.leftovers.append(problem)
            if shared is None:
                state.close_target(target)


@pytest.hookimpl(wrapper=True, trylast=True)  # INNER
def pytest_runtest_call(item: pytest.Item) -> Generator[None, None, None]:
    """The test's own failure first; then its measured workloads are judged, once."""
    text = None
    try:
        outcome = yield
    except BaseException as exc:
        with contextlib.suppress(UsageError):
            _judge(item)
        if not isinstance(exc, FAULTS):
            raise
        text = _fault(item, exc)
    if text is not None:
        fail(text)
    try:
        failures = _judge(item)
    except FAULTS as exc:
        failures = [_fault(item, exc)]
    if failures:
        fail("\n".join(failures))
    return outcome


def _properties(item: pytest.Item, results: list[WorkloadResult]) -> None:
    """Each figure as a JUnit XML property (report/junit.py)."""
    item.user_properties.extend(junit.properties(results))


def _judge(item: pytest.Item) -> list[str]:
    """Judge the test's workloads once into its record; returns the lines it fails with.
    Inconclusive lines fail it, or are warnings pointing at the test (--fsperf-inconclusive)."""
    record = item.stash.get(RECORD, None)
    if record is None or record.judgement is not None:
        return []
    state = item.config.stash[STATE]
    s = state.settings
    _properties(item, record.results)
    j = judge_test(state, record)
    failures = list(j.failures)
    path, line, _ = item.location
    for lines, how in ((j.unsure, s.inconclusive), (j.machine, s.machine_changed or s.inconclusive)):
        if how is Unsure.FAIL:
            failures += lines
            continue
        held = item.config.stash[PASSES].holding(item) if PASSES in item.config.stash else False
        for text in lines:
            if held:  # said when its first reports are logged, if no second pass replaces them
                item.stash.setdefault(HELD, []).append((f"fsperf: {text}",
                                                        str(item.config.rootpath / path), (line or 0) + 1))
                continue
            warnings.warn_explicit(pytest.PytestWarning(f"fsperf: {text}"), pytest.PytestWarning,
                                   str(item.config.rootpath / path), (line or 0) + 1)
    return failures + (j.notes if failures else [])


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    report = yield
    if "fsperf" in getattr(item, "fixturenames", ()) or item.get_closest_marker("fsperf"):
        report.fsperf_test = True  # type: ignore[attr-defined]  # its failures are the decision's
    if report.failed and item.stash.get(USAGE, False):
        report.fsperf_usage_error = True  # type: ignore[attr-defined]  # through xdist too
    record = item.stash.get(RECORD, None)
    if report.when != "call" or record is None:
        return report
    rows = report_rows(record, item.config.stash[STATE].env)
    if hasattr(item.config, "workerinput"):  # to the controller, as JSON
        report.fsperf_results = [r.to_dict() for r in rows]  # type: ignore[attr-defined]
        report.fsperf_comparisons = [c.to_dict() for c in record.comparisons]  # type: ignore[attr-defined]
    elif rows or record.comparisons:  # here: the types themselves, taken when it is logged
        item.config.stash[STATE].measured[report.nodeid] = (rows, list(record.comparisons))
    return report
