"""A linearizability checker for recorded client histories (Wing & Gong's search, Lowe's cache).

Each operation has an invocation time and, if the client learnt the outcome, a return time and
an output. Operations whose outcome is unknown (the client timed out or its node crashed) may
have taken effect at any point after their invocation, or never: they are given an infinite
return time and the model accepts any output for them. Operations known to have failed without
effect must be left out of the history. Histories split into independent keys (queue names)
are checked key by key, which keeps the search small.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Hashable, Iterable
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

State = TypeVar("State", bound=Hashable)


class Model(Protocol[State]):
    """A sequential specification: the state before anything, and what each operation does."""

    def initial(self) -> State:
        """The state before the first operation."""
        ...

    def step(self, state: State, op_input: Any, output: Any, known: bool) -> tuple[bool, State]:
        """Whether `output` is allowed for `op_input` in `state`, and the state after it.

        With `known` False the output was never observed and must be accepted.
        """
        ...


@dataclass(frozen=True, slots=True)
class Operation:
    """One client operation as the client saw it."""

    client: str
    key: str
    input: Any
    invoked_at: float
    # None when the outcome is unknown.
    returned_at: float | None = None
    output: Any = None

    @property
    def known(self) -> bool:
        """Whether the client learnt the outcome."""
        return self.returned_at is not None


@dataclass(frozen=True, slots=True)
class CheckResult:
    """The verdict; for a failure, the first key whose history has no linearization."""

    ok: bool
    key: str | None = None
    operations: tuple[Operation, ...] = ()


class _Event:
    __slots__ = ("is_call", "match", "next", "op_id", "prev", "time")

    def __init__(self, op_id: int, is_call: bool, time: float) -> None:
        self.op_id = op_id
        self.is_call = is_call
        self.time = time
        self.match: _Event | None = None
        self.prev: _Event | None = None
        self.next: _Event | None = None


def check_history(operations: Iterable[Operation], model: Model[Any]) -> CheckResult:
    """Check every key's sub-history; the result names the first key that fails."""
    by_key: dict[str, list[Operation]] = defaultdict(list)
    for operation in operations:
        by_key[operation.key].append(operation)
    for key in sorted(by_key):
        if not is_linearizable(by_key[key], model):
            return CheckResult(False, key, tuple(by_key[key]))
    return CheckResult(True)


def is_linearizable(operations: list[Operation], model: Model[State]) -> bool:
    """Whether some order of `operations`, consistent with real time, satisfies `model`."""
    if not operations:
        return True
    head = _build_events(operations)
    state = model.initial()
    linearized = 0  # bit i set: operation i is placed in the order being built
    seen: set[tuple[int, State]] = set()
    stack: list[tuple[_Event, State]] = []
    entry = head.next
    while head.next is not None:
        assert entry is not None
        if entry.is_call:
            operation = operations[entry.op_id]
            allowed, after = model.step(state, operation.input, operation.output, operation.known)
            if allowed:
                with_it = linearized | (1 << entry.op_id)
                if (with_it, after) not in seen:
                    seen.add((with_it, after))
                    stack.append((entry, state))
                    state, linearized = after, with_it
                    _lift(entry)
                    entry = head.next
                    continue
            entry = entry.next
        else:
            # The earliest pending return: its operation must already have been placed. Undo
            # the last placement and try the next candidate after it.
            if not stack:
                return False
            call, state = stack.pop()
            linearized &= ~(1 << call.op_id)
            _unlift(call)
            entry = call.next
    return True


def _build_events(operations: list[Operation]) -> _Event:
    events: list[_Event] = []
    for op_id, operation in enumerate(operations):
        call = _Event(op_id, True, operation.invoked_at)
        returned = operation.returned_at if operation.returned_at is not None else float("inf")
        if returned < operation.invoked_at:
            raise ValueError(f"operation {operation} returns before it is invoked")
        ret = _Event(op_id, False, returned)
        call.match = ret
        events += [call, ret]
    # At equal times calls come first: touching intervals count as concurrent.
    events.sort(key=lambda event: (event.time, not event.is_call))
    head = _Event(-1, False, float("-inf"))
    previous = head
    for event in events:
        previous.next, event.prev = event, previous
        previous = event
    return head


def _lift(call: _Event) -> None:
    """Take a call and its return out of the list."""
    for event in (call, call.match):
        assert event is not None and event.prev is not None
        event.prev.next = event.next
        if event.next is not None:
            event.next.prev = event.prev


def _unlift(call: _Event) -> None:
    """Put back what `_lift` took out (in reverse order, so the links are restored exactly)."""
    for event in (call.match, call):
        assert event is not None and event.prev is not None
        event.prev.next = event
        if event.next is not None:
            event.next.prev = event


class QueueNameModel:
    """Queue declare / delete / get on one name: at most one queue, and who wins is consistent.

    Inputs: ("declare", properties), ("delete",), ("get",). Outputs: "created", "exists",
    "conflict"; "deleted", "not_found"; and for get, the properties or None.
    """

    def initial(self) -> Any:
        return None

    def step(self, state: Any, op_input: Any, output: Any, known: bool) -> tuple[bool, Any]:
        kind = op_input[0]
        if kind == "declare":
            properties = op_input[1]
            if state is None:
                expected, after = "created", properties
            elif state == properties:
                expected, after = "exists", state
            else:
                expected, after = "conflict", state
        elif kind == "delete":
            expected, after = ("not_found", None) if state is None else ("deleted", None)
        elif kind == "get":
            expected, after = state, state
        else:
            raise ValueError(f"unknown operation {op_input!r}")
        return (not known or output == expected), after
