"""pytest hooks of pytest-fsperf. The work happens in the modules these call."""

from __future__ import annotations

import contextlib
import json
import warnings
from collections.abc import Callable, Generator, Iterator
from typing import Any

import pytest

from . import hooks, runs
from .backends.mounter import BinaryMissing, MountPlan
from .backends.registry import Registry
from .backends.request import MARKER, MountRequest, from_marker, resolve
from .backends.request import MARKER_HELP as MOUNT_HELP
from .baselines.check import Check, check, entry_of, key_of
from .compare import Comparison
from .errors import UsageError, fail, or_fail
from .fixture import Fsperf
from .lock import machine_lock
from .options import add_options, read_settings
from .plan import KEYWORDS, Plan, build_plan
from .report import benchmark_json, html, jsonout, markdown, terminal
from .result import WorkloadResult
from .session import FsperfSession, Target
from .store.minio import INSTALL as MINIO_INSTALL
from .store.minio import S3Server, find_minio, start_minio
from .verdict import judge

STATE = pytest.StashKey[FsperfSession]()
PLAN = pytest.StashKey[Plan]()
PLAN_ERROR = pytest.StashKey[str]()
RESULTS = pytest.StashKey[list[WorkloadResult]]()
COMPARISONS = pytest.StashKey[list[Comparison]]()
MOUNT = pytest.StashKey[MountRequest]()
CHECKS = pytest.StashKey[dict[str, list[Check]]]()
RUN_CMP = pytest.StashKey[dict[str, "runs.RunComparison"]]()
VERDICTS = pytest.StashKey[dict[str, tuple[str, list[str]]]]()

MARKER_HELP = ("fsperf(**thresholds): performance thresholds for the test's measured workloads: "
               + ", ".join(KEYWORDS))


def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    pluginmanager.add_hookspecs(hooks)


def pytest_addoption(parser: pytest.Parser) -> None:
    add_options(parser)


def registry(config: pytest.Config) -> Registry:
    """Built-in backends, then the config file's, then those conftest.py files return."""
    settings = config.stash[STATE].settings
    extra = [b for found in config.hook.pytest_fsperf_backends() for b in found]
    return Registry([*settings.backend_config.backends, *extra])


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", MARKER_HELP)
    config.addinivalue_line("markers", MOUNT_HELP)
    try:
        settings = read_settings(config)
        state = FsperfSession(settings)
        config.stash[STATE] = state
        if settings.backend is not None:
            registry(config).get(settings.backend, settings.backend_where)
        if settings.baseline is not None:
            state.baseline(settings.baseline, settings.baseline_where)
        state.load_earlier()
    except UsageError as exc:
        raise pytest.UsageError(f"pytest-fsperf: {exc}") from None
    config.stash[STATE] = state
    config.pluginmanager.register(Reporter(state, config), "fsperf-reporter")
    if config.pluginmanager.hasplugin("benchmark"):
        config.pluginmanager.register(benchmark_json.BenchmarkJsonHook(state.results), "fsperf-benchmark")


def pytest_sessionstart(session: pytest.Session) -> None:
    session.config.stash[STATE].progress_write = _live_line(session.config)


def _live_line(config: pytest.Config) -> tuple[Callable[[str], None], Callable[[], int]] | None:
    """Write straight to the controlling terminal (/dev/tty), so neither pytest's capture
    nor its output ever holds the line; only when pytest's own output is a terminal."""
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    if reporter is None or not reporter.isatty or hasattr(config, "workerinput"):
        return None
    try:
        tty = open("/dev/tty", "w", encoding="utf-8")  # noqa: SIM115  # lives for the session
    except OSError:
        return None
    config.add_cleanup(tty.close)

    def write(text: str) -> None:
        tty.write(text)
        tty.flush()

    def column() -> int:  # where pytest's own cursor is on its current line
        return int(getattr(reporter._tw, "width_of_current_line", 0))

    return write, column


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        markers = [(m.args, m.kwargs) for m in item.iter_markers("fsperf")]
        mount = item.get_closest_marker(MARKER)
        try:
            if markers:
                item.stash[PLAN] = build_plan(item.nodeid, markers)
            if mount is not None:
                item.stash[MOUNT] = from_marker(mount.args, mount.kwargs, f"{item.nodeid}: {MARKER}")
        except UsageError as exc:
            item.stash[PLAN_ERROR] = str(exc)


def pytest_runtest_setup(item: pytest.Item) -> None:
    if PLAN_ERROR in item.stash:
        fail(f"usage error: {item.stash[PLAN_ERROR]}")


@pytest.fixture(scope="session")
def fsperf_s3() -> Iterator[S3Server]:
    """A MinIO server on 127.0.0.1 for this session: free port, fresh credentials and bucket.
    Skips the test when MinIO is not installed."""
    binary = find_minio()
    if binary is None:
        pytest.skip(f"MinIO is not installed: {MINIO_INSTALL}")
    server = or_fail(lambda: start_minio(binary))
    try:
        yield server
    finally:
        server.stop()


def _plan(request: pytest.FixtureRequest, req: MountRequest) -> MountPlan:
    config = request.config
    settings = config.stash[STATE].settings
    try:
        return or_fail(lambda: resolve(req, registry(config), settings.backend_config,
                                       request.getfixturevalue, settings.mount_timeout))
    except BinaryMissing as exc:
        pytest.skip(str(exc))


def _open(state: FsperfSession, plan: MountPlan) -> Target:
    try:
        return or_fail(lambda: state.open_target(plan))
    except BinaryMissing as exc:
        pytest.skip(str(exc))


@pytest.fixture(scope="session")
def fsperf_target(request: pytest.FixtureRequest) -> Iterator[Target]:
    """Where tests without an fsperf_mount marker work: --fsperf-backend (mounted once for
    the session), --fsperf-mount, or the embedded default."""
    state = request.config.stash[STATE]
    s = state.settings
    if s.backend is None:
        yield state.default_target()
        return
    req = MountRequest(s.backend, s.mount_options, None, s.backend_where)
    target = _open(state, _plan(request, req))
    try:
        yield target
    finally:
        state.close_target(target)


@pytest.fixture
def fsperf(request: pytest.FixtureRequest) -> Iterator[Fsperf]:
    """Measure workloads on the filesystem under test, in a work dir of this test's own."""
    state = request.config.stash[STATE]
    req = request.node.stash.get(MOUNT, None)
    shared = request.getfixturevalue("fsperf_target") if req is None else None
    with machine_lock():
        target = shared or _open(state, _plan(request, req))
        workdir = None
        try:
            workdir = or_fail(lambda: target.new_workdir(request.node.name))
            state.environment(target)  # read once while the mount and daemon are up
            plan = request.node.stash.get(PLAN, None)
            s = state.settings
            rounds = plan.rounds if plan and plan.rounds is not None else s.rounds
            warmup = plan.warmup if plan and plan.warmup is not None else s.warmup
            handle = Fsperf(state, target, request.node.nodeid, workdir, rounds, warmup)
            request.node.stash[RESULTS] = handle.results
            request.node.stash[COMPARISONS] = handle.comparisons
            yield handle
        finally:
            problem = target.remove(workdir) if workdir else None
            if problem:
                state.leftovers.append(problem)
            if shared is None:
                state.close_target(target)


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
    gate = _baseline(item, plan, results, verdict.per_workload)
    regressions, unsure = _against_earlier(item, plan, results, verdict.per_workload)
    verdict.inconclusive += unsure
    failures = verdict.failures + gate + regressions
    if item.config.stash[STATE].settings.inconclusive == "fail":
        failures += verdict.inconclusive
    else:
        for message in verdict.inconclusive:
            warnings.warn(pytest.PytestWarning(f"fsperf: {message}"), stacklevel=1)
    listed = failures + verdict.inconclusive
    item.stash[VERDICTS] = {
        name: (v, [f for f in listed if f.startswith(name + ":")])
        for name, v in verdict.per_workload.items()
    }
    return failures + (verdict.notes if failures else [])


def _against_earlier(item: pytest.Item, plan: Plan, results: list[WorkloadResult],
                     per_workload: dict[str, str]) -> tuple[list[str], list[str]]:
    """--fsperf-compare: each judged workload against the same one of the saved run.
    Returns (regressions, inconclusive and incomparable messages)."""
    state = item.config.stash[STATE]
    item.stash[RUN_CMP] = {}
    if not state.earlier_name:
        return [], []
    regressions, unsure = [], []
    for r in results:
        old = state.earlier.get(f"{r.test}::{r.name}")
        if not r.judged or old is None:
            continue
        data = r.to_dict()
        data["fingerprint"] = runs.fingerprint(data, state.env)
        c = runs.compare(state.earlier_name, f"{r.test}::{r.name}", old, data, plan.tolerance)
        item.stash[RUN_CMP][r.name] = c
        message = f"{r.name}: " + c.message(plan.tolerance).split(": ", 1)[1]
        if c.outcome == runs.REGRESSION:
            regressions.append(message)
            per_workload[r.name] = "REGRESSION"
        elif c.outcome in (runs.INCONCLUSIVE, runs.INCOMPARABLE):
            unsure.append(message)
            if per_workload[r.name] not in ("FAIL", "REGRESSION"):
                per_workload[r.name] = c.outcome.upper()
    return regressions, unsure


def _baseline(item: pytest.Item, plan: Plan, results: list[WorkloadResult],
              per_workload: dict[str, str]) -> list[str]:
    """Measured / documented for each judged workload with a baseline entry; with
    --fsperf-gate=baseline, a miss beyond the tolerance fails the test."""
    state = item.config.stash[STATE]
    name = plan.baseline or state.settings.baseline
    item.stash[CHECKS] = {}
    if name is None:
        return []
    where = f"{item.nodeid}: fsperf marker baseline" if plan.baseline else state.settings.baseline_where
    found = state.baseline(name, where)
    gated = state.settings.gate == "baseline"
    misses = []
    for r in results:
        if not r.judged:
            continue
        checks = check(r, found, plan.tolerance)
        item.stash[CHECKS][r.name] = checks
        for c in checks:
            if gated and c.ok is False:
                misses.append(c.message(r.name, plan.tolerance))
                per_workload[r.name] = "FAIL"
    return misses


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
        checks = item.stash.get(CHECKS, {})
        for r in item.stash[RESULTS]:
            data = r.to_dict()
            data["verdict"], data["failures"] = verdicts.get(r.name, ("-", []))
            data["baseline_checks"] = [c.to_dict() for c in checks.get(r.name, [])]
            data["baseline_key"], data["baseline_entry"] = key_of(r), entry_of(r)
            data["fingerprint"] = runs.fingerprint(data, item.config.stash[STATE].env)
            earlier = item.stash.get(RUN_CMP, {}).get(r.name)
            data["run_comparison"] = earlier.to_dict() if earlier else None
            rows.append(data)
        report.fsperf_results = rows  # type: ignore[attr-defined]  # travels through xdist
    if report.when == "call" and item.stash.get(COMPARISONS, None):
        report.fsperf_comparisons = [  # type: ignore[attr-defined]
            c.to_dict() for c in item.stash[COMPARISONS]]
    return report


class Reporter:
    """Collects results from reports (also those xdist workers send) and reports them."""

    def __init__(self, state: FsperfSession, config: pytest.Config) -> None:
        self.state = state
        self.is_worker = hasattr(config, "workerinput")

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        self.state.results.extend(getattr(report, "fsperf_results", None) or [])
        self.state.comparisons.extend(getattr(report, "fsperf_comparisons", None) or [])

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
        for c in state.comparisons:
            for line in terminal.comparison(c):
                terminalreporter.write_line(line)
        for line in terminal.baseline_checks(state.results, state.settings.gate == "baseline"):
            terminalreporter.write_line(line)
        for line in terminal.run_comparisons(state.results):
            terminalreporter.write_line(line)
        if state.saved_run is not None:
            terminalreporter.write_line(f"fsperf run saved: {state.saved_run}")
        if state.saved_baseline is not None:
            terminalreporter.write_line(f"fsperf baseline saved: {state.saved_baseline}")
        for path in state.leftovers:
            terminalreporter.write_line(f"could not remove work directory {path}", red=True)
        if state.settings.json_path is not None and not self.is_worker:
            terminalreporter.write_line(f"fsperf results written to {state.settings.json_path}")

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self) -> None:
        state = self.state
        path = state.settings.json_path
        s = state.settings
        wanted = (path is not None or s.save_baseline is not None or s.save is not None
                  or s.markdown_path is not None or s.action_prefix is not None
                  or s.html_path is not None or s.benchmark_json is not None) and not self.is_worker
        env = state.final_environment() if wanted else None
        if env is not None and state.settings.save_baseline is not None:
            state.save_baseline(env)
        if env is not None and s.markdown_path is not None:
            s.markdown_path.write_text(markdown.document(
                env, state.results, state.comparisons, s.gate == "baseline"), "utf-8")
        if env is not None and s.html_path is not None:
            s.html_path.write_text(html.document(
                env, state.results, state.comparisons, s.gate == "baseline"), "utf-8")
        if env is not None and s.benchmark_json is not None:
            s.benchmark_json.write_text(json.dumps(
                benchmark_json.document(state.results, env), indent=2) + "\n", "utf-8")
        if env is not None and s.action_prefix is not None:
            bigger, smaller = markdown.benchmark_action(state.results)
            for suffix, data in (("bigger", bigger), ("smaller", smaller)):
                path_ = s.action_prefix.with_name(f"{s.action_prefix.name}-{suffix}.json")
                path_.write_text(json.dumps(data, indent=2) + "\n", "utf-8")
        if env is not None and s.save is not None:
            doc = jsonout.document(env, state.results, state.leftovers, state.comparisons)
            state.saved_run = str(runs.save(runs.storage(s.root, s.storage), s.save, doc))
        state.close()  # unmounts whatever a fixture teardown did not (e.g. after Ctrl-C)
        if path is not None and env is not None:
            jsonout.write(path, jsonout.document(env, state.results, state.leftovers,
                                                 state.comparisons))
