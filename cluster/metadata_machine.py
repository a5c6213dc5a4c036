"""Committed Raft entries applied to the metadata store, with their effects told to listeners."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from cluster.metadata import CommandError, MetadataState, decode_command
from cluster.raft import Entry, EntryKind, Snapshot, decode_conf_change
from proto.metadata_schema import Effect

log = logging.getLogger(__name__)

EffectListener = Callable[[list[Effect]], None]
# Called after a snapshot replaced the whole state.
ResetListener = Callable[[MetadataState], None]


class MetadataMachine:
    """The state machine the node loop applies the log to."""

    def __init__(self) -> None:
        self.state = MetadataState()
        self._effect_listeners: list[EffectListener] = []
        self._reset_listeners: list[ResetListener] = []

    def on_effects(self, listener: EffectListener) -> None:
        """Call `listener(effects)` after each command that had any."""
        self._effect_listeners.append(listener)

    def on_reset(self, listener: ResetListener) -> None:
        """Call `listener(state)` after the state was replaced from a snapshot."""
        self._reset_listeners.append(listener)

    def apply(self, entry: Entry) -> dict[str, Any] | None:
        """Apply one committed entry; the reply for whoever proposed it."""
        if entry.kind is EntryKind.NORMAL:
            try:
                command = decode_command(entry.data)
            except CommandError as error:
                return {"status": "error", "reason": str(error)}
            reply, effects = self.state.apply(command)
            if effects:
                for listener in self._effect_listeners:
                    listener(effects)
            return reply
        if entry.kind is EntryKind.CONF:
            change = decode_conf_change(entry.data)
            return {"status": "ok", "voters": list(change.voters)}
        return None

    def restore(self, snapshot: Snapshot) -> None:
        """Replace the whole state by the one `snapshot` holds."""
        self.state = MetadataState.restore(snapshot.data) if snapshot.data else MetadataState()
        for listener in self._reset_listeners:
            listener(self.state)

    def snapshot(self) -> bytes:
        """The whole state, for a Raft snapshot."""
        return self.state.snapshot()
