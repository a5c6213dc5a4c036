"""The replicated metadata tables, as plain JSON-able records keyed by their identity."""

from __future__ import annotations

import json
from dataclasses import dataclass, field, fields
from typing import Any

Record = dict[str, Any]

# Which record fields make up each table's key, in order.
KEY_FIELDS: dict[str, tuple[str, ...]] = {
    "vhosts": ("name",),
    "users": ("name",),
    "permissions": ("user", "vhost"),
    "exchanges": ("vhost", "name"),
    "bindings": ("vhost", "source", "destination_type", "destination", "routing_key", "args_key"),
    "queues": ("vhost", "name"),
    "policies": ("vhost", "name"),
    "operator_policies": ("vhost", "name"),
    "parameters": ("component", "vhost", "name"),
    "global_parameters": ("name",),
    "members": ("name",),
}


@dataclass
class Tables:
    """Every table of the metadata store; keys are tuples of the record's key fields."""

    vhosts: dict[tuple[str, ...], Record] = field(default_factory=dict)
    users: dict[tuple[str, ...], Record] = field(default_factory=dict)
    permissions: dict[tuple[str, ...], Record] = field(default_factory=dict)
    exchanges: dict[tuple[str, ...], Record] = field(default_factory=dict)
    bindings: dict[tuple[str, ...], Record] = field(default_factory=dict)
    queues: dict[tuple[str, ...], Record] = field(default_factory=dict)
    policies: dict[tuple[str, ...], Record] = field(default_factory=dict)
    operator_policies: dict[tuple[str, ...], Record] = field(default_factory=dict)
    parameters: dict[tuple[str, ...], Record] = field(default_factory=dict)
    global_parameters: dict[tuple[str, ...], Record] = field(default_factory=dict)
    members: dict[tuple[str, ...], Record] = field(default_factory=dict)

    def put(self, table: str, record: Record) -> None:
        """Insert or replace `record` in `table`."""
        getattr(self, table)[key_of(table, record)] = record

    def to_json(self) -> bytes:
        """The whole store as canonical JSON (each table a list of records in key order)."""
        body = {
            spec.name: [getattr(self, spec.name)[key] for key in sorted(getattr(self, spec.name))]
            for spec in fields(self)
        }
        return json.dumps(body, sort_keys=True, separators=(",", ":")).encode()

    @classmethod
    def from_json(cls, data: bytes) -> Tables:
        """The store that `to_json` wrote."""
        body = json.loads(data)
        tables = cls()
        for spec in fields(tables):
            for record in body.get(spec.name, []):
                tables.put(spec.name, record)
        return tables


def key_of(table: str, record: Record) -> tuple[str, ...]:
    """The key of `record` in `table`."""
    return tuple(record[name] for name in KEY_FIELDS[table])


def canonical(value: Any) -> str:
    """A canonical text form of a JSON value, for keys and comparisons."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"))
