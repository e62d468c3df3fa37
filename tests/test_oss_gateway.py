"""The OSS gateway's translation (unit), and live: ossfs2 and ossfs over it (test_peers_live.py)."""

from __future__ import annotations

import os
import shutil

import pytest

from pytest_fsperf.store.oss_gateway import (
    KEY_ID,
    fix_listing,
    reply_header,
    request_headers,
    upstream_path,
    upstream_query,
)

TIER = "unit"


def test_keys_are_encoded_as_sigv4_wants_whatever_the_client_sent():
    assert upstream_path("b", "/a%20b/c+d") == "/b/a%20b/c%2Bd"
    assert upstream_path("b", "/a b/ü") == "/b/a%20b/%C3%BC"
    assert upstream_path("b", "/") == "/b/"


def test_oss_only_query_words_are_dropped_and_the_rest_strictly_encoded():
    assert upstream_query("objectMeta") == ""
    assert upstream_query("uploads") == "uploads="
    assert upstream_query("list-type=2&prefix=d/x&delimiter=/&max-keys=1000") == (
        "list-type=2&prefix=d%2Fx&delimiter=%2F&max-keys=1000")
    assert upstream_query("partNumber=3&uploadId=a%2Bb") == "partNumber=3&uploadId=a%2Bb"


def test_oss_headers_become_s3_headers_and_unknown_ones_are_dropped():
    h = request_headers({"x-oss-meta-mtime": "1", "x-oss-copy-source": "/b/src%20x",
                         "x-oss-metadata-directive": "REPLACE", "Content-Length": "0",
                         "x-oss-date": "now", "Authorization": "OSS k:s", "Host": "b.oss"}, "b")
    assert h == {"x-amz-meta-mtime": "1", "x-amz-copy-source": "/b/src%20x",
                 "x-amz-metadata-directive": "REPLACE", "content-length": "0"}


def test_a_copy_from_another_bucket_is_refused():
    assert request_headers({"x-oss-copy-source": "/other/key"}, "b") == "a copy from another bucket"
    assert request_headers({"x-oss-copy-source": "%2Fother%2Fkey"}, "b") == "a copy from another bucket"


def test_replies_carry_oss_names():
    assert reply_header("x-amz-meta-mode") == "x-oss-meta-mode"
    assert reply_header("x-amz-request-id") == "x-oss-request-id"
    assert reply_header("Transfer-Encoding") is None and reply_header("Content-Length") is None
    assert reply_header("ETag") == "ETag"


def test_listings_get_a_type_and_milliseconds():
    body = (b"<?xml version=\"1.0\"?><ListBucketResult xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\"><Contents><Key>a</Key>"
            b"<LastModified>2026-11-26T22:36:20.12Z</LastModified></Contents><Contents><Key>b</Key>"
            b"<LastModified>2026-11-26T22:36:21Z</LastModified></Contents></ListBucketResult>")
    fixed = fix_listing(body)
    assert fixed.count(b"<Type>Normal</Type></Contents>") == 2
    assert fixed.startswith(b"<?xml version=\"1.0\"?><ListBucketResult><Contents>")  # no namespace
    assert b"2026-11-26T22:36:20.000Z" in fixed and b"2026-11-26T22:36:21.000Z" in fixed
    other = b"<InitiateMultipartUploadResult><LastModified>x</LastModified></InitiateMultipartUploadResult>"
    assert fix_listing(other) == other


@pytest.mark.parametrize(("header", "key"), [
    ("OSS fsperfossabc:c2lnbmF0dXJl", "fsperfossabc"),
    ("OSS4-HMAC-SHA256 Credential=fsperfossabc/20261126/us-east-1/oss/aliyun_v4_request, "
     "AdditionalHeaders=host, Signature=abc", "fsperfossabc"),
])
def test_the_access_key_id_is_read_from_both_signatures(header, key):
    found = KEY_ID.match(header)
    assert found and (found.group(1) or found.group(2)) == key


def test_an_s3_client_reaches_it_with_the_same_key_id_and_nothing_else_does():
    assert KEY_ID.match("AWS4-HMAC-SHA256 Credential=k/20261126/us-east-1/s3/aws4_request").group(2) == "k"
    assert KEY_ID.match("AWS k:sig") is None
    assert KEY_ID.match("Bearer k") is None
    assert KEY_ID.match("") is None


@pytest.mark.s3
@pytest.mark.parametrize("python", [False, True], ids=["go", "python"])
def test_the_gateway_lets_in_only_the_sessions_key_for_its_one_bucket(minio, clean, python):
    """A local user without the key id, or asking for another bucket, or naming another host,
    gets 403 and nothing reaches MinIO; with the key the bucket works, and MinIO counts it."""
    import http.client

    from pytest_fsperf.infra import leftovers
    from pytest_fsperf.store.minio import find_minio, start_minio
    from pytest_fsperf.store.oss import start_oss

    record = leftovers.start()
    s3 = start_minio(find_minio())
    oss = start_oss(s3, python=python)
    assert (oss.gateway is None) == (python or (shutil.which("go") is None
                                     and not os.path.exists("/usr/local/go/bin/go")))
    try:
        def ask(method, target, key, host=None, body=b""):
            c = http.client.HTTPConnection("127.0.0.1", oss.port, timeout=10)
            headers = {"Host": host or f"{oss.bucket}.oss.invalid", "Content-Length": str(len(body))}
            if key is not None:
                headers["Authorization"] = f"OSS {key}:c2ln"
            c.request(method, target, body=body, headers=headers)
            r = c.getresponse()
            return r.status, r.read()

        assert ask("PUT", "/k", oss.access_key, body=b"data")[0] == 200
        assert ask("GET", "/k", oss.access_key) == (200, b"data")
        assert ask("GET", "/k", None)[0] == 403
        assert ask("GET", "/k", oss.access_key[:-1] + "x")[0] == 403
        assert ask("GET", f"/{s3.bucket}/x", oss.access_key, host="127.0.0.1")[0] == 403  # MinIO's other bucket
        assert ask("GET", "/minio/metrics/v3/api/requests", oss.access_key, host="127.0.0.1")[0] == 403
        # an absolute URL naming another host is answered by the gateway for its own bucket only
        assert ask("GET", "http://example.com/k", oss.access_key, host="example.com")[0] == 403
        assert ask("PUT", "/copy", oss.access_key)[0] == 200
        c = http.client.HTTPConnection("127.0.0.1", oss.port, timeout=10)
        c.request("PUT", "/c2", headers={"Host": f"{oss.bucket}.oss.invalid", "Content-Length": "0",
                                          "Authorization": f"OSS {oss.access_key}:x",
                                          "x-oss-copy-source": f"/{s3.bucket}/anything"})
        assert c.getresponse().status == 403  # a copy out of another bucket
        listing = ask("GET", "/?list-type=2", oss.access_key)[1]
        assert b"<Key>k</Key>" in listing and b"<Type>Normal</Type>" in listing
        assert b"xmlns" not in listing
    finally:
        oss.stop()
        s3.stop()
        leftovers.stop(record)


NOBODYS_FLOOD = r'''
import socket, sys, time
port, n = int(sys.argv[1]), int(sys.argv[2])
held, closed = [], 0
for i in range(n):  # a broken request each, then idle connections held open
    s = socket.create_connection(("127.0.0.1", port), timeout=5)
    try:
        s.sendall(b"PUT /x HTTP/1.1\r\nHost: b\r\nContent-Length: abc\r\n\r\n")
        s.settimeout(5)
        closed += s.recv(100) == b""
    except OSError:
        closed += 1
    s.close()
for i in range(n):
    try:
        held.append(socket.create_connection(("127.0.0.1", port), timeout=5))
    except OSError:
        break
time.sleep(1)
gone = 0
for s in held:
    s.settimeout(2)
    try:
        gone += s.recv(1) == b""
    except OSError:
        gone += 1
print(closed, gone, len(held))
'''


@pytest.mark.s3
@pytest.mark.parametrize("python", [False, True], ids=["go", "python"])
def test_another_user_cannot_stall_the_gateway(minio, clean, python):
    """As found: 20,000 `PUT /x` with `Content-Length: abc` from nobody filled the gateway's
    unread stderr pipe with tracebacks (every thread then blocked on its lock), and 19k idle
    connections took a thread each. Now another user's connection is closed as it is accepted
    (its socket's owner is not root's or the session's), nothing is printed, and a keyed
    request of the session's is answered at once while nobody floods it."""
    import http.client
    import subprocess
    import time

    import psutil

    from pytest_fsperf.infra import leftovers
    from pytest_fsperf.store.minio import find_minio, start_minio
    from pytest_fsperf.store.oss import start_oss
    from tests.hostile import NOBODY, SYSTEM_PYTHON

    if os.geteuid() != 0 or not os.access(SYSTEM_PYTHON, os.X_OK):
        pytest.skip(f"needs root and {SYSTEM_PYTHON} to act as another user")
    record = leftovers.start()
    s3 = start_minio(find_minio())
    oss = start_oss(s3, python=python)
    flood = None
    try:
        flood = subprocess.Popen([SYSTEM_PYTHON, "-c", NOBODYS_FLOOD, str(oss.port), "1500"],
                                 stdout=subprocess.PIPE, text=True, user=NOBODY, group=NOBODY,
                                 extra_groups=[])
        time.sleep(1.0)
        started = time.monotonic()
        c = http.client.HTTPConnection("127.0.0.1", oss.port, timeout=10)
        c.request("PUT", "/k", body=b"data", headers={
            "Host": f"{oss.bucket}.oss.invalid", "Authorization": f"OSS {oss.access_key}:c2ln"})
        assert c.getresponse().status == 200
        assert time.monotonic() - started < 5
        out, _ = flood.communicate(timeout=120)
        closed, gone, held = map(int, out.split())
        assert closed == 1500 and gone == held  # every one of nobody's closed by the gateway
        assert psutil.Process(oss.pid).num_threads() < 20
        assert len(psutil.Process(oss.pid).net_connections()) < 20
    finally:
        if flood is not None and flood.poll() is None:
            flood.kill()  # the test's own flood, by its handle
            flood.wait()
        oss.stop()
        s3.stop()
        leftovers.stop(record)


HOSTILE_REPLIES = [  # what a store answering the gateway could send for a listing
    b"HTTP/1.1 200 OK\r\nContent-Type: application/xml\r\nContent-Length: 1000000000000\r\n\r\n",
    b"HTTP/1.1 200 OK\r\nContent-Type: application/xml\r\nTransfer-Encoding: chunked\r\n\r\n"
    b"7fffffffffffffff\r\n",
    b"HTTP/1.1 200 OK\r\nContent-Type: application/xml\r\nTransfer-Encoding: chunked\r\n\r\n"
    + b"100000\r\n" + b"<" * (1 << 20) + b"\r\n",  # then 1 MiB chunks without end
]


@pytest.mark.s3
@pytest.mark.parametrize("reply", HOSTILE_REPLIES, ids=["huge-length", "huge-chunk", "endless"])
def test_a_store_cannot_make_the_go_gateway_hold_its_reply(clean, reply):
    """The Go gateway reads a listing (XML) whole to rewrite it: a store that announces a
    terabyte, a chunk of 2^63 bytes or sends chunks without end gets the connection closed
    at 64 MiB at most; the gateway stays small and answers the next request."""
    import http.client
    import socket
    import threading

    import psutil

    from pytest_fsperf.plan.conditions import StoreConditions
    from pytest_fsperf.store import conditioner

    if shutil.which("go") is None and not os.path.exists("/usr/local/go/bin/go"):
        pytest.skip("no Go toolchain to build the gateway")
    listener = socket.create_server(("127.0.0.1", 0))
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            with conn:
                conn.recv(65536)
                try:
                    conn.sendall(reply)
                    sent = 0
                    while reply.endswith(b"\r\n") and b"100000" in reply and sent < 200 << 20:
                        conn.sendall(b"100000\r\n" + b"<" * (1 << 20) + b"\r\n")
                        sent += 1 << 20
                    while sent < 200 << 20 and b"Content-Length" in reply:
                        conn.sendall(b"<" * (1 << 20))
                        sent += 1 << 20
                except OSError:
                    pass

    server = threading.Thread(target=serve, daemon=True)
    server.start()
    key = "fsperfossk"
    gateway = conditioner.start(f"127.0.0.1:{listener.getsockname()[1]}", StoreConditions(), "oss",
                                gateway={"upstream_access_key": "a", "upstream_secret_key": "b",
                                         "region": "us-east-1", "access_key": key,
                                         "bucket": "bkt", "domain": "oss.invalid"})
    try:
        for _ in range(2):
            c = http.client.HTTPConnection("127.0.0.1", gateway.port, timeout=30)
            c.request("GET", "/?prefix=", headers={"Host": "bkt.oss.invalid",
                                                   "Authorization": f"OSS {key}:c2ln"})
            with pytest.raises((http.client.HTTPException, ConnectionError, OSError)):
                c.getresponse().read()
            c.close()
        assert gateway.proc.poll() is None
        assert psutil.Process(gateway.proc.pid).memory_info().rss < 150 << 20
    finally:
        stop.set()
        listener.close()
        gateway.stop()
