"""Topic matching: examples, and properties against a slow reference matcher."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from leveret.exchanges import Binding
from leveret.exchanges.topic import TopicExchange, split_topic_key


def reference_match(binding_key: str, routing_key: str) -> bool:
    """Word-by-word recursion straight from the definition: `*` one word, `#` zero or more."""

    def match(pattern: list[str], words: list[str]) -> bool:
        if not pattern:
            return not words
        head, rest = pattern[0], pattern[1:]
        if head == "#":
            return any(match(rest, words[skip:]) for skip in range(len(words) + 1))
        if not words:
            return False
        return (head == "*" or head == words[0]) and match(rest, words[1:])

    return match(split_topic_key(binding_key), split_topic_key(routing_key))


def bind(exchange: TopicExchange, key: str, queue: str) -> Binding:
    binding = Binding.of("t", queue, "queue", key)
    exchange.add_binding(binding)
    return binding


def test_split_topic_key() -> None:
    assert split_topic_key("") == []
    assert split_topic_key("a") == ["a"]
    assert split_topic_key("a.") == ["a", ""]
    assert split_topic_key(".") == ["", ""]
    assert split_topic_key("a..b") == ["a", "", "b"]


@pytest.mark.parametrize(
    ("binding_key", "routing_key", "expected"),
    [
        ("a.b.c", "a.b.c", True),
        ("a.b.c", "a.b", False),
        ("a.*.c", "a.b.c", True),
        ("a.*.c", "a..c", True),  # * matches an empty word
        ("a.*.c", "a.c", False),
        ("a.#", "a", True),
        ("a.#", "a.b.c", True),
        ("a.#", "b.a", False),
        ("#", "", True),
        ("#", "a.b", True),
        ("*", "", False),
        ("*", "a", True),
        ("*", "a.b", False),
        ("", "", True),
        ("", "a", False),
        ("#.c", "c", True),
        ("#.c", "a.b.c", True),
        ("#.c", "a.b.c.d", False),
        ("a.#.#.b", "a.b", True),
        ("a.#.b", "a.x.y.b", True),
        ("#.*", "", False),
        ("#.*", "a", True),
        ("*.#", "a.b.c", True),
        ("a.*", "a.", True),
        ("a", "a.", False),
        ("*.*", ".", True),
        ("stock.#.nyse", "stock.usd.nyse", True),
    ],
)
def test_topic_examples(binding_key: str, routing_key: str, expected: bool) -> None:
    assert reference_match(binding_key, routing_key) is expected
    exchange = TopicExchange()
    bind(exchange, binding_key, "q")
    assert (exchange.match(routing_key, None).queues == {"q"}) is expected


def test_topic_cache_is_dropped_when_bindings_change() -> None:
    exchange = TopicExchange()
    assert exchange.match("a.b", None).queues == frozenset()
    binding = bind(exchange, "a.*", "q")
    assert exchange.match("a.b", None).queues == {"q"}
    exchange.remove_binding(binding)
    assert exchange.match("a.b", None).queues == frozenset()


def test_topic_unbind_prunes_the_trie() -> None:
    exchange = TopicExchange()
    keys = ["a.b.c", "a.*.c", "a.#", "#", "a.b", ""]
    bindings = [bind(exchange, key, f"q{i}") for i, key in enumerate(keys)]
    assert len(exchange) == len(keys)
    assert set(exchange.bindings()) == set(bindings)
    assert not exchange.remove_binding(Binding.of("t", "q0", "queue", "a.x.c"))
    assert not exchange.remove_binding(Binding.of("t", "nobody", "queue", "a.b.c"))
    for binding in bindings:
        assert exchange.remove_binding(binding)
    assert len(exchange) == 0
    assert exchange._root.is_empty()


def test_many_hashes_on_a_long_key_stay_cheap() -> None:
    exchange = TopicExchange()
    bind(exchange, ".".join(["#"] * 20) + ".z", "q")
    long_key = ".".join(["a"] * 127)  # 253 bytes, near the 255-byte limit
    assert exchange.match(long_key, None).queues == frozenset()
    assert exchange.match(long_key + ".z", None).queues == {"q"}


_WORDS = st.sampled_from(["a", "b", "", "ab"])
_PATTERN_WORDS = st.sampled_from(["a", "b", "", "*", "#"])
_routing_keys = st.lists(_WORDS, max_size=6).map(".".join)
_binding_keys = st.lists(_PATTERN_WORDS, max_size=6).map(".".join)


@settings(max_examples=300, deadline=None)
@given(
    binding_keys=st.lists(_binding_keys, max_size=8),
    routing_keys=st.lists(_routing_keys, max_size=8),
)
def test_topic_agrees_with_the_reference(binding_keys: list[str], routing_keys: list[str]) -> None:
    exchange = TopicExchange()
    for index, key in enumerate(binding_keys):
        bind(exchange, key, f"q{index}")
    for routing_key in routing_keys:
        expected = {
            f"q{i}" for i, key in enumerate(binding_keys) if reference_match(key, routing_key)
        }
        assert exchange.match(routing_key, None).queues == expected
        # a second match (served from the cache) agrees
        assert exchange.match(routing_key, None).queues == expected


@settings(max_examples=200, deadline=None)
@given(
    binding_keys=st.lists(_binding_keys, max_size=10),
    removed=st.sets(st.integers(min_value=0, max_value=9)),
    routing_keys=st.lists(_routing_keys, max_size=6),
)
def test_topic_after_unbinding_agrees_with_the_reference(
    binding_keys: list[str], removed: set[int], routing_keys: list[str]
) -> None:
    exchange = TopicExchange()
    bindings = [bind(exchange, key, f"q{i}") for i, key in enumerate(binding_keys)]
    for routing_key in routing_keys:
        exchange.match(routing_key, None)  # fill the cache before unbinding
    for index in removed:
        if index < len(bindings):
            assert exchange.remove_binding(bindings[index])
    remaining = {i: key for i, key in enumerate(binding_keys) if i not in removed}
    for routing_key in routing_keys:
        expected = {f"q{i}" for i, key in remaining.items() if reference_match(key, routing_key)}
        assert exchange.match(routing_key, None).queues == expected
    if not remaining:
        assert exchange._root.is_empty()
