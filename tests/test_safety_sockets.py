"""Every socket root accepts from loopback is checked by its exact 4-tuple (infra/tcp.py and
the proxy's owner.go ask the kernel through sock_diag): another user's connection is closed
at accept however it chooses its own address and port."""

from __future__ import annotations

import os
import socket
import subprocess
import time

import pytest

from tests.hostile import NOBODY, SYSTEM_PYTHON

TIER = "unit"


def test_the_owner_is_the_kernels_answer_for_exactly_this_socket() -> None:
    from pytest_fsperf.infra.tcp import owner
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        client = socket.create_connection(server.getsockname())
        accepted, _ = server.accept()
        with client, accepted:
            assert owner(client.getsockname(), client.getpeername()) == os.geteuid()
            assert owner(accepted.getsockname(), accepted.getpeername()) == os.geteuid()
            # a tuple no socket has: no owner, not the first row whose ports match
            assert owner(("127.0.0.9", client.getsockname()[1]), client.getpeername()) is None
            assert owner(("::1", 1), ("::1", 2)) is None
            assert owner(("not an address", 1), ("127.0.0.1", 2)) is None


@pytest.mark.fio
def test_nobodys_socket_is_nobodys_whatever_the_ports() -> None:
    """nobody's client bound to the server's own port on another loopback address (the
    audit's way to match root's accepted socket in /proc/net/tcp half the time)."""
    from pytest_fsperf.infra.tcp import owner
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        port = server.getsockname()[1]
        as_code = (f"import socket, time\ns = socket.socket()\ns.bind(('127.0.0.2', {port}))\n"
                   f"s.connect(('127.0.0.1', {port}))\nprint('ok', flush=True)\ntime.sleep(3)\n")
        if os.geteuid() != 0:
            pytest.skip("needs root to act as another user")
        proc = subprocess.Popen([SYSTEM_PYTHON, "-c", as_code], user=NOBODY, group=NOBODY,
                                extra_groups=[], stdout=subprocess.PIPE, text=True)
        try:
            assert proc.stdout is not None and proc.stdout.readline().strip() == "ok"
            accepted, theirs = server.accept()
            with accepted:
                assert theirs == ("127.0.0.2", port)
                assert owner(theirs, accepted.getsockname()) == NOBODY
                assert owner(accepted.getsockname(), theirs) == os.geteuid()
        finally:
            proc.kill()  # the test's own, by its handle
            proc.wait()


def test_the_owner_check_is_bounded_per_accept() -> None:
    """One netlink round trip a connection: a thousand checks well under a second each."""
    from pytest_fsperf.infra.tcp import owner
    began = time.monotonic()
    for _ in range(1000):
        owner(("127.0.0.1", 1), ("127.0.0.1", 2))
    assert time.monotonic() - began < 5


NOBODYS_MIRROR = r'''
import socket, sys
port, n = int(sys.argv[1]), int(sys.argv[2])
answered = 0
for i in range(n):  # from 127.0.x.y:PORT, the server's own port, to 127.0.0.1:PORT
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        s.bind((f"127.0.{1 + i // 200}.{2 + i % 200}", port))
        s.connect(("127.0.0.1", port))
        s.settimeout(5)
        s.sendall(b"HEAD /k HTTP/1.1\r\nHost: b.oss.invalid\r\nAuthorization: OSS x:c2ln\r\n\r\n")
        answered += s.recv(100).startswith(b"HTTP/")
    except OSError:
        pass
    s.close()
print(answered)
'''


@pytest.mark.s3
@pytest.mark.parametrize("python", [False, True], ids=["go", "python"])
def test_a_client_on_the_servers_own_port_is_still_another_users(minio, clean, python):
    """As found: the owner check took the first /proc/net/tcp row whose ports matched; nobody
    connecting from 127.0.x.y:P, P the gateway's own port, matched the gateway's accepted
    socket (uid 0): 28 of 60 of nobody's requests reached the store. Now none does, and the
    session's own request is still answered."""
    import http.client

    from pytest_fsperf.infra import leftovers
    from pytest_fsperf.store.minio import find_minio, start_minio
    from pytest_fsperf.store.oss import start_oss

    if os.geteuid() != 0 or not os.access(SYSTEM_PYTHON, os.X_OK):
        pytest.skip(f"needs root and {SYSTEM_PYTHON} to act as another user")
    record = leftovers.start()
    s3 = start_minio(find_minio())
    oss = start_oss(s3, python=python)
    try:
        out = subprocess.run([SYSTEM_PYTHON, "-c", NOBODYS_MIRROR, str(oss.port), "60"],
                             capture_output=True, text=True, user=NOBODY, group=NOBODY,
                             extra_groups=[], timeout=120, check=True)
        assert out.stdout.strip() == "0"
        c = http.client.HTTPConnection("127.0.0.1", oss.port, timeout=10)
        c.request("PUT", "/k", body=b"data", headers={
            "Host": f"{oss.bucket}.oss.invalid", "Authorization": f"OSS {oss.access_key}:c2ln"})
        assert c.getresponse().status == 200
    finally:
        oss.stop()
        s3.stop()
        leftovers.stop(record)


def test_without_sock_diag_the_table_is_matched_by_the_whole_four_tuple(monkeypatch) -> None:
    """A kernel without sock_diag: /proc/net/tcp, every address and port of the tuple matched
    (the hole was matching ports alone), the mirrored tuple of the other end not taken."""
    from pytest_fsperf.infra import tcp
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        client = socket.create_connection(server.getsockname())
        accepted, _ = server.accept()
        real = socket.socket

        def no_netlink(family: int = -1, *args: object, **kw: object) -> socket.socket:
            if family == socket.AF_NETLINK:
                raise OSError(97, "Address family not supported by protocol")
            return real(family, *args, **kw)  # type: ignore[arg-type]
        monkeypatch.setattr(tcp.socket, "socket", no_netlink)
        with client, accepted:
            assert tcp.owner(client.getsockname(), client.getpeername()) == os.geteuid()
            port = client.getsockname()[1]
            assert tcp.owner(("127.0.0.2", port), client.getpeername()) is None


NOBODYS_HANDSHAKES = """
import socket, ssl, sys
port, n = int(sys.argv[1]), int(sys.argv[2])
ctx = ssl.create_default_context()
ctx.check_hostname, ctx.verify_mode = False, ssl.CERT_NONE
got, idle = 0, []
for i in range(n):
    try:
        raw = socket.create_connection(("127.0.0.1", port), timeout=5)
        if i % 2:
            idle.append(raw)  # held open, saying nothing
            continue
        with ctx.wrap_socket(raw) as s:
            s.sendall(b"GET /minio/health/live HTTP/1.1\\r\\nHost: x\\r\\n\\r\\n")
            got += bool(s.recv(100))
    except OSError:
        pass
print(got)
"""


@pytest.mark.s3
def test_nobody_gets_no_tls_handshake_from_the_stores_proxy_and_root_still_does(minio, clean):
    """Issue 72.2: the proxy speaks TLS to the daemons. nobody's connections are closed at
    accept, before any handshake (no certificate, no request reaches the store), idle ones
    too; root's own request over the session's CA is answered."""
    import ssl
    import urllib.request

    from pytest_fsperf.infra import leftovers
    from pytest_fsperf.plan.conditions import StoreConditions
    from pytest_fsperf.store.conditioner import ConditionedStore
    from pytest_fsperf.store.minio import find_minio, start_minio

    if os.geteuid() != 0 or not os.access(SYSTEM_PYTHON, os.X_OK):
        pytest.skip(f"needs root and {SYSTEM_PYTHON} to act as another user")
    record = leftovers.start()
    s3 = start_minio(find_minio())
    store = ConditionedStore(s3, int(s3.endpoint.rsplit(":", 1)[1]), StoreConditions(tls=True),
                             "s3", owns=False)
    try:
        out = subprocess.run([SYSTEM_PYTHON, "-I", "-c", NOBODYS_HANDSHAKES,
                              str(store.proxy.port), "400"], capture_output=True, text=True,
                             user=NOBODY, group=NOBODY, extra_groups=[], timeout=300, check=True)
        assert out.stdout.strip() == "0"
        assert int(store.proxy.stats()["counts"]["refused"]) >= 400  # type: ignore[index]
        ca = ssl.create_default_context(cafile=store.config()["ca_file"])
        url = store.config()["endpoint"] + "/minio/health/live"
        with urllib.request.urlopen(url, context=ca, timeout=10) as reply:
            assert reply.status == 200
    finally:
        store.stop()
        s3.stop()
        leftovers.stop(record)
