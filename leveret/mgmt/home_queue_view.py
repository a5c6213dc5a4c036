"""A queue as its home node's management API shows it, for the API of another node (the answer
to the data plane's VIEW request): the counters, rates and sample history live where the queue
does."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TYPE_CHECKING
from urllib.parse import parse_qsl, urlencode

from .queue_view import add_queue_samples, queue_json
from .state import management_state

if TYPE_CHECKING:
    from ..broker import Broker
    from ..queues.classic import ClassicQueue

# Only these parameters of the asking request matter here: the ranges of samples.
_SAMPLE_PARAMETERS = ("msg_rates_age", "msg_rates_incr", "lengths_age", "lengths_incr")

# Fields only a single queue's page shows; a listing leaves them out.
DETAIL_FIELDS = ("consumer_details", "deliveries", "incoming")


def view_query(query: Mapping[str, str]) -> str:
    """The part of an API request's query the home node needs, to send with VIEW."""
    return urlencode([(name, query[name]) for name in _SAMPLE_PARAMETERS if name in query])


def queue_view(broker: Broker, queue: ClassicQueue, asked: str) -> bytes:
    """`queue` as GET /api/queues/{vhost}/{name} shows it here, with the samples `asked` for."""
    state = management_state(broker)
    # One queue's figures alone: state.figure() also looks over every connection and queue.
    figure = state.reader.read_one(queue)
    shown = queue_json(queue, figure, state, broker.config.node_name, detailed=True)
    add_queue_samples(state, queue, dict(parse_qsl(asked)), shown)
    return json.dumps(shown, separators=(",", ":"), default=str).encode()
