"""pytest-fsperf's entry point: its flags, ini keys, markers and fixtures, and nothing more
until a session uses the plugin - an fsperf flag or ini key given, or a collected test with an
fsperf marker or fixture (or pytest-xdist's controller, which collects nothing itself). Then
session_plugin.py is imported and registered (its pytest_configure runs at once), and its hooks
do the work. A pytest run that uses none of it imports nothing of the package's stages."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING

import pytest

from pytest_fsperf import declared, hooks

if TYPE_CHECKING:
    from pytest_fsperf.fixture import Fsperf
    from pytest_fsperf.options.config import Settings
    from pytest_fsperf.runner.target import Target
    from pytest_fsperf.store.minio import S3Server
    from pytest_fsperf.store.oss import OssServer
    from pytest_fsperf.store.served import Served
    from pytest_fsperf.stores import Stores

FIXTURES = frozenset({"fsperf", "fsperf_target", "fsperf_settings", "fsperf_minio", "fsperf_s3",
                      "fsperf_oss", "fsperf_azurite", "fsperf_gcs", "fsperf_stores"})
MARKERS = ("fsperf", "fsperf_mount")
NAME = "fsperf-session"  # session_plugin, once registered
SESSION = pytest.StashKey[pytest.Session]()


def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    pluginmanager.add_hookspecs(hooks)


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("fsperf", declared.GROUP)
    for name, metavar, text in declared.OPTIONS:
        # argparse formats a flag's help with %: a bare "10%" would crash `pytest --help`
        group.addoption("--" + name.replace("_", "-"), dest=name, metavar=metavar, default=None,
                        help=text.replace("%", "%%"))
        parser.addini(name, text, default="")


@pytest.hookimpl(tryfirst=True)  # before pytest's junitxml takes its path
def pytest_configure(config: pytest.Config) -> None:
    for line in declared.MARKERS:
        config.addinivalue_line("markers", line)
    if config.option.help or config.option.markers:
        return  # nothing will run: no setting is checked, nothing swept, no watchdog
    if asked(config):
        used(config)


def ini_keys(path: Path | None) -> list[str]:
    from pytest_fsperf.infra import inputs  # the standard library's and pytest's readers only

    return inputs.ini_keys(path) if path is not None else []


def asked(config: pytest.Config) -> bool:
    """An fsperf flag or ini key given (a misspelt key too: the session names it), or
    pytest-xdist's controller, whose workers collect the tests."""
    return (any(config.getoption(name) is not None for name, _, _ in declared.OPTIONS)
            or any(key.startswith("fsperf") for key in ini_keys(config.inipath))
            or getattr(config.option, "dist", "no") != "no")


def used(config: pytest.Config) -> ModuleType:
    """The session's hooks, registered on first use (and told of a session already started)."""
    from pytest_fsperf import session_plugin

    if not config.pluginmanager.is_registered(session_plugin):
        config.pluginmanager.register(session_plugin, NAME)
        session = config.stash.get(SESSION, None)
        if session is not None:
            session_plugin.sessionstart(session)
    return session_plugin


def uses(item: pytest.Item) -> bool:
    return bool(FIXTURES.intersection(getattr(item, "fixturenames", ()))) or any(
        item.get_closest_marker(m) is not None for m in MARKERS)


def pytest_sessionstart(session: pytest.Session) -> None:
    session.config.stash[SESSION] = session
    plugin = session.config.pluginmanager.get_plugin(NAME)
    if plugin is not None:
        plugin.sessionstart(session)


@pytest.hookimpl(tryfirst=True)  # every collected test, before -k and -m deselect some
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    plugin = used(config) if any(uses(item) for item in items) else config.pluginmanager.get_plugin(NAME)
    if plugin is not None:
        plugin.collection_modifyitems(items)


@pytest.fixture
def fsperf(request: pytest.FixtureRequest) -> Iterator[Fsperf]:
    """Measure workloads on the filesystem under test, in a work dir of this test's own."""
    yield from used(request.config).fsperf(request)


@pytest.fixture(scope="session")
def fsperf_settings(request: pytest.FixtureRequest) -> Settings:
    """The session's settings, frozen: every option as given, validated (options/config.py)."""
    settings: Settings = used(request.config).settings(request)
    return settings


@pytest.fixture(scope="session")
def fsperf_target(request: pytest.FixtureRequest) -> Iterator[Target]:
    """Where tests without an fsperf_mount marker work: --fsperf-backend (mounted once for
    the session), --fsperf-mount, or the embedded default."""
    yield from used(request.config).shared_target(request)


@pytest.fixture(scope="session")
def fsperf_minio(request: pytest.FixtureRequest) -> Iterator[S3Server]:
    """The session's MinIO itself, never behind store conditions (what fsperf_s3 and
    fsperf_oss are made of). Skips the test when MinIO is not installed."""
    yield from used(request.config).stores.fsperf_minio()


@pytest.fixture(scope="session")
def fsperf_s3(request: pytest.FixtureRequest, fsperf_minio: S3Server) -> Iterator[S3Server]:
    """A MinIO server on 127.0.0.1 for this session: free port, fresh credentials and bucket
    (under store conditions, reached through them). Skips the test when MinIO is not installed."""
    yield from used(request.config).stores.fsperf_s3(request, fsperf_minio)


@pytest.fixture(scope="session")
def fsperf_oss(request: pytest.FixtureRequest, fsperf_minio: S3Server) -> Iterator[OssServer]:
    """An OSS endpoint on 127.0.0.1 for ossfs and ossfs2: a bucket of the session's MinIO
    behind the plugin's translating gateway (its metrics count every request); store
    conditions apply between the daemon and the gateway."""
    yield from used(request.config).stores.fsperf_oss(request, fsperf_minio)


@pytest.fixture(scope="session")
def fsperf_azurite(request: pytest.FixtureRequest) -> Iterator[Served]:
    """Azurite's blob service on 127.0.0.1 (for blobfuse2): an account of this session's."""
    yield from used(request.config).stores.fsperf_azurite(request)


@pytest.fixture(scope="session")
def fsperf_gcs(request: pytest.FixtureRequest) -> Iterator[Served]:
    """fake-gcs-server on 127.0.0.1 (for gcsfuse), in memory, with one bucket."""
    yield from used(request.config).stores.fsperf_gcs(request)


@pytest.fixture(scope="session")
def fsperf_stores(request: pytest.FixtureRequest) -> Iterator[Stores]:
    """The stores of markers that name conditions of their own (fsperf_mount(store=...))."""
    yield from used(request.config).stores.fsperf_stores(request)
