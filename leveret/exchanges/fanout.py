"""The fanout exchange type: a message goes to every binding, whatever its routing key."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any, ClassVar

from .base import Binding, BindingSet, Targets, register_exchange_type


@register_exchange_type("fanout")
class FanoutExchange:
    type_name: ClassVar[str]

    __slots__ = ("_bindings",)

    def __init__(self) -> None:
        self._bindings = BindingSet()

    def validate_binding(self, binding: Binding, method: tuple[int, int]) -> None:
        return None

    def add_binding(self, binding: Binding) -> bool:
        return self._bindings.add(binding)

    def remove_binding(self, binding: Binding) -> bool:
        return self._bindings.remove(binding)

    def match(self, routing_key: str, headers: Mapping[str, Any] | None) -> Targets:
        return self._bindings.targets

    def bindings(self) -> Iterator[Binding]:
        return iter(self._bindings)

    def __len__(self) -> int:
        return len(self._bindings)
