"""RabbitMQ's load_definitions: a definitions file imported at every start of the node.

The import goes through the management API's own import (so it checks and applies exactly
what `POST /api/definitions` would), as the node's default user. It needs the cluster to
decide the changes: while no majority answers, it tries again, and the node serves meanwhile.
"""

from __future__ import annotations

import asyncio
import json
import logging
from pathlib import Path
from typing import TYPE_CHECKING

from ..metadata import MetadataUnavailable
from . import definitions_import
from .access import Caller
from .context import Context
from .errors import ApiError
from .request import Request
from .state import management_state

if TYPE_CHECKING:
    from ..broker import Broker

log = logging.getLogger(__name__)

_RETRY_SECONDS = 2.0


class DefinitionsFileError(Exception):
    """The file cannot be read, or is not a definitions document."""


def read_definitions(path: str) -> dict[str, object]:
    try:
        document = json.loads(Path(path).read_text())
    except (OSError, ValueError) as error:
        raise DefinitionsFileError(f"cannot load definitions from {path}: {error}") from None
    if not isinstance(document, dict):
        raise DefinitionsFileError(f"cannot load definitions from {path}: not a JSON object")
    return document


async def load_definitions(broker: Broker, document: dict[str, object], path: str) -> None:
    """Import `document` (read from `path`) into the cluster, trying again while the cluster
    cannot decide."""
    request = Request.of("POST", "/api/definitions", {})
    caller = Caller(broker.config.default_user, frozenset({"administrator"}))
    ctx = Context(broker, management_state(broker), request, caller, {}, "127.0.0.1")
    while True:
        try:
            await definitions_import.import_definitions(ctx, document, None)
        except MetadataUnavailable as why:
            log.warning("definitions from %s wait for the cluster: %s", path, why)
            await asyncio.sleep(_RETRY_SECONDS)
            continue
        except ApiError as refused:
            log.error("definitions from %s refused: %s", path, refused.reason)
            return
        log.info("imported definitions from %s", path)
        return
