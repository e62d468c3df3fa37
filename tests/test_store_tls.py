"""Issue 72.2: the plugin's stores over TLS, as real endpoints are - a CA made for each
proxy, its key 0600 and never on a command line, each backend told to trust it the way its
daemon reads trust, on by default for S3 (whose every built-in daemon was checked to refuse
the proxy's certificate without it). The daemons themselves: tests/test_tls_live.py."""

from __future__ import annotations

import ipaddress
import os
import stat

import pytest
from cryptography import x509
from cryptography.exceptions import InvalidSignature

from pytest_fsperf.errors import UsageError
from pytest_fsperf.mounts.builtin import BUILTIN
from pytest_fsperf.mounts.spec import Backend, render
from pytest_fsperf.plan.conditions import StoreConditions
from pytest_fsperf.store import tls
from pytest_fsperf.stores import with_tls

TIER = "unit"


def pem(path: str) -> x509.Certificate:
    with open(path, "rb") as f:
        return x509.load_pem_x509_certificate(f.read())


def test_a_proxys_certificate_is_signed_by_a_ca_of_its_own_and_its_key_is_private(tmp_path):
    private = tmp_path / "proxy"
    private.mkdir(mode=0o700)
    made = tls.make(str(private))
    ca, cert = pem(made.ca), pem(made.cert)
    cert.verify_directly_issued_by(ca)  # raises where it is not
    names = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert ipaddress.ip_address("127.0.0.1") in names.get_values_for_type(x509.IPAddress)
    assert ca.extensions.get_extension_for_class(x509.BasicConstraints).value.ca
    assert stat.S_IMODE(os.stat(made.key).st_mode) == 0o600
    assert sorted(os.listdir(private)) == ["ca.pem", "cert.pem", "key.pem"]  # no CA key kept
    again = tls.make(str(tmp_path))  # another proxy: another CA, which does not sign the first
    with pytest.raises(InvalidSignature):
        cert.verify_directly_issued_by(pem(again.ca))
    with pytest.raises(FileExistsError):  # never written through what is already there
        tls.make(str(private))


def test_a_certificate_names_an_address_as_an_address_and_a_name_as_a_name(tmp_path):
    """A client checks an address against the certificate's IP names only (a test cluster's
    apiserver is reached at its node's address), a host name against its DNS names."""
    private = tmp_path / "server"
    private.mkdir(mode=0o700)
    names = pem(tls.make(str(private), hosts=("10.213.1.2", "kubernetes.default")).cert).extensions \
        .get_extension_for_class(x509.SubjectAlternativeName).value
    assert ipaddress.ip_address("10.213.1.2") in names.get_values_for_type(x509.IPAddress)
    assert "kubernetes.default" in names.get_values_for_type(x509.DNSName)
    assert "10.213.1.2" not in names.get_values_for_type(x509.DNSName)


def test_tls_is_on_for_s3_azure_and_gcs_by_default_and_as_the_setting_or_the_marker_says():
    bare = StoreConditions()
    assert with_tls(bare, "s3", None).tls is True
    assert with_tls(bare, "oss", None).tls is False  # ossfs reaches its gateway by http_proxy
    assert with_tls(bare, "s3", False).tls is False
    assert with_tls(StoreConditions(tls=False), "s3", None).tls is False  # the marker's word
    assert with_tls(bare, "azure", None).tls is True and with_tls(bare, "gcs", None).tls is True
    assert with_tls(bare, "gcs", False).tls is False
    assert not with_tls(bare, "s3", None).bare  # through the proxy, which speaks TLS
    assert "over TLS" in with_tls(bare, "s3", None).describe()
    with pytest.raises(UsageError, match="tls='yes' must be True, False or None"):
        StoreConditions(tls="yes").checked("marker store=")  # type: ignore[arg-type]


def test_each_backend_is_told_to_trust_the_ca_its_way_and_one_that_cannot_says_so():
    config = {"endpoint": "https://127.0.0.1:9", "bucket": "bkt", "access_key": "AKEXAMPLE0001",
              "secret_key": "sEcReT-vAlUe-0001", "ca_file": "/run/ca.pem"}
    got = {b.name: render(b, config, (), "/m", "/p").env for b in BUILTIN
           if b.name in ("s3fs", "rclone", "goofys", "juicefs", "mountpoint-s3")}
    assert got["s3fs"]["CURL_CA_BUNDLE"] == "/run/ca.pem"
    for name in ("rclone", "goofys", "juicefs", "mountpoint-s3"):
        assert got[name]["SSL_CERT_FILE"] == "/run/ca.pem", name
    mine = Backend(name="myfs", binary="myfs", install="-", store="s3",
                   command=("myfs", "{endpoint}", "{mountpoint}"))
    with pytest.raises(UsageError, match=r"^backend 'myfs': its store is over TLS .* names no "
                                         r"variable its daemon reads a CA file from"):
        render(mine, config, (), "/m", "/p")
