"""pytest-fsperf's hooks once a session uses the plugin (plugin.py registers this module then,
as pytest-xdist registers its dsession), and the bodies of the fixtures plugin.py declares.
The work happens in the modules these call."""

from __future__ import annotations

import contextlib
from collections.abc import Generator, Iterator
from typing import NoReturn

import pytest

from pytest_fsperf import stores
from pytest_fsperf.ceilings.cache import Ceilings
from pytest_fsperf.errors import MeasurementError, UsageError, message
from pytest_fsperf.fixture import Fsperf
from pytest_fsperf.infra.lock import machine_lock
from pytest_fsperf.mounts.request import MARKER, from_marker
from pytest_fsperf.options.config import Settings, read_settings
from pytest_fsperf.options.parse import RULE
from pytest_fsperf.plan.marker import Plan, build_plan
from pytest_fsperf.report import benchmark_json
from pytest_fsperf.runner.workspace import Workspace
from pytest_fsperf.session.guard import guard, junitxml_checked
from pytest_fsperf.session.judging import judge_item
from pytest_fsperf.session.keys import (
    CEILINGS,
    MOUNT,
    PASSES,
    PLAN,
    PLAN_ERROR,
    RECORD,
    STATE,
    USAGE,
    test_id,
)
from pytest_fsperf.session.mounting import open_target, plan_for, registry, say_now, shared_target
from pytest_fsperf.session.per_test import per_test
from pytest_fsperf.session.reporter import Reporter, live_line
from pytest_fsperf.session.second_pass import SecondPass
from pytest_fsperf.session.state import FsperfSession
from pytest_fsperf.session.verdict import ItemRecord, report_rows

__all__ = ["shared_target", "stores"]  # fixtures' bodies, for plugin.py


def pytest_configure(config: pytest.Config) -> None:
    """Run when plugin.py registers this module: in its own pytest_configure (before pytest's
    junitxml takes its path), or at collection, when a test first uses the plugin."""
    try:
        junitxml_checked(config)
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
    guard(config, state)
    config.pluginmanager.register(Reporter(state, config), "fsperf-reporter")
    if config.pluginmanager.hasplugin("benchmark"):
        config.pluginmanager.register(benchmark_json.BenchmarkJsonHook(state.results), "fsperf-benchmark")


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


def sessionstart(session: pytest.Session) -> None:
    session.config.stash[STATE].progress_write = live_line(session.config)


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


def settings(request: pytest.FixtureRequest) -> Settings:
    return request.config.stash[STATE].settings


def fsperf(request: pytest.FixtureRequest) -> Iterator[Fsperf]:
    state = request.config.stash[STATE]
    req = request.node.stash.get(MOUNT, None)
    shared = request.getfixturevalue("fsperf_target") if req is None else None
    with machine_lock(timeout=state.settings.lock_timeout, say=say_now(request.config)):
        target = shared or open_target(state, plan_for(request, req))
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
            judge_item(item)
        if not isinstance(exc, FAULTS):
            raise
        text = _fault(item, exc)
    if text is not None:
        fail(text)
    try:
        failures = judge_item(item)
    except FAULTS as exc:
        failures = [_fault(item, exc)]
    if failures:
        fail("\n".join(failures))
    return outcome


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
