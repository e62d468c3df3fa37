"""pytest hooks of pytest-fsperf. The work happens in the modules these call."""

from __future__ import annotations

import contextlib
from collections.abc import Generator, Iterator
from typing import Any

import pytest

from .errors import UsageError, fail, or_fail
from .fixture import Fsperf
from .lock import machine_lock
from .options import add_options, read_settings
from .plan import KEYWORDS, Plan, build_plan
from .report import jsonout, terminal
from .result import WorkloadResult
from .session import FsperfSession
from .verdict import judge

STATE = pytest.StashKey[FsperfSession]()
PLAN = pytest.StashKey[Plan]()
PLAN_ERROR = pytest.StashKey[str]()
RESULTS = pytest.StashKey[list[WorkloadResult]]()
VERDICTS = pytest.StashKey[dict[str, tuple[str, list[str]]]]()

MARKER_HELP = ("fsperf(**thresholds): performance thresholds for the test's measured workloads: "
               + ", ".join(KEYWORDS))


def pytest_addoption(parser: pytest.Parser) -> None:
    add_options(parser)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", MARKER_HELP)
    try:
        settings = read_settings(config)
    except UsageError as exc:
        raise pytest.UsageError(f"pytest-fsperf: {exc}") from None
    state = FsperfSession(settings)
    config.stash[STATE] = state
    config.pluginmanager.register(Reporter(state, config), "fsperf-reporter")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        markers = [(m.args, m.kwargs) for m in item.iter_markers("fsperf")]
        if not markers:
            continue
        try:
            item.stash[PLAN] = build_plan(item.nodeid, markers)
        except UsageError as exc:
            item.stash[PLAN_ERROR] = str(exc)


def pytest_runtest_setup(item: pytest.Item) -> None:
    if PLAN_ERROR in item.stash:
        fail(f"usage error: {item.stash[PLAN_ERROR]}")


@pytest.fixture
def fsperf(request: pytest.FixtureRequest) -> Iterator[Fsperf]:
    """Measure workloads on the filesystem under test, in a work dir of this test's own."""
    state = request.config.stash[STATE]
    with machine_lock():
        workdir = or_fail(lambda: state.new_workdir(request.node.name))
        state.environment()  # read once while the mount and daemon are up
        handle = Fsperf(state, request.node.nodeid, workdir)
        request.node.stash[RESULTS] = handle.results
        try:
            yield handle
        finally:
            state.remove(workdir)


def _properties(item: pytest.Item, results: list[WorkloadResult]) -> None:
    for r in results:
        figures: dict[str, Any] = {"bw_bytes": r.bw_bytes, "iops": r.iops,
                                   "lat_p99_ns": r.lat_p99_ns, "cache": r.cache}
        if r.daemon:
            figures.update(daemon_cpu_percent=round(r.daemon.cpu_percent, 1),
                           daemon_peak_rss_bytes=r.daemon.peak_rss_bytes,
                           daemon_peak_rss_method=r.daemon.peak_rss_method)
        else:
            figures["daemon"] = r.daemon_note
        for key, value in figures.items():
            item.user_properties.append((f"fsperf.{r.name}.{key}", value))


def _finish(item: pytest.Item) -> list[str]:
    """Record properties, store each workload's verdict; return the failure messages."""
    results = item.stash.get(RESULTS, [])
    _properties(item, results)
    plan = item.stash.get(PLAN, Plan(item.nodeid, ()))
    item.stash[VERDICTS] = {}  # stays empty if judging is a usage error
    verdict = judge(plan, results)
    item.stash[VERDICTS] = {
        name: (v, [f for f in verdict.failures if f.startswith(name + ":")])
        for name, v in verdict.per_workload.items()
    }
    return verdict.failures + (verdict.notes if verdict.failures else [])


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Generator[None, None, None]:
    try:
        outcome = yield
    except BaseException:
        with contextlib.suppress(UsageError):  # the test's own failure comes first
            _finish(item)
        raise
    failures = or_fail(lambda: _finish(item))
    if failures:
        fail("\n".join(failures))
    return outcome


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    report = yield
    if report.when == "call" and item.stash.get(RESULTS, None):
        verdicts = item.stash.get(VERDICTS, {})
        rows = []
        for r in item.stash[RESULTS]:
            data = r.to_dict()
            data["verdict"], data["failures"] = verdicts.get(r.name, ("-", []))
            rows.append(data)
        report.fsperf_results = rows  # type: ignore[attr-defined]  # travels through xdist
    return report


class Reporter:
    """Collects results from reports (also those xdist workers send) and reports them."""

    def __init__(self, state: FsperfSession, config: pytest.Config) -> None:
        self.state = state
        self.is_worker = hasattr(config, "workerinput")

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        rows = getattr(report, "fsperf_results", None)
        if rows:
            self.state.results.extend(rows)

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        state = self.state
        if not state.results and not state.leftovers:
            return
        terminalreporter.write_sep("=", "fsperf")
        if state.results:
            for line in terminal.table(state.results):
                terminalreporter.write_line(line)
            for note in terminal.footnotes(state.results):
                terminalreporter.write_line(note)
        for path in state.leftovers:
            terminalreporter.write_line(f"could not remove work directory {path}", red=True)
        if state.settings.json_path is not None and not self.is_worker:
            terminalreporter.write_line(f"fsperf results written to {state.settings.json_path}")

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self) -> None:
        state = self.state
        path = state.settings.json_path
        env = state.environment() if path is not None and not self.is_worker else None
        state.close()
        if path is not None and env is not None:
            jsonout.write(path, jsonout.document(env, state.results, state.leftovers))
