"""The metadata store's vocabulary as frozen dataclasses: commands, the effects they have, the
records they keep, and the JSON form commands take in the Raft log.

Commands cross the log boundary only through `encode_command` / `decode_command`. The JSON of a
command is what every earlier version wrote for it, byte for byte, so entries and snapshots
already on disk decode and apply as they did. A field left to the store's default is None in
the dataclass and absent from the JSON; decoding fills in the store's defaults everywhere else.
Dict-valued fields (arguments, definitions, values) are shared, not copied: treat them as
read-only once a command, effect or record holds them.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field, fields
from typing import Any, ClassVar, Literal, TypeAlias, TypeVar, get_args

# What a binding delivers to, by RabbitMQ's name for the field.
DestinationType = Literal["queue", "exchange"]


class CommandError(Exception):
    """A command that cannot be applied as written; it becomes an error reply, never a crash."""


# -- records: the rows of the replicated tables ------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class VhostRecord:
    name: str
    description: str = ""
    tags: tuple[str, ...] = ()
    default_queue_type: str = "classic"


@dataclass(frozen=True, slots=True, kw_only=True)
class UserRecord:
    name: str
    password_hash: str = ""
    hashing_algorithm: str = "rabbit_password_hashing_sha256"
    tags: tuple[str, ...] = ()
    # max-connections, max-channels (RabbitMQ keeps them in the user's record too).
    limits: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True, kw_only=True)
class PermissionRecord:
    user: str
    vhost: str
    configure: str
    write: str
    read: str


@dataclass(frozen=True, slots=True, kw_only=True)
class ExchangeRecord:
    vhost: str
    name: str
    type: str
    durable: bool = True
    auto_delete: bool = False
    internal: bool = False
    arguments: dict[str, Any] = field(default_factory=dict)
    # The AMQP type letters of the arguments, for exact equivalence checks on every node.
    argument_types: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True, kw_only=True)
class BindingRecord:
    vhost: str
    source: str
    destination_type: DestinationType
    destination: str
    routing_key: str = ""
    arguments: dict[str, Any] = field(default_factory=dict)
    # The arguments in canonical form: part of the key, since bindings differing only in
    # arguments are different bindings. Kept in snapshots, as every version wrote it.
    args_key: str = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "args_key", canonical(self.arguments))


@dataclass(frozen=True, slots=True, kw_only=True)
class QueueRecord:
    vhost: str
    name: str
    durable: bool = False
    auto_delete: bool = False
    exclusive_owner: str | None = None
    arguments: dict[str, Any] = field(default_factory=dict)
    argument_types: dict[str, Any] = field(default_factory=dict)
    home_node: str
    # Which run of the home node declared it: a non-durable queue ends with that run.
    home_run: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class PolicyRecord:
    vhost: str
    name: str
    pattern: str
    apply_to: str
    definition: dict[str, Any]
    priority: int


@dataclass(frozen=True, slots=True, kw_only=True)
class ParameterRecord:
    component: str
    vhost: str
    name: str
    value: Any


@dataclass(frozen=True, slots=True, kw_only=True)
class GlobalParameterRecord:
    name: str
    value: Any


@dataclass(frozen=True, slots=True, kw_only=True)
class MemberRecord:
    name: str
    address: str


Record: TypeAlias = (
    VhostRecord
    | UserRecord
    | PermissionRecord
    | ExchangeRecord
    | BindingRecord
    | QueueRecord
    | PolicyRecord
    | ParameterRecord
    | GlobalParameterRecord
    | MemberRecord
)
R = TypeVar("R", bound=Record)


def record_json(record: Record) -> dict[str, Any]:
    """`record` as a JSON object (the form snapshots and replies carry)."""
    body: dict[str, Any] = {}
    for name in _FIELD_NAMES[type(record)]:
        value = getattr(record, name)
        body[name] = list(value) if isinstance(value, tuple) else value  # tags
    return body


def record_from_json(kind: type[R], body: dict[str, Any]) -> R:
    """The record of type `kind` that `record_json` wrote (older forms lacking a field that has
    a default get the default)."""
    values: dict[str, Any] = {
        name: tuple(body[name]) if name == "tags" else body[name]
        for name in _INIT_NAMES[kind]
        if name in body
    }
    return kind(**values)


# -- effects: what a command changed, for the nodes to act on ------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class VhostAdded:
    vhost: str


@dataclass(frozen=True, slots=True, kw_only=True)
class VhostDeleted:
    vhost: str


@dataclass(frozen=True, slots=True, kw_only=True)
class UserChanged:
    user: str


@dataclass(frozen=True, slots=True, kw_only=True)
class UserDeleted:
    user: str


@dataclass(frozen=True, slots=True, kw_only=True)
class PermissionsChanged:
    user: str
    vhost: str


@dataclass(frozen=True, slots=True, kw_only=True)
class ExchangeCreated:
    vhost: str
    name: str


@dataclass(frozen=True, slots=True, kw_only=True)
class ExchangeDeleted:
    vhost: str
    name: str


@dataclass(frozen=True, slots=True, kw_only=True)
class QueueCreated:
    vhost: str
    name: str


@dataclass(frozen=True, slots=True, kw_only=True)
class QueueDeleted:
    vhost: str
    name: str


@dataclass(frozen=True, slots=True, kw_only=True)
class BindingCreated:
    binding: BindingRecord


@dataclass(frozen=True, slots=True, kw_only=True)
class BindingDeleted:
    binding: BindingRecord


@dataclass(frozen=True, slots=True, kw_only=True)
class PolicyChanged:
    vhost: str
    name: str


@dataclass(frozen=True, slots=True, kw_only=True)
class OperatorPolicyChanged:
    vhost: str
    name: str


@dataclass(frozen=True, slots=True, kw_only=True)
class ParameterChanged:
    component: str
    vhost: str
    name: str


@dataclass(frozen=True, slots=True, kw_only=True)
class GlobalParameterChanged:
    name: str


@dataclass(frozen=True, slots=True, kw_only=True)
class MemberAdded:
    name: str
    address: str


@dataclass(frozen=True, slots=True, kw_only=True)
class MemberRemoved:
    name: str


Effect: TypeAlias = (
    VhostAdded
    | VhostDeleted
    | UserChanged
    | UserDeleted
    | PermissionsChanged
    | ExchangeCreated
    | ExchangeDeleted
    | QueueCreated
    | QueueDeleted
    | BindingCreated
    | BindingDeleted
    | PolicyChanged
    | OperatorPolicyChanged
    | ParameterChanged
    | GlobalParameterChanged
    | MemberAdded
    | MemberRemoved
)


# -- commands ----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class AddVhost:
    op: ClassVar[str] = "add_vhost"
    name: str
    description: str | None = None
    tags: tuple[str, ...] | None = None
    default_queue_type: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class DeleteVhost:
    op: ClassVar[str] = "delete_vhost"
    name: str


@dataclass(frozen=True, slots=True, kw_only=True)
class PutUser:
    """Create or replace a user; the password arrives already hashed."""

    op: ClassVar[str] = "put_user"
    name: str
    password_hash: str = ""
    hashing_algorithm: str | None = None
    tags: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class DeleteUser:
    op: ClassVar[str] = "delete_user"
    name: str


@dataclass(frozen=True, slots=True, kw_only=True)
class SetUserLimits:
    """Set some of a user's limits, keeping the others (values are checked before)."""

    op: ClassVar[str] = "set_user_limits"
    name: str
    limits: dict[str, Any]


@dataclass(frozen=True, slots=True, kw_only=True)
class ClearUserLimit:
    """Remove one of a user's limits, or all of them when `limit` is "all"."""

    op: ClassVar[str] = "clear_user_limit"
    name: str
    limit: str


@dataclass(frozen=True, slots=True, kw_only=True)
class SetPermissions:
    op: ClassVar[str] = "set_permissions"
    user: str
    vhost: str
    configure: str
    write: str
    read: str


@dataclass(frozen=True, slots=True, kw_only=True)
class ClearPermissions:
    op: ClassVar[str] = "clear_permissions"
    user: str
    vhost: str


@dataclass(frozen=True, slots=True, kw_only=True)
class DeclareExchange:
    op: ClassVar[str] = "declare_exchange"
    vhost: str
    name: str
    type: str
    durable: bool = True
    auto_delete: bool = False
    internal: bool = False
    arguments: dict[str, Any] = field(default_factory=dict)
    argument_types: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True, kw_only=True)
class DeleteExchange:
    op: ClassVar[str] = "delete_exchange"
    vhost: str
    name: str
    if_unused: bool | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Bind:
    op: ClassVar[str] = "bind"
    vhost: str
    source: str
    destination_type: DestinationType = "queue"
    destination: str
    routing_key: str = ""
    arguments: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True, kw_only=True)
class Unbind:
    op: ClassVar[str] = "unbind"
    vhost: str
    source: str
    destination_type: DestinationType = "queue"
    destination: str
    routing_key: str = ""
    arguments: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True, kw_only=True)
class DeclareQueue:
    op: ClassVar[str] = "declare_queue"
    vhost: str
    name: str
    durable: bool = False
    auto_delete: bool = False
    # Always written, null when the queue is not exclusive, as every version wrote it.
    exclusive_owner: str | None
    arguments: dict[str, Any] = field(default_factory=dict)
    argument_types: dict[str, Any] = field(default_factory=dict)
    home_node: str
    home_run: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class DeleteQueue:
    op: ClassVar[str] = "delete_queue"
    vhost: str
    name: str
    # Must match an exclusive queue's owner.
    owner: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class SetPolicy:
    op: ClassVar[str] = "set_policy"
    vhost: str
    name: str
    pattern: str
    apply_to: str = "all"
    definition: dict[str, Any]
    priority: int = 0


@dataclass(frozen=True, slots=True, kw_only=True)
class SetOperatorPolicy:
    """Which keys an operator policy may set is checked before it is proposed."""

    op: ClassVar[str] = "set_operator_policy"
    vhost: str
    name: str
    pattern: str
    apply_to: str = "all"
    definition: dict[str, Any]
    priority: int = 0


@dataclass(frozen=True, slots=True, kw_only=True)
class ClearPolicy:
    op: ClassVar[str] = "clear_policy"
    vhost: str
    name: str


@dataclass(frozen=True, slots=True, kw_only=True)
class ClearOperatorPolicy:
    op: ClassVar[str] = "clear_operator_policy"
    vhost: str
    name: str


@dataclass(frozen=True, slots=True, kw_only=True)
class SetParameter:
    op: ClassVar[str] = "set_parameter"
    component: str
    vhost: str
    name: str
    value: Any


@dataclass(frozen=True, slots=True, kw_only=True)
class ClearParameter:
    op: ClassVar[str] = "clear_parameter"
    component: str
    vhost: str
    name: str


@dataclass(frozen=True, slots=True, kw_only=True)
class SetGlobalParameter:
    op: ClassVar[str] = "set_global_parameter"
    name: str
    value: Any


@dataclass(frozen=True, slots=True, kw_only=True)
class ClearGlobalParameter:
    op: ClassVar[str] = "clear_global_parameter"
    name: str


@dataclass(frozen=True, slots=True, kw_only=True)
class AddMember:
    """Record a node and its cluster address (Raft voting membership is changed separately)."""

    op: ClassVar[str] = "add_member"
    name: str
    address: str


@dataclass(frozen=True, slots=True, kw_only=True)
class RemoveMember:
    op: ClassVar[str] = "remove_member"
    name: str


@dataclass(frozen=True, slots=True, kw_only=True)
class Unreadable:
    """An item of a batch in the log that does not decode: it applies as an error, as it always
    did, without failing the rest of its batch."""

    op: ClassVar[str] = "unreadable"
    body: Any
    reason: str


@dataclass(frozen=True, slots=True, kw_only=True)
class Batch:
    """Several commands as one entry (a node's definitions when it starts sharing them)."""

    op: ClassVar[str] = "batch"
    commands: tuple[Command, ...]


Command: TypeAlias = (
    AddVhost
    | DeleteVhost
    | PutUser
    | DeleteUser
    | SetUserLimits
    | ClearUserLimit
    | SetPermissions
    | ClearPermissions
    | DeclareExchange
    | DeleteExchange
    | Bind
    | Unbind
    | DeclareQueue
    | DeleteQueue
    | SetPolicy
    | SetOperatorPolicy
    | ClearPolicy
    | ClearOperatorPolicy
    | SetParameter
    | ClearParameter
    | SetGlobalParameter
    | ClearGlobalParameter
    | AddMember
    | RemoveMember
    | Batch
    | Unreadable
)


# -- the log boundary --------------------------------------------------------------------------


def encode_command(command: Command) -> bytes:
    """The canonical bytes of `command` (sorted keys, so equal commands are equal bytes)."""
    return canonical(command_json(command)).encode()


def command_json(command: Command) -> Any:
    """`command` as the JSON object the log holds."""
    if isinstance(command, Batch):
        return {"op": "batch", "commands": [command_json(item) for item in command.commands]}
    if isinstance(command, Unreadable):
        return command.body
    body: dict[str, Any] = {"op": command.op}
    for name, left_out_when_none in _LAYOUT[type(command)]:
        value = getattr(command, name)
        if value is None and left_out_when_none:
            continue
        body[name] = value
    return body


def decode_command(data: bytes) -> Command:
    """The command in a log entry; raises CommandError when it is not one."""
    try:
        body = json.loads(data)
    except (ValueError, UnicodeDecodeError) as error:
        raise CommandError(f"not JSON: {error}") from error
    return command_from_json(body)


def command_from_json(body: Any) -> Command:
    """The command a JSON object describes, checked field by field; raises CommandError."""
    if not isinstance(body, dict):
        raise CommandError("a command must be a JSON object")
    op = body.get("op")
    decoder = _DECODERS.get(op) if isinstance(op, str) else None
    if decoder is None:
        raise CommandError(f"unknown command {op!r}")
    return decoder(body)


def canonical(value: Any) -> str:
    """A canonical text form of a JSON value, for keys, comparisons and the log."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


_MISSING: Any = object()


def _field(
    body: dict[str, Any], name: str, kind: type | tuple[type, ...], default: Any = _MISSING
) -> Any:
    """`body[name]`, checked to be of `kind`; `default` when absent or null (if one is given)."""
    if name not in body or (body[name] is None and default is not _MISSING):
        if default is _MISSING:
            raise CommandError(f"missing field {name!r}")
        return default
    value = body[name]
    kinds = kind if isinstance(kind, tuple) else (kind,)
    if (isinstance(value, bool) and bool not in kinds) or not isinstance(value, kind):
        raise CommandError(f"field {name!r} must be {' or '.join(k.__name__ for k in kinds)}")
    return value


def _strings(body: dict[str, Any], name: str) -> tuple[str, ...] | None:
    values = _field(body, name, list, None)
    if values is None:
        return None
    if not all(isinstance(value, str) for value in values):
        raise CommandError(f"field {name!r} must be a list of strings")
    return tuple(values)


def _add_vhost(body: dict[str, Any]) -> AddVhost:
    return AddVhost(
        name=_field(body, "name", str),
        description=_field(body, "description", str, None),
        tags=_strings(body, "tags"),
        default_queue_type=_field(body, "default_queue_type", str, None),
    )


def _put_user(body: dict[str, Any]) -> PutUser:
    return PutUser(
        name=_field(body, "name", str),
        password_hash=_field(body, "password_hash", str, ""),
        hashing_algorithm=_field(body, "hashing_algorithm", str, None),
        tags=_strings(body, "tags") or (),
    )


def _set_permissions(body: dict[str, Any]) -> SetPermissions:
    return SetPermissions(
        user=_field(body, "user", str),
        vhost=_field(body, "vhost", str),
        configure=_field(body, "configure", str),
        write=_field(body, "write", str),
        read=_field(body, "read", str),
    )


def _declare_exchange(body: dict[str, Any]) -> DeclareExchange:
    return DeclareExchange(
        vhost=_field(body, "vhost", str),
        name=_field(body, "name", str),
        type=_field(body, "type", str),
        durable=_field(body, "durable", bool, True),
        auto_delete=_field(body, "auto_delete", bool, False),
        internal=_field(body, "internal", bool, False),
        arguments=_field(body, "arguments", dict, {}),
        argument_types=_field(body, "argument_types", dict, {}),
    )


def _binding_command(kind: type[Bind] | type[Unbind]) -> Callable[[dict[str, Any]], Command]:
    def decode(body: dict[str, Any]) -> Command:
        destination_type = _field(body, "destination_type", str, "queue")
        if destination_type not in ("queue", "exchange"):
            raise CommandError("destination_type must be 'queue' or 'exchange'")
        arguments = _field(body, "arguments", dict, {})
        return kind(
            vhost=_field(body, "vhost", str),
            source=_field(body, "source", str),
            destination_type=destination_type,
            destination=_field(body, "destination", str),
            routing_key=_field(body, "routing_key", str, ""),
            arguments=arguments,
        )

    return decode


def _declare_queue(body: dict[str, Any]) -> DeclareQueue:
    return DeclareQueue(
        vhost=_field(body, "vhost", str),
        name=_field(body, "name", str),
        durable=_field(body, "durable", bool, False),
        auto_delete=_field(body, "auto_delete", bool, False),
        exclusive_owner=_field(body, "exclusive_owner", str, None),
        arguments=_field(body, "arguments", dict, {}),
        argument_types=_field(body, "argument_types", dict, {}),
        home_node=_field(body, "home_node", str),
        home_run=_field(body, "home_run", str, ""),
    )


def _policy_command(
    kind: type[SetPolicy] | type[SetOperatorPolicy],
) -> Callable[[dict[str, Any]], Command]:
    def decode(body: dict[str, Any]) -> Command:
        return kind(
            vhost=_field(body, "vhost", str),
            name=_field(body, "name", str),
            pattern=_field(body, "pattern", str),
            apply_to=_field(body, "apply_to", str, "all"),
            priority=_field(body, "priority", int, 0),
            definition=_field(body, "definition", dict),
        )

    return decode


def _named_in_vhost(kind: Any) -> Callable[[dict[str, Any]], Command]:
    def decode(body: dict[str, Any]) -> Command:
        return kind(vhost=_field(body, "vhost", str), name=_field(body, "name", str))  # type: ignore[no-any-return]

    return decode


def _named(kind: Any) -> Callable[[dict[str, Any]], Command]:
    def decode(body: dict[str, Any]) -> Command:
        return kind(name=_field(body, "name", str))  # type: ignore[no-any-return]

    return decode


def _batch(body: dict[str, Any]) -> Batch:
    commands: list[Command] = []
    for item in _field(body, "commands", list):
        try:
            commands.append(command_from_json(item))
        except CommandError as error:
            commands.append(Unreadable(body=item, reason=str(error)))
    return Batch(commands=tuple(commands))


_DECODERS: dict[str, Callable[[dict[str, Any]], Command]] = {
    "add_vhost": _add_vhost,
    "delete_vhost": _named(DeleteVhost),
    "put_user": _put_user,
    "delete_user": _named(DeleteUser),
    "set_user_limits": lambda body: SetUserLimits(
        name=_field(body, "name", str), limits=_field(body, "limits", dict)
    ),
    "clear_user_limit": lambda body: ClearUserLimit(
        name=_field(body, "name", str), limit=_field(body, "limit", str)
    ),
    "set_permissions": _set_permissions,
    "clear_permissions": lambda body: ClearPermissions(
        user=_field(body, "user", str), vhost=_field(body, "vhost", str)
    ),
    "declare_exchange": _declare_exchange,
    "delete_exchange": lambda body: DeleteExchange(
        vhost=_field(body, "vhost", str),
        name=_field(body, "name", str),
        if_unused=_field(body, "if_unused", bool, None),
    ),
    "bind": _binding_command(Bind),
    "unbind": _binding_command(Unbind),
    "declare_queue": _declare_queue,
    "delete_queue": lambda body: DeleteQueue(
        vhost=_field(body, "vhost", str),
        name=_field(body, "name", str),
        owner=_field(body, "owner", str, None),
    ),
    "set_policy": _policy_command(SetPolicy),
    "set_operator_policy": _policy_command(SetOperatorPolicy),
    "clear_policy": _named_in_vhost(ClearPolicy),
    "clear_operator_policy": _named_in_vhost(ClearOperatorPolicy),
    "set_parameter": lambda body: SetParameter(
        component=_field(body, "component", str),
        vhost=_field(body, "vhost", str),
        name=_field(body, "name", str),
        value=body.get("value"),
    ),
    "clear_parameter": lambda body: ClearParameter(
        component=_field(body, "component", str),
        vhost=_field(body, "vhost", str),
        name=_field(body, "name", str),
    ),
    "set_global_parameter": lambda body: SetGlobalParameter(
        name=_field(body, "name", str), value=body.get("value")
    ),
    "clear_global_parameter": _named(ClearGlobalParameter),
    "add_member": lambda body: AddMember(
        name=_field(body, "name", str), address=_field(body, "address", str)
    ),
    "remove_member": _named(RemoveMember),
    "batch": _batch,
}

# Per command class, its fields in order and whether a None there means "left out" (a field
# whose default is None); worked out once, so encoding costs a loop over the fields.
_LAYOUT: dict[type, tuple[tuple[str, bool], ...]] = {
    kind: tuple((spec.name, spec.default is None) for spec in fields(kind))
    for kind in get_args(Command)
}
_FIELD_NAMES: dict[type, tuple[str, ...]] = {
    kind: tuple(spec.name for spec in fields(kind)) for kind in get_args(Record)
}
_INIT_NAMES: dict[type, tuple[str, ...]] = {
    kind: tuple(spec.name for spec in fields(kind) if spec.init) for kind in get_args(Record)
}
