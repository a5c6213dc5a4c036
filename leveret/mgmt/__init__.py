"""RabbitMQ-compatible management HTTP API and Prometheus metrics, served on the node's loop."""

from ..definitions_registry import DefinitionsRegistry
from .context import Route
from .server import start_management
from .state import management_state

__all__ = ["DefinitionsRegistry", "Route", "management_state", "start_management"]
