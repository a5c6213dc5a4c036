"""The headers exchange type: bindings match headers (x-match all, any, all-with-x, any-with-x).

A binding's arguments are its pattern. "x-match" is never part of it; other "x-" keys are left
out unless the mode ends in "-with-x". A void pattern value asks only that the header be
present; other values must equal the header's, compared as RabbitMQ compares decoded values.
A binding without x-match uses "all".
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any, ClassVar, NamedTuple

from leveret.amqp.errors import AMQPError, ReplyCode
from leveret.declare_rules import comparable_value, erlang_term, field_type_name

from .base import (
    NO_TARGETS,
    Binding,
    Destination,
    Targets,
    register_exchange_type,
    targets_of,
    thaw_value,
)

MATCH_MODES = ("all", "any", "all-with-x", "any-with-x")

_PRESENT = object()


class _Pattern(NamedTuple):
    binding: Binding
    require_all: bool
    fields: tuple[tuple[str, Any], ...]


def _compile(binding: Binding) -> _Pattern:
    arguments = dict(binding.arguments)
    mode = arguments.get("x-match")
    if mode not in MATCH_MODES:
        mode = "all"  # only reachable for bindings added without validation
    with_x = mode.endswith("-with-x")
    fields = tuple(
        (key, _PRESENT if value is None else comparable_value(thaw_value(value)))
        for key, value in binding.arguments
        if key != "x-match" and (with_x or not key.startswith("x-"))
    )
    return _Pattern(binding, mode.startswith("all"), fields)


def _matches(headers: Mapping[str, Any], pattern: _Pattern) -> bool:
    require_all = pattern.require_all
    for key, expected in pattern.fields:
        if key in headers and (expected is _PRESENT or comparable_value(headers[key]) == expected):
            if not require_all:
                return True
        elif require_all:
            return False
    return require_all


@register_exchange_type("headers")
class HeadersExchange:
    type_name: ClassVar[str]

    __slots__ = ("_patterns",)

    def __init__(self) -> None:
        self._patterns: dict[Binding, _Pattern] = {}

    def validate_binding(self, binding: Binding, method: tuple[int, int]) -> None:
        for key, frozen in binding.arguments:
            if key != "x-match":
                continue
            value = thaw_value(frozen)
            type_name = field_type_name(value)
            if type_name != "longstr":
                text = (
                    f"Invalid x-match field type {type_name} (value {erlang_term(value)}); "
                    "expected longstr"
                )
            elif value not in MATCH_MODES:
                text = (
                    f"Invalid x-match field value {erlang_term(value)}; "
                    "expected all, any, all-with-x, or any-with-x"
                )
            else:
                return
            raise AMQPError(ReplyCode.PRECONDITION_FAILED, text, method)

    def add_binding(self, binding: Binding) -> bool:
        if binding in self._patterns:
            return False
        self._patterns[binding] = _compile(binding)
        return True

    def remove_binding(self, binding: Binding) -> bool:
        return self._patterns.pop(binding, None) is not None

    def match(self, routing_key: str, headers: Mapping[str, Any] | None) -> Targets:
        if not self._patterns:
            return NO_TARGETS
        data: Mapping[str, Any] = headers or {}
        matched: set[Destination] = set()
        for pattern in self._patterns.values():
            target = pattern.binding.target
            if target not in matched and _matches(data, pattern):
                matched.add(target)
        return targets_of(matched)

    def bindings(self) -> Iterator[Binding]:
        return iter(self._patterns)

    def __len__(self) -> int:
        return len(self._patterns)
