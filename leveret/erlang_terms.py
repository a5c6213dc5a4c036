"""Field values as RabbitMQ prints and compares them (Erlang's ~p, ~s, == and =:=), since its
reply texts embed them and its equivalence checks depend on them."""

from __future__ import annotations

import datetime
import math
from collections.abc import Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from .amqp.fields import Float32, LongBytes, WireInt

# ---------------------------------------------------------------------------------------------
# Field types, as RabbitMQ names them once it has parsed a table.

FIELD_TYPE_NAMES: dict[str, str] = {
    "S": "longstr",
    "I": "signedint",
    "i": "unsignedint",
    "l": "long",
    "L": "long",  # RabbitMQ reads both 64-bit letters as signed longs
    "b": "byte",
    "B": "unsignedbyte",
    "s": "short",
    "u": "unsignedshort",
    "t": "bool",
    "d": "double",
    "f": "float",
    "D": "decimal",
    "T": "timestamp",
    "F": "table",
    "A": "array",
    "x": "binary",
    "V": "void",
}

INTEGER_TYPES = frozenset(
    {"byte", "short", "signedint", "long", "unsignedbyte", "unsignedshort", "unsignedint"}
)
# RabbitMQ's `type_class`: argument values of types in one class compare by value.
TYPE_CLASSES = {name: "int" for name in INTEGER_TYPES} | {
    "decimal": "int",
    "float": "float",
    "double": "float",
}


def field_type_name(value: Any, declared: str | None = None) -> str:
    """RabbitMQ's name for a field value's type: from its wire letter if known, else inferred.

    Inference follows pika: ints that fit 32 bits are `signedint`, larger ones `long`; bytes
    are `binary`; str is `longstr`.
    """
    if declared:
        return FIELD_TYPE_NAMES.get(declared, declared)
    if isinstance(value, WireInt):
        return FIELD_TYPE_NAMES[value.letter.decode()]
    if isinstance(value, Float32):
        return "float"
    if value is True or value is False:
        return "bool"
    if isinstance(value, int):
        return "signedint" if -(2**31) <= value < 2**31 else "long"
    if isinstance(value, (str, LongBytes)):
        return "longstr"
    if isinstance(value, (bytes, bytearray, memoryview)):
        return "binary"
    if isinstance(value, float):
        return "double"
    if isinstance(value, Decimal):
        return "decimal"
    if isinstance(value, datetime.datetime):
        return "timestamp"
    if isinstance(value, (dict, tuple)):
        return "table"
    if isinstance(value, list):
        return "array"
    if value is None:
        return "void"
    return type(value).__name__


# ---------------------------------------------------------------------------------------------
# Values as RabbitMQ prints them (Erlang's ~p and ~s), since its texts embed them.


class Atom(str):
    """An Erlang atom in a printed term (printed bare)."""


@dataclass(frozen=True)
class CharList:
    """An Erlang string (a list of byte-sized characters), printed in double quotes."""

    data: bytes

    @classmethod
    def of(cls, text: str) -> CharList:
        return cls(text.encode("utf-8"))


def to_bytes(value: str | bytes | bytearray | memoryview) -> bytes:
    return value.encode("utf-8") if isinstance(value, str) else bytes(value)


def _as_text(data: bytes) -> str:
    # The wire carries the bytes RabbitMQ prints; decoding them as UTF-8 gives back the same bytes.
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return data.decode("latin-1")


_ESCAPES = {
    ord('"'): '\\"',
    ord("\\"): "\\\\",
    ord("\n"): "\\n",
    ord("\r"): "\\r",
    ord("\t"): "\\t",
    ord("\v"): "\\v",
    ord("\b"): "\\b",
    ord("\f"): "\\f",
    0x1B: "\\e",
}


def _printable_latin1(data: bytes) -> bool:
    return all(32 <= c <= 126 or c >= 160 or c in _ESCAPES for c in data)


def _quoted(data: bytes) -> str:
    if not any(c in _ESCAPES for c in data):
        return '"' + _as_text(data) + '"'
    pieces: list[str] = []
    run = bytearray()
    for c in data:
        escape = _ESCAPES.get(c)
        if escape is None:
            run.append(c)
        else:
            pieces.append(_as_text(bytes(run)))
            run.clear()
            pieces.append(escape)
    pieces.append(_as_text(bytes(run)))
    return '"' + "".join(pieces) + '"'


def erlang_float(value: float) -> str:
    """A float the way Erlang prints it: shortest round-trip digits, always with a fraction."""
    if math.isnan(value) or math.isinf(value):
        return repr(value)
    text = repr(value)
    if "e" not in text:
        return text
    mantissa, exponent = text.split("e")
    if "." not in mantissa:
        mantissa += ".0"
    return f"{mantissa}e{int(exponent)}"


def decimal_parts(value: Decimal) -> tuple[int, int]:
    sign, digits, exponent = value.as_tuple()
    unscaled = int("".join(map(str, digits)) or "0")
    scale = -exponent if isinstance(exponent, int) else 0
    return scale, -unscaled if sign else unscaled


def erlang_term(value: Any, declared_types: Mapping[str, str] | None = None) -> str:
    """Print a decoded field value (or an error term) as Erlang's ~p prints RabbitMQ's value."""
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, Atom):
        return str(value)
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return erlang_float(value)
    if isinstance(value, CharList):
        if _printable_latin1(value.data):
            return _quoted(value.data)
        return "[" + ",".join(str(c) for c in value.data) + "]"
    if isinstance(value, (str, bytes, bytearray, memoryview)):
        data = to_bytes(value)
        if not data:
            return "<<>>"
        if _printable_latin1(data):
            return "<<" + _quoted(data) + ">>"
        return "<<" + ",".join(str(c) for c in data) + ">>"
    if isinstance(value, Decimal):
        scale, unscaled = decimal_parts(value)
        return f"{{{scale},{unscaled}}}"
    if isinstance(value, datetime.datetime):
        return str(int(value.timestamp()))
    if isinstance(value, tuple):
        return "{" + ",".join(erlang_term(item) for item in value) + "}"
    if isinstance(value, dict):
        types = declared_types or {}
        rows = (
            f"{{{erlang_term(key)},{field_type_name(item, types.get(key))},{erlang_term(item)}}}"
            for key, item in value.items()
        )
        return "[" + ",".join(rows) + "]"
    if isinstance(value, list):
        return "[" + ",".join(f"{{{field_type_name(i)},{erlang_term(i)}}}" for i in value) + "]"
    if value is None:
        return "undefined"
    return repr(value)


def erlang_text(value: Any) -> str:
    """A value formatted by ~s where it is a binary and ~p otherwise."""
    if isinstance(value, (str, bytes, bytearray, memoryview)):
        return value if isinstance(value, str) else _as_text(bytes(value))
    return erlang_term(value)


# ---------------------------------------------------------------------------------------------
# Value comparison as Erlang does it: `==` for values of one type class, `=:=` otherwise.


class _Tag:
    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return f"<{self.name}>"


_BOOL = _Tag("bool")
_FLOAT = _Tag("float")
_DECIMAL = _Tag("decimal")
_TABLE = _Tag("table")
_ARRAY = _Tag("array")
_UNDEFINED = _Tag("undefined")


def comparable_value(value: Any, *, exact: bool = False) -> Any:
    """A key equal for two decoded values exactly when Erlang's `==` (or `=:=`) says so.

    Numbers compare by value (1 == 1.0, but 1 =/= 1.0 under `=:=`), strings and binaries by
    their bytes, booleans only with booleans, decimals as (scale, digits) and timestamps as
    integer seconds.
    """
    if value is True or value is False:
        return (_BOOL, value)
    if isinstance(value, str):
        return value.encode("utf-8")
    if isinstance(value, float):
        return (_FLOAT, value) if exact else value
    if isinstance(value, (int, bytes)):
        return value
    if isinstance(value, (bytearray, memoryview)):
        return bytes(value)
    if isinstance(value, Decimal):
        return (_DECIMAL, *decimal_parts(value))
    if isinstance(value, datetime.datetime):
        return int(value.timestamp())
    if isinstance(value, dict):
        return (_TABLE, tuple((k, comparable_value(v, exact=exact)) for k, v in value.items()))
    if isinstance(value, (list, tuple)):
        return (_ARRAY, tuple(comparable_value(v, exact=exact) for v in value))
    if value is None:
        return _UNDEFINED
    return value
