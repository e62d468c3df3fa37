"""Just enough of AWS Signature V4 to create and list buckets on a test server."""

from __future__ import annotations

import datetime
import hashlib
import hmac
import urllib.request
from urllib.parse import urlsplit

EMPTY_SHA256 = hashlib.sha256(b"").hexdigest()


def _hmac(key: bytes, text: str) -> bytes:
    return hmac.new(key, text.encode(), hashlib.sha256).digest()


def signed_request(method: str, url: str, access_key: str, secret_key: str,
                   region: str = "us-east-1", now: datetime.datetime | None = None,
                   payload: bytes = b"") -> urllib.request.Request:
    """A request with this body (empty unless given), signed for service s3 (path-style URL,
    no query)."""
    parts = urlsplit(url)
    now = now or datetime.datetime.now(datetime.timezone.utc)
    stamp = now.strftime("%Y%m%dT%H%M%SZ")
    day = stamp[:8]
    digest = hashlib.sha256(payload).hexdigest() if payload else EMPTY_SHA256
    headers = {"host": parts.netloc, "x-amz-content-sha256": digest, "x-amz-date": stamp}
    names = ";".join(sorted(headers))
    canonical = "\n".join([method, parts.path or "/", "",
                           *(f"{k}:{headers[k]}" for k in sorted(headers)), "", names, digest])
    scope = f"{day}/{region}/s3/aws4_request"
    to_sign = "\n".join(["AWS4-HMAC-SHA256", stamp, scope,
                         hashlib.sha256(canonical.encode()).hexdigest()])
    key = _hmac(_hmac(_hmac(_hmac(f"AWS4{secret_key}".encode(), day), region), "s3"), "aws4_request")
    signature = hmac.new(key, to_sign.encode(), hashlib.sha256).hexdigest()
    headers["authorization"] = (f"AWS4-HMAC-SHA256 Credential={access_key}/{scope}, "
                                f"SignedHeaders={names}, Signature={signature}")
    del headers["host"]
    return urllib.request.Request(url, method=method, headers=headers)
