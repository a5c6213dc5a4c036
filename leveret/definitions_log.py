"""Field tables as tagged JSON, and the journal in which nodes kept their definitions before.

Nodes of earlier versions that ran alone wrote each durable definition as one JSON line of
definitions.log; the replicated store holds them now, and a node imports such a journal once
(leveret.clustering.journal_import). Field-table arguments are stored as tagged JSON in both.
"""

from __future__ import annotations

import base64
import datetime
import json
import logging
from decimal import Decimal
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

Record = dict[str, Any]


def _encode_value(value: Any) -> Any:
    """Field-table values in JSON, tagged where JSON has no such type."""
    if isinstance(value, (bytes, bytearray, memoryview)):
        return {"$bytes": base64.b64encode(bytes(value)).decode("ascii")}
    if isinstance(value, Decimal):
        return {"$decimal": str(value)}
    if isinstance(value, datetime.datetime):
        return {"$timestamp": int(value.timestamp())}
    if isinstance(value, dict):
        return {"$table": {key: _encode_value(item) for key, item in value.items()}}
    if isinstance(value, (list, tuple)):
        return [_encode_value(item) for item in value]
    return value


def _decode_value(value: Any) -> Any:
    if isinstance(value, dict):
        if "$bytes" in value:
            return base64.b64decode(value["$bytes"])
        if "$decimal" in value:
            return Decimal(value["$decimal"])
        if "$timestamp" in value:
            return datetime.datetime.fromtimestamp(value["$timestamp"], datetime.UTC)
        if "$table" in value:
            return {key: _decode_value(item) for key, item in value["$table"].items()}
    if isinstance(value, list):
        return [_decode_value(item) for item in value]
    return value


def encode_arguments(arguments: dict[str, Any]) -> dict[str, Any]:
    return {key: _encode_value(value) for key, value in arguments.items()}


def decode_arguments(arguments: dict[str, Any]) -> dict[str, Any]:
    return {key: _decode_value(value) for key, value in arguments.items()}


def _key(record: Record) -> tuple[Any, ...]:
    """What a record defines: a later record with the same key replaces or deletes it."""
    kind = record["kind"]
    if kind == "vhost":
        return (kind, record["name"])
    if kind == "user":
        return (kind, record["name"])
    if kind == "permission":
        return (kind, record["user"], record["vhost"])
    if kind == "registry":
        return (kind, record["vhost"])
    if kind in ("exchange", "queue"):
        return (kind, record["vhost"], record["name"])
    if kind == "binding":
        arguments = json.dumps(record["arguments"], sort_keys=True)
        return (
            kind,
            record["vhost"],
            record["source"],
            record["destination"],
            record["destination_kind"],
            record["routing_key"],
            arguments,
        )
    raise ValueError(f"unknown definition kind {kind!r}")


class DefinitionsLog:
    """The definitions journal an earlier version left in a data directory (read only)."""

    def __init__(self, directory: Path) -> None:
        self.path = directory / "definitions.log"

    def load(self) -> list[Record]:
        """The live definitions, in the order they were made; a torn last line is ignored."""
        live: dict[tuple[Any, ...], Record] = {}
        if self.path.exists():
            with open(self.path, "rb") as handle:
                for number, line in enumerate(handle, 1):
                    try:
                        entry = json.loads(line)
                    except ValueError:
                        log.warning("definitions log: ignoring damaged line %d", number)
                        continue
                    key = _key(entry["record"])
                    if entry["op"] == "put":
                        # A redefinition moves to the end, after its dependencies.
                        live.pop(key, None)
                        live[key] = entry["record"]
                    else:
                        live.pop(key, None)
        return list(live.values())
