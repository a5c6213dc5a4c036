"""Users, RabbitMQ-compatible password hashes, and the PLAIN, AMQPLAIN and EXTERNAL mechanisms."""

from __future__ import annotations

import base64
import hashlib
import hmac
import ipaddress
import logging
import os
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from .amqp.fields import DecodeError, decode_table

if TYPE_CHECKING:
    from .tls import TLSSettings
    from .tls_peer import TLSPeer

log = logging.getLogger(__name__)

MECHANISMS = ("PLAIN", "AMQPLAIN")
# EXTERNAL (the client certificate names the user) is offered on TLS connections only.
TLS_MECHANISMS = (*MECHANISMS, "EXTERNAL")


def hash_password(password: str, salt: bytes | None = None) -> str:
    """rabbit_password_hashing_sha256: base64(salt(4) + sha256(salt + password))."""
    salt = os.urandom(4) if salt is None else salt
    digest = hashlib.sha256(salt + password.encode("utf-8")).digest()
    return base64.b64encode(salt + digest).decode("ascii")


def check_password(password: str, password_hash: str) -> bool:
    try:
        raw = base64.b64decode(password_hash, validate=True)
    except ValueError:
        return False
    if len(raw) != 36:
        return False
    return hmac.compare_digest(hash_password(password, raw[:4]), password_hash)


@dataclass(slots=True)
class User:
    name: str
    password_hash: str
    tags: list[str] = field(default_factory=list)


class SaslError(Exception):
    """A malformed login response: RabbitMQ answers it with 502 SYNTAX_ERROR."""


def parse_response(mechanism: str, response: bytes) -> tuple[str, str]:
    """(username, password) from a start-ok response."""
    if mechanism == "PLAIN":
        parts = response.split(b"\x00")
        if len(parts) != 3:
            raise SaslError("Response is not a valid PLAIN response")
        return parts[1].decode("utf-8", "replace"), parts[2].decode("utf-8", "replace")
    if mechanism == "AMQPLAIN":
        # A field table without its length prefix.
        try:
            table, _ = decode_table(len(response).to_bytes(4, "big") + response, 0)
        except (DecodeError, IndexError, ValueError) as exc:
            raise SaslError("AMQPLAIN response is not a valid field table") from exc
        login, password = table.get("LOGIN"), table.get("PASSWORD")
        if not isinstance(login, (str, bytes)) or not isinstance(password, (str, bytes)):
            raise SaslError("AMQPLAIN response lacks LOGIN or PASSWORD")
        return _as_text(login), _as_text(password)
    raise SaslError(f"unsupported mechanism {mechanism}")


def external_login(
    peer: TLSPeer | None, login_from: str, settings: TLSSettings | None
) -> tuple[str, str | None]:
    """(username, None) from the client certificate, or ("", the reason for the log), with
    RabbitMQ's reasons (rabbit_auth_mechanism_ssl)."""
    if peer is None:
        return "", "not a TLS-enabled connection"
    if not peer.has_certificate:
        return "", "connection peer presented no TLS (x.509) certificate"
    if settings is None or settings.verify != "verify_peer":
        # An unchecked certificate proves nothing: as RabbitMQ, refuse to trust its name.
        log.warning(
            "TLS peer verification (authentication) is disabled, ssl_options.verify value used: %s",
            settings.verify if settings is not None else "verify_none",
        )
        return "", "TLS configuration is unsafe"
    if login_from == "common_name":
        if not peer.common_names:
            return "", "no name found"
        return ",".join(peer.common_names), None
    return peer.subject or "", None


def is_loopback(host: str) -> bool:
    try:
        return ipaddress.ip_address(host.split("%")[0]).is_loopback
    except ValueError:
        return host == "localhost"


def _as_text(value: str | bytes) -> str:
    return value if isinstance(value, str) else value.decode("utf-8", "replace")
