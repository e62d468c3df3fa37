"""Collects every result (also those pytest-xdist workers send on their reports), prints
the terminal summary, and writes the files asked for at the end of the session."""

from __future__ import annotations

import os
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import pytest

from pytest_fsperf import baselines
from pytest_fsperf.infra import outfile
from pytest_fsperf.infra.redact import redact_text
from pytest_fsperf.judge import history
from pytest_fsperf.report import benchmark_json, html, jsonout, markdown, terminal, view
from pytest_fsperf.report.model import View
from pytest_fsperf.result.document import FailedTest, comparisons, rows
from pytest_fsperf.result.environment import Environment
from pytest_fsperf.saved import runs as saved
from pytest_fsperf.session.state import FsperfSession
from pytest_fsperf.vocab import Gate, Unsure


def live_line(config: pytest.Config) -> tuple[Callable[[str], None], Callable[[], int]] | None:
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


def failed_test(report: pytest.TestReport) -> FailedTest:
    """A failed or errored test as the decision names it: its id, the phase, why (the first
    line of its crash message, secrets masked)."""
    crash = getattr(report.longrepr, "reprcrash", None)
    text = str(getattr(crash, "message", "") or "")
    if not text:
        lines = [ln for ln in str(report.longrepr or "").splitlines() if ln.strip()]
        text = lines[-1] if lines else ""
    first = next((ln.strip() for ln in text.splitlines() if ln.strip()), "no message")
    first = first.removeprefix("Failed: ")  # pytest.fail's own word before the plugin's line
    return FailedTest(report.nodeid, report.when or "call", bool(getattr(report, "fsperf_test", False)),
                      redact_text(first)[:300])


class Reporter:
    """Collects results from reports (also those xdist workers send) and reports them."""

    def __init__(self, state: FsperfSession, config: pytest.Config) -> None:
        self.state = state
        self.is_worker = hasattr(config, "workerinput")
        self.output_errors: list[str] = []  # files that could not be written
        self.failed_session = ""  # why this session's results replace no reference
        self.env: Environment | None = None  # read at the session's end, for every report

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        """Each result and comparison the report carries (this process's or an xdist
        worker's), read into its type; one that does not read fails its test, saying why."""
        if report.when == "call":  # this process's own, as types
            here, compared = self.state.measured.pop(report.nodeid, ([], []))
            self.state.results += here
            self.state.comparisons += compared
        try:
            self.state.results += rows(getattr(report, "fsperf_results", None) or [])
            self.state.comparisons += comparisons(getattr(report, "fsperf_comparisons", None) or [])
        except ValueError as exc:
            self.state.failed_tests.append(FailedTest(report.nodeid, report.when or "call", True,
                                                      f"its results could not be read: {exc}"[:300]))
        if report.failed:  # whatever the cause: the decision is never greener than pytest
            self.state.failed_tests.append(failed_test(report))
            self.state.usage_errors |= bool(getattr(report, "fsperf_usage_error", False))

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        state = self.state
        for error in self.output_errors:
            terminalreporter.write_line(error, red=True)
        for line in state.swept:
            terminalreporter.write_line(f"pytest-fsperf removed what an earlier session left: {line}",
                                        yellow=True)
        if state.unrecorded:
            terminalreporter.write_line("pytest-fsperf kept no record of what this session started "
                                        f"({state.unrecorded}): had it been killed, nothing would "
                                        "have removed its mounts and processes", yellow=True)
        if not state.results and not state.leftovers and not any(
                t.fsperf for t in state.failed_tests):
            return
        terminalreporter.write_sep("=", "fsperf")
        # a terminal's columns: a table wider is stacked there (a log or a pipe keeps it whole)
        width = terminalreporter.config.get_terminal_writer().fullwidth if terminalreporter.isatty else None
        for line in terminal.render(self.view(self.env), width):
            terminalreporter.write_line(line)
        if state.saved_run is not None:
            terminalreporter.write_line(f"fsperf run saved: {state.saved_run}")
        if state.settings.history and not self.is_worker:
            terminalreporter.write_sep("-", "fsperf history")
            for line in self._history_lines():
                terminalreporter.write_line(line)
        if state.saved_baseline is not None:
            terminalreporter.write_line(f"fsperf baseline saved: {state.saved_baseline}")
        for path in state.leftovers:
            terminalreporter.write_line(f"could not remove work directory {path}", red=True)
        if state.settings.json_path is not None and not self.is_worker and not self.output_errors:
            terminalreporter.write_line(f"fsperf results written to {state.settings.json_path}")

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        state, s = self.state, self.state.settings
        outputs = (s.json_path, s.save, s.save_baseline, s.markdown_path, s.html_path,
                   s.benchmark_json, s.action_prefix)
        wanted = not self.is_worker and any(o is not None for o in outputs)
        if not self.is_worker and (wanted or state.results):
            self.env = state.final_environment()  # while the mounts are up
        state.close()  # unmounts whatever a fixture teardown did not (e.g. after Ctrl-C)
        self.failed_session = _failed(session.exitstatus, bool(state.usage_errors),
                                      bool(state.results))
        if wanted and self.env is not None:
            self._write(self.env)
        if self.output_errors and session.exitstatus == pytest.ExitCode.OK:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED
        if state.usage_errors and session.exitstatus == pytest.ExitCode.TESTS_FAILED:
            session.exitstatus = pytest.ExitCode.USAGE_ERROR  # bad input: exit 4, as documented

    def _write(self, env: Environment) -> None:
        """Each file asked for; one that cannot be written is named, and the others still are."""
        for write in self._writers(env):
            try:
                write()
            except outfile.OutputError as exc:
                self.output_errors.append(f"pytest-fsperf: {exc}")

    def _writers(self, env: Environment) -> list[Callable[[], object]]:
        state, s = self.state, self.state.settings
        doc = jsonout.document(env, state.results, state.leftovers, state.comparisons, state.swept,
                               state.failed_tests)
        todo: list[Callable[[], object]] = []
        if s.json_path is not None:
            todo.append(partial(self._keep, s.json_path, lambda p: jsonout.write(p, doc), True))
        if s.save is not None:
            path = saved.storage(s.root, s.storage) / f"{s.save}.json"
            todo.append(partial(self._keep, path, lambda p: self._save_run(p, doc), False))
        if s.save_baseline is not None:
            path = baselines.saved_dir(s.root) / f"{s.save_baseline}.json"
            todo.append(partial(self._keep, path, lambda p: state.save_baseline(env, p), False))
        if s.markdown_path is not None:
            todo.append(partial(outfile.write, s.markdown_path, markdown.document(self.view(env))))
        if s.html_path is not None:
            todo.append(partial(outfile.write, s.html_path, html.document(self.view(env))))
        if s.benchmark_json is not None:
            todo.append(partial(jsonout.write, s.benchmark_json,
                                benchmark_json.document(state.results, env)))
        if s.action_prefix is not None:
            bigger, smaller = markdown.benchmark_action(state.results)
            for suffix, data in (("bigger", bigger), ("smaller", smaller)):
                out = s.action_prefix.with_name(f"{s.action_prefix.name}-{suffix}.json")
                todo.append(partial(jsonout.write, out, data, streams=False))
        return todo

    def view(self, env: Environment | None = None) -> View:
        state = self.state
        return view.build(env, state.results, state.comparisons,
                          state.settings.gate is Gate.BASELINE, state.settings.inconclusive is Unsure.FAIL,
                          state.failed_tests, (state.settings.gate_seconds, state.clock.elapsed()))

    def _history_lines(self) -> list[str]:
        """--fsperf-history: the change points over the saved runs, this one included."""
        s = self.state.settings
        folder = saved.storage(s.root, s.storage)
        found, skipped = saved.read_folder(folder)
        if not found:
            return [f"no saved run in {folder} (--fsperf-save or --fsperf-autosave saves one)"]
        return [*history.report(found)[2], *(f"skipped {line}" for line in skipped)]

    def _save_run(self, path: Path, doc: dict[str, Any]) -> None:
        self.state.saved_run = str(jsonout.write(path, doc, streams=False))

    def _keep(self, path: Path, write: Callable[[Path], object], new_ok: bool) -> None:
        """A results file, saved run or baseline of a session that did not measure what it
        was asked to (it failed to start or collect, a usage error, nothing measured) never
        replaces one: it is written aside (NAME.json.failed, which no reader takes for a
        run) and the session says so. A results file that does not exist yet is written."""
        if not self.failed_session or (new_ok and not os.path.lexists(path)):
            write(path)
            return
        aside = path.with_name(path.name + ".failed")
        write(aside)
        self.output_errors.append(
            f"pytest-fsperf: the session did not measure what it was asked to ({self.failed_session}):"
            f" {path} {'kept as it was' if os.path.lexists(path) else 'not written'}; this "
            f"session's results are in {aside}")


def _failed(exit: int | pytest.ExitCode, usage: bool, measured: bool) -> str:
    """Why a session's results may not replace a team's reference, or ""."""
    if usage:
        return "a usage error"
    if exit not in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED):
        return f"pytest's exit status {int(exit)}"
    return "" if measured else "no workload was measured"
