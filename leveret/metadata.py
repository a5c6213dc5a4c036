"""The metadata store: every definition change is decided there, then applied to the model here.

A node never changes its definitions itself: it submits each change as a command to the store
(the cluster layer's Raft-replicated one; a lone node is a cluster of one), which applies
committed commands to every node's model, the submitting node's included, before the submit
returns.

Commands are the store's own vocabulary, the frozen dataclasses of proto.metadata_schema
(AddVhost, DeclareQueue, Bind, SetPolicy, ...): a node-to-node contract (they travel in the
Raft log) that the core, which makes them, and the cluster layer, which applies them, both
import, so that they agree on every field while neither imports the other. Replies are JSON
objects with a "status" ("created", "exists", "conflict", "deleted", "not_found", "in_use",
"locked", "ok", "updated", or "error" with a "reason").
"""

from __future__ import annotations

from collections.abc import Awaitable
from typing import Any, Protocol

from proto.metadata_schema import Command

Reply = dict[str, Any]


class MetadataUnavailable(Exception):
    """The store could not decide a change (no quorum, this node was removed, ...)."""


class MetadataStore(Protocol):
    """What the core needs from the metadata store."""

    @property
    def node_name(self) -> str:
        """This node's name: the home node of the queues its clients declare."""
        ...

    def running_nodes(self) -> dict[str, str]:
        """The nodes that can home a new queue now, each with the run it is in (this node's
        included): candidates for placement."""
        ...

    def submit(self, command: Command) -> Awaitable[Reply]:
        """Decide `command`; the reply arrives once this node's model reflects it.

        Raises MetadataUnavailable when the change cannot be decided now.
        """
        ...

    @property
    def applied_index(self) -> int:
        """How far this node's model has followed the store (an index comparable between
        nodes): what another node must have applied before acting on what this node sent."""
        ...

    def wait_applied(self, index: int) -> Awaitable[None]:
        """Resolves once this node's model has followed the store up to `index`."""
        ...

    @property
    def may_lag(self) -> bool:
        """Whether another node may have had a change decided that this node has not applied
        yet (false for a lone node, whose model is always current)."""
        ...

    def catch_up(self) -> Awaitable[None]:
        """Resolves once this node's model has every change decided before the call.

        Raises MetadataUnavailable when the store cannot tell now.
        """
        ...

    def submit_eventually(self, command: Command) -> None:
        """Submit `command` in the background, retrying until it is decided (for deletions the
        node itself starts: auto-delete, expiry, the end of an exclusive queue's connection)."""
        ...
