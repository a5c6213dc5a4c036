"""What user and vhost bodies (PUT requests, definitions entries) ask for, validated."""

from __future__ import annotations

import base64
import binascii
from dataclasses import dataclass
from typing import Any

from .errors import ApiError, bad_request

HASHING_ALGORITHM = "rabbit_password_hashing_sha256"


def parse_tags(value: Any) -> list[str]:
    """Tags as RabbitMQ takes them: a comma-separated string or a list."""
    if value is None:
        return []
    if isinstance(value, str):
        return [tag.strip() for tag in value.split(",") if tag.strip()]
    if isinstance(value, list) and all(isinstance(tag, str) for tag in value):
        return [tag.strip() for tag in value if tag.strip()]
    raise bad_request(f"invalid tags {value!r}")


@dataclass(frozen=True, slots=True)
class VhostChange:
    """What a vhost's PUT body asks for, validated; None where the body leaves a field alone."""

    description: str | None
    tags: list[str] | None
    tracing: bool | None
    default_queue_type: str | None


def checked_vhost(body: dict[str, Any]) -> VhostChange:
    default_queue_type = body.get("default_queue_type")
    return VhostChange(
        str(body["description"]) if "description" in body else None,
        parse_tags(body["tags"]) if "tags" in body else None,
        body["tracing"] is True if "tracing" in body else None,
        default_queue_type if isinstance(default_queue_type, str) else None,
    )


@dataclass(frozen=True, slots=True)
class UserChange:
    """What a user's PUT body (or definitions entry) asks for, validated."""

    tags: list[str]
    password: str | None
    password_hash: str | None


def checked_user(body: dict[str, Any]) -> UserChange:
    """The change a user's PUT body asks for, or the 400 RabbitMQ answers."""
    if "tags" not in body:
        raise bad_request("tags_not_present")
    password = body.get("password")
    password_hash = body.get("password_hash")
    if password is not None and password_hash is not None:
        raise bad_request("both_password_and_password_hash_are_provided")
    if password_hash is not None:
        if not isinstance(password_hash, str):
            raise bad_request("password_hash should be a string")
        if password_hash:
            try:
                base64.b64decode(password_hash, validate=True)
            except (binascii.Error, ValueError):
                raise ApiError(400, "bad_request", ["not_base64", password_hash]) from None
    if password is not None and not isinstance(password, str):
        raise bad_request("password should be a string")
    algorithm = body.get("hashing_algorithm", HASHING_ALGORITHM)
    if password_hash and algorithm != HASHING_ALGORITHM:
        raise bad_request(f"unsupported hashing algorithm {algorithm}")
    return UserChange(parse_tags(body["tags"]), password, password_hash)
