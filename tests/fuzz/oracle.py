"""pamqp as an oracle: a method frame both decoders accept must carry the same values."""

from __future__ import annotations

import datetime
import struct
from decimal import Decimal
from typing import Any

from pamqp import commands as pamqp_commands
from pamqp import header as pamqp_header

from leveret.amqp.fields import DecodeError
from leveret.amqp.methods import Method, decode_method
from leveret.amqp.properties import BasicProperties, decode_properties

# Where pamqp departs from the AMQP 0-9-1 grammar as RabbitMQ and the common clients apply it,
# its reading is no evidence against Leveret's:
# - 'L' (unsigned 64-bit, accepted as some clients send it) is read signed by pamqp;
# - a timestamp above 2^32 is taken for milliseconds by pamqp;
# - a decimal's digits are read unsigned by pamqp, signed by pika, the Java client and Leveret;
# - pamqp accepts strings that overrun their frame and tables whose entries overrun their length;
# - pamqp ignores a content header's continuation flag (another flags word would follow).
_LENIENT_REASONS = (
    "overruns",
    "truncated",
    "length mismatch",
    "unknown field type",
    "continuation",
)


class Disagreement(AssertionError):
    """Leveret and pamqp decoded the same bytes to different values."""


def _normal(value: Any) -> Any:
    """A form in which equal wire values compare equal whichever decoder produced them."""
    if isinstance(value, bool):
        return ("bool", value)
    if isinstance(value, int):
        return ("int", value)
    if isinstance(value, float):
        return ("float", struct.pack(">d", value))
    if isinstance(value, str):
        return ("bytes", value.encode("utf-8"))
    if isinstance(value, (bytes, bytearray)):
        return ("bytes", bytes(value))
    if isinstance(value, Decimal):
        return ("decimal", value.normalize() if value.is_finite() else str(value))
    if isinstance(value, datetime.datetime):
        return ("timestamp", int(value.timestamp()))
    if value is None:
        return None
    if isinstance(value, dict):
        return {key: _normal(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_normal(item) for item in value]
    raise TypeError(f"no normal form for {type(value).__name__}")


def _same(ours: Any, theirs: Any) -> bool:
    """Equal values, or values that differ only where pamqp is known to read differently."""
    if isinstance(ours, dict) and isinstance(theirs, dict):
        return ours.keys() == theirs.keys() and all(_same(ours[k], theirs[k]) for k in ours)
    if isinstance(ours, list) and isinstance(theirs, list):
        return len(ours) == len(theirs) and all(map(_same, ours, theirs))
    if _normal(ours) == _normal(theirs):
        return True
    if isinstance(ours, int) and isinstance(theirs, int) and not isinstance(ours, bool):
        return ours >= 2**63 and theirs == ours - 2**64  # 'L'
    if isinstance(ours, datetime.datetime | int) and isinstance(theirs, datetime.datetime):
        seconds = ours if isinstance(ours, int) else int(ours.timestamp())
        # Properties keep the raw integer; above 2^32 pamqp guesses milliseconds.
        return seconds == int(theirs.timestamp()) or seconds > 0xFFFFFFFF
    if isinstance(ours, Decimal) and isinstance(theirs, Decimal):
        sign, digits, exponent = ours.as_tuple()
        unscaled = int("".join(map(str, digits)) or "0") * (-1 if sign else 1)
        return isinstance(exponent, int) and (Decimal(unscaled + 2**32).scaleb(exponent) == theirs)
    return False


def _pamqp_method(payload: bytes) -> Any:
    """pamqp's decoding of a method payload, or None where it refuses it."""
    if len(payload) < 4:
        return None
    cls = pamqp_commands.INDEX_MAPPING.get(struct.unpack_from(">I", payload)[0])
    if cls is None:
        return None
    method = cls()
    try:
        method.unmarshal(payload[4:])
    except Exception:  # noqa: BLE001 - any refusal by the oracle means "no opinion"
        return None
    return method


def _leveret_method(payload: bytes) -> Method | DecodeError:
    try:
        return decode_method(payload)
    except DecodeError as error:
        return error


def _pamqp_lenient(error: DecodeError) -> bool:
    return any(reason in str(error) for reason in _LENIENT_REASONS)


def compare_method(payload: bytes) -> str:
    """Compare both decoders on one method payload; returns what happened ("both", "neither",
    "leveret-only", "pamqp-lenient") and raises Disagreement on a mismatch."""
    ours = _leveret_method(payload)
    theirs = _pamqp_method(payload)
    if isinstance(ours, DecodeError):
        if theirs is None:
            return "neither"
        if _pamqp_lenient(ours):
            return "pamqp-lenient"
        raise Disagreement(f"pamqp decodes {payload!r} as {theirs.name}, Leveret: {ours}")
    if theirs is None:
        return "leveret-only"
    our_values = [getattr(ours, name) for name, _ in ours.WIRE_FIELDS]
    their_values = [getattr(theirs, name) for name in theirs.__slots__]
    if not _same(our_values, their_values):
        raise Disagreement(f"{payload!r}: Leveret {our_values} != pamqp {their_values}")
    return "both"


_PROPERTY_NAMES = [name for name in BasicProperties.__slots__]


def compare_header(payload: bytes) -> str:
    """The same comparison for a content header payload (class, weight, size, properties)."""
    try:
        ours: BasicProperties | DecodeError = decode_properties(payload)
    except DecodeError as error:
        ours = error
    theirs = pamqp_header.ContentHeader()
    try:
        theirs.unmarshal(payload)
    except Exception:  # noqa: BLE001 - any refusal by the oracle means "no opinion"
        return "neither" if isinstance(ours, DecodeError) else "leveret-only"
    if isinstance(ours, DecodeError):
        if _pamqp_lenient(ours):
            return "pamqp-lenient"
        raise Disagreement(f"pamqp decodes header {payload!r}, Leveret: {ours}")
    their_properties = theirs.properties
    flags = struct.unpack_from(">H", payload, 12)[0]
    for bit, name in enumerate(_PROPERTY_NAMES):
        if not flags & (1 << (15 - bit)):
            continue  # absent: pamqp fills some defaults in, Leveret leaves None
        their_value = getattr(their_properties, name if name != "type" else "message_type")
        our_value = getattr(ours, name)
        if not _same(our_value, their_value):
            raise Disagreement(
                f"header {payload!r}: {name} is {our_value!r} here, {their_value!r} in pamqp"
            )
    return "both"
