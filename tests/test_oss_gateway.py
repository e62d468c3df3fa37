"""The OSS gateway's translation (unit), and live: ossfs2 and ossfs over it (test_peers_live.py)."""

from __future__ import annotations

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


def test_no_key_id_in_other_schemes():
    assert KEY_ID.match("AWS4-HMAC-SHA256 Credential=x/y") is None
    assert KEY_ID.match("") is None
