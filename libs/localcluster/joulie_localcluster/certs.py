"""A throwaway PKI for a test control plane: CA, apiserver serving cert, admin client cert, SA keys."""

from __future__ import annotations

import datetime as dt
import ipaddress
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

_VALIDITY = dt.timedelta(days=2)


@dataclass(frozen=True)
class Pki:
    ca_crt: Path
    ca_key: Path
    server_crt: Path
    server_key: Path
    admin_crt: Path
    admin_key: Path
    sa_pub: Path
    sa_key: Path


def _key() -> ec.EllipticCurvePrivateKey:
    return ec.generate_private_key(ec.SECP256R1())


def _write_key(path: Path, key: ec.EllipticCurvePrivateKey) -> None:
    path.write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    path.chmod(0o600)


def _name(cn: str, org: str | None = None) -> x509.Name:
    attrs = [x509.NameAttribute(NameOID.COMMON_NAME, cn)]
    if org:
        attrs.append(x509.NameAttribute(NameOID.ORGANIZATION_NAME, org))
    return x509.Name(attrs)


def _cert(
    subject: x509.Name,
    key: ec.EllipticCurvePrivateKey,
    issuer: x509.Name,
    issuer_key: ec.EllipticCurvePrivateKey,
    *,
    ca: bool = False,
    usage: list[x509.ObjectIdentifier] | None = None,
    sans: list[x509.GeneralName] | None = None,
) -> x509.Certificate:
    now = dt.datetime.now(dt.UTC)
    b = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(issuer)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=5))
        .not_valid_after(now + _VALIDITY)
        .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True)
    )
    if usage:
        b = b.add_extension(x509.ExtendedKeyUsage(usage), critical=False)
    if sans:
        b = b.add_extension(x509.SubjectAlternativeName(sans), critical=False)
    if ca:
        b = b.add_extension(
            x509.KeyUsage(
                digital_signature=True, content_commitment=False, key_encipherment=False, data_encipherment=False,
                key_agreement=False, key_cert_sign=True, crl_sign=True, encipher_only=False, decipher_only=False,
            ),
            critical=True,
        )
    return b.sign(issuer_key, hashes.SHA256())


def make_pki(directory: Path) -> Pki:
    directory.mkdir(parents=True, exist_ok=True)
    ca_key = _key()
    ca_name = _name("joulie-test-ca")
    ca = _cert(ca_name, ca_key, ca_name, ca_key, ca=True)

    server_key = _key()
    server = _cert(
        _name("kube-apiserver"), server_key, ca_name, ca_key,
        usage=[ExtendedKeyUsageOID.SERVER_AUTH],
        sans=[
            x509.IPAddress(ipaddress.ip_address("127.0.0.1")),
            x509.DNSName("localhost"),
            x509.DNSName("kubernetes"),
            x509.DNSName("kubernetes.default.svc"),
        ],
    )
    admin_key = _key()
    admin = _cert(
        _name("joulie-test-admin", "system:masters"), admin_key, ca_name, ca_key,
        usage=[ExtendedKeyUsageOID.CLIENT_AUTH],
    )
    sa_key = _key()

    pki = Pki(
        ca_crt=directory / "ca.crt", ca_key=directory / "ca.key",
        server_crt=directory / "apiserver.crt", server_key=directory / "apiserver.key",
        admin_crt=directory / "admin.crt", admin_key=directory / "admin.key",
        sa_pub=directory / "sa.pub", sa_key=directory / "sa.key",
    )
    pem = serialization.Encoding.PEM
    pki.ca_crt.write_bytes(ca.public_bytes(pem))
    _write_key(pki.ca_key, ca_key)
    pki.server_crt.write_bytes(server.public_bytes(pem))
    _write_key(pki.server_key, server_key)
    pki.admin_crt.write_bytes(admin.public_bytes(pem))
    _write_key(pki.admin_key, admin_key)
    _write_key(pki.sa_key, sa_key)
    pki.sa_pub.write_bytes(
        sa_key.public_key().public_bytes(pem, serialization.PublicFormat.SubjectPublicKeyInfo)
    )
    return pki


TELEMETRY_CLIENTS = ("controller", "agent", "simulator", "collector", "harness")
"""The client certificates of the authenticated telemetry path: who reads (controller, harness) and who
pushes (agent, simulator, collector). One each, so a log or a revocation can tell them apart; Prometheus'
web config itself cannot (any certificate of the CA may push and read)."""


@dataclass(frozen=True)
class TelemetryPki:
    """A throwaway CA of its own (never the control plane's), Prometheus' serving certificate and one
    client certificate per ``TELEMETRY_CLIENTS`` name: ``<dir>/<name>.crt`` / ``<name>.key``."""

    directory: Path

    @property
    def ca_crt(self) -> Path:
        return self.directory / "ca.crt"

    @property
    def server_crt(self) -> Path:
        return self.directory / "prometheus.crt"

    @property
    def server_key(self) -> Path:
        return self.directory / "prometheus.key"

    def client(self, name: str) -> tuple[Path, Path]:
        """(certificate, key) of one of ``TELEMETRY_CLIENTS``."""
        if name not in TELEMETRY_CLIENTS:
            raise ValueError(f"no telemetry client certificate {name!r}; known: {', '.join(TELEMETRY_CLIENTS)}")
        return self.directory / f"{name}.crt", self.directory / f"{name}.key"

    def complete(self) -> bool:
        """Every file is there (an ``up`` that made it finished)."""
        files = [self.ca_crt, self.server_crt, self.server_key, *(p for n in TELEMETRY_CLIENTS for p in self.client(n))]
        return all(f.is_file() for f in files)


def make_telemetry_pki(directory: Path) -> TelemetryPki:
    """A fresh ``TelemetryPki`` in ``directory`` (the CA key is not kept: nothing is signed later)."""
    directory.mkdir(parents=True, exist_ok=True)
    pki = TelemetryPki(directory)
    pem = serialization.Encoding.PEM
    ca_key = _key()
    ca_name = _name("joulie-telemetry-ca")
    pki.ca_crt.write_bytes(_cert(ca_name, ca_key, ca_name, ca_key, ca=True).public_bytes(pem))
    server_key = _key()
    server = _cert(
        _name("prometheus"), server_key, ca_name, ca_key, usage=[ExtendedKeyUsageOID.SERVER_AUTH],
        sans=[x509.IPAddress(ipaddress.ip_address("127.0.0.1")), x509.DNSName("localhost")],
    )
    pki.server_crt.write_bytes(server.public_bytes(pem))
    _write_key(pki.server_key, server_key)
    for name in TELEMETRY_CLIENTS:
        crt, key_path = pki.client(name)
        key = _key()
        crt.write_bytes(
            _cert(_name(f"joulie-telemetry-{name}"), key, ca_name, ca_key,
                  usage=[ExtendedKeyUsageOID.CLIENT_AUTH]).public_bytes(pem)
        )
        _write_key(key_path, key)
    return pki
