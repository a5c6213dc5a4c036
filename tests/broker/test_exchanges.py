"""Exchanges through pika and aio-pika: routing, bindings, special exchanges and their errors."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import aio_pika
import aiormq.exceptions
import pika
import pika.exceptions
import pytest
from pika.adapters.blocking_connection import BlockingChannel

from tests.support.reference import Target

# --- the broker under test ------------------------------------------------------------------------
# Every test runs against a Leveret node; with LEVERET_REFERENCE=rabbitmq also against a real
# RabbitMQ, the reference for every expectation here.


@pytest.fixture
def conn(target: Target) -> Iterator[pika.BlockingConnection]:
    connection = pika.BlockingConnection(pika.URLParameters(target.url))
    try:
        yield connection
    finally:
        if connection.is_open:
            connection.close()


@pytest.fixture
def ch(conn: pika.BlockingConnection) -> BlockingChannel:
    return conn.channel()


@pytest.fixture
def name() -> Callable[[str], str]:
    """Unique names, so that tests sharing one reference RabbitMQ do not meet."""
    prefix = uuid.uuid4().hex[:8]
    return lambda suffix: f"ex-{prefix}-{suffix}"


# --- helpers --------------------------------------------------------------------------------------


def drain(ch: BlockingChannel, queue: str, limit: int = 1000) -> list[bytes]:
    """Every ready message of a queue, by basic.get (bounded)."""
    bodies: list[bytes] = []
    for _ in range(limit):
        method, _props, body = ch.basic_get(queue, auto_ack=True)
        if method is None:
            return bodies
        bodies.append(body)
    raise AssertionError(f"more than {limit} messages in {queue}")


def channel_error(
    conn: pika.BlockingConnection, action: Callable[[BlockingChannel], Any]
) -> tuple[int, str]:
    """Run action on a fresh channel; return the (code, text) the broker closed the channel with."""
    channel = conn.channel()
    with pytest.raises(pika.exceptions.ChannelClosedByBroker) as caught:
        action(channel)
    assert conn.is_open, "a channel error must leave the connection open"
    return caught.value.reply_code, caught.value.reply_text


def exchange_exists(conn: pika.BlockingConnection, exchange: str) -> bool:
    channel = conn.channel()
    try:
        channel.exchange_declare(exchange, passive=True)
    except pika.exceptions.ChannelClosedByBroker as exc:
        assert exc.reply_code == 404
        return False
    channel.close()
    return True


def still_works(target: Target) -> None:
    """A fresh connection can declare, publish and get: the node survived the error."""
    other = pika.BlockingConnection(pika.URLParameters(target.url))
    try:
        channel = other.channel()
        queue = channel.queue_declare("", exclusive=True).method.queue
        channel.basic_publish("", queue, b"alive")
        assert channel.basic_get(queue, auto_ack=True)[2] == b"alive"
    finally:
        other.close()


def queues(ch: BlockingChannel, *names: str) -> None:
    for queue in names:
        ch.queue_declare(queue, exclusive=True)


# --- routing by type ------------------------------------------------------------------------------


def test_direct_routes_by_exact_key(ch: BlockingChannel, name: Callable[[str], str]) -> None:
    ex, qa, qb = name("direct"), name("qa"), name("qb")
    ch.exchange_declare(ex, "direct")
    queues(ch, qa, qb)
    ch.queue_bind(qa, ex, "red")
    ch.queue_bind(qb, ex, "red")
    ch.queue_bind(qb, ex, "green")
    for key in ["red", "green", "blue", "Red", ""]:
        ch.basic_publish(ex, key, key.encode())
    assert drain(ch, qa) == [b"red"]
    assert drain(ch, qb) == [b"red", b"green"]


def test_one_queue_bound_twice_gets_one_copy(
    ch: BlockingChannel, name: Callable[[str], str]
) -> None:
    q = name("q")
    queues(ch, q)
    ch.queue_bind(q, "amq.topic", "a.*")
    ch.queue_bind(q, "amq.topic", "#")
    ch.basic_publish("amq.topic", "a.b", b"once")
    assert drain(ch, q) == [b"once"]


def test_fanout_ignores_the_routing_key(ch: BlockingChannel, name: Callable[[str], str]) -> None:
    ex, qa, qb = name("fanout"), name("qa"), name("qb")
    ch.exchange_declare(ex, "fanout")
    queues(ch, qa, qb)
    ch.queue_bind(qa, ex, "ignored")
    ch.queue_bind(qb, ex)
    ch.basic_publish(ex, "whatever", b"1")
    ch.basic_publish(ex, "", b"2")
    assert drain(ch, qa) == [b"1", b"2"]
    assert drain(ch, qb) == [b"1", b"2"]


@pytest.mark.parametrize(
    ("pattern", "matching", "not_matching"),
    [
        ("a.*.c", ["a.b.c", "a..c"], ["a.c", "a.b.b.c", "a.b.c.d", "x.b.c"]),
        ("a.#", ["a", "a.b", "a.b.c"], ["b.a", "ab", ""]),
        ("#.c", ["c", "a.c", "a.b.c"], ["c.a", "a.cc"]),
        ("a.#.c", ["a.c", "a.b.c", "a.b.b.c"], ["a.b", "b.a.c"]),
        ("*", ["a"], ["a.b", ""]),
        ("#", ["", "a", "a.b.c"], []),
        ("*.*", ["a.b", "."], ["a", "a.b.c"]),
        ("", [""], ["a"]),
        ("a.*.#", ["a.b", "a.b.c"], ["a"]),
        ("#.*", ["a", "a.b"], [""]),
        ("*.#.*", ["a.b", "a.b.c"], ["a"]),
        ("#.#", ["", "a", "a.b"], []),
        ("a.#.#.b", ["a.b", "a.x.b", "a.x.y.b"], ["a", "b", "b.a"]),
        ("a.b", ["a.b"], ["a.b.", ".a.b", "a.bb"]),
    ],
)
def test_topic_patterns(
    ch: BlockingChannel,
    name: Callable[[str], str],
    pattern: str,
    matching: list[str],
    not_matching: list[str],
) -> None:
    ex, q = name("topic"), name("q")
    ch.exchange_declare(ex, "topic")
    queues(ch, q)
    ch.queue_bind(q, ex, pattern)
    for key in matching + not_matching:
        ch.basic_publish(ex, key, key.encode())
    assert drain(ch, q) == [key.encode() for key in matching]


def _headers_routing(
    ch: BlockingChannel,
    name: Callable[[str], str],
    binding: dict[str, Any],
    messages: list[dict[str, Any] | None],
) -> list[int]:
    """Bind one queue with `binding` to a new headers exchange; return the indexes of the messages
    it got."""
    ex, q = name("headers"), name("q")
    ch.exchange_declare(ex, "headers")
    queues(ch, q)
    ch.queue_bind(q, ex, "", arguments=binding)
    for index, headers in enumerate(messages):
        ch.basic_publish(ex, "key", str(index).encode(), pika.BasicProperties(headers=headers))
    return [int(body) for body in drain(ch, q)]


HEADER_MESSAGES: list[dict[str, Any] | None] = [
    {"k": "v", "n": 1},  # 0: both
    {"k": "v"},  # 1: one
    {"k": "w", "n": 1},  # 2: one, the other wrong
    {"k": "v", "n": 1, "x-tag": "t"},  # 3: both, and an x- header
    {"x-tag": "t"},  # 4: only the x- header
    None,  # 5: no headers at all
    {"K": "v", "n": "1"},  # 6: wrong case, wrong type
    {"k": "v", "n": 1, "extra": True},  # 7: both and more
]


@pytest.mark.parametrize(
    ("binding", "expected"),
    [
        ({"x-match": "all", "k": "v", "n": 1}, [0, 3, 7]),
        ({"k": "v", "n": 1}, [0, 3, 7]),  # all is the default
        ({"x-match": "any", "k": "v", "n": 1}, [0, 1, 2, 3, 7]),
        ({"x-match": "all", "k": "v", "x-tag": "t"}, [0, 1, 3, 7]),  # x- arguments are not compared
        ({"x-match": "any", "x-tag": "t"}, []),  # ... so nothing is left to match any of
        ({"x-match": "all-with-x", "k": "v", "x-tag": "t"}, [3]),
        ({"x-match": "any-with-x", "x-tag": "t"}, [3, 4]),
        ({"x-match": "all"}, [0, 1, 2, 3, 4, 5, 6, 7]),  # no conditions: everything
        ({"x-match": "any"}, []),
        ({"x-match": "all", "k": None}, [0, 1, 2, 3, 7]),  # void: the header must only be present
    ],
    ids=[
        "all",
        "default-all",
        "any",
        "all-ignores-x",
        "any-only-x",
        "all-with-x",
        "any-with-x",
        "all-empty",
        "any-empty",
        "all-void",
    ],
)
def test_headers_matching(
    ch: BlockingChannel, name: Callable[[str], str], binding: dict[str, Any], expected: list[int]
) -> None:
    assert _headers_routing(ch, name, binding, HEADER_MESSAGES) == expected


@pytest.mark.parametrize(
    ("bound", "values", "expected"),
    [
        (1, [1, 1.0, True, "1", 300, 2**40], [0, 1]),
        (2**40, [2**40, 2**40 + 1, float(2**40)], [0, 2]),
        (1.5, [1.5, 1, "1.5"], [0]),
        (True, [True, 1, "true", False], [0]),
        ("v", ["v", "V", " v"], [0]),
    ],
    ids=["int", "long", "float", "bool", "string"],
)
def test_headers_compare_values(
    target: Target, name: Callable[[str], str], bound: Any, values: list[Any], expected: list[int]
) -> None:
    """Numbers compare by value whatever their width or kind; booleans and strings do not equal
    numbers. (aio-pika here: pika cannot send floats in tables.)"""

    async def scenario() -> list[int]:
        connection = await aio_pika.connect(target.url)
        async with connection:
            channel = await connection.channel()
            exchange = await channel.declare_exchange(name("typed"), aio_pika.ExchangeType.HEADERS)
            queue = await channel.declare_queue(name("q"), exclusive=True)
            await queue.bind(exchange, arguments={"x-match": "all", "h": bound})
            for index, value in enumerate(values):
                await exchange.publish(
                    aio_pika.Message(str(index).encode(), headers={"h": value}), ""
                )
            routed = []
            while (message := await queue.get(no_ack=True, fail=False)) is not None:
                routed.append(int(message.body))
            return routed

    assert asyncio.run(asyncio.wait_for(scenario(), 20)) == expected


def test_headers_ignores_the_routing_key_and_amq_match_is_headers(
    ch: BlockingChannel, name: Callable[[str], str]
) -> None:
    q = name("q")
    queues(ch, q)
    ch.queue_bind(q, "amq.match", "some-key", arguments={"x-match": "any", "a": 1})
    ch.basic_publish("amq.match", "other-key", b"hit", pika.BasicProperties(headers={"a": 1}))
    ch.basic_publish("amq.match", "some-key", b"miss", pika.BasicProperties(headers={"a": 2}))
    assert drain(ch, q) == [b"hit"]


def test_headers_invalid_x_match(
    conn: pika.BlockingConnection, name: Callable[[str], str], target: Target
) -> None:
    q = name("q")
    conn.channel().queue_declare(q)
    code, text = channel_error(
        conn, lambda c: c.queue_bind(q, "amq.headers", arguments={"x-match": "some"})
    )
    assert code == 406
    assert text == (
        'PRECONDITION_FAILED - Invalid x-match field value <<"some">>; '
        "expected all, any, all-with-x, or any-with-x"
    )
    still_works(target)


# --- exchange-to-exchange bindings, alternate and internal exchanges ------------------------------


def test_exchange_to_exchange_bindings(ch: BlockingChannel, name: Callable[[str], str]) -> None:
    top, middle, q1, q2 = name("top"), name("middle"), name("q1"), name("q2")
    ch.exchange_declare(top, "topic")
    ch.exchange_declare(middle, "direct")
    queues(ch, q1, q2)
    ch.exchange_bind(middle, top, "stock.#")
    ch.queue_bind(q1, middle, "stock.nyse")
    ch.queue_bind(q2, top, "#")
    for key in ["stock.nyse", "stock.lse", "bond.nyse"]:
        ch.basic_publish(top, key, key.encode())
    assert drain(ch, q1) == [b"stock.nyse"]
    assert drain(ch, q2) == [b"stock.nyse", b"stock.lse", b"bond.nyse"]
    ch.exchange_unbind(middle, top, "stock.#")
    ch.basic_publish(top, "stock.nyse", b"after")
    assert drain(ch, q1) == []
    assert drain(ch, q2) == [b"after"]


def test_exchange_binding_cycles_deliver_once(
    ch: BlockingChannel, name: Callable[[str], str]
) -> None:
    a, b, c, qa, qc = name("a"), name("b"), name("c"), name("qa"), name("qc")
    for ex in (a, b, c):
        ch.exchange_declare(ex, "fanout")
    queues(ch, qa, qc)
    ch.exchange_bind(b, a)
    ch.exchange_bind(c, b)
    ch.exchange_bind(a, c)  # a -> b -> c -> a
    ch.exchange_bind(a, a)  # and a self-loop
    ch.queue_bind(qa, a)
    ch.queue_bind(qc, c)
    ch.basic_publish(b, "", b"round")
    assert drain(ch, qa) == [b"round"]
    assert drain(ch, qc) == [b"round"]


def test_alternate_exchange_gets_what_routes_nowhere(
    ch: BlockingChannel, name: Callable[[str], str]
) -> None:
    main, alternate, q, lost = name("main"), name("alt"), name("q"), name("lost")
    ch.exchange_declare(alternate, "fanout")
    ch.exchange_declare(main, "direct", arguments={"alternate-exchange": alternate})
    queues(ch, q, lost)
    ch.queue_bind(q, main, "known")
    ch.queue_bind(lost, alternate)
    ch.confirm_delivery()
    ch.basic_publish(main, "known", b"routed", mandatory=True)
    # Routed through the alternate exchange counts as routed: no basic.return.
    ch.basic_publish(main, "unknown", b"alternate", mandatory=True)
    assert drain(ch, q) == [b"routed"]
    assert drain(ch, lost) == [b"alternate"]


def test_alternate_exchange_missing_or_unrouted_returns_mandatory(
    ch: BlockingChannel, name: Callable[[str], str]
) -> None:
    main, alternate = name("main"), name("alt")
    ch.exchange_declare(main, "direct", arguments={"alternate-exchange": name("missing")})
    ch.exchange_declare(
        alternate, "direct", arguments={"alternate-exchange": main}
    )  # a cycle of alternates
    ch.exchange_declare(name("main2"), "direct", arguments={"alternate-exchange": alternate})
    ch.confirm_delivery()
    for ex in (main, name("main2")):
        with pytest.raises(pika.exceptions.UnroutableError) as caught:
            ch.basic_publish(ex, "k", b"x", mandatory=True)
        [returned] = caught.value.messages
        assert (returned.method.reply_code, returned.method.reply_text) == (312, "NO_ROUTE")
        assert returned.method.exchange == ex


def test_alternate_exchange_applies_to_each_exchange_on_its_own(
    ch: BlockingChannel, name: Callable[[str], str]
) -> None:
    """An exchange that routed to another exchange has routed, even if that one routes nowhere."""
    front, back, front_alt, back_alt = (
        name("front"),
        name("back"),
        name("front-alt"),
        name("back-alt"),
    )
    q_front, q_back = name("q-front"), name("q-back")
    ch.exchange_declare(front_alt, "fanout")
    ch.exchange_declare(back_alt, "fanout")
    ch.exchange_declare(front, "direct", arguments={"alternate-exchange": front_alt})
    ch.exchange_declare(back, "direct", arguments={"alternate-exchange": back_alt})
    queues(ch, q_front, q_back)
    ch.queue_bind(q_front, front_alt)
    ch.queue_bind(q_back, back_alt)
    ch.exchange_bind(back, front, "to-back")
    ch.basic_publish(front, "to-back", b"via back")
    ch.basic_publish(front, "elsewhere", b"via front")
    assert drain(ch, q_front) == [b"via front"]
    assert drain(ch, q_back) == [b"via back"]


def test_alternate_exchange_chain(ch: BlockingChannel, name: Callable[[str], str]) -> None:
    first, second, third, q = name("first"), name("second"), name("third"), name("q")
    ch.exchange_declare(third, "fanout")
    ch.exchange_declare(second, "direct", arguments={"alternate-exchange": third})
    ch.exchange_declare(first, "direct", arguments={"alternate-exchange": second})
    queues(ch, q)
    ch.queue_bind(q, third)
    ch.basic_publish(first, "k", b"far")
    assert drain(ch, q) == [b"far"]


def test_internal_exchange_refuses_publish_but_routes_bound_traffic(
    conn: pika.BlockingConnection, name: Callable[[str], str], target: Target
) -> None:
    ch = conn.channel()
    front, inner, q = name("front"), name("inner"), name("q")
    ch.exchange_declare(front, "fanout")
    ch.exchange_declare(inner, "fanout", internal=True)
    ch.queue_declare(q)
    ch.exchange_bind(inner, front)
    ch.queue_bind(q, inner)
    ch.basic_publish(front, "", b"through")
    assert drain(ch, q) == [b"through"]
    code, text = channel_error(
        conn, lambda c: (c.basic_publish(inner, "", b"direct"), c.queue_declare(q, passive=True))
    )
    assert (code, text) == (
        403,
        f"ACCESS_REFUSED - cannot publish to internal exchange '{inner}' in vhost '/'",
    )
    assert drain(conn.channel(), q) == []
    still_works(target)


def test_publish_to_missing_exchange(
    conn: pika.BlockingConnection, name: Callable[[str], str]
) -> None:
    missing = name("missing")
    code, text = channel_error(
        conn, lambda c: (c.basic_publish(missing, "", b"x"), c.queue_declare("", exclusive=True))
    )
    assert (code, text) == (404, f"NOT_FOUND - no exchange '{missing}' in vhost '/'")


# --- auto-delete, delete, bind and unbind ---------------------------------------------------------


def test_auto_delete_exchange_goes_with_its_last_binding(
    conn: pika.BlockingConnection, name: Callable[[str], str]
) -> None:
    ch = conn.channel()
    ex, qa, qb = name("auto"), name("qa"), name("qb")
    ch.exchange_declare(ex, "direct", auto_delete=True)
    assert exchange_exists(conn, ex), "an auto-delete exchange lives until it has had a binding"
    ch.queue_declare(qa)
    ch.queue_declare(qb)
    ch.queue_bind(qa, ex, "a")
    ch.queue_bind(qb, ex, "b")
    ch.queue_unbind(qa, ex, "a")
    assert exchange_exists(conn, ex)
    ch.queue_unbind(qb, ex, "b")
    assert not exchange_exists(conn, ex)


def test_auto_delete_exchange_goes_when_its_last_queue_is_deleted(
    conn: pika.BlockingConnection, name: Callable[[str], str]
) -> None:
    ch = conn.channel()
    ex, q = name("auto"), name("q")
    ch.exchange_declare(ex, "fanout", auto_delete=True)
    ch.queue_declare(q)
    ch.queue_bind(q, ex)
    ch.queue_delete(q)
    assert not exchange_exists(conn, ex)


def test_auto_delete_exchange_goes_when_its_destination_exchange_is_deleted(
    conn: pika.BlockingConnection, name: Callable[[str], str]
) -> None:
    ch = conn.channel()
    source, destination = name("auto-source"), name("destination")
    ch.exchange_declare(source, "fanout", auto_delete=True)
    ch.exchange_declare(destination, "fanout")
    ch.exchange_bind(destination, source)
    ch.exchange_delete(destination)
    assert not exchange_exists(conn, source)


def test_auto_delete_exchange_stays_while_only_a_destination(
    conn: pika.BlockingConnection, name: Callable[[str], str]
) -> None:
    ch = conn.channel()
    source, destination = name("source"), name("auto-destination")
    ch.exchange_declare(source, "fanout")
    ch.exchange_declare(destination, "fanout", auto_delete=True)
    ch.exchange_bind(destination, source)
    ch.exchange_unbind(destination, source)
    assert exchange_exists(conn, destination)
    ch.exchange_bind(destination, source)
    ch.exchange_delete(source)
    assert exchange_exists(conn, destination)


def test_delete_if_unused(
    conn: pika.BlockingConnection, name: Callable[[str], str], target: Target
) -> None:
    ch = conn.channel()
    used, destination_only, q = name("used"), name("destination-only"), name("q")
    ch.exchange_declare(used, "direct")
    ch.exchange_declare(destination_only, "direct")
    ch.queue_declare(q)
    ch.queue_bind(q, used, "k")
    ch.exchange_bind(destination_only, used, "k")
    code, text = channel_error(conn, lambda c: c.exchange_delete(used, if_unused=True))
    assert (code, text) == (406, f"PRECONDITION_FAILED - exchange '{used}' in vhost '/' in use")
    assert exchange_exists(conn, used)
    # Only bindings with the exchange as source make it used.
    conn.channel().exchange_delete(destination_only, if_unused=True)
    assert not exchange_exists(conn, destination_only)
    ch = conn.channel()
    ch.queue_unbind(q, used, "k")
    ch.exchange_delete(used, if_unused=True)
    assert not exchange_exists(conn, used)
    still_works(target)


def test_delete_missing_exchange_succeeds(ch: BlockingChannel, name: Callable[[str], str]) -> None:
    ch.exchange_delete(name("never-declared"))
    ch.exchange_delete(name("never-declared"), if_unused=True)


def test_deleting_an_exchange_removes_its_bindings(
    ch: BlockingChannel, name: Callable[[str], str]
) -> None:
    ex, q = name("gone"), name("q")
    ch.exchange_declare(ex, "fanout")
    queues(ch, q)
    ch.queue_bind(q, ex)
    ch.exchange_delete(ex)
    ch.exchange_declare(ex, "fanout")
    ch.basic_publish(ex, "", b"unbound")
    assert drain(ch, q) == []


@pytest.mark.parametrize(
    ("exchange", "text"),
    [
        ("", "ACCESS_REFUSED - operation not permitted on the default exchange"),
        (
            "amq.direct",
            "ACCESS_REFUSED - deletion of system exchange 'amq.direct' in vhost '/' not allowed",
        ),
        (
            "amq.fanout",
            "ACCESS_REFUSED - deletion of system exchange 'amq.fanout' in vhost '/' not allowed",
        ),
        (
            "amq.topic",
            "ACCESS_REFUSED - deletion of system exchange 'amq.topic' in vhost '/' not allowed",
        ),
        (
            "amq.headers",
            "ACCESS_REFUSED - deletion of system exchange 'amq.headers' in vhost '/' not allowed",
        ),
        (
            "amq.match",
            "ACCESS_REFUSED - deletion of system exchange 'amq.match' in vhost '/' not allowed",
        ),
    ],
)
def test_delete_reserved_exchanges_refused(
    conn: pika.BlockingConnection, target: Target, exchange: str, text: str
) -> None:
    assert channel_error(conn, lambda c: c.exchange_delete(exchange)) == (403, text)
    if exchange:
        assert exchange_exists(conn, exchange)
    still_works(target)


@pytest.mark.parametrize(
    "action",
    [
        lambda c, q: c.queue_bind(q, "", q),
        lambda c, q: c.queue_unbind(q, "", q),
        lambda c, q: c.exchange_bind("amq.direct", "", "k"),
        lambda c, q: c.exchange_bind("", "amq.direct", "k"),
    ],
    ids=["queue.bind", "queue.unbind", "exchange.bind-from", "exchange.bind-to"],
)
def test_default_exchange_cannot_be_bound(
    conn: pika.BlockingConnection,
    name: Callable[[str], str],
    action: Callable[[BlockingChannel, str], Any],
) -> None:
    q = name("q")
    conn.channel().queue_declare(q)
    code, text = channel_error(conn, lambda c: action(c, q))
    assert (code, text) == (403, "ACCESS_REFUSED - operation not permitted on the default exchange")


def test_unknown_exchange_type_closes_the_connection(
    conn: pika.BlockingConnection, name: Callable[[str], str], target: Target
) -> None:
    ch = conn.channel()
    with pytest.raises(pika.exceptions.ConnectionClosedByBroker) as caught:
        ch.exchange_declare(name("odd"), "x-no-such-type")
    assert caught.value.reply_code == 503
    assert caught.value.reply_text == "COMMAND_INVALID - unknown exchange type 'x-no-such-type'"
    still_works(target)


def test_inequivalent_redeclare(conn: pika.BlockingConnection, name: Callable[[str], str]) -> None:
    ex = name("typed")
    conn.channel().exchange_declare(ex, "direct")
    code, text = channel_error(conn, lambda c: c.exchange_declare(ex, "topic"))
    assert (code, text) == (
        406,
        (
            f"PRECONDITION_FAILED - inequivalent arg 'type' for exchange '{ex}' in vhost '/': "
            "received 'topic' but current is 'direct'"
        ),
    )
    code, text = channel_error(conn, lambda c: c.exchange_declare(ex, "direct", durable=True))
    assert (code, text) == (
        406,
        (
            f"PRECONDITION_FAILED - inequivalent arg 'durable' for exchange '{ex}' in vhost '/': "
            "received 'true' but current is 'false'"
        ),
    )


def test_bind_and_unbind_are_idempotent(ch: BlockingChannel, name: Callable[[str], str]) -> None:
    ex, q = name("direct"), name("q")
    ch.exchange_declare(ex, "direct")
    queues(ch, q)
    ch.queue_bind(q, ex, "k")
    ch.queue_bind(q, ex, "k")
    ch.basic_publish(ex, "k", b"one copy")
    assert drain(ch, q) == [b"one copy"]
    ch.queue_unbind(q, ex, "k")
    ch.queue_unbind(q, ex, "k")
    ch.queue_unbind(q, ex, "never-bound")
    ch.exchange_bind(ex, "amq.direct", "k")
    ch.exchange_bind(ex, "amq.direct", "k")
    ch.exchange_unbind(ex, "amq.direct", "k")
    ch.exchange_unbind(ex, "amq.direct", "k")
    ch.basic_publish(ex, "k", b"unbound")
    assert drain(ch, q) == []


def test_bindings_differ_by_arguments(ch: BlockingChannel, name: Callable[[str], str]) -> None:
    q = name("q")
    queues(ch, q)
    ch.queue_bind(q, "amq.headers", arguments={"x-match": "any", "a": 1})
    ch.queue_bind(q, "amq.headers", arguments={"x-match": "any", "b": 1})
    ch.queue_unbind(q, "amq.headers", arguments={"x-match": "any", "a": 1})
    ch.basic_publish("amq.headers", "", b"a", pika.BasicProperties(headers={"a": 1}))
    ch.basic_publish("amq.headers", "", b"b", pika.BasicProperties(headers={"b": 1}))
    assert drain(ch, q) == [b"b"]


@pytest.mark.parametrize(
    ("action", "missing_kind"),
    [
        (lambda c, ex, q: c.queue_bind(q, ex + "-missing", "k"), "exchange"),
        (lambda c, ex, q: c.queue_bind(q + "-missing", ex, "k"), "queue"),
        (lambda c, ex, q: c.exchange_bind(ex + "-missing", ex, "k"), "exchange"),
        (lambda c, ex, q: c.exchange_bind(ex, ex + "-missing", "k"), "exchange"),
    ],
    ids=[
        "queue.bind-no-exchange",
        "queue.bind-no-queue",
        "exchange.bind-no-destination",
        "exchange.bind-no-source",
    ],
)
def test_bind_to_missing(
    conn: pika.BlockingConnection,
    name: Callable[[str], str],
    action: Callable[[BlockingChannel, str, str], Any],
    missing_kind: str,
) -> None:
    ex, q = name("ex"), name("q")
    ch = conn.channel()
    ch.exchange_declare(ex, "direct")
    ch.queue_declare(q)
    code, text = channel_error(conn, lambda c: action(c, ex, q))
    assert code == 404
    assert text.startswith(f"NOT_FOUND - no {missing_kind} '") and text.endswith(
        "-missing' in vhost '/'"
    )


def test_unbind_from_missing_exchange_or_queue_succeeds(
    ch: BlockingChannel, name: Callable[[str], str]
) -> None:
    ex, q = name("ex"), name("q")
    ch.exchange_declare(ex, "direct")
    queues(ch, q)
    ch.queue_unbind(q, name("missing-exchange"), "k")
    ch.exchange_unbind(ex, name("missing-source"), "k")
    ch.exchange_unbind(name("missing-destination"), ex, "k")


def test_deleted_queue_loses_its_bindings(ch: BlockingChannel, name: Callable[[str], str]) -> None:
    ex, q = name("direct"), name("q")
    ch.exchange_declare(ex, "direct")
    ch.queue_declare(q)
    ch.queue_bind(q, ex, "k")
    ch.queue_delete(q)
    ch.queue_declare(q)
    ch.basic_publish(ex, "k", b"not for the new queue")
    assert drain(ch, q) == []
    ch.queue_delete(q)


def test_exclusive_queue_bindings_go_with_its_connection(
    target: Target, conn: pika.BlockingConnection, name: Callable[[str], str]
) -> None:
    ch = conn.channel()
    ex, auto, q = name("direct"), name("auto"), name("q")
    ch.exchange_declare(ex, "direct")
    ch.exchange_declare(auto, "direct", auto_delete=True)
    other = pika.BlockingConnection(pika.URLParameters(target.url))
    other.channel().queue_declare(q, exclusive=True)
    other.channel().queue_bind(q, ex, "k")
    other.channel().queue_bind(q, auto, "k")
    other.close()
    ch.confirm_delivery()
    with pytest.raises(pika.exceptions.UnroutableError):
        ch.basic_publish(ex, "k", b"x", mandatory=True)
    assert not exchange_exists(conn, auto)


# --- aio-pika -------------------------------------------------------------------------------------


def test_aio_pika_topic_headers_and_exchange_bindings(
    target: Target, name: Callable[[str], str]
) -> None:
    async def scenario() -> dict[str, list[bytes]]:
        connection = await aio_pika.connect(target.url)
        async with connection:
            channel = await connection.channel()
            topic = await channel.declare_exchange(name("aio-topic"), aio_pika.ExchangeType.TOPIC)
            headers = await channel.declare_exchange(
                name("aio-headers"), aio_pika.ExchangeType.HEADERS
            )
            await headers.bind(topic, "events.#")
            by_key = await channel.declare_queue(name("by-key"), exclusive=True)
            by_header = await channel.declare_queue(name("by-header"), exclusive=True)
            await by_key.bind(topic, "events.*.created")
            await by_header.bind(headers, arguments={"x-match": "all", "kind": "audit"})
            for key, kind in [
                ("events.user.created", "audit"),
                ("events.user.deleted", "audit"),
                ("events.user.created", "plain"),
                ("other.user.created", "audit"),
            ]:
                await topic.publish(
                    aio_pika.Message(f"{key}/{kind}".encode(), headers={"kind": kind}), key
                )
            got: dict[str, list[bytes]] = {}
            for queue in (by_key, by_header):
                bodies = []
                while (message := await queue.get(no_ack=True, fail=False)) is not None:
                    bodies.append(message.body)
                got[queue.name] = bodies
            return got

    got = asyncio.run(asyncio.wait_for(scenario(), 20))
    assert got == {
        name("by-key"): [b"events.user.created/audit", b"events.user.created/plain"],
        name("by-header"): [b"events.user.created/audit", b"events.user.deleted/audit"],
    }


def test_aio_pika_alternate_and_internal(target: Target, name: Callable[[str], str]) -> None:
    async def scenario() -> tuple[list[bytes], str]:
        connection = await aio_pika.connect(target.url)
        async with connection:
            channel = await connection.channel()
            alternate = await channel.declare_exchange(
                name("aio-alt"), aio_pika.ExchangeType.FANOUT, internal=True
            )
            main = await channel.declare_exchange(
                name("aio-main"),
                aio_pika.ExchangeType.DIRECT,
                arguments={"alternate-exchange": alternate.name},
            )
            lost = await channel.declare_queue(name("aio-lost"), exclusive=True)
            await lost.bind(alternate)
            await main.publish(aio_pika.Message(b"nowhere"), "no-binding")
            bodies = []
            while (message := await lost.get(no_ack=True, fail=False)) is not None:
                bodies.append(message.body)
            refused = await connection.channel()
            internal = await refused.get_exchange(alternate.name, ensure=False)
            with pytest.raises(aiormq.exceptions.ChannelAccessRefused) as caught:
                await internal.publish(aio_pika.Message(b"direct"), "")
                await refused.declare_queue(name("never"), exclusive=True)
            return bodies, caught.value.args[0]

    bodies, text = asyncio.run(asyncio.wait_for(scenario(), 20))
    assert bodies == [b"nowhere"]
    assert (
        text
        == f"ACCESS_REFUSED - cannot publish to internal exchange '{name('aio-alt')}' in vhost '/'"
    )
