"""The replicated metadata store: a pure state machine applied from the Raft log."""

from cluster.metadata.state import HANDLERS, MetadataState
from proto.metadata_schema import CommandError, decode_command, encode_command

# The commands the store knows, by the name ("op") they carry in the log.
COMMANDS = tuple(sorted(kind.op for kind in HANDLERS if kind.op != "unreadable"))

__all__ = ["COMMANDS", "CommandError", "MetadataState", "decode_command", "encode_command"]
