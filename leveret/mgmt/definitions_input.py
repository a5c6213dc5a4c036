"""Reading a definitions document for import: its JSON, its lists, and where each entry goes."""

from __future__ import annotations

import json
from typing import Any

from .account_bodies import parse_tags
from .context import Context
from .errors import ApiError, bad_request


def read_document(ctx: Context) -> dict[str, Any]:
    try:
        document = json.loads(ctx.request.body or b"{}")
    except (ValueError, UnicodeDecodeError):
        raise bad_request("failed_to_parse_json") from None
    if not isinstance(document, dict):
        raise bad_request("failed_to_parse_json")
    return document


def items(document: dict[str, Any], key: str) -> list[dict[str, Any]]:
    found = document.get(key) or []
    if not isinstance(found, list) or not all(isinstance(item, dict) for item in found):
        raise bad_request(f"{key} should be a list of objects")
    return found


def vhost_of(ctx: Context, item: dict[str, Any], forced: str | None) -> str:
    vhost = forced if forced is not None else str(item.get("vhost", "/"))
    if vhost not in ctx.broker.vhosts:
        raise ApiError(400, "bad_request", ["no_such_vhost", vhost])
    return vhost


def vhost_description_and_tags(entry: dict[str, Any]) -> tuple[str | None, list[str] | None]:
    """A vhost entry's description and tags, at its top level or under "metadata"."""
    nested = entry.get("metadata")
    nested = nested if isinstance(nested, dict) else {}
    description = entry.get("description", nested.get("description"))
    tags = entry.get("tags", nested.get("tags"))
    return (
        str(description) if description is not None else None,
        parse_tags(tags) if tags is not None else None,
    )


def key_missing(missing: KeyError) -> ApiError:
    """The answer to an entry that lacks a key the import needs."""
    return bad_request(f"[{{key_missing,{missing.args[0]}}}]")
