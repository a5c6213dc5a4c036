"""Fixtures of the stream tests: the session's RabbitMQ node, shared with the other suites."""

from tests.support.rabbitmq import rabbitmq  # noqa: F401 - fixture
