"""Direct, fanout and headers matching, the type registry and the exchange model."""

from __future__ import annotations

import datetime
from decimal import Decimal

import pytest

from leveret.amqp.errors import AMQPError
from leveret.exchanges import (
    EXCHANGE_TYPES,
    NO_TARGETS,
    Binding,
    Exchange,
    exchange_type,
    predeclared_exchanges,
    unbind_everywhere,
)
from leveret.exchanges.direct import DirectExchange
from leveret.exchanges.fanout import FanoutExchange
from leveret.exchanges.headers import HeadersExchange

QUEUE_BIND = (50, 20)


def to_queue(source: str, queue: str, key: str = "", arguments: dict | None = None) -> Binding:
    return Binding.of(source, queue, "queue", key, arguments)


def test_registry_has_the_four_types() -> None:
    assert set(EXCHANGE_TYPES) == {"direct", "fanout", "topic", "headers"}
    assert exchange_type("fanout") is FanoutExchange
    assert FanoutExchange.type_name == "fanout"


def test_unknown_type_closes_the_connection() -> None:
    with pytest.raises(AMQPError) as info:
        exchange_type("x-consistent-hash")
    error = info.value
    assert (error.code, error.text, error.method, error.hard) == (
        503,
        "unknown exchange type 'x-consistent-hash'",
        (40, 10),
        True,
    )
    assert error.reply_text == "COMMAND_INVALID - unknown exchange type 'x-consistent-hash'"


def test_binding_identity_ignores_argument_order() -> None:
    first = to_queue("x", "q", "k", {"a": 1, "b": [1, {"c": "d"}]})
    second = to_queue("x", "q", "k", {"b": [1, {"c": "d"}], "a": 1})
    assert first == second and hash(first) == hash(second)
    assert first.argument_table() == {"a": 1, "b": [1, {"c": "d"}]}
    assert first != to_queue("x", "q", "k", {"a": 2})
    assert first.target == ("queue", "q")


def test_direct_matches_equal_keys_only() -> None:
    direct = DirectExchange()
    assert direct.add_binding(to_queue("x", "q1", "k"))
    assert not direct.add_binding(to_queue("x", "q1", "k"))
    assert direct.add_binding(to_queue("x", "q2", "k"))
    assert direct.add_binding(Binding.of("x", "x2", "exchange", "k"))
    assert direct.add_binding(to_queue("x", "q3", "other"))
    targets = direct.match("k", None)
    assert targets.queues == {"q1", "q2"} and targets.exchanges == {"x2"}
    assert direct.match("K", None) is NO_TARGETS
    assert direct.match("", None) is NO_TARGETS
    assert len(direct) == 4


def test_direct_keeps_a_destination_while_any_binding_to_it_remains() -> None:
    direct = DirectExchange()
    plain = to_queue("x", "q", "k")
    with_args = to_queue("x", "q", "k", {"a": 1})
    direct.add_binding(plain)
    direct.add_binding(with_args)
    assert direct.remove_binding(plain)
    assert direct.match("k", None).queues == {"q"}
    assert not direct.remove_binding(plain)
    assert direct.remove_binding(with_args)
    assert direct.match("k", None) is NO_TARGETS
    assert len(direct) == 0 and list(direct.bindings()) == []


def test_fanout_ignores_the_routing_key() -> None:
    fanout = FanoutExchange()
    assert fanout.match("any", None) is NO_TARGETS
    fanout.add_binding(to_queue("x", "q1", "a"))
    fanout.add_binding(to_queue("x", "q2", "b"))
    assert fanout.match("whatever", {"h": 1}).queues == {"q1", "q2"}
    assert fanout.remove_binding(to_queue("x", "q1", "a"))
    assert not fanout.remove_binding(to_queue("x", "q1", "a"))
    assert fanout.match("", None).queues == {"q2"}


def headers_match(arguments: dict, headers: dict | None) -> bool:
    exchange = HeadersExchange()
    binding = to_queue("h", "q", "ignored", arguments)
    exchange.validate_binding(binding, QUEUE_BIND)
    exchange.add_binding(binding)
    return exchange.match("anything", headers).queues == {"q"}


@pytest.mark.parametrize(
    ("arguments", "headers", "expected"),
    [
        # all (the default when x-match is absent)
        ({"a": 1, "b": "x"}, {"a": 1, "b": "x", "c": 3}, True),
        ({"a": 1, "b": "x"}, {"a": 1}, False),
        ({"a": 1, "b": "x"}, {"a": 1, "b": "y"}, False),
        ({"x-match": "all", "a": 1}, {"a": 1}, True),
        ({"x-match": "all"}, {}, True),  # an empty pattern matches everything
        ({"x-match": "all"}, None, True),
        ({"a": 1}, None, False),
        # any
        ({"x-match": "any", "a": 1, "b": 2}, {"b": 2}, True),
        ({"x-match": "any", "a": 1, "b": 2}, {"a": 2, "b": 1}, False),
        ({"x-match": "any"}, {"a": 1}, False),  # nothing to match
        # void means presence only
        ({"a": None}, {"a": "anything"}, True),
        ({"a": None}, {"b": 1}, False),
        ({"x-match": "any", "a": None, "b": 2}, {"a": 0}, True),
        # x- keys are ignored unless the mode is *-with-x
        ({"x-match": "all", "x-k": 1, "a": 1}, {"a": 1}, True),
        ({"x-match": "any", "x-k": 1}, {"x-k": 1}, False),
        ({"x-match": "all-with-x", "x-k": 1, "a": 1}, {"a": 1}, False),
        ({"x-match": "all-with-x", "x-k": 1, "a": 1}, {"a": 1, "x-k": 1}, True),
        ({"x-match": "any-with-x", "x-k": 1, "a": 1}, {"x-k": 1}, True),
        ({"x-match": "any-with-x", "x-k": 1}, {"x-k": 2}, False),
        # values compare as RabbitMQ compares them: numbers by value, strings by bytes
        ({"a": 1}, {"a": 1.0}, True),
        ({"a": 1}, {"a": True}, False),
        ({"a": True}, {"a": True}, True),
        ({"a": 0}, {"a": False}, False),
        ({"a": "x"}, {"a": b"x"}, True),
        ({"a": "1"}, {"a": 1}, False),
        ({"a": Decimal("1.5")}, {"a": Decimal("1.50")}, False),  # {1,15} vs {2,150}
        ({"a": Decimal("1.5")}, {"a": Decimal("1.5")}, True),
        ({"a": Decimal(1)}, {"a": 1}, False),
        (
            {"a": datetime.datetime.fromtimestamp(5, datetime.UTC)},
            {"a": 5},
            True,
        ),
        ({"a": {"n": [1, "s"]}}, {"a": {"n": [1, "s"]}}, True),
        ({"a": {"n": [1, "s"]}}, {"a": {"n": [1, "t"]}}, False),
        ({"a": [1, 2]}, {"a": [1, 2]}, True),
        ({"a": [1, 2]}, {"a": {"0": 1}}, False),
    ],
)
def test_headers_matching(arguments: dict, headers: dict | None, expected: bool) -> None:
    assert headers_match(arguments, headers) is expected


def test_headers_routes_each_destination_once_and_unbinds() -> None:
    exchange = HeadersExchange()
    one = to_queue("h", "q", "", {"x-match": "any", "a": 1})
    two = to_queue("h", "q", "", {"x-match": "any", "b": 1})
    other = Binding.of("h", "x2", "exchange", "", {"a": 1})
    for binding in (one, two, other):
        assert exchange.add_binding(binding)
    assert not exchange.add_binding(one)
    targets = exchange.match("", {"a": 1, "b": 1})
    assert targets.queues == {"q"} and targets.exchanges == {"x2"}
    assert exchange.remove_binding(one)
    assert exchange.match("", {"a": 1}).queues == frozenset()
    assert exchange.match("", {"b": 1}).queues == {"q"}
    assert not exchange.remove_binding(one)
    assert len(exchange) == 2


@pytest.mark.parametrize(
    ("x_match", "text"),
    [
        (
            "some",
            'Invalid x-match field value <<"some">>; expected all, any, all-with-x, or any-with-x',
        ),
        (
            "",
            "Invalid x-match field value <<>>; expected all, any, all-with-x, or any-with-x",
        ),
        (1, "Invalid x-match field type signedint (value 1); expected longstr"),
        (b"all", 'Invalid x-match field type binary (value <<"all">>); expected longstr'),
        (True, "Invalid x-match field type bool (value true); expected longstr"),
    ],
)
def test_headers_refuses_invalid_x_match(x_match: object, text: str) -> None:
    binding = to_queue("h", "q", "", {"x-match": x_match})
    with pytest.raises(AMQPError) as info:
        HeadersExchange().validate_binding(binding, QUEUE_BIND)
    assert (info.value.code, info.value.text, info.value.method) == (406, text, QUEUE_BIND)
    assert not info.value.hard


@pytest.mark.parametrize("mode", ["all", "any", "all-with-x", "any-with-x"])
def test_headers_accepts_valid_x_match(mode: str) -> None:
    HeadersExchange().validate_binding(to_queue("h", "q", "", {"x-match": mode}), QUEUE_BIND)
    HeadersExchange().validate_binding(to_queue("h", "q", "", {"a": 1}), QUEUE_BIND)


def test_predeclared_exchanges() -> None:
    exchanges = predeclared_exchanges()
    assert {name: x.type for name, x in exchanges.items()} == {
        "": "direct",
        "amq.direct": "direct",
        "amq.fanout": "fanout",
        "amq.topic": "topic",
        "amq.headers": "headers",
        "amq.match": "headers",
    }
    for exchange in exchanges.values():
        assert exchange.durable and not exchange.auto_delete and not exchange.internal
        assert not exchange.has_bindings()
    assert exchanges[""].is_default and not exchanges["amq.direct"].is_default
    # every vhost gets its own set
    assert predeclared_exchanges()["amq.direct"] is not exchanges["amq.direct"]


def test_exchange_tracks_bindings_by_destination() -> None:
    exchange = Exchange("x", "topic", durable=True)
    kept = to_queue("x", "keep", "a.*")
    gone = [to_queue("x", "gone", "a.*"), to_queue("x", "gone", "#")]
    assert exchange.add_binding(kept) and not exchange.add_binding(kept)
    for binding in gone:
        exchange.add_binding(binding)
    assert exchange.match("a.b", None).queues == {"keep", "gone"}
    assert sorted(exchange.remove_bindings_to("queue", "gone"), key=repr) == sorted(gone, key=repr)
    assert exchange.remove_bindings_to("queue", "gone") == []
    assert exchange.match("a.b", None).queues == {"keep"}
    assert exchange.has_bindings()
    assert exchange.remove_binding(kept) and not exchange.remove_binding(kept)
    assert not exchange.has_bindings()
    assert list(exchange.bindings()) == []


def test_exchange_decl_and_alternate_exchange() -> None:
    exchange = Exchange("x", "direct", arguments={"alternate-exchange": "ae"})
    assert exchange.alternate_exchange == "ae"
    assert exchange.decl.type == "direct" and exchange.decl.arguments == {
        "alternate-exchange": "ae"
    }
    assert Exchange.from_decl("y", exchange.decl).decl == exchange.decl
    plain = Exchange("p", "fanout")
    assert plain.alternate_exchange is None
    plain.policy_alternate_exchange = "from-policy"
    assert plain.alternate_exchange == "from-policy"
    exchange.policy_alternate_exchange = "from-policy"
    assert exchange.alternate_exchange == "ae"  # the argument wins


def test_exchange_of_unknown_type_is_refused() -> None:
    with pytest.raises(AMQPError) as info:
        Exchange("x", "nope")
    assert (info.value.code, info.value.text) == (503, "unknown exchange type 'nope'")


def test_exchange_validates_bindings_through_its_type() -> None:
    exchange = Exchange("h", "headers")
    with pytest.raises(AMQPError) as info:
        exchange.validate_binding(to_queue("h", "q", "", {"x-match": "none"}), (40, 30))
    assert (info.value.code, info.value.method) == (406, (40, 30))


def test_unbind_everywhere_reports_unused_auto_delete_exchanges() -> None:
    keeps = Exchange("keeps", "fanout", auto_delete=True)
    empties = Exchange("empties", "direct", auto_delete=True)
    durable = Exchange("durable", "fanout")
    untouched = Exchange("untouched", "fanout", auto_delete=True)
    keeps.add_binding(to_queue("keeps", "q"))
    keeps.add_binding(to_queue("keeps", "other"))
    empties.add_binding(to_queue("empties", "q", "k1"))
    empties.add_binding(to_queue("empties", "q", "k2"))
    durable.add_binding(to_queue("durable", "q"))
    removed, unused = unbind_everywhere([keeps, empties, durable, untouched], "queue", "q")
    assert len(removed) == 4
    assert unused == [empties]
    assert keeps.match("", None).queues == {"other"}
    assert durable.match("", None) is NO_TARGETS


def test_headers_x_match_array_is_an_array() -> None:
    binding = to_queue("h", "q", "", {"x-match": ["all"]})
    with pytest.raises(AMQPError) as info:
        HeadersExchange().validate_binding(binding, QUEUE_BIND)
    assert info.value.text == (
        'Invalid x-match field type array (value [{longstr,<<"all">>}]); expected longstr'
    )
