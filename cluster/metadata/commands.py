"""How metadata commands travel through the Raft log: JSON objects, never pickle."""

from __future__ import annotations

import json
from typing import Any

Command = dict[str, Any]
Reply = dict[str, Any]
Effect = dict[str, Any]


class CommandError(Exception):
    """A command that cannot be applied as written; it becomes an error reply, never a crash."""


def encode_command(command: Command) -> bytes:
    """The canonical bytes of `command` (sorted keys, so equal commands are equal bytes)."""
    return json.dumps(command, sort_keys=True, separators=(",", ":")).encode()


def decode_command(data: bytes) -> Command:
    """The command in a log entry; raises CommandError when it is not a JSON object."""
    try:
        command = json.loads(data)
    except (ValueError, UnicodeDecodeError) as error:
        raise CommandError(f"not JSON: {error}") from error
    if not isinstance(command, dict):
        raise CommandError("a command must be a JSON object")
    return command


def field(command: Command, name: str, kind: type | tuple[type, ...], default: Any = ...) -> Any:
    """`command[name]`, checked to be of `kind`; `default` when absent (if one is given)."""
    if name not in command or (command[name] is None and default is not ...):
        if default is ...:
            raise CommandError(f"missing field {name!r}")
        return default
    value = command[name]
    if isinstance(value, bool) and bool not in _as_tuple(kind):
        raise CommandError(f"field {name!r} must be {_names(kind)}")
    if not isinstance(value, kind):
        raise CommandError(f"field {name!r} must be {_names(kind)}")
    return value


def reply(status: str, **details: Any) -> Reply:
    """A reply with `status` and any details."""
    return {"status": status, **details}


def _as_tuple(kind: type | tuple[type, ...]) -> tuple[type, ...]:
    return kind if isinstance(kind, tuple) else (kind,)


def _names(kind: type | tuple[type, ...]) -> str:
    return " or ".join(k.__name__ for k in _as_tuple(kind))


def string_list(command: Command, name: str) -> list[str]:
    """`command[name]` as a sorted list of strings (absent means empty)."""
    values = field(command, name, list, [])
    if not all(isinstance(value, str) for value in values):
        raise CommandError(f"field {name!r} must be a list of strings")
    return sorted(values)
