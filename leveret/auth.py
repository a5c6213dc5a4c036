"""Users, RabbitMQ-compatible password hashes, and the PLAIN and AMQPLAIN mechanisms."""

from __future__ import annotations

import base64
import hashlib
import hmac
import ipaddress
import os
from dataclasses import dataclass, field

from .amqp.fields import DecodeError, decode_table

MECHANISMS = ("PLAIN", "AMQPLAIN")


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


def is_loopback(host: str) -> bool:
    try:
        return ipaddress.ip_address(host.split("%")[0]).is_loopback
    except ValueError:
        return host == "localhost"


def _as_text(value: str | bytes) -> str:
    return value if isinstance(value, str) else value.decode("utf-8", "replace")
