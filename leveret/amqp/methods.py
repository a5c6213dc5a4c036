"""Every AMQP 0-9-1 method as a small dataclass; field wire types are read from the annotations."""

from __future__ import annotations

import struct
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, ClassVar, TypeVar

from .fields import (
    DecodeError,
    FieldTable,
    decode_argument_table,
    decode_longstr_bytes,
    decode_shortstr,
    encode_longstr,
    encode_shortstr,
    encode_table,
)

# Wire types, named as in the AMQP spec. The annotation string of each field names its type.
Octet = int
Short = int
Long = int
LongLong = int
ShortStr = str
LongStr = bytes
Bit = bool
Table = FieldTable

_CODERS: dict[str, tuple[Callable[[Any], bytes], Callable[[bytes, int], tuple[Any, int]]]] = {
    "Octet": (struct.Struct(">B").pack, lambda b, o: (b[o], o + 1)),
    "Short": (struct.Struct(">H").pack, lambda b, o: (struct.unpack_from(">H", b, o)[0], o + 2)),
    "Long": (struct.Struct(">I").pack, lambda b, o: (struct.unpack_from(">I", b, o)[0], o + 4)),
    "LongLong": (
        struct.Struct(">Q").pack,
        lambda b, o: (struct.unpack_from(">Q", b, o)[0], o + 8),
    ),
    "ShortStr": (encode_shortstr, decode_shortstr),
    "LongStr": (encode_longstr, decode_longstr_bytes),
    "Table": (encode_table, decode_argument_table),
}


class Method:
    """Base of all methods. Subclasses are dataclasses registered with @amqp_method."""

    __slots__ = ()
    CLASS_ID: ClassVar[int]
    METHOD_ID: ClassVar[int]
    NAME: ClassVar[str]
    HAS_CONTENT: ClassVar[bool] = False
    # (field name, wire type) in wire order
    WIRE_FIELDS: ClassVar[tuple[tuple[str, str], ...]]
    _PREFIX: ClassVar[bytes]

    @property
    def ids(self) -> tuple[int, int]:
        return (self.CLASS_ID, self.METHOD_ID)

    def encode(self) -> bytes:
        """The method frame payload: class id, method id, then the arguments."""
        parts = [self._PREFIX]
        bits = 0
        bit_count = 0
        for name, kind in self.WIRE_FIELDS:
            value = getattr(self, name)
            if kind == "Bit":
                if value:
                    bits |= 1 << bit_count
                bit_count += 1
                continue
            if bit_count:
                parts.append(bytes((bits,)))
                bits = bit_count = 0
            parts.append(_CODERS[kind][0](value))
        if bit_count:
            parts.append(bytes((bits,)))
        return b"".join(parts)

    @classmethod
    def decode(cls, payload: bytes, offset: int = 4) -> Method:
        """Decode the arguments that follow the class and method ids."""
        values: dict[str, Any] = {}
        bit_index = 8
        bits = 0
        try:
            for name, kind in cls.WIRE_FIELDS:
                if kind == "Bit":
                    if bit_index == 8:
                        bits = payload[offset]
                        offset += 1
                        bit_index = 0
                    values[name] = bool(bits & (1 << bit_index))
                    bit_index += 1
                    continue
                bit_index = 8
                values[name], offset = _CODERS[kind][1](payload, offset)
        except (IndexError, struct.error) as exc:
            raise DecodeError(f"{cls.NAME} arguments truncated") from exc
        return cls(**values)


_M = TypeVar("_M", bound=type[Method])

METHODS: dict[tuple[int, int], type[Method]] = {}
METHODS_BY_KEY: dict[int, type[Method]] = {}


def amqp_method(
    class_id: int, method_id: int, name: str, *, content: bool = False
) -> Callable[[_M], _M]:
    def register(cls: _M) -> _M:
        cls.CLASS_ID = class_id
        cls.METHOD_ID = method_id
        cls.NAME = name
        cls.HAS_CONTENT = content
        cls.WIRE_FIELDS = tuple(
            (fname, ftype) for fname, ftype in cls.__annotations__.items() if ftype in _WIRE_TYPES
        )
        cls._PREFIX = struct.pack(">HH", class_id, method_id)
        METHODS[(class_id, method_id)] = cls
        METHODS_BY_KEY[(class_id << 16) | method_id] = cls
        return cls

    return register


_WIRE_TYPES = frozenset(
    {"Octet", "Short", "Long", "LongLong", "ShortStr", "LongStr", "Bit", "Table"}
)


def _table() -> FieldTable:
    return {}


# --- connection ---------------------------------------------------------------------------


@amqp_method(10, 10, "connection.start")
@dataclass(slots=True)
class ConnectionStart(Method):
    version_major: Octet = 0
    version_minor: Octet = 9
    server_properties: Table = field(default_factory=_table)
    mechanisms: LongStr = b"PLAIN AMQPLAIN"
    locales: LongStr = b"en_US"


@amqp_method(10, 11, "connection.start-ok")
@dataclass(slots=True)
class ConnectionStartOk(Method):
    client_properties: Table = field(default_factory=_table)
    mechanism: ShortStr = "PLAIN"
    response: LongStr = b""
    locale: ShortStr = "en_US"


@amqp_method(10, 20, "connection.secure")
@dataclass(slots=True)
class ConnectionSecure(Method):
    challenge: LongStr = b""


@amqp_method(10, 21, "connection.secure-ok")
@dataclass(slots=True)
class ConnectionSecureOk(Method):
    response: LongStr = b""


@amqp_method(10, 30, "connection.tune")
@dataclass(slots=True)
class ConnectionTune(Method):
    channel_max: Short = 0
    frame_max: Long = 0
    heartbeat: Short = 0


@amqp_method(10, 31, "connection.tune-ok")
@dataclass(slots=True)
class ConnectionTuneOk(Method):
    channel_max: Short = 0
    frame_max: Long = 0
    heartbeat: Short = 0


@amqp_method(10, 40, "connection.open")
@dataclass(slots=True)
class ConnectionOpen(Method):
    virtual_host: ShortStr = "/"
    capabilities: ShortStr = ""
    insist: Bit = False


@amqp_method(10, 41, "connection.open-ok")
@dataclass(slots=True)
class ConnectionOpenOk(Method):
    known_hosts: ShortStr = ""


@amqp_method(10, 50, "connection.close")
@dataclass(slots=True)
class ConnectionClose(Method):
    reply_code: Short = 0
    reply_text: ShortStr = ""
    class_id: Short = 0
    method_id: Short = 0


@amqp_method(10, 51, "connection.close-ok")
@dataclass(slots=True)
class ConnectionCloseOk(Method):
    pass


@amqp_method(10, 60, "connection.blocked")
@dataclass(slots=True)
class ConnectionBlocked(Method):
    reason: ShortStr = ""


@amqp_method(10, 61, "connection.unblocked")
@dataclass(slots=True)
class ConnectionUnblocked(Method):
    pass


@amqp_method(10, 70, "connection.update-secret")
@dataclass(slots=True)
class ConnectionUpdateSecret(Method):
    new_secret: LongStr = b""
    reason: ShortStr = ""


@amqp_method(10, 71, "connection.update-secret-ok")
@dataclass(slots=True)
class ConnectionUpdateSecretOk(Method):
    pass


# --- channel ------------------------------------------------------------------------------


@amqp_method(20, 10, "channel.open")
@dataclass(slots=True)
class ChannelOpen(Method):
    out_of_band: ShortStr = ""


@amqp_method(20, 11, "channel.open-ok")
@dataclass(slots=True)
class ChannelOpenOk(Method):
    channel_id: LongStr = b""


@amqp_method(20, 20, "channel.flow")
@dataclass(slots=True)
class ChannelFlow(Method):
    active: Bit = True


@amqp_method(20, 21, "channel.flow-ok")
@dataclass(slots=True)
class ChannelFlowOk(Method):
    active: Bit = True


@amqp_method(20, 40, "channel.close")
@dataclass(slots=True)
class ChannelClose(Method):
    reply_code: Short = 0
    reply_text: ShortStr = ""
    class_id: Short = 0
    method_id: Short = 0


@amqp_method(20, 41, "channel.close-ok")
@dataclass(slots=True)
class ChannelCloseOk(Method):
    pass


# --- exchange -----------------------------------------------------------------------------


@amqp_method(40, 10, "exchange.declare")
@dataclass(slots=True)
class ExchangeDeclare(Method):
    ticket: Short = 0
    exchange: ShortStr = ""
    type: ShortStr = "direct"
    passive: Bit = False
    durable: Bit = False
    auto_delete: Bit = False
    internal: Bit = False
    no_wait: Bit = False
    arguments: Table = field(default_factory=_table)


@amqp_method(40, 11, "exchange.declare-ok")
@dataclass(slots=True)
class ExchangeDeclareOk(Method):
    pass


@amqp_method(40, 20, "exchange.delete")
@dataclass(slots=True)
class ExchangeDelete(Method):
    ticket: Short = 0
    exchange: ShortStr = ""
    if_unused: Bit = False
    no_wait: Bit = False


@amqp_method(40, 21, "exchange.delete-ok")
@dataclass(slots=True)
class ExchangeDeleteOk(Method):
    pass


@amqp_method(40, 30, "exchange.bind")
@dataclass(slots=True)
class ExchangeBind(Method):
    ticket: Short = 0
    destination: ShortStr = ""
    source: ShortStr = ""
    routing_key: ShortStr = ""
    no_wait: Bit = False
    arguments: Table = field(default_factory=_table)


@amqp_method(40, 31, "exchange.bind-ok")
@dataclass(slots=True)
class ExchangeBindOk(Method):
    pass


@amqp_method(40, 40, "exchange.unbind")
@dataclass(slots=True)
class ExchangeUnbind(Method):
    ticket: Short = 0
    destination: ShortStr = ""
    source: ShortStr = ""
    routing_key: ShortStr = ""
    no_wait: Bit = False
    arguments: Table = field(default_factory=_table)


@amqp_method(40, 51, "exchange.unbind-ok")
@dataclass(slots=True)
class ExchangeUnbindOk(Method):
    pass


# --- queue --------------------------------------------------------------------------------


@amqp_method(50, 10, "queue.declare")
@dataclass(slots=True)
class QueueDeclare(Method):
    ticket: Short = 0
    queue: ShortStr = ""
    passive: Bit = False
    durable: Bit = False
    exclusive: Bit = False
    auto_delete: Bit = False
    no_wait: Bit = False
    arguments: Table = field(default_factory=_table)


@amqp_method(50, 11, "queue.declare-ok")
@dataclass(slots=True)
class QueueDeclareOk(Method):
    queue: ShortStr = ""
    message_count: Long = 0
    consumer_count: Long = 0


@amqp_method(50, 20, "queue.bind")
@dataclass(slots=True)
class QueueBind(Method):
    ticket: Short = 0
    queue: ShortStr = ""
    exchange: ShortStr = ""
    routing_key: ShortStr = ""
    no_wait: Bit = False
    arguments: Table = field(default_factory=_table)


@amqp_method(50, 21, "queue.bind-ok")
@dataclass(slots=True)
class QueueBindOk(Method):
    pass


@amqp_method(50, 30, "queue.purge")
@dataclass(slots=True)
class QueuePurge(Method):
    ticket: Short = 0
    queue: ShortStr = ""
    no_wait: Bit = False


@amqp_method(50, 31, "queue.purge-ok")
@dataclass(slots=True)
class QueuePurgeOk(Method):
    message_count: Long = 0


@amqp_method(50, 40, "queue.delete")
@dataclass(slots=True)
class QueueDelete(Method):
    ticket: Short = 0
    queue: ShortStr = ""
    if_unused: Bit = False
    if_empty: Bit = False
    no_wait: Bit = False


@amqp_method(50, 41, "queue.delete-ok")
@dataclass(slots=True)
class QueueDeleteOk(Method):
    message_count: Long = 0


@amqp_method(50, 50, "queue.unbind")
@dataclass(slots=True)
class QueueUnbind(Method):
    ticket: Short = 0
    queue: ShortStr = ""
    exchange: ShortStr = ""
    routing_key: ShortStr = ""
    arguments: Table = field(default_factory=_table)


@amqp_method(50, 51, "queue.unbind-ok")
@dataclass(slots=True)
class QueueUnbindOk(Method):
    pass


# --- basic --------------------------------------------------------------------------------


@amqp_method(60, 10, "basic.qos")
@dataclass(slots=True)
class BasicQos(Method):
    prefetch_size: Long = 0
    prefetch_count: Short = 0
    global_: Bit = False


@amqp_method(60, 11, "basic.qos-ok")
@dataclass(slots=True)
class BasicQosOk(Method):
    pass


@amqp_method(60, 20, "basic.consume")
@dataclass(slots=True)
class BasicConsume(Method):
    ticket: Short = 0
    queue: ShortStr = ""
    consumer_tag: ShortStr = ""
    no_local: Bit = False
    no_ack: Bit = False
    exclusive: Bit = False
    no_wait: Bit = False
    arguments: Table = field(default_factory=_table)


@amqp_method(60, 21, "basic.consume-ok")
@dataclass(slots=True)
class BasicConsumeOk(Method):
    consumer_tag: ShortStr = ""


@amqp_method(60, 30, "basic.cancel")
@dataclass(slots=True)
class BasicCancel(Method):
    consumer_tag: ShortStr = ""
    no_wait: Bit = False


@amqp_method(60, 31, "basic.cancel-ok")
@dataclass(slots=True)
class BasicCancelOk(Method):
    consumer_tag: ShortStr = ""


@amqp_method(60, 40, "basic.publish", content=True)
@dataclass(slots=True)
class BasicPublish(Method):
    ticket: Short = 0
    exchange: ShortStr = ""
    routing_key: ShortStr = ""
    mandatory: Bit = False
    immediate: Bit = False


@amqp_method(60, 50, "basic.return", content=True)
@dataclass(slots=True)
class BasicReturn(Method):
    reply_code: Short = 0
    reply_text: ShortStr = ""
    exchange: ShortStr = ""
    routing_key: ShortStr = ""


@amqp_method(60, 60, "basic.deliver", content=True)
@dataclass(slots=True)
class BasicDeliver(Method):
    consumer_tag: ShortStr = ""
    delivery_tag: LongLong = 0
    redelivered: Bit = False
    exchange: ShortStr = ""
    routing_key: ShortStr = ""


@amqp_method(60, 70, "basic.get")
@dataclass(slots=True)
class BasicGet(Method):
    ticket: Short = 0
    queue: ShortStr = ""
    no_ack: Bit = False


@amqp_method(60, 71, "basic.get-ok", content=True)
@dataclass(slots=True)
class BasicGetOk(Method):
    delivery_tag: LongLong = 0
    redelivered: Bit = False
    exchange: ShortStr = ""
    routing_key: ShortStr = ""
    message_count: Long = 0


@amqp_method(60, 72, "basic.get-empty")
@dataclass(slots=True)
class BasicGetEmpty(Method):
    cluster_id: ShortStr = ""


@amqp_method(60, 80, "basic.ack")
@dataclass(slots=True)
class BasicAck(Method):
    delivery_tag: LongLong = 0
    multiple: Bit = False


@amqp_method(60, 90, "basic.reject")
@dataclass(slots=True)
class BasicReject(Method):
    delivery_tag: LongLong = 0
    requeue: Bit = True


@amqp_method(60, 100, "basic.recover-async")
@dataclass(slots=True)
class BasicRecoverAsync(Method):
    requeue: Bit = False


@amqp_method(60, 110, "basic.recover")
@dataclass(slots=True)
class BasicRecover(Method):
    requeue: Bit = False


@amqp_method(60, 111, "basic.recover-ok")
@dataclass(slots=True)
class BasicRecoverOk(Method):
    pass


@amqp_method(60, 120, "basic.nack")
@dataclass(slots=True)
class BasicNack(Method):
    delivery_tag: LongLong = 0
    multiple: Bit = False
    requeue: Bit = True


# --- confirm and tx -----------------------------------------------------------------------


@amqp_method(85, 10, "confirm.select")
@dataclass(slots=True)
class ConfirmSelect(Method):
    no_wait: Bit = False


@amqp_method(85, 11, "confirm.select-ok")
@dataclass(slots=True)
class ConfirmSelectOk(Method):
    pass


@amqp_method(90, 10, "tx.select")
@dataclass(slots=True)
class TxSelect(Method):
    pass


@amqp_method(90, 11, "tx.select-ok")
@dataclass(slots=True)
class TxSelectOk(Method):
    pass


@amqp_method(90, 20, "tx.commit")
@dataclass(slots=True)
class TxCommit(Method):
    pass


@amqp_method(90, 21, "tx.commit-ok")
@dataclass(slots=True)
class TxCommitOk(Method):
    pass


@amqp_method(90, 30, "tx.rollback")
@dataclass(slots=True)
class TxRollback(Method):
    pass


@amqp_method(90, 31, "tx.rollback-ok")
@dataclass(slots=True)
class TxRollbackOk(Method):
    pass


def decode_method(payload: bytes) -> Method:
    """Decode a method frame payload; unknown ids and bad arguments raise DecodeError."""
    if len(payload) < 4:
        raise DecodeError("method frame too short")
    cls = METHODS_BY_KEY.get(struct.unpack_from(">I", payload, 0)[0])
    if cls is None:
        raise UnknownMethod(struct.unpack_from(">HH", payload, 0))
    return cls.decode(payload, 4)


class UnknownMethod(DecodeError):
    def __init__(self, ids: tuple[int, int]) -> None:
        super().__init__(f"unknown method {ids}")
        self.ids = ids
