"""A test's mount: the backends known (built in, the config file's, conftest.py's), the plan
a marker or the session's flags make, the target opened for it; a backend's daemon that is
not installed fails or skips its test; a line said at once while a test waits (the lock)."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import NoReturn

import pytest

from pytest_fsperf.mounts.mounter import BinaryMissing, MountPlan
from pytest_fsperf.mounts.registry import Registry
from pytest_fsperf.mounts.request import MountRequest, resolve
from pytest_fsperf.options.config import Settings
from pytest_fsperf.runner.target import Target
from pytest_fsperf.session.keys import STATE
from pytest_fsperf.session.state import FsperfSession
from pytest_fsperf.vocab import Missing


def registry(config: pytest.Config) -> Registry:
    """Built-in backends, then the config file's, then those conftest.py files return."""
    settings = config.stash[STATE].settings
    extra = [b for found in config.hook.pytest_fsperf_backends() for b in found]
    return Registry([*settings.backend_config.backends, *extra])


def plan_for(request: pytest.FixtureRequest, req: MountRequest) -> MountPlan:
    config = request.config
    settings = config.stash[STATE].settings
    try:
        return resolve(req, registry(config), settings.backend_config, request.getfixturevalue,
                       settings.mount_timeout)
    except BinaryMissing as exc:
        missing(settings, exc)


def open_target(state: FsperfSession, plan: MountPlan) -> Target:
    try:
        return state.open_target(plan)
    except BinaryMissing as exc:
        missing(state.settings, exc)


def missing(settings: Settings, exc: BinaryMissing) -> NoReturn:
    """A backend's daemon that is not installed fails its test, with the install line (a
    session that measured nothing is not green), or skips it (--fsperf-missing-backend=skip)."""
    if settings.missing_backend is Missing.SKIP:
        pytest.skip(str(exc))
    pytest.fail(f"{exc} (--fsperf-missing-backend=skip skips it instead)", pytrace=False)


def shared_target(request: pytest.FixtureRequest) -> Iterator[Target]:
    state = request.config.stash[STATE]
    s = state.settings
    if s.backend is None:
        yield state.default_target()
        return
    req = MountRequest(s.backend, s.mount_options, "fsperf_s3" if s.backend_store else None,
                       s.where("backend"))
    target = open_target(state, plan_for(request, req))
    try:
        yield target
    finally:
        state.close_target(target)


def say_now(config: pytest.Config) -> Callable[[str], None]:
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
