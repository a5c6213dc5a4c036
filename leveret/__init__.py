"""Leveret: a clustered AMQP 0-9-1 message broker, wire-compatible with RabbitMQ."""

__version__ = "0.1.0"
