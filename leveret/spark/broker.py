"""Connections to the broker from Spark's driver and executors, with errors that say which
option is wrong (credentials, address, queue) rather than a bare client exception."""

from __future__ import annotations

import pika
import pika.exceptions

from .options import OptionError


def connect(uri: str) -> pika.BlockingConnection:
    shown = uri.split("@", 1)[-1]  # never the credentials
    try:
        return pika.BlockingConnection(pika.URLParameters(uri))
    except pika.exceptions.ProbableAuthenticationError as refused:
        raise OptionError(
            f"the broker refused the credentials of option 'uri': {refused}"
        ) from None
    except pika.exceptions.AMQPConnectionError as failed:
        raise OptionError(
            f"cannot connect to the broker of option 'uri' ({shown}): {failed!r}"
        ) from None


def check_queue(channel: pika.adapters.blocking_connection.BlockingChannel, queue: str) -> None:
    """The queue must exist (a passive declare): a missing one is an error naming it."""
    try:
        channel.queue_declare(queue, passive=True)
    except pika.exceptions.ChannelClosedByBroker as closed:
        raise OptionError(f"option 'queue': {closed.reply_text}") from None
