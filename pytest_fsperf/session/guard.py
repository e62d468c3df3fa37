"""What keeps a session from leaving anything behind: SIGTERM (how CI cancels a job) ends it
as Ctrl-C does, cleaning up; what an earlier, killed session left is swept at the start; a
watchdog process removes what this one leaves if it is killed (infra/watchdog.py); pytest's
own JUnit XML, written as root, goes only where the plugin's outputs may."""

from __future__ import annotations

import contextlib
import signal
import subprocess
import threading
from pathlib import Path

import pytest
from _pytest import junitxml

from pytest_fsperf.errors import UsageError
from pytest_fsperf.infra import leftovers, outfile
from pytest_fsperf.infra import watchdog as infra_watchdog
from pytest_fsperf.session.state import FsperfSession


def _on_term(signum: int, _frame: object) -> None:
    raise KeyboardInterrupt(f"{signal.Signals(signum).name}")


def guard(config: pytest.Config, state: FsperfSession) -> None:
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


def junitxml_checked(config: pytest.Config) -> None:
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
