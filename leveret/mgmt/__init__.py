"""RabbitMQ-compatible management HTTP API and Prometheus metrics, served on the node's loop."""

from ..definitions_registry import DefinitionsRegistry
from .boot_definitions import DefinitionsFileError, load_definitions, read_definitions
from .context import Route
from .server import start_management
from .state import management_state

__all__ = [
    "DefinitionsFileError",
    "DefinitionsRegistry",
    "Route",
    "load_definitions",
    "management_state",
    "read_definitions",
    "start_management",
]
