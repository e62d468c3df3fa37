"""Issue 72.2/72.5: a daemon that names its store's host itself (gcsfuse before 0.36:
www.googleapis.com) reaches the plugin's fake-gcs-server through the TLS proxy as an HTTPS
proxy. A CONNECT to that name is tunnelled to the store and nowhere else; any other target,
a plain request, or bytes sent before the tunnel is open are refused; the token URL answers
without reaching the store or its counts."""

from __future__ import annotations

import json
import socket
import ssl
from collections.abc import Iterator
from typing import Any

import pytest

from pytest_fsperf.infra import leftovers
from pytest_fsperf.plan.conditions import StoreConditions
from pytest_fsperf.store import served
from pytest_fsperf.store.conditioner import ConditionedStore


@pytest.fixture
def gcs_over_tls(clean: None) -> Iterator[tuple[ConditionedStore, dict[str, str]]]:
    binary = served.find("fake-gcs-server") or pytest.skip("fake-gcs-server is not installed")
    record = leftovers.start()
    server = served.start_fake_gcs(binary)
    try:
        store = ConditionedStore(server, int(server.values["endpoint"].rsplit(":", 1)[1]),
                                 StoreConditions(tls=True), "gcs")
        try:
            yield store, store.config()
        finally:
            store.stop()
    finally:
        server.stop()
        leftovers.stop(record)


def _reply(sock: Any) -> bytes:
    out = b""
    while b"\r\n\r\n" not in out:
        got = sock.recv(4096)
        if not got:
            break
        out += got
    return out


def _tunnel(port: int, target: str, extra: bytes = b"") -> tuple[socket.socket, bytes]:
    raw = socket.create_connection(("127.0.0.1", port), timeout=10)
    raw.sendall(f"CONNECT {target} HTTP/1.1\r\nHost: {target}\r\n\r\n".encode() + extra)
    return raw, _reply(raw)


def _requests(store: ConditionedStore) -> int:
    return int(store.proxy.stats()["counts"]["requests"])  # type: ignore[index]


@pytest.mark.fio
def test_a_connect_to_the_stores_own_name_reaches_the_store_over_the_sessions_ca(gcs_over_tls):
    store, values = gcs_over_tls
    assert values["connect_proxy"] == f"http://{store.proxy.address}"
    raw, head = _tunnel(store.proxy.port, "www.googleapis.com:443")
    assert head.startswith(b"HTTP/1.1 200")
    ca = ssl.create_default_context(cafile=values["ca_file"])  # the name is checked
    with ca.wrap_socket(raw, server_hostname="www.googleapis.com") as s:
        s.sendall(f"GET /storage/v1/b/{values['bucket']}/o HTTP/1.1\r\nHost: www.googleapis.com"
                  "\r\nConnection: close\r\n\r\n".encode())
        assert _reply(s).startswith(b"HTTP/1.1 200")
    assert _requests(store) == 1


@pytest.mark.fio
@pytest.mark.parametrize("target", ["169.254.169.254:80", "metadata.google.internal:80",
                                    "127.0.0.1:22", "www.googleapis.com:80",
                                    "oauth2.googleapis.com:443"])
def test_a_connect_anywhere_else_is_refused_and_nothing_is_dialled(gcs_over_tls, target):
    store, _ = gcs_over_tls
    raw, head = _tunnel(store.proxy.port, target)
    with raw:
        assert head.startswith(b"HTTP/1.1 403")
        assert raw.recv(100) == b""  # and closed
    assert _requests(store) == 0


@pytest.mark.fio
def test_a_plain_request_or_bytes_before_the_tunnel_opens_are_refused(gcs_over_tls):
    store, values = gcs_over_tls
    # a request smuggled behind the CONNECT, before the 200, would be the store's in clear
    raw, head = _tunnel(store.proxy.port, "www.googleapis.com:443",
                        b"GET /storage/v1/b HTTP/1.1\r\nHost: x\r\n\r\n")
    with raw:
        assert head.startswith(b"HTTP/1.1 403")
    with socket.create_connection(("127.0.0.1", store.proxy.port), timeout=10) as plain:
        plain.sendall(f"GET /storage/v1/b/{values['bucket']}/o HTTP/1.1\r\nHost: x\r\n\r\n".encode())
        assert _reply(plain).startswith(b"HTTP/1.1 403")
    assert _requests(store) == 0


@pytest.mark.fio
def test_the_token_url_answers_a_token_the_store_never_sees(gcs_over_tls):
    import urllib.request

    store, values = gcs_over_tls
    assert values["auth_url"].startswith(f"https://{store.proxy.address}/")
    ca = ssl.create_default_context(cafile=values["ca_file"])
    with urllib.request.urlopen(values["auth_url"], context=ca, timeout=10) as reply:
        token = json.loads(reply.read())
    assert token["token_type"] == "Bearer" and token["access_token"]
    assert _requests(store) == 0


@pytest.mark.s3
def test_a_store_whose_daemons_take_an_endpoint_takes_no_connect(minio, clean):
    from pytest_fsperf.store.minio import find_minio, start_minio

    record = leftovers.start()
    s3 = start_minio(find_minio())
    store = ConditionedStore(s3, int(s3.endpoint.rsplit(":", 1)[1]), StoreConditions(tls=True),
                             "s3", owns=False)
    try:
        assert "connect_proxy" not in store.config() and "auth_url" not in store.config()
        raw, head = _tunnel(store.proxy.port, "www.googleapis.com:443")
        raw.close()
        assert not head.startswith(b"HTTP/1.1 200")
    finally:
        store.stop()
        s3.stop()
        leftovers.stop(record)


@pytest.mark.unit
def test_the_legacy_gcsfuse_backend_renders_its_proxy_token_url_and_trust(tmp_path):
    """The shipped-regressions case's backend config: the token URL is no secret (the store
    checks no token), so it may stand on gcsfuse's command line."""
    from benchmarks.shipped_regressions import GCSFUSE_LEGACY
    from pytest_fsperf.mounts.registry import load_config
    from pytest_fsperf.mounts.spec import render

    (tmp_path / "fsperf.ini").write_text(GCSFUSE_LEGACY)
    (backend,) = load_config(str(tmp_path / "fsperf.ini"), "test").backends
    values = {"endpoint": "https://127.0.0.1:9", "bucket": "bkt", "ca_file": "/run/ca.pem",
              "connect_proxy": "http://127.0.0.1:9", "auth_url": "https://127.0.0.1:9/fsperf-token"}
    got = render(backend, values, (), "/m", "/p")
    assert "--token-url=https://127.0.0.1:9/fsperf-token" in got.argv
    assert got.env["HTTPS_PROXY"] == "http://127.0.0.1:9"
    assert got.env["SSL_CERT_FILE"] == "/run/ca.pem"
