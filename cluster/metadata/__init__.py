"""The replicated metadata store: a pure state machine applied from the Raft log."""

from cluster.metadata.commands import CommandError, decode_command, encode_command
from cluster.metadata.state import HANDLERS, MetadataState

COMMANDS = tuple(sorted(HANDLERS))

__all__ = ["COMMANDS", "CommandError", "MetadataState", "decode_command", "encode_command"]
