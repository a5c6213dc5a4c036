"""The replicated metadata tables: typed records keyed by their identity, and their JSON."""

from __future__ import annotations

import json
from dataclasses import dataclass, field, fields
from typing import Any

from proto.metadata_schema import (
    BindingRecord,
    ExchangeRecord,
    GlobalParameterRecord,
    MemberRecord,
    ParameterRecord,
    PermissionRecord,
    PolicyRecord,
    QueueRecord,
    Record,
    UserRecord,
    VhostRecord,
    canonical,
    record_from_json,
    record_json,
)

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

# The record type each table holds.
RECORD_TYPES: dict[str, type[Record]] = {
    "vhosts": VhostRecord,
    "users": UserRecord,
    "permissions": PermissionRecord,
    "exchanges": ExchangeRecord,
    "bindings": BindingRecord,
    "queues": QueueRecord,
    "policies": PolicyRecord,
    "operator_policies": PolicyRecord,
    "parameters": ParameterRecord,
    "global_parameters": GlobalParameterRecord,
    "members": MemberRecord,
}

Key = tuple[str, ...]


@dataclass
class Tables:
    """Every table of the metadata store; keys are tuples of the record's key fields."""

    vhosts: dict[Key, VhostRecord] = field(default_factory=dict)
    users: dict[Key, UserRecord] = field(default_factory=dict)
    permissions: dict[Key, PermissionRecord] = field(default_factory=dict)
    exchanges: dict[Key, ExchangeRecord] = field(default_factory=dict)
    bindings: dict[Key, BindingRecord] = field(default_factory=dict)
    queues: dict[Key, QueueRecord] = field(default_factory=dict)
    policies: dict[Key, PolicyRecord] = field(default_factory=dict)
    operator_policies: dict[Key, PolicyRecord] = field(default_factory=dict)
    parameters: dict[Key, ParameterRecord] = field(default_factory=dict)
    global_parameters: dict[Key, GlobalParameterRecord] = field(default_factory=dict)
    members: dict[Key, MemberRecord] = field(default_factory=dict)

    def put(self, table: str, record: Record) -> None:
        """Insert or replace `record` in `table`."""
        getattr(self, table)[key_of(table, record)] = record

    def to_json(self) -> bytes:
        """The whole store as canonical JSON (each table a list of records in key order)."""
        body = {
            spec.name: [
                record_json(getattr(self, spec.name)[key])
                for key in sorted(getattr(self, spec.name))
            ]
            for spec in fields(self)
        }
        return canonical(body).encode()

    @classmethod
    def from_json(cls, data: bytes) -> Tables:
        """The store that `to_json` (of this version or an earlier one) wrote."""
        body: dict[str, Any] = json.loads(data)
        tables = cls()
        for spec in fields(tables):
            kind = RECORD_TYPES[spec.name]
            for record in body.get(spec.name, []):
                tables.put(spec.name, record_from_json(kind, record))
        return tables


def key_of(table: str, record: Record) -> Key:
    """The key of `record` in `table`."""
    return tuple(getattr(record, name) for name in KEY_FIELDS[table])
