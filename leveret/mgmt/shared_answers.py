"""Answers to the UI's GET requests shared for a second among callers asking the same thing: ten
browser tabs on a node with 10,000 queues ask for the same overview and the same page of queues,
and the live streams' tick has usually just computed it."""

from __future__ import annotations

import time
import weakref
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

from .context import Reply

if TYPE_CHECKING:
    from ..broker import Broker
    from .access import Caller
    from .state import ManagementState

# As long as requests share one reading of the queues' figures (state.SHARED_READING_SECONDS).
SHARED_ANSWER_SECONDS = 1.0
# Below this many queues each request is answered afresh, so that a script sees its own change
# at once (state.SHARED_READING_FROM_QUEUES).
SHARED_FROM_QUEUES = 1000


class SharedAnswers:
    """The latest answer to each (caller, request target), kept SHARED_ANSWER_SECONDS."""

    def __init__(self) -> None:
        self._answers: dict[tuple[Caller, str], tuple[float, Reply]] = {}
        self.shared = 0  # answers given again, for /api/live/stats and the tests

    def get(self, caller: Caller, target: str, now: float) -> Reply | None:
        found = self._answers.get((caller, target))
        if found is None or now - found[0] >= SHARED_ANSWER_SECONDS:
            return None
        self.shared += 1
        return found[1]

    def put(self, caller: Caller, target: str, reply: Reply, now: float) -> None:
        if reply.status != 200 or reply.stream is not None:
            return
        if len(self._answers) > 1000:  # many distinct requests: keep only those of this second
            self._answers = {
                key: kept
                for key, kept in self._answers.items()
                if now - kept[0] < SHARED_ANSWER_SECONDS
            }
        self._answers[caller, target] = (now, reply)

    def forget(self) -> None:
        """A change was made through the API: the next answers show it."""
        self._answers.clear()


# Each node's shared answers, by its management state: every listener of the node shares them.
_ANSWERS: weakref.WeakKeyDictionary[ManagementState, SharedAnswers] = weakref.WeakKeyDictionary()


def answers_of(state: ManagementState) -> SharedAnswers:
    """The node's shared answers, made on first use."""
    answers = _ANSWERS.get(state)
    if answers is None:
        answers = _ANSWERS[state] = SharedAnswers()
    return answers


def worth_sharing(broker: Broker) -> bool:
    """Whether the node holds enough queues for its answers to be shared."""
    count = 0
    for vhost in broker.vhosts.values():
        count += len(vhost.queues) + len(vhost.remote_queues)
        if count >= SHARED_FROM_QUEUES:
            return True
    return False


def shared_answer(
    broker: Broker,
    answers: SharedAnswers,
    caller: Caller,
    target: str,
    compute: Callable[[], Reply | Awaitable[Reply]],
) -> Reply | Awaitable[Reply]:
    """The answer to a GET of `target` by `caller`: one given in the last second, or computed."""
    if not worth_sharing(broker):
        return compute()
    found = answers.get(caller, target, time.monotonic())
    if found is not None:
        return found
    answer = compute()
    if isinstance(answer, Reply):
        answers.put(caller, target, answer, time.monotonic())
        return answer
    return _kept(answers, caller, target, answer)


async def _kept(
    answers: SharedAnswers, caller: Caller, target: str, pending: Awaitable[Reply]
) -> Reply:
    reply = await pending
    answers.put(caller, target, reply, time.monotonic())
    return reply
