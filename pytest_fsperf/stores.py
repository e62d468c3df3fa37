"""The session's own stores, the bodies of the fixtures plugin.py declares: MinIO (S3), the
OSS gateway over it, Azurite and fake-gcs-server, each on 127.0.0.1, started when a test or
backend first needs one; under the session's store conditions (--fsperf-store-*) each is
reached through the conditions' proxy."""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from pytest_fsperf.mounts.request import STORE_FIXTURE
from pytest_fsperf.plan.conditions import StoreConditions
from pytest_fsperf.session.keys import STATE
from pytest_fsperf.store import served
from pytest_fsperf.store.conditioner import ConditionedStore
from pytest_fsperf.store.minio import INSTALL as MINIO_INSTALL
from pytest_fsperf.store.minio import S3Server, find_minio, start_minio
from pytest_fsperf.store.oss import OssServer, start_oss
from pytest_fsperf.store.served import Served

# the stores whose every built-in daemon reads a CA file the plugin can name (checked: each
# refused the proxy's certificate without it), spoken to over TLS unless --fsperf-store-tls=off
TLS_BY_DEFAULT = frozenset({"s3", "azure", "gcs"})


def with_tls(conditions: StoreConditions, kind: str, setting: bool | None) -> StoreConditions:
    """The conditions with TLS on or off: as --fsperf-store-tls says where given, else as the
    marker's conditions say (tls=True/False), else on for TLS_BY_DEFAULT's stores."""
    on = (setting if setting is not None else conditions.tls if conditions.tls is not None
          else kind in TLS_BY_DEFAULT)
    return conditions if on is conditions.tls else dataclasses.replace(conditions, tls=on)


def _setting(request: pytest.FixtureRequest) -> bool | None:
    state = request.config.stash.get(STATE, None)
    return state.settings.store_tls if state is not None else False


def _conditions(request: pytest.FixtureRequest, kind: str) -> StoreConditions:
    state = request.config.stash.get(STATE, None)
    found = state.settings.store if state is not None else StoreConditions()
    return with_tls(found, kind, _setting(request))


def _under(server: Any, port: int, conditions: StoreConditions, dialect: str,
           owns: bool = True) -> Any:
    """The server itself, or under `conditions` the server behind them (owns: stopping the
    wrapper stops the server too, as stopping the server would)."""
    if conditions.bare:
        return server
    try:
        return ConditionedStore(server, port, conditions, dialect, owns)
    except BaseException:
        if owns:
            server.stop()
        raise


def _oss(minio: S3Server, conditions: StoreConditions) -> Any:
    """A bucket of `minio` behind the OSS gateway, under `conditions`: the Go gateway applies
    them itself (one hop); the Python one sits behind the proxy, which stops it too."""
    gateway = start_oss(minio, conditions)
    return gateway if gateway.gateway is not None else _under(gateway, gateway.port, conditions, "oss")


def _port(endpoint: str) -> int:
    """http://127.0.0.1:PORT[/...] -> PORT."""
    return int(endpoint.split("//", 1)[-1].split("/", 1)[0].rsplit(":", 1)[1])


def fsperf_minio() -> Iterator[S3Server]:
    binary = find_minio()
    if binary is None:
        pytest.skip(f"MinIO is not installed: {MINIO_INSTALL}")
    server = start_minio(binary)
    try:
        yield server
    finally:
        server.stop()


def fsperf_s3(request: pytest.FixtureRequest, fsperf_minio: S3Server) -> Iterator[S3Server]:
    server = _under(fsperf_minio, _port(fsperf_minio.endpoint), _conditions(request, "s3"), "s3",
                    owns=False)  # fsperf_oss shares it
    try:
        yield server
    finally:
        if server is not fsperf_minio:
            server.stop()


def fsperf_oss(request: pytest.FixtureRequest, fsperf_minio: S3Server) -> Iterator[OssServer]:
    server = _oss(fsperf_minio, _conditions(request, "oss"))
    try:
        yield server
    finally:
        server.stop()


def _served(request: pytest.FixtureRequest, name: str, install: str,
            start: Callable[[str], Served], dialect: str) -> Iterator[Served]:
    binary = served.find(name)
    if binary is None:
        pytest.skip(f"{name} is not installed: {install}")
    server = start(binary)
    wrapped = _under(server, _port(server.values["endpoint"]), _conditions(request, dialect), dialect)
    try:
        yield wrapped
    finally:
        wrapped.stop()


SERVED: dict[str, tuple[str, str, Callable[[str], Served], str]] = {
    "azure": ("azurite-blob", served.AZURITE_INSTALL, served.start_azurite, "azure"),
    "gcs": ("fake-gcs-server", served.FAKE_GCS_INSTALL, served.start_fake_gcs, "gcs"),
}


def fsperf_azurite(request: pytest.FixtureRequest) -> Iterator[Served]:
    yield from _served(request, *SERVED["azure"])


def fsperf_gcs(request: pytest.FixtureRequest) -> Iterator[Served]:
    yield from _served(request, *SERVED["gcs"])



class Stores:
    """The stores a test's marker asks for under conditions of its own (store=): one of each
    kind and conditions, started on first use (over the session's MinIO for S3 and OSS, a
    server of their own for Azurite and fake-gcs-server), stopped with the session."""

    def __init__(self, session: StoreConditions, tls: bool | None = False) -> None:
        self.session, self.tls = session, tls
        self._made: dict[tuple[str, StoreConditions], Any] = {}
        self._stops = contextlib.ExitStack()  # each stopped, last first, whatever one raises

    def get(self, kind: str, conditions: StoreConditions, fixture: Callable[[str], Any]) -> Any:
        if conditions == self.session:
            return fixture(STORE_FIXTURE[kind])
        conditions = with_tls(conditions, kind, self.tls)
        key = (kind, conditions)
        if key not in self._made:
            self._made[key] = self._start(kind, conditions, fixture)
        return self._made[key]

    def _start(self, kind: str, conditions: StoreConditions, fixture: Callable[[str], Any]) -> Any:
        if kind == "s3":
            minio = fixture("fsperf_minio")  # the session's: never stopped here
            return minio if conditions.bare else self._kept(
                _under(minio, _port(minio.endpoint), conditions, "s3", owns=False))
        if kind == "oss":
            return self._kept(_oss(fixture("fsperf_minio"), conditions))
        name, install, start, dialect = SERVED[kind]
        binary = served.find(name)
        if binary is None:
            pytest.skip(f"{name} is not installed: {install}")
        server = start(binary)
        return self._kept(_under(server, _port(server.values["endpoint"]), conditions, dialect))

    def _kept(self, server: Any) -> Any:
        self._stops.callback(server.stop)
        return server

    def stop(self) -> None:
        self._made.clear()
        self._stops.close()


def fsperf_stores(request: pytest.FixtureRequest) -> Iterator[Stores]:
    state = request.config.stash.get(STATE, None)
    stores = Stores(state.settings.store if state is not None else StoreConditions(),
                    _setting(request))
    try:
        yield stores
    finally:
        stores.stop()
