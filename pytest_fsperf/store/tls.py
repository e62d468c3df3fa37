"""A certificate authority of the plugin's own, made for one store's proxy when the session's
stores speak TLS (--fsperf-store-tls=on): its certificate for the daemons to trust (a file
their backend names in the way that daemon reads trust), and the proxy's key and certificate
for 127.0.0.1 and localhost, signed by it. Keys are made here, written 0600 into the proxy's
private directory (never on a command line), and gone with it; the CA's own key is never
written at all: nothing else can be signed by it once the proxy has its certificate."""

from __future__ import annotations

import datetime
import ipaddress
import os
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from cryptography import x509

LIFETIME = datetime.timedelta(days=2)  # a session's; a certificate left behind soon expires


@dataclass(frozen=True)
class Certs:
    ca: str  # the CA's certificate: what a daemon is told to trust
    cert: str  # the proxy's certificate chain
    key: str  # the proxy's private key (0600)


def _write(path: str, data: bytes) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    with os.fdopen(fd, "wb") as f:
        f.write(data)


def _name(host: str) -> x509.GeneralName:
    """An address as an IP name (a client checks an address against those), else a DNS name."""
    from cryptography import x509

    try:
        return x509.IPAddress(ipaddress.ip_address(host))
    except ValueError:
        return x509.DNSName(host)


def make(directory: str, label: str = "pytest-fsperf", hosts: tuple[str, ...] = ()) -> Certs:
    """A fresh CA and a server certificate for 127.0.0.1 (and `hosts`: the names a daemon
    that reaches the proxy by CONNECT expects) in `directory` (the caller's private
    directory: made 0700 by it, never one another user can write)."""
    from cryptography import x509  # only where a store speaks TLS: not at the plugin's import
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    now = datetime.datetime.now(datetime.timezone.utc)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, f"{label} session CA")])
    ca = (x509.CertificateBuilder().subject_name(ca_name).issuer_name(ca_name)
          .public_key(ca_key.public_key()).serial_number(x509.random_serial_number())
          .not_valid_before(now - datetime.timedelta(minutes=5)).not_valid_after(now + LIFETIME)
          .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
          .add_extension(x509.KeyUsage(False, False, False, False, False, True, True, False, False),
                         critical=True)
          .sign(ca_key, hashes.SHA256()))
    key = ec.generate_private_key(ec.SECP256R1())
    names = [x509.IPAddress(ipaddress.ip_address("127.0.0.1")), x509.DNSName("localhost"),
             *(_name(h) for h in hosts)]
    cert = (x509.CertificateBuilder()
            .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")]))
            .issuer_name(ca_name).public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5)).not_valid_after(now + LIFETIME)
            .add_extension(x509.SubjectAlternativeName(names), critical=False)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
            .sign(ca_key, hashes.SHA256()))
    pem = serialization.Encoding.PEM
    out = Certs(os.path.join(directory, "ca.pem"), os.path.join(directory, "cert.pem"),
                os.path.join(directory, "key.pem"))
    _write(out.key, key.private_bytes(pem, serialization.PrivateFormat.PKCS8,
                                      serialization.NoEncryption()))
    _write(out.cert, cert.public_bytes(pem))
    _write(out.ca, ca.public_bytes(pem))
    os.chmod(out.ca, 0o644)  # a daemon of another user reads it: public
    return out


def preload() -> None:
    """Import what make() uses now (a host that keeps and restores sys.modules around runs,
    as pytester does, must have them loaded first)."""
    import cryptography.hazmat.primitives.asymmetric.ec
    import cryptography.hazmat.primitives.hashes
    import cryptography.hazmat.primitives.serialization
    import cryptography.x509
    import cryptography.x509.oid  # noqa: F401
