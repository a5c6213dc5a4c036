"""The topic exchange type: dot-separated words, `*` matches one word and `#` zero or more.

Binding keys live in a trie of words; a routing key walks it once, with each (`#` node, word
position) pair visited at most once, so the walk costs at most (trie nodes x words) steps even
for binding keys full of `#`. Results are cached
per routing key until the bindings change, since publishers tend to reuse a few keys.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any, ClassVar

from .base import NO_TARGETS, Binding, BindingSet, Targets, register_exchange_type, union_targets

_CACHE_LIMIT = 1024


def split_topic_key(key: str) -> list[str]:
    """The words of a key; the empty key has no words, while "a." has two ("a" and "")."""
    return key.split(".") if key else []


class _Node:
    __slots__ = ("bindings", "hash", "is_hash", "star", "words")

    def __init__(self, is_hash: bool = False) -> None:
        self.is_hash = is_hash
        self.words: dict[str, _Node] = {}
        self.star: _Node | None = None
        self.hash: _Node | None = None
        self.bindings: BindingSet | None = None

    def child(self, word: str) -> _Node | None:
        if word == "*":
            return self.star
        if word == "#":
            return self.hash
        return self.words.get(word)

    def add_child(self, word: str) -> _Node:
        node = _Node(is_hash=word == "#")
        if word == "*":
            self.star = node
        elif word == "#":
            self.hash = node
        else:
            self.words[word] = node
        return node

    def drop_child(self, word: str) -> None:
        if word == "*":
            self.star = None
        elif word == "#":
            self.hash = None
        else:
            del self.words[word]

    def is_empty(self) -> bool:
        return not (self.words or self.star or self.hash or self.bindings)


@register_exchange_type("topic")
class TopicExchange:
    type_name: ClassVar[str]

    __slots__ = ("_cache", "_count", "_root")

    def __init__(self) -> None:
        self._root = _Node()
        self._count = 0
        self._cache: dict[str, Targets] = {}

    def validate_binding(self, binding: Binding, method: tuple[int, int]) -> None:
        return None

    def add_binding(self, binding: Binding) -> bool:
        node = self._root
        for word in split_topic_key(binding.routing_key):
            node = node.child(word) or node.add_child(word)
        if node.bindings is None:
            node.bindings = BindingSet()
        if not node.bindings.add(binding):
            return False
        self._count += 1
        self._cache.clear()
        return True

    def remove_binding(self, binding: Binding) -> bool:
        path: list[tuple[_Node, str]] = []
        node: _Node | None = self._root
        for word in split_topic_key(binding.routing_key):
            assert node is not None
            path.append((node, word))
            node = node.child(word)
            if node is None:
                return False
        assert node is not None
        if node.bindings is None or not node.bindings.remove(binding):
            return False
        if not node.bindings:
            node.bindings = None
        # Prune the branch bottom-up so that removed keys cost nothing on later walks.
        for parent, word in reversed(path):
            if not node.is_empty():
                break
            parent.drop_child(word)
            node = parent
        self._count -= 1
        self._cache.clear()
        return True

    def match(self, routing_key: str, headers: Mapping[str, Any] | None) -> Targets:
        cached = self._cache.get(routing_key)
        if cached is not None:
            return cached
        targets = self._walk(split_topic_key(routing_key))
        if len(self._cache) >= _CACHE_LIMIT:
            self._cache.clear()
        self._cache[routing_key] = targets
        return targets

    def _walk(self, words: list[str]) -> Targets:
        end = len(words)
        found: list[Targets] = []
        seen_hash_states: set[tuple[int, int]] = set()
        stack: list[tuple[_Node, int]] = [(self._root, 0)]
        pop = stack.pop
        push = stack.append
        while stack:
            node, position = pop()
            # A `#` node is entered having swallowed no word; each further word it swallows
            # is one more state, so `#` matches zero or more words.
            if node.is_hash and position < end:
                state = (id(node), position + 1)
                if state not in seen_hash_states:
                    seen_hash_states.add(state)
                    push((node, position + 1))
            hash_node = node.hash
            if hash_node is not None:
                state = (id(hash_node), position)
                if state not in seen_hash_states:
                    seen_hash_states.add(state)
                    push((hash_node, position))
            if position == end:
                if node.bindings is not None:
                    found.append(node.bindings.targets)
                continue
            literal = node.words.get(words[position])
            if literal is not None:
                push((literal, position + 1))
            if node.star is not None:
                push((node.star, position + 1))
        if not found:
            return NO_TARGETS
        return union_targets(found)

    def bindings(self) -> Iterator[Binding]:
        stack = [self._root]
        while stack:
            node = stack.pop()
            if node.bindings is not None:
                yield from node.bindings
            stack.extend(node.words.values())
            if node.star is not None:
                stack.append(node.star)
            if node.hash is not None:
                stack.append(node.hash)

    def __len__(self) -> int:
        return self._count
