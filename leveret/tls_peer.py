"""What a TLS connection tells of its client: protocol, cipher, certificate names as RabbitMQ's."""

from __future__ import annotations

import functools
import ssl
import time
from dataclasses import dataclass
from typing import Any

# RabbitMQ's short names for subject attributes (rabbit_cert_info); others keep their dotted OID.
_SHORT_NAMES = {
    "surname": "SN",
    "givenName": "GIVENNAME",
    "initials": "INITIALS",
    "generationQualifier": "GENERATIONQUALIFIER",
    "commonName": "CN",
    "localityName": "L",
    "stateOrProvinceName": "ST",
    "organizationName": "O",
    "organizationalUnitName": "OU",
    "title": "TITLE",
    "countryName": "C",
    "serialNumber": "SERIALNUMBER",
    "pseudonym": "PSEUDONYM",
    "domainComponent": "DC",
    "emailAddress": "EMAILADDRESS",
    "streetAddress": "STREET",
    "userId": "UID",
}
_ESCAPED = frozenset('"+,;<>\\')

RDN = tuple[tuple[str, str], ...]


@dataclass(frozen=True, slots=True)
class TLSPeer:
    """The negotiated TLS parameters of one connection and its client's certificate, if any."""

    protocol: str  # RabbitMQ's spelling: tlsv1.3
    cipher: str  # aes_256_gcm
    key_exchange: str  # ecdhe_rsa; "any" for TLS 1.3 suites
    hash: str  # sha384
    subject: str | None  # RabbitMQ's DN format: CN=alice,O=Example
    issuer: str | None
    validity: str | None  # "2026-01-01T00:00:00Z - 2027-01-01T00:00:00Z"
    common_names: tuple[str, ...]

    @property
    def has_certificate(self) -> bool:
        return self.subject is not None


def describe(ssl_object: ssl.SSLObject | ssl.SSLSocket) -> TLSPeer:
    """The TLSPeer of a connection whose handshake is complete."""
    name, version, _bits = ssl_object.cipher() or ("", "", 0)
    cipher, key_exchange, digest = _cipher_parts(name)
    certificate: dict[str, Any] = ssl_object.getpeercert() or {}
    subject: tuple[RDN, ...] | None = certificate.get("subject")
    issuer: tuple[RDN, ...] | None = certificate.get("issuer")
    validity = None
    if "notBefore" in certificate and "notAfter" in certificate:
        validity = f"{_iso(certificate['notBefore'])} - {_iso(certificate['notAfter'])}"
    return TLSPeer(
        protocol=(version or "").lower(),
        cipher=cipher,
        key_exchange=key_exchange,
        hash=digest,
        subject=distinguished_name(subject) if subject else None,
        issuer=distinguished_name(issuer) if issuer else None,
        validity=validity,
        common_names=tuple(
            value for rdn in subject or () for key, value in rdn if key == "commonName"
        ),
    )


def distinguished_name(rdns: tuple[RDN, ...]) -> str:
    """RabbitMQ's string for a subject or issuer: RFC 4514, the last RDN first, values escaped."""
    return ",".join(
        "+".join(f"{_SHORT_NAMES.get(key, key)}={_escape(value)}" for key, value in rdn)
        for rdn in reversed(rdns)
    )


def _escape(value: str) -> str:
    # As RabbitMQ: a leading space or '#', a trailing space and RFC 4514's specials get a
    # backslash; bytes outside printable ASCII become \XX of their UTF-8 encoding.
    out: list[str] = []
    data = value.encode("utf-8")
    for index, byte in enumerate(data):
        char = chr(byte)
        if (
            (index == 0 and char in " #")
            or (char == " " and index == len(data) - 1)
            or char in _ESCAPED
        ):
            out.append("\\" + char)
        elif byte < 32 or byte >= 126:
            out.append(f"\\{byte:02X}")
        else:
            out.append(char)
    return "".join(out)


def _iso(openssl_time: str) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(ssl.cert_time_to_seconds(openssl_time)))


@functools.cache
def _cipher_parts(name: str) -> tuple[str, str, str]:
    """(cipher, key exchange, hash) as RabbitMQ names them (Erlang's suite parts), from
    OpenSSL's suite name: aes_256_gcm, ecdhe_rsa ("any" for TLS 1.3), aead or the MAC."""
    suite = {suite["name"]: suite for suite in _all_ciphers()}.get(name)
    if suite is None:
        return name.lower(), "", ""
    symmetric = str(suite.get("symmetric") or "").replace("-", "_")
    kea = str(suite.get("kea") or "").removeprefix("kx-")
    auth = str(suite.get("auth") or "").removeprefix("auth-")
    # TLS 1.3's suites say "any"; a plain RSA key exchange is "rsa", not "rsa_rsa".
    joined = "_".join(part for part in (kea, auth) if part)
    key_exchange = kea if kea in ("any", auth) else joined
    if suite.get("aead"):
        digest = "aead"
    else:
        digest = {"sha1": "sha"}.get(str(suite.get("digest")), str(suite.get("digest") or ""))
    return symmetric, key_exchange, digest


def _all_ciphers() -> list[dict[str, Any]]:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.set_ciphers("ALL")
    return context.get_ciphers()  # type: ignore[return-value]
