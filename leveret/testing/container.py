"""`LeveretContainer`: a Leveret node in Docker for users' tests (testcontainers' way, like its
RabbitMqContainer); needs `pip install leveret[testing]` and an image built from
deploy/Dockerfile."""

from __future__ import annotations

from typing import Any

from testcontainers.core.container import DockerContainer
from testcontainers.core.wait_strategies import HttpWaitStrategy

AMQP_PORT = 5672
MANAGEMENT_PORT = 15672


class LeveretContainer(DockerContainer):
    """A node that is ready (in its cluster, listening) when `start()` returns."""

    def __init__(
        self,
        image: str = "leveret:latest",
        username: str = "guest",
        password: str = "guest",
        **kwargs: Any,
    ) -> None:
        super().__init__(image, **kwargs)
        self.username, self.password = username, password
        self.with_env("LEVERET_DEFAULT_USER", username)
        self.with_env("LEVERET_DEFAULT_PASS", password)
        self.with_exposed_ports(AMQP_PORT, MANAGEMENT_PORT)
        self.waiting_for(HttpWaitStrategy(MANAGEMENT_PORT, "/health/ready").for_status_code(200))

    def get_connection_url(self) -> str:
        """The AMQP URL a client on this host uses (`pika.URLParameters`, aio-pika, kombu)."""
        host = self.get_container_host_ip()
        port = self.get_exposed_port(AMQP_PORT)
        return f"amqp://{self.username}:{self.password}@{host}:{port}/%2F"

    def get_management_url(self) -> str:
        host = self.get_container_host_ip()
        return f"http://{host}:{self.get_exposed_port(MANAGEMENT_PORT)}"
