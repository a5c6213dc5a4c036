"""The metadata store's replies (JSON objects with a status, as they cross to the submitter),
and the signature of the handlers that make them."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from cluster.metadata.tables import Tables
    from proto.metadata_schema import Command, Effect

Reply = dict[str, Any]

# A command's handler changes the tables (after checking it can) and says what changed.
Handler = Callable[["Tables", Any], tuple[Reply, list["Effect"]]]
Handlers = dict[type["Command"], Handler]


def reply(status: str, **details: Any) -> Reply:
    """A reply with `status` and any details."""
    return {"status": status, **details}
