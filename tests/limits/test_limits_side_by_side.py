"""Vhost and user limits reached and refused, on Leveret and on RabbitMQ 3.10.8, with the same
codes, texts and management API answers."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import pika
import pika.exceptions
import pytest

from tests.limits.conftest import Broker
from tests.support.node import wait_for

pytestmark = pytest.mark.rabbitmq


def _refusal(error: BaseException) -> tuple[int, str]:
    """The (code, text) of a refused connection or closed channel, however pika wraps it."""
    while error.args and isinstance(error.args[0], BaseException):
        error = error.args[0]
    if isinstance(error, pika.exceptions.ProbableAccessDeniedError):
        text = str(error.args[0])
        code, _, reason = text.partition(") ")
        return int(code.rsplit("(", 1)[1]), reason.strip('"')
    assert isinstance(
        error, pika.exceptions.ConnectionClosedByBroker | pika.exceptions.ChannelClosedByBroker
    ), repr(error)
    return error.reply_code, error.reply_text


def _first_connection(url: str) -> pika.BlockingConnection:
    """The one connection a limit of 1 allows, once the broker no longer counts those closed
    before: RabbitMQ forgets a closed connection a moment after its socket closed (its
    connection tracking is asynchronous), so a connection made at once may still be refused."""

    def attempt() -> pika.BlockingConnection | None:
        try:
            return pika.BlockingConnection(pika.URLParameters(url))
        except pika.exceptions.ProbableAccessDeniedError:
            return None

    connection: pika.BlockingConnection = wait_for(attempt, 5, 0.1)
    return connection


# Permissions to configure, write and read every resource.
_EVERYTHING = {"configure": ".*", "write": ".*", "read": ".*"}


@contextlib.contextmanager
def _own_vhost(broker: Broker, name: str) -> Iterator[str]:
    """A vhost no other test connects to, guest allowed in; the URL of guest's connections.

    Connection limits are tested on a vhost and a user of their own because RabbitMQ 3.10.8
    sometimes keeps counting, for good, a connection closed in the seconds after it booted: on
    '/' and guest, a limit of 1 would then refuse every later connection.
    """
    assert broker.http("PUT", f"/api/vhosts/{name}", {})[0] in (201, 204)
    assert broker.http("PUT", f"/api/permissions/{name}/guest", _EVERYTHING)[0] in (201, 204)
    try:
        yield broker.url(vhost=name)
    finally:
        broker.http("DELETE", f"/api/vhosts/{name}")


@contextlib.contextmanager
def _own_user(broker: Broker, name: str) -> Iterator[str]:
    """A user nobody else connects as, allowed into '/'; the URL of its connections."""
    user = {"password": name, "tags": ""}
    assert broker.http("PUT", f"/api/users/{name}", user)[0] in (201, 204)
    assert broker.http("PUT", f"/api/permissions/%2F/{name}", _EVERYTHING)[0] in (201, 204)
    try:
        yield broker.url(user=name, password=name)
    finally:
        broker.http("DELETE", f"/api/users/{name}")


def test_vhost_connection_limit_refuses_the_next_connection(broker: Broker) -> None:
    with _own_vhost(broker, "limits-connections") as url:
        path = "/api/vhost-limits/limits-connections/max-connections"
        assert broker.http("PUT", path, {"value": 1})[0] == 204
        with (
            _first_connection(url),
            pytest.raises(pika.exceptions.AMQPConnectionError) as refused,
        ):
            pika.BlockingConnection(pika.URLParameters(url))
        text = (
            "NOT_ALLOWED - access to vhost 'limits-connections' refused for user 'guest': "
            "connection limit (1) is reached"
        )
        assert _refusal(refused.value) == (530, text)
        # Once the first has closed, a connection is accepted again.
        _first_connection(url).close()


def test_vhost_connection_limit_zero_refuses_every_connection(broker: Broker) -> None:
    broker.http("PUT", "/api/vhost-limits/%2F/max-connections", {"value": 0})
    with pytest.raises(pika.exceptions.AMQPConnectionError) as refused:
        pika.BlockingConnection(pika.URLParameters(broker.url()))
    assert _refusal(refused.value)[1].endswith("connection limit (0) is reached")


def test_queue_limit_refuses_new_queues_not_redeclares(broker: Broker) -> None:
    with pika.BlockingConnection(pika.URLParameters(broker.url())) as connection:
        channel = connection.channel()
        channel.queue_declare("limits-q1")
        try:
            broker.http("PUT", "/api/vhost-limits/%2F/max-queues", {"value": 1})
            channel.queue_declare("limits-q1")  # redeclaring is not a new queue
            channel.queue_declare("limits-q1", passive=True)
            with pytest.raises(pika.exceptions.ChannelClosedByBroker) as refused:
                channel.queue_declare("limits-q2")
            text = (
                "PRECONDITION_FAILED - cannot declare queue 'limits-q2': queue limit in vhost "
                "'/' (1) is reached"
            )
            assert _refusal(refused.value) == (406, text)
            status, body = broker.http("PUT", "/api/queues/%2F/limits-api", {})
            assert (status, body["reason"]) == (
                400,
                "cannot declare queue 'limits-api': queue limit in vhost '/' (1) is reached",
            )
        finally:
            broker.http("DELETE", "/api/vhost-limits/%2F/max-queues")
            connection.channel().queue_delete("limits-q1")


def test_negative_limit_means_no_limit(broker: Broker) -> None:
    broker.http("PUT", "/api/vhost-limits/%2F/max-connections", {"value": -1})
    first = pika.BlockingConnection(pika.URLParameters(broker.url()))
    second = pika.BlockingConnection(pika.URLParameters(broker.url()))
    first.close()
    second.close()


def test_user_connection_and_channel_limits(broker: Broker) -> None:
    with _own_user(broker, "limits-user") as url:
        broker.http("PUT", "/api/user-limits/limits-user/max-connections", {"value": 1})
        broker.http("PUT", "/api/user-limits/limits-user/max-channels", {"value": 2})
        connection = _first_connection(url)
        try:
            with pytest.raises(pika.exceptions.AMQPConnectionError) as refused:
                pika.BlockingConnection(pika.URLParameters(url))
            text = (
                "NOT_ALLOWED - connection refused for user 'limits-user': user connection "
                "limit (1) is reached"
            )
            assert _refusal(refused.value) == (530, text)
            connection.channel()
            connection.channel()
            with pytest.raises(pika.exceptions.ConnectionClosedByBroker) as closed:
                connection.channel()
            text = (
                "NOT_ALLOWED - number of channels opened for user 'limits-user' has reached "
                "the maximum allowed user limit of (2)"
            )
            assert _refusal(closed.value) == (530, text)
        finally:
            if connection.is_open:
                connection.close()


def test_limits_api_answers(broker: Broker) -> None:
    """Listing, validation and deletion through the management API, answer for answer."""
    answers = [
        broker.http("PUT", "/api/vhost-limits/%2F/max-queues", {"value": 7}),
        broker.http("GET", "/api/vhost-limits"),
        broker.http("GET", "/api/vhost-limits/%2F"),
        broker.http("GET", "/api/parameters/vhost-limits"),
        broker.http("PUT", "/api/vhost-limits/%2F/max-queues", {"value": "x"}),
        broker.http("PUT", "/api/vhost-limits/%2F/max-queues", {"value": 1.5}),
        broker.http("PUT", "/api/vhost-limits/%2F/max-queues", {}),
        broker.http("PUT", "/api/vhost-limits/%2F/bogus", {"value": 3}),
        broker.http("PUT", "/api/vhost-limits/nosuch/max-queues", {"value": 3}),
        broker.http("GET", "/api/vhost-limits/nosuch"),
        broker.http("DELETE", "/api/vhost-limits/%2F/max-queues"),
        broker.http("GET", "/api/vhost-limits/%2F"),  # empty once every limit is cleared
        broker.http("PUT", "/api/user-limits/guest/max-channels", {"value": 5}),
        broker.http("GET", "/api/user-limits"),
        broker.http("GET", "/api/user-limits/guest"),
        broker.http("PUT", "/api/user-limits/guest/max-channels", {"value": None}),
        broker.http("PUT", "/api/user-limits/guest/bogus", {"value": 3}),
        broker.http("PUT", "/api/user-limits/nosuch/max-channels", {"value": 3}),
        broker.http("GET", "/api/user-limits/nosuch"),
        broker.http("DELETE", "/api/user-limits/guest/max-channels"),
        broker.http("GET", "/api/user-limits"),
    ]
    # The user's limits show in its record too; replacing the user keeps them.
    broker.http("PUT", "/api/user-limits/guest/max-connections", {"value": 9})
    broker.http("PUT", "/api/users/guest", {"password": "guest", "tags": "administrator"})
    answers.append(broker.http("GET", "/api/users/guest")[1]["limits"])
    assert answers == EXPECTED


EXPECTED = [
    (204, None),
    (200, [{"vhost": "/", "value": {"max-queues": 7}}]),
    (200, [{"vhost": "/", "value": {"max-queues": 7}}]),
    (
        200,
        [{"value": {"max-queues": 7}, "vhost": "/", "component": "vhost-limits", "name": "limits"}],
    ),
    (
        400,
        {
            "error": "bad_request",
            "reason": 'Validation failed\n\nmax-queues should be a number, actually was <<"x">>\n',
        },
    ),
    (
        400,
        {
            "error": "bad_request",
            "reason": "Validation failed\n\nmax-queues should be a number, actually was 1.5\n",
        },
    ),
    (400, {"error": "bad_request", "reason": "[{key_missing,value}]"}),
    (
        400,
        {
            "error": "bad_request",
            "reason": 'Validation failed\n\nUnrecognised terms [{<<"bogus">>,3}] in limits\n',
        },
    ),
    (404, {"error": "not_found", "reason": "vhost_not_found"}),
    (404, {"error": "Object Not Found", "reason": "Not Found"}),
    (204, None),
    (200, []),
    (204, None),
    (200, [{"user": "guest", "value": {"max-channels": 5}}]),
    (200, [{"user": "guest", "value": {"max-channels": 5}}]),
    (400, {"error": "bad_request", "reason": "max-channels should be a number, actually was null"}),
    (
        400,
        {"error": "bad_request", "reason": 'Unrecognised terms [{<<"bogus">>,3}] in user-limits'},
    ),
    (400, {"error": "bad_request", "reason": ["no_such_user", "nosuch"]}),
    (404, {"error": "Object Not Found", "reason": "Not Found"}),
    (204, None),
    (200, []),
    {"max-connections": 9},
]
