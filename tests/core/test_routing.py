"""Routing across exchanges: the default exchange, exchange-to-exchange bindings, alternate
exchanges."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from leveret.exchanges import Binding, Exchange, predeclared_exchanges
from leveret.routing import route


def vhost(*extra: Exchange) -> dict[str, Exchange]:
    exchanges = predeclared_exchanges()
    exchanges.update({exchange.name: exchange for exchange in extra})
    return exchanges


def to_queue(
    exchanges: dict[str, Exchange],
    source: str,
    queue: str,
    key: str = "",
    arguments: dict | None = None,
) -> None:
    assert exchanges[source].add_binding(Binding.of(source, queue, "queue", key, arguments))


def to_exchange(
    exchanges: dict[str, Exchange], source: str, destination: str, key: str = ""
) -> None:
    assert exchanges[source].add_binding(Binding.of(source, destination, "exchange", key))


def test_default_exchange_routes_to_the_named_queue_if_it_exists() -> None:
    exchanges = vhost()
    queues = {"q1", "q2"}
    assert route(exchanges, "", "q1", None, queues) == {"q1"}
    assert route(exchanges, "", "missing", None, queues) == frozenset()
    assert route(exchanges, "", "", None, queues) == frozenset()
    # a dict of queues works as well as a set
    assert route(exchanges, "", "q2", None, {"q2": object()}) == {"q2"}


def test_default_exchange_with_cc_and_bcc_keys() -> None:
    exchanges = vhost()
    assert route(exchanges, "", "q1", None, {"q1", "q2"}, ["q2", "nope"]) == {"q1", "q2"}


def test_direct_exchange_with_cc_keys() -> None:
    exchanges = vhost()
    to_queue(exchanges, "amq.direct", "q1", "k1")
    to_queue(exchanges, "amq.direct", "q2", "k2")
    assert route(exchanges, "amq.direct", "k1", None, set(), ["k2"]) == {"q1", "q2"}
    assert route(exchanges, "amq.direct", "k3", None, set(), ["k2"]) == {"q2"}


def test_missing_exchange_routes_nowhere() -> None:
    assert route(vhost(), "nope", "k", None, set()) == frozenset()


def test_each_type_through_route() -> None:
    exchanges = vhost()
    to_queue(exchanges, "amq.direct", "qd", "k")
    to_queue(exchanges, "amq.fanout", "qf")
    to_queue(exchanges, "amq.topic", "qt", "a.#")
    to_queue(exchanges, "amq.headers", "qh", "", {"x-match": "any", "h": 1})
    to_queue(exchanges, "amq.match", "qm", "", {"h": 1})
    assert route(exchanges, "amq.direct", "k", None, set()) == {"qd"}
    assert route(exchanges, "amq.fanout", "zzz", None, set()) == {"qf"}
    assert route(exchanges, "amq.topic", "a.b", None, set()) == {"qt"}
    assert route(exchanges, "amq.headers", "", {"h": 1}, set()) == {"qh"}
    assert route(exchanges, "amq.match", "", {"h": 1}, set()) == {"qm"}
    assert route(exchanges, "amq.headers", "", None, set()) == frozenset()


def test_exchange_to_exchange_chain_and_fan_in() -> None:
    exchanges = vhost(Exchange("x1", "topic"), Exchange("x2", "fanout"), Exchange("x3", "direct"))
    to_exchange(exchanges, "x1", "x2", "a.*")
    to_exchange(exchanges, "x1", "x3", "#")
    to_exchange(exchanges, "x2", "x3")
    to_queue(exchanges, "x2", "q2")
    to_queue(exchanges, "x3", "q3", "a.b")
    to_queue(exchanges, "x1", "q1", "a.b")
    assert route(exchanges, "x1", "a.b", None, set()) == {"q1", "q2", "q3"}
    assert route(exchanges, "x1", "a.c", None, set()) == {"q2"}
    assert route(exchanges, "x1", "z", None, set()) == frozenset()


def test_exchange_cycles_end() -> None:
    exchanges = vhost(Exchange("a", "fanout"), Exchange("b", "fanout"), Exchange("c", "fanout"))
    to_exchange(exchanges, "a", "b")
    to_exchange(exchanges, "b", "c")
    to_exchange(exchanges, "c", "a")
    to_exchange(exchanges, "a", "a")
    to_queue(exchanges, "c", "qc")
    to_queue(exchanges, "a", "qa")
    assert route(exchanges, "a", "", None, set()) == {"qa", "qc"}
    assert route(exchanges, "b", "", None, set()) == {"qa", "qc"}


def test_bindings_to_missing_exchanges_are_skipped() -> None:
    exchanges = vhost(Exchange("a", "fanout"))
    to_exchange(exchanges, "a", "gone")
    to_queue(exchanges, "a", "q")
    assert route(exchanges, "a", "", None, set()) == {"q"}


def test_alternate_exchange_takes_what_routes_nowhere() -> None:
    exchanges = vhost(
        Exchange("main", "direct", arguments={"alternate-exchange": "ae"}),
        Exchange("ae", "fanout"),
    )
    to_queue(exchanges, "main", "routed", "k")
    to_queue(exchanges, "ae", "unrouted")
    assert route(exchanges, "main", "k", None, set()) == {"routed"}
    assert route(exchanges, "main", "other", None, set()) == {"unrouted"}


def test_alternate_exchange_is_not_used_when_an_exchange_binding_matched() -> None:
    # RabbitMQ applies the AE only when the exchange's own type finds no destination at all;
    # a matching exchange-to-exchange binding counts, even if that exchange routes nowhere.
    exchanges = vhost(
        Exchange("main", "direct", arguments={"alternate-exchange": "ae"}),
        Exchange("dead-end", "direct"),
        Exchange("ae", "fanout"),
    )
    to_exchange(exchanges, "main", "dead-end", "k")
    to_queue(exchanges, "ae", "unrouted")
    assert route(exchanges, "main", "k", None, set()) == frozenset()
    assert route(exchanges, "main", "x", None, set()) == {"unrouted"}


def test_alternate_exchange_of_a_downstream_exchange() -> None:
    exchanges = vhost(
        Exchange("front", "fanout"),
        Exchange("back", "direct", arguments={"alternate-exchange": "ae"}),
        Exchange("ae", "fanout"),
    )
    to_exchange(exchanges, "front", "back")
    to_queue(exchanges, "back", "routed", "k")
    to_queue(exchanges, "ae", "unrouted")
    assert route(exchanges, "front", "k", None, set()) == {"routed"}
    assert route(exchanges, "front", "x", None, set()) == {"unrouted"}


def test_alternate_exchange_chains_and_cycles() -> None:
    exchanges = vhost(
        Exchange("x1", "direct", arguments={"alternate-exchange": "x2"}),
        Exchange("x2", "direct", arguments={"alternate-exchange": "x3"}),
        Exchange("x3", "direct", arguments={"alternate-exchange": "x1"}),
    )
    assert route(exchanges, "x1", "k", None, set()) == frozenset()
    to_queue(exchanges, "x3", "q3", "k")
    assert route(exchanges, "x1", "k", None, set()) == {"q3"}
    assert route(exchanges, "x2", "k", None, set()) == {"q3"}
    assert route(exchanges, "x3", "other", None, set()) == frozenset()


def test_missing_or_non_string_alternate_exchange() -> None:
    exchanges = vhost(
        Exchange("a", "direct", arguments={"alternate-exchange": "missing"}),
        Exchange("b", "direct", arguments={"alternate-exchange": 5}),
    )
    assert route(exchanges, "a", "k", None, set()) == frozenset()
    assert route(exchanges, "b", "k", None, set()) == frozenset()


def test_policy_alternate_exchange() -> None:
    exchanges = vhost(Exchange("a", "direct"))
    to_queue(exchanges, "amq.fanout", "q")
    exchanges["a"].policy_alternate_exchange = "amq.fanout"
    assert route(exchanges, "a", "k", None, set()) == {"q"}


def test_default_exchange_as_alternate_routes_nowhere() -> None:
    # RabbitMQ's default exchange has only implicit bindings, consulted for direct publishes.
    exchanges = vhost(Exchange("a", "direct", arguments={"alternate-exchange": ""}))
    assert route(exchanges, "a", "q", None, {"q"}) == frozenset()


def test_internal_exchanges_route_when_reached_through_bindings() -> None:
    exchanges = vhost(Exchange("inner", "fanout", internal=True))
    to_exchange(exchanges, "amq.fanout", "inner")
    to_queue(exchanges, "inner", "q")
    assert route(exchanges, "amq.fanout", "", None, set()) == {"q"}


# A model of RabbitMQ's walk: fanout exchanges, every exchange binding and AE taken as a graph.
_names = st.sampled_from(["e0", "e1", "e2", "e3", "e4"])


@settings(max_examples=200, deadline=None)
@given(
    edges=st.lists(st.tuples(_names, _names), max_size=12),
    queue_bindings=st.lists(st.tuples(_names, st.sampled_from(["q0", "q1", "q2"])), max_size=6),
    alternates=st.dictionaries(_names, _names, max_size=5),
    start=_names,
)
def test_route_is_the_reachable_closure(
    edges: list[tuple[str, str]],
    queue_bindings: list[tuple[str, str]],
    alternates: dict[str, str],
    start: str,
) -> None:
    exchanges = vhost(
        *(
            Exchange(
                name,
                "fanout",
                arguments={"alternate-exchange": alternates[name]} if name in alternates else None,
            )
            for name in ["e0", "e1", "e2", "e3", "e4"]
        )
    )
    for source, destination in edges:
        exchanges[source].add_binding(Binding.of(source, destination, "exchange", ""))
    for source, queue in queue_bindings:
        exchanges[source].add_binding(Binding.of(source, queue, "queue", ""))

    expected: set[str] = set()
    seen = {start}
    frontier = [start]
    while frontier:
        name = frontier.pop()
        outgoing = [d for s, d in edges if s == name]
        queues = {q for s, q in queue_bindings if s == name}
        expected |= queues
        following = (
            outgoing if (outgoing or queues) else [alternates[name]] if name in alternates else []
        )
        for nxt in following:
            if nxt not in seen:
                seen.add(nxt)
                frontier.append(nxt)
    assert route(exchanges, start, "", None, set()) == expected
