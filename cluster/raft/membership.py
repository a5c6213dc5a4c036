"""Membership changes: how a CONF entry encodes the voter set it brings into effect."""

from __future__ import annotations

import json
from dataclasses import dataclass
from enum import StrEnum


class ConfOp(StrEnum):
    """The kind of single-server membership change a CONF entry records."""

    # The identical first entry of every node of a brand-new cluster.
    BOOTSTRAP = "bootstrap"
    ADD = "add"
    REMOVE = "remove"


@dataclass(frozen=True, slots=True)
class ConfChange:
    """One membership change and the complete voter set that results from it."""

    op: ConfOp
    node: str | None
    voters: tuple[str, ...]


def encode_conf_change(change: ConfChange) -> bytes:
    """The CONF entry payload for `change` (JSON, so any node or tool can read it)."""
    body = {"op": change.op.value, "node": change.node, "voters": list(change.voters)}
    return json.dumps(body, sort_keys=True, separators=(",", ":")).encode()


def decode_conf_change(data: bytes) -> ConfChange:
    """The change a CONF entry payload records."""
    body = json.loads(data)
    return ConfChange(ConfOp(body["op"]), body["node"], tuple(body["voters"]))


def quorum_size(voter_count: int) -> int:
    """How many voters make a majority."""
    return voter_count // 2 + 1
