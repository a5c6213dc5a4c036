"""The direct exchange type: a message goes to the bindings whose key equals its routing key."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any, ClassVar

from .base import NO_TARGETS, Binding, BindingSet, Targets, register_exchange_type


@register_exchange_type("direct")
class DirectExchange:
    type_name: ClassVar[str]

    __slots__ = ("_by_key", "_targets")

    def __init__(self) -> None:
        self._by_key: dict[str, BindingSet] = {}
        # Routing results by key, refreshed on each change so that a match is one dict lookup.
        self._targets: dict[str, Targets] = {}

    def validate_binding(self, binding: Binding, method: tuple[int, int]) -> None:
        return None

    def add_binding(self, binding: Binding) -> bool:
        group = self._by_key.get(binding.routing_key)
        if group is None:
            group = self._by_key[binding.routing_key] = BindingSet()
        if not group.add(binding):
            return False
        self._targets[binding.routing_key] = group.targets
        return True

    def remove_binding(self, binding: Binding) -> bool:
        group = self._by_key.get(binding.routing_key)
        if group is None or not group.remove(binding):
            return False
        if group:
            self._targets[binding.routing_key] = group.targets
        else:
            del self._by_key[binding.routing_key]
            del self._targets[binding.routing_key]
        return True

    def match(self, routing_key: str, headers: Mapping[str, Any] | None) -> Targets:
        return self._targets.get(routing_key, NO_TARGETS)

    def bindings(self) -> Iterator[Binding]:
        for group in self._by_key.values():
            yield from group

    def __len__(self) -> int:
        return sum(len(group) for group in self._by_key.values())
