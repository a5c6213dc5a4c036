"""Certificate authorities and certificates made on the fly for TLS tests (PEM files)."""

from __future__ import annotations

import datetime
import ipaddress
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID


@dataclass(frozen=True)
class Issued:
    """A certificate and its key, written as PEM files."""

    certfile: str
    keyfile: str
    certificate: x509.Certificate

    @property
    def serial(self) -> int:
        return self.certificate.serial_number


def _name(common_name: str, organisation: str | None, unit: str | None) -> x509.Name:
    parts = []
    if organisation:
        parts.append(x509.NameAttribute(NameOID.ORGANIZATION_NAME, organisation))
    if unit:
        parts.append(x509.NameAttribute(NameOID.ORGANIZATIONAL_UNIT_NAME, unit))
    parts.append(x509.NameAttribute(NameOID.COMMON_NAME, common_name))
    return x509.Name(parts)


def _write_key(key: ec.EllipticCurvePrivateKey, path: Path) -> None:
    path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )


class Authority:
    """A CA whose certificate is `certfile`; it signs servers' and clients' certificates."""

    def __init__(self, directory: Path, name: str = "Leveret Test CA") -> None:
        self.directory = directory
        directory.mkdir(parents=True, exist_ok=True)
        self.key = ec.generate_private_key(ec.SECP256R1())
        subject = _name(name, "Leveret Tests", None)
        now = datetime.datetime.now(datetime.UTC)
        self.certificate = (
            x509.CertificateBuilder()
            .subject_name(subject)
            .issuer_name(subject)
            .public_key(self.key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(days=1))
            .not_valid_after(now + datetime.timedelta(days=30))
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .add_extension(
                x509.KeyUsage(
                    digital_signature=True,
                    content_commitment=False,
                    key_encipherment=False,
                    data_encipherment=False,
                    key_agreement=False,
                    key_cert_sign=True,
                    crl_sign=True,
                    encipher_only=False,
                    decipher_only=False,
                ),
                critical=True,
            )
            .sign(self.key, hashes.SHA256())
        )
        self.certfile = str(directory / f"{name.replace(' ', '_')}.pem")
        Path(self.certfile).write_bytes(self.certificate.public_bytes(serialization.Encoding.PEM))

    def issue(
        self,
        file_stem: str,
        common_name: str,
        *,
        hosts: tuple[str, ...] = (),
        organisation: str | None = "Leveret Tests",
        unit: str | None = None,
        expired: bool = False,
        client: bool = False,
    ) -> Issued:
        """A certificate for `common_name` (server names in `hosts`); `expired` ended yesterday."""
        key = ec.generate_private_key(ec.SECP256R1())
        now = datetime.datetime.now(datetime.UTC)
        if expired:
            start, end = now - datetime.timedelta(days=10), now - datetime.timedelta(days=1)
        else:
            start, end = now - datetime.timedelta(minutes=5), now + datetime.timedelta(days=10)
        builder = (
            x509.CertificateBuilder()
            .subject_name(_name(common_name, organisation, unit))
            .issuer_name(self.certificate.subject)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(start)
            .not_valid_after(end)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(
                x509.ExtendedKeyUsage(
                    [ExtendedKeyUsageOID.CLIENT_AUTH]
                    if client
                    else [ExtendedKeyUsageOID.SERVER_AUTH, ExtendedKeyUsageOID.CLIENT_AUTH]
                ),
                critical=False,
            )
        )
        if hosts:
            names: list[x509.GeneralName] = []
            for host in hosts:
                try:
                    names.append(x509.IPAddress(ipaddress.ip_address(host)))
                except ValueError:
                    names.append(x509.DNSName(host))
            builder = builder.add_extension(x509.SubjectAlternativeName(names), critical=False)
        certificate = builder.sign(self.key, hashes.SHA256())
        certfile = self.directory / f"{file_stem}.crt"
        keyfile = self.directory / f"{file_stem}.key"
        _write_key(key, keyfile)
        certfile.write_bytes(certificate.public_bytes(serialization.Encoding.PEM))
        return Issued(str(certfile), str(keyfile), certificate)

    def server(self, file_stem: str = "server", *, expired: bool = False) -> Issued:
        """A server certificate for 127.0.0.1 and localhost."""
        return self.issue(file_stem, "localhost", hosts=("127.0.0.1", "localhost"), expired=expired)
