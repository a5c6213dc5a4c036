"""Fixtures of the broker tests: `target` runs a test on Leveret (and on RabbitMQ on request)."""

from tests.support.reference import target  # noqa: F401 - fixture
