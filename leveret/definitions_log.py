"""Durable definitions (vhosts, users, permissions, exchanges, queues, bindings) as a journal.

Each change is one JSON line, written and fsynced before the client hears it succeeded, as
RabbitMQ commits a durable declaration before declare-ok. At boot the journal is replayed into
a snapshot and rewritten compacted.
"""

from __future__ import annotations

import base64
import datetime
import json
import logging
import os
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
    """The node's durable definitions: replayed at boot, appended to on each change."""

    def __init__(self, directory: Path) -> None:
        self.path = directory / "definitions.log"
        self._file: Any = None

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

    def compact(self, records: list[Record]) -> None:
        """Rewrite the journal as just the live definitions (atomically), then open it for
        appends."""
        tmp = self.path.with_suffix(".tmp")
        with open(tmp, "w", encoding="utf-8") as handle:
            handle.writelines(
                json.dumps({"op": "put", "record": record}) + "\n" for record in records
            )
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, self.path)
        _fsync_directory(self.path.parent)
        # Kept open for appends; `close` releases it.
        self._file = open(self.path, "a", encoding="utf-8")  # noqa: SIM115

    def put(self, record: Record) -> None:
        self._append({"op": "put", "record": record})

    def delete(self, record: Record) -> None:
        self._append({"op": "delete", "record": record})

    def _append(self, entry: Record) -> None:
        if self._file is None:
            return  # not opened: a node without durable definitions (tests of the pure model)
        self._file.write(json.dumps(entry) + "\n")
        self._file.flush()
        os.fsync(self._file.fileno())

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None


def _fsync_directory(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
