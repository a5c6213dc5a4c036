"""Publishing a task's messages with confirms: many in flight at once (a window of unconfirmed
ones), and an error naming the first message the broker nacked or returned, or the lost
connection, so that the task fails and Spark retries it."""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Sequence
from typing import cast

from federation.client import AuthenticationFailed, UpstreamClosed, UpstreamConnection
from leveret.amqp import methods as m
from leveret.amqp.methods import Method

from .consumer import shown
from .options import OptionError

# Unconfirmed messages at most: enough to keep the broker busy, few enough to bound memory.
WINDOW = 4096
_CONNECT_SECONDS = 10.0
_CONFIRM_SECONDS = 120.0  # for the last confirms once everything is written
_YIELD_EVERY = 256  # messages written between two turns of the loop (to read the confirms)
_ACK, _NACK, _RETURN = (60 << 16) | 80, (60 << 16) | 120, (60 << 16) | 50

# (exchange, routing key, content header payload, body)
Message = tuple[str, str, bytes, bytes]


class PublishFailed(RuntimeError):
    """The broker nacked or returned a message, or the connection went away before every
    message was confirmed."""


class _Confirms:
    """The sequence numbers still unconfirmed, in order, and the first failure."""

    def __init__(self) -> None:
        self.unconfirmed: dict[int, None] = {}  # ordered: multiple acks confirm a prefix
        self.failure: str | None = None
        self.room = asyncio.Event()  # set while the window has room
        self.room.set()

    def sent(self, number: int) -> None:
        self.unconfirmed[number] = None
        if len(self.unconfirmed) >= WINDOW:
            self.room.clear()

    def on_method(self, method: Method) -> bool:
        key = (method.CLASS_ID << 16) | method.METHOD_ID
        if key == _RETURN:
            returned = cast(m.BasicReturn, method)
            self.fail(
                f"a message was returned: {returned.reply_code} {returned.reply_text} "
                f"(exchange '{returned.exchange}', routing key '{returned.routing_key}')"
            )
            return True
        if key not in (_ACK, _NACK):
            return False
        settled = cast(m.BasicAck | m.BasicNack, method)
        tag = settled.delivery_tag
        if settled.multiple:
            numbers = [number for number in self.unconfirmed if number <= tag]
        else:
            numbers = [tag] if tag in self.unconfirmed else []
        for number in numbers:
            del self.unconfirmed[number]
        if key == _NACK:
            self.fail(f"the broker nacked message {numbers[0] if numbers else tag} of the task")
        if len(self.unconfirmed) < WINDOW // 2:
            self.room.set()
        return True

    def fail(self, text: str) -> None:
        if self.failure is None:
            self.failure = text
        self.room.set()

    def check(self) -> None:
        if self.failure is not None:
            raise PublishFailed(self.failure)


async def _open(uris: Sequence[str], name: str) -> UpstreamConnection:
    failures = []
    for uri in uris:
        try:
            return await UpstreamConnection.open(uri, name, _CONNECT_SECONDS)
        except AuthenticationFailed as refused:
            raise OptionError(
                f"the broker refused the credentials of option 'uri' ({shown(uri)}): {refused}"
            ) from None
        except (OSError, TimeoutError, UpstreamClosed) as failed:
            failures.append(f"{shown(uri)}: {failed or type(failed).__name__}")
    raise OptionError(f"cannot connect to the broker of option 'uri' ({'; '.join(failures)})")


async def _publish(uris: Sequence[str], messages: Iterable[Message], name: str) -> int:
    connection = await _open(uris, name)
    confirms = _Confirms()
    closed = connection.closed
    closed.add_done_callback(lambda done: confirms.fail(f"the connection ended: {done.result()}"))
    try:
        await connection.confirm_select(confirms.on_method)
        count = 0
        for count, (exchange, routing_key, header, body) in enumerate(messages, 1):
            connection.publish(exchange, routing_key, header, body, mandatory=True)
            confirms.sent(count)
            if not count % _YIELD_EVERY or not confirms.room.is_set():
                await asyncio.sleep(0)
                await confirms.room.wait()
                confirms.check()
        async with asyncio.timeout(_CONFIRM_SECONDS):
            while confirms.unconfirmed and confirms.failure is None:
                confirms.room.clear()
                await confirms.room.wait()
        confirms.check()
        return count
    finally:
        await connection.close()


def publish(uris: Sequence[str], messages: Iterable[Message], name: str) -> int:
    """Publish every message, mandatory, and return once all are confirmed (their count);
    PublishFailed or OptionError otherwise."""
    return asyncio.run(_publish(uris, messages, name))
