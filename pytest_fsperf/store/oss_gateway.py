"""An OSS-dialect endpoint in front of the plugin's MinIO: `python -I -m pytest_fsperf.store.oss_gateway`.

ossfs and ossfs2 sign the OSS way and speak a few words S3 lacks; MinIO refuses both. This
server, on 127.0.0.1, takes a request for its one bucket, checks that it names the session's
access key id, maps the OSS names to S3's (x-oss-copy-source, x-oss-metadata-directive,
x-oss-meta-*; `?objectMeta` is a HEAD), re-signs it with SigV4 (botocore) and streams it to
MinIO, whose metrics so count every request. Replies come back with the S3 names mapped to
OSS's, and listings with what OSS clients require (`<Type>Normal</Type>` in each entry,
LastModified in milliseconds). Buckets are reached virtual-host style through the daemon's
HTTP proxy setting (`B.DOMAIN`, no DNS) or path style.

Its settings come as one JSON line on stdin (never the command line); it prints its port.
"""

from __future__ import annotations

import hmac
import http.client
import json
import os
import re
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import IO, Any
from urllib.parse import parse_qsl, quote, unquote, urlsplit

from botocore.auth import S3SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials

from pytest_fsperf.infra.tcp import owner

CHUNK = 1 << 20
MAX_CONNECTIONS = 2048  # at once: past it a connection is closed as it is accepted
IDLE = 300.0  # seconds a connection may wait for the next bytes of a request
MAX_CHUNKED = 64 * CHUNK  # a chunked upload is held in memory: at most this
DROPPED_QUERY = {"objectMeta"}  # OSS's HEAD of an object's metadata only: a HEAD for S3
HEADER_MAP = {"x-oss-copy-source": "x-amz-copy-source",
              "x-oss-copy-source-range": "x-amz-copy-source-range",
              "x-oss-metadata-directive": "x-amz-metadata-directive"}
PASSED = {"content-type", "content-length", "content-md5", "range", "if-match", "if-none-match",
          "if-modified-since", "if-unmodified-since", "cache-control", "content-disposition",
          "content-encoding", "expires"}
HOP = {"connection", "keep-alive", "transfer-encoding", "proxy-connection", "server", "date"}
# the key id of an OSS signature (V1 or V4), or of SigV4 (the ceilings' S3 client, obstore)
KEY_ID = re.compile(r"^(?:OSS ([^:\s]+):|(?:OSS4|AWS4)-HMAC-SHA256 Credential=([^/\s,]+)/)")
S3_NAMESPACE = b' xmlns="http://s3.amazonaws.com/doc/2006-03-01/"'
LAST_MODIFIED = re.compile(rb"<LastModified>(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(?:\.\d+)?Z</LastModified>")


class _Unsigned(S3SigV4Auth):
    """SigV4 with UNSIGNED-PAYLOAD: a body is streamed, never hashed first."""

    def _should_sha256_sign_payload(self, request: Any) -> bool:
        return False


def upstream_path(bucket: str, raw_path: str) -> str:
    """/bucket/key with the key encoded as SigV4 and MinIO encode it (everything but
    unreserved characters and '/'), whatever encoding the client chose."""
    return "/" + bucket + quote(unquote(raw_path), safe="/-_.~")


def upstream_query(raw: str) -> str:
    pairs = [(k, v) for k, v in parse_qsl(raw, keep_blank_values=True) if k not in DROPPED_QUERY]
    return "&".join(f"{quote(k, safe='-_.~')}={quote(v, safe='-_.~')}" for k, v in pairs)


def request_headers(given: Any, bucket: str) -> dict[str, str] | str:
    """The headers MinIO gets, or why the request is refused."""
    out: dict[str, str] = {}
    for name, value in given.items():
        low = name.lower()
        if low in PASSED:
            out[low] = value
        elif low.startswith("x-oss-meta-"):
            out["x-amz-meta-" + low[len("x-oss-meta-"):]] = value
        elif low in HEADER_MAP:
            out[HEADER_MAP[low]] = value
    source = out.get("x-amz-copy-source")
    if source is not None:
        src = unquote(source).lstrip("/")
        if src.split("/", 1)[0] != bucket:
            return "a copy from another bucket"
        out["x-amz-copy-source"] = quote("/" + src, safe="/-_.~")
    return out


def fix_listing(body: bytes) -> bytes:
    """OSS's XML has no namespace (ossfs 1.x finds nothing in S3's); OSS clients need each
    listed entry's <Type> and a LastModified in milliseconds."""
    body = body.replace(S3_NAMESPACE, b"", 1)
    if b"<ListBucketResult" not in body[:512]:
        return body
    body = body.replace(b"</Contents>", b"<Type>Normal</Type></Contents>")
    return LAST_MODIFIED.sub(rb"<LastModified>\1.000Z</LastModified>", body)


def reply_header(name: str) -> str | None:
    low = name.lower()
    if low in HOP or low == "content-length":
        return None
    if low.startswith("x-amz-meta-"):
        return "x-oss-meta-" + low[len("x-amz-meta-"):]
    if low == "x-amz-request-id":
        return "x-oss-request-id"
    return name


class _Body:
    """The client's body, Content-Length bytes of it, read as http.client asks."""

    def __init__(self, stream: IO[bytes] | Any, length: int) -> None:
        self.stream, self.left = stream, length

    def read(self, n: int = -1) -> bytes:
        n = self.left if n < 0 else min(n, self.left)
        data = self.stream.read(n) if n else b""
        self.left -= len(data)
        if n and not data:
            raise ConnectionError("the client closed before its body was sent")
        return data


class Gateway(ThreadingHTTPServer):
    """Only root's and the session user's connections get a thread (the owner of the
    client's socket, from the kernel's table, checked as it is accepted: another local user's
    is closed at once), at most MAX_CONNECTIONS at a time, each idle for at most IDLE s; a
    client's error is never written anywhere (nothing it sends can fill a pipe and block)."""

    daemon_threads = True
    # socketserver's backlog is 5: 128 threads connecting at once lost SYNs, each retried
    # after 1 s (ossfs2's small-file p99 was 1.02 s through the gateway)
    request_queue_size = 1024

    def __init__(self, conf: dict[str, str]) -> None:
        super().__init__(("127.0.0.1", 0), Handler)
        self.slots = threading.BoundedSemaphore(MAX_CONNECTIONS)
        self.trusted = {0, os.geteuid()}
        self.refused = 0
        up = urlsplit(conf["upstream"])
        self.up_host, self.up_port = up.hostname or "127.0.0.1", up.port or 80
        self.upstream = conf["upstream"].rstrip("/")
        self.creds = Credentials(conf["upstream_access_key"], conf["upstream_secret_key"])
        self.region = conf.get("region", "us-east-1")
        self.key_id = conf["access_key"]
        self.bucket = conf["bucket"]
        self.domain = conf["domain"].lower()


    def verify_request(self, request: Any, client_address: Any) -> bool:
        """In the accepting thread, before any thread or byte is spent on the client."""
        uid = owner(client_address, request.getsockname())  # the client's own socket
        if uid not in self.trusted or not self.slots.acquire(blocking=False):
            self.refused += 1
            return False
        return True

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        try:
            super().process_request_thread(request, client_address)
        finally:
            self.slots.release()

    def handle_error(self, request: Any, client_address: Any) -> None:
        return  # a client's broken request ends its connection; nothing is printed


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    timeout = IDLE  # an idle or trickling connection is closed
    disable_nagle_algorithm = True  # headers and body go in two writes: no 40 ms ACK wait
    server: Gateway
    _up: http.client.HTTPConnection | None = None

    def log_message(self, format: str, *args: Any) -> None:  # quiet: no client's words in a log
        return

    def do_GET(self) -> None:
        self._forward()

    do_HEAD = do_PUT = do_POST = do_DELETE = do_GET

    def _error(self, status: int, code: str, message: str) -> None:
        body = (f"<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>{code}</Code>"
                f"<Message>{message}</Message></Error>").encode()
        self._drain()
        self.send_response(status)
        self.send_header("Content-Type", "application/xml")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def _drain(self) -> None:
        length = _length(self.headers.get("Content-Length"))
        if length < 0:
            self.close_connection = True
            return
        if length and length <= CHUNK * 64:
            _Body(self.rfile, length).read()
        elif length:
            self.close_connection = True

    def _target(self) -> tuple[str, str] | None:
        """(bucket, raw path of the key) of the request, or None."""
        parts = urlsplit(self.path)
        host = (parts.hostname or self.headers.get("Host", "").rsplit(":", 1)[0]).lower()
        suffix = "." + self.server.domain
        if host.endswith(suffix):
            return host[: -len(suffix)], parts.path or "/"
        bucket, _, rest = (parts.path or "/").lstrip("/").partition("/")
        return unquote(bucket), "/" + rest

    def _forward(self) -> None:
        target = self._target()
        if target is None or target[0] != self.server.bucket:
            return self._error(403, "AccessDenied", "this endpoint serves one bucket")
        found = KEY_ID.match(self.headers.get("Authorization", ""))
        given = (found.group(1) or found.group(2)) if found else ""
        if not hmac.compare_digest(given.encode(), self.server.key_id.encode()):
            return self._error(403, "InvalidAccessKeyId", "unknown access key id")
        headers = request_headers(self.headers, self.server.bucket)
        if isinstance(headers, str):
            return self._error(403, "AccessDenied", headers)
        if _length(headers.get("content-length")) < 0:
            return self._error(400, "InvalidArgument", "Content-Length is not a length")
        body: _Body | bytes | None = None
        if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
            body = self._read_chunked()
            headers["content-length"] = str(len(body))
        elif _length(headers.get("content-length")) > 0:
            body = _Body(self.rfile, _length(headers["content-length"]))
        query = upstream_query(urlsplit(self.path).query)
        url = self.server.upstream + upstream_path(self.server.bucket, target[1])
        url += "?" + query if query else ""
        signed = AWSRequest(method=self.command, url=url, headers=headers)
        _Unsigned(self.server.creds, "s3", self.server.region).add_auth(signed)
        try:
            reply = self._send(url, signed, body)
        except (OSError, http.client.HTTPException) as exc:
            self.close_connection = True
            return self._error(502, "BadGateway", type(exc).__name__)
        self._relay(reply)

    def _read_chunked(self) -> bytes:
        out = bytearray()
        while True:
            line = self.rfile.readline(80).split(b";")[0].strip()
            if not re.fullmatch(rb"[0-9a-fA-F]{0,8}", line) or len(out) > MAX_CHUNKED:
                raise ConnectionError("a chunked body of the wrong shape")
            size = int(line or b"0", 16)
            if size == 0:
                while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                    pass
                return bytes(out)
            out += self.rfile.read(size)
            self.rfile.readline()

    def _send(self, url: str, signed: AWSRequest, body: _Body | bytes | None
              ) -> http.client.HTTPResponse:
        if self._up is None:
            self._up = http.client.HTTPConnection(self.server.up_host, self.server.up_port,
                                                  timeout=300, blocksize=CHUNK)
        path = url[len(self.server.upstream):]
        try:
            self._up.request(self.command, path, body=body, headers=dict(signed.headers.items()),
                             encode_chunked=False)
            return self._up.getresponse()
        except (OSError, http.client.HTTPException):
            self._up.close()
            self._up = None
            raise

    def _relay(self, reply: http.client.HTTPResponse) -> None:
        listing = reply.getheader("Content-Type", "").endswith("xml") and self.command != "HEAD"
        length = reply.getheader("Content-Length")
        data: bytes | None = None
        if listing or length is None:
            data = reply.read()
            data = fix_listing(data) if listing else data
        self.send_response(reply.status)
        for name, value in reply.getheaders():
            mapped = reply_header(name)
            if mapped is not None:
                self.send_header(mapped, value)
        size = len(data) if data is not None else int(length or 0)
        self.send_header("Content-Length", str(size))
        self.end_headers()
        if self.command == "HEAD":
            reply.read()
            return
        if data is not None:
            self.wfile.write(data)
            return
        while chunk := reply.read(CHUNK):
            self.wfile.write(chunk)

    def finish(self) -> None:
        super().finish()
        if self._up is not None:
            self._up.close()


def _length(value: str | None) -> int:
    """A Content-Length as a number of bytes; -1 where it is not one."""
    text = (value or "0").strip()
    return int(text) if text.isdigit() and len(text) <= 15 and text.isascii() else -1


def main() -> None:
    conf = json.loads(sys.stdin.readline())
    sys.stdin.close()
    server = Gateway(conf)
    print(server.server_address[1], flush=True)
    # nothing more is written: stdout and stderr are pipes no one reads once started
    null = os.open(os.devnull, os.O_WRONLY)
    os.dup2(null, 1)
    os.dup2(null, 2)
    server.serve_forever()


if __name__ == "__main__":
    main()
