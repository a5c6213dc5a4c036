"""Record what pika, aio-pika and kombu send in typical sessions: the fuzzers' seed corpus.

`python -m tests.fuzz.record_transcripts` rewrites tests/fuzz/corpus/ from a fresh node.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import decimal
from collections.abc import Callable
from pathlib import Path

import aio_pika
import kombu
import pika

from tests.fuzz.recorder import RecordingRelay
from tests.support.node import InProcessNode

CORPUS = Path(__file__).parent / "corpus"

# Header values of most field types (pika has no float; aio-pika adds it).
HEADERS = {
    "text": "héllo",
    "int": 7,
    "big": 2**40,
    "neg": -3,
    "flag": True,
    "nested": {"list": [1, "two", {"three": 3}], "none": None},
    "when": datetime.datetime(2024, 1, 2, 3, 4, 5, tzinfo=datetime.UTC),
    "price": decimal.Decimal("12.34"),
}


def pika_session(url: str) -> None:
    conn = pika.BlockingConnection(pika.URLParameters(url))
    ch = conn.channel()
    ch.exchange_declare("fz.topic", "topic", durable=False, auto_delete=True)
    ch.queue_declare("fz.q", arguments={"x-max-length": 100, "x-message-ttl": 60000})
    ch.queue_bind("fz.q", "fz.topic", "a.#")
    ch.confirm_delivery()
    props = pika.BasicProperties(
        content_type="text/plain",
        content_encoding="utf-8",
        headers=HEADERS,
        delivery_mode=2,
        priority=3,
        correlation_id="c1",
        reply_to="r",
        expiration="60000",
        message_id="m1",
        timestamp=1700000000,
        type="t",
        user_id="guest",
        app_id="fuzz",
    )
    ch.basic_publish("fz.topic", "a.b", b"x" * 300, props)
    ch.basic_publish("", "fz.q", b"", pika.BasicProperties())
    ch.basic_qos(prefetch_count=5)
    ch.basic_get("fz.q", auto_ack=False)
    ch.basic_recover(requeue=True)
    for method, _, _ in ch.consume("fz.q", inactivity_timeout=0.5):
        if method is None:
            break
        ch.basic_nack(method.delivery_tag, requeue=False)
    ch.cancel()
    ch.queue_purge("fz.q")
    ch.queue_unbind("fz.q", "fz.topic", "a.#")
    ch.queue_delete("fz.q")
    tx = conn.channel()
    tx.tx_select()
    tx.basic_publish("", "nowhere", b"t", mandatory=True)
    tx.tx_rollback()
    tx.close()
    conn.close()


def pika_errors(url: str) -> None:
    conn = pika.BlockingConnection(pika.URLParameters(url))
    ch = conn.channel()
    with contextlib.suppress(pika.exceptions.ChannelClosedByBroker):
        ch.queue_declare("fz.absent", passive=True)
    ch = conn.channel()
    ch.exchange_declare("fz.headers", "headers", auto_delete=True)
    ch.exchange_bind("fz.headers", "amq.fanout")
    ch.exchange_unbind("fz.headers", "amq.fanout")
    ch.exchange_delete("fz.headers")
    conn.close()


async def _aio_pika_session(url: str) -> None:
    conn = await aio_pika.connect(url)
    async with conn:
        ch = await conn.channel(publisher_confirms=True)
        await ch.set_qos(prefetch_count=10, global_=True)
        exchange = await ch.declare_exchange("fz.direct", aio_pika.ExchangeType.DIRECT)
        queue = await ch.declare_queue(
            "", exclusive=True, arguments={"x-max-priority": 5, "x-dead-letter-exchange": ""}
        )
        await queue.bind(exchange, "k")
        await exchange.publish(
            aio_pika.Message(
                b"hello",
                headers={**HEADERS, "float": 1.5},
                priority=2,
                expiration=10,
            ),
            "k",
        )
        message = await queue.get(timeout=5)
        await message.ack()
        await exchange.publish(aio_pika.Message(b"again"), "k")
        async with queue.iterator() as messages:
            async for incoming in messages:
                await incoming.reject(requeue=False)
                break
        await queue.unbind(exchange, "k")
        await exchange.delete()


def aio_pika_session(url: str) -> None:
    asyncio.run(_aio_pika_session(url))


def kombu_session(url: str) -> None:
    with kombu.Connection(url.replace("amqp://", "pyamqp://")) as conn:
        exchange = kombu.Exchange("fz.kombu", type="direct", auto_delete=True)
        queue = kombu.Queue("fz.kombu.q", exchange, routing_key="celery", auto_delete=True)
        with conn.Producer() as producer:
            producer.publish(
                {"task": "add", "args": [1, 2]},
                exchange=exchange,
                routing_key="celery",
                declare=[queue],
                serializer="json",
                headers={"retries": 0, "eta": None},
            )
        with conn.SimpleQueue(queue) as simple:
            simple.get(timeout=5).ack()


SESSIONS: dict[str, Callable[[str], None]] = {
    "pika-session": pika_session,
    "pika-errors": pika_errors,
    "aio-pika-session": aio_pika_session,
    "kombu-session": kombu_session,
}


def record(node_port: int) -> dict[str, bytes]:
    """Each session's client bytes, by session name (one file per connection it made)."""
    recorded: dict[str, bytes] = {}
    for name, session in SESSIONS.items():
        relay = RecordingRelay(node_port)
        try:
            session(f"amqp://guest:guest@127.0.0.1:{relay.port}/")
            relay.wait_idle()
        finally:
            relay.stop()
        for index, transcript in enumerate(relay.transcripts):
            if transcript:
                recorded[f"{name}-{index}"] = bytes(transcript)
    return recorded


def main() -> None:
    node = InProcessNode()
    try:
        recorded = record(node.port)
    finally:
        node.stop()
    CORPUS.mkdir(exist_ok=True)
    for old in CORPUS.glob("*.amqp"):
        old.unlink()
    for name, data in recorded.items():
        (CORPUS / f"{name}.amqp").write_bytes(data)
        print(f"{name}: {len(data)} bytes")


if __name__ == "__main__":
    main()
