"""Queue-name uniqueness is linearizable from the clients' side, and the checker can tell."""

from __future__ import annotations

import os

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cluster.metadata.linearizability import (
    Operation,
    QueueNameModel,
    check_history,
    is_linearizable,
)
from tests.cluster.queue_clients import run_clients

MODEL = QueueNameModel()
DURABLE = ("durable", True)
TRANSIENT = ("durable", False)

DEFAULT_SEEDS = 150
SLOW_SEEDS = 2000
_BATCH = 50

slow = pytest.mark.skipif(os.environ.get("LEVERET_SLOW") != "1", reason="set LEVERET_SLOW=1")


def op(
    client: str,
    op_input: tuple[object, ...],
    invoked: float,
    returned: float | None,
    output: object = None,
    key: str = "q",
) -> Operation:
    return Operation(client, key, op_input, invoked, returned, output)


# -- the checker on hand-made histories ----------------------------------------------------


def test_accepts_a_sequential_history_that_follows_the_model() -> None:
    history = [
        op("a", ("declare", DURABLE), 1, 2, "created"),
        op("b", ("declare", DURABLE), 3, 4, "exists"),
        op("b", ("declare", TRANSIENT), 5, 6, "conflict"),
        op("a", ("get",), 7, 8, DURABLE),
        op("a", ("delete",), 9, 10, "deleted"),
        op("b", ("delete",), 11, 12, "not_found"),
        op("b", ("get",), 13, 14, None),
    ]
    assert is_linearizable(history, MODEL)


def test_rejects_two_creations_of_one_name_without_a_delete_between() -> None:
    history = [
        op("a", ("declare", DURABLE), 1, 2, "created"),
        op("b", ("declare", TRANSIENT), 3, 4, "created"),
    ]
    assert not is_linearizable(history, MODEL)


def test_rejects_two_concurrent_declares_that_both_created_the_queue() -> None:
    history = [
        op("a", ("declare", DURABLE), 1, 4, "created"),
        op("b", ("declare", DURABLE), 2, 3, "created"),
    ]
    assert not is_linearizable(history, MODEL)


def test_accepts_either_winner_of_two_concurrent_declares() -> None:
    for first, second in (("created", "conflict"), ("conflict", "created")):
        history = [
            op("a", ("declare", DURABLE), 1, 4, first),
            op("b", ("declare", TRANSIENT), 2, 3, second),
        ]
        assert is_linearizable(history, MODEL)


def test_rejects_a_stale_read_after_a_completed_delete() -> None:
    history = [
        op("a", ("declare", DURABLE), 1, 2, "created"),
        op("a", ("delete",), 3, 4, "deleted"),
        op("b", ("get",), 5, 6, DURABLE),
    ]
    assert not is_linearizable(history, MODEL)


def test_accepts_either_answer_of_a_read_concurrent_with_a_delete() -> None:
    for seen in (DURABLE, None):
        history = [
            op("a", ("declare", DURABLE), 1, 2, "created"),
            op("a", ("delete",), 3, 6, "deleted"),
            op("b", ("get",), 4, 5, seen),
        ]
        assert is_linearizable(history, MODEL)


def test_rejects_reads_that_go_back_in_time() -> None:
    history = [
        op("a", ("declare", DURABLE), 1, 10, "created"),
        op("b", ("get",), 2, 3, DURABLE),
        op("c", ("get",), 4, 5, None),
    ]
    assert not is_linearizable(history, MODEL)


def test_an_unknown_outcome_may_take_effect_late_or_never() -> None:
    unknown_declare = op("a", ("declare", DURABLE), 1, None)
    took_effect_late = [
        unknown_declare,
        op("b", ("get",), 5, 6, None),
        op("b", ("get",), 7, 8, DURABLE),
    ]
    never = [unknown_declare, op("b", ("get",), 5, 6, None), op("b", ("get",), 7, 8, None)]
    assert is_linearizable(took_effect_late, MODEL)
    assert is_linearizable(never, MODEL)


def test_an_unknown_outcome_cannot_take_effect_before_it_was_invoked() -> None:
    history = [op("b", ("get",), 1, 2, DURABLE), op("a", ("declare", DURABLE), 3, None)]
    assert not is_linearizable(history, MODEL)


def test_names_the_key_whose_history_fails() -> None:
    history = [
        op("a", ("declare", DURABLE), 1, 2, "created", key="good"),
        op("a", ("declare", DURABLE), 1, 2, "created", key="bad"),
        op("b", ("declare", TRANSIENT), 3, 4, "created", key="bad"),
    ]
    result = check_history(history, MODEL)
    assert not result.ok
    assert result.key == "bad"
    assert check_history(history[:2], MODEL).ok


_kinds = st.sampled_from([("declare", DURABLE), ("declare", TRANSIENT), ("delete",), ("get",)])


@st.composite
def _linearizable_histories(draw: st.DrawFn) -> list[Operation]:
    """Histories made by running the model at linearization points inside random intervals."""
    count = draw(st.integers(1, 12))
    operations = []
    for index in range(count):
        invoked = draw(st.integers(0, 40))
        point = invoked + draw(st.integers(0, 10))
        returned = point + draw(st.integers(0, 10))
        unknown = draw(st.booleans()) and draw(st.booleans())
        operations.append((point, index, draw(_kinds), invoked, returned, unknown))
    state: object = None
    history = []
    for _point, index, op_input, invoked, returned, unknown in sorted(operations):
        _allowed, after = MODEL.step(state, op_input, None, False)
        output = _expected(state, op_input)
        state = after
        if unknown:
            history.append(op(f"c{index}", op_input, invoked * 2, None))
        else:
            history.append(op(f"c{index}", op_input, invoked * 2, returned * 2 + 1, output))
    return history


def _expected(state: object, op_input: tuple[object, ...]) -> object:
    for output in ("created", "exists", "conflict", "deleted", "not_found", state):
        if MODEL.step(state, op_input, output, True)[0]:
            return output
    raise AssertionError("the model allows no output")


@settings(max_examples=300, deadline=None)
@given(_linearizable_histories())
def test_accepts_every_history_produced_by_a_linearizable_execution(
    history: list[Operation],
) -> None:
    assert is_linearizable(history, MODEL)


@settings(max_examples=200, deadline=None)
@given(st.lists(_kinds, min_size=1, max_size=10), st.data())
def test_rejects_a_sequential_history_with_one_wrong_answer(
    inputs: list[tuple[object, ...]], data: st.DataObject
) -> None:
    state: object = None
    history = []
    for index, op_input in enumerate(inputs):
        output = _expected(state, op_input)
        state = MODEL.step(state, op_input, output, True)[1]
        history.append(op("c", op_input, 2 * index, 2 * index + 1, output))
    victim = data.draw(st.integers(0, len(history) - 1))
    original = history[victim]
    wrong = [
        output
        for output in ("created", "exists", "conflict", "deleted", "not_found", None, DURABLE)
        if output != original.output
        and not MODEL.step(_state_before(history, victim), original.input, output, True)[0]
    ]
    history[victim] = op("c", original.input, original.invoked_at, original.returned_at, wrong[0])
    assert not is_linearizable(history, MODEL)


def _state_before(history: list[Operation], position: int) -> object:
    state: object = None
    for operation in history[:position]:
        state = MODEL.step(state, operation.input, operation.output, True)[1]
    return state


# -- the replicated metadata store under faults ----------------------------------------------


def _check_seeds(first: int, count: int) -> None:
    for seed in range(first, first + count):
        print(f"metadata simulation seed {seed}")
        clients = run_clients(seed)
        result = check_history(clients.history, MODEL)
        assert result.ok, (
            f"seed {seed}: history of {result.key!r} is not linearizable: "
            + "\n".join(map(str, result.operations))
        )


@pytest.mark.parametrize("first", range(0, DEFAULT_SEEDS, _BATCH))
def test_queue_declares_and_deletes_are_linearizable_under_faults(first: int) -> None:
    _check_seeds(first, _BATCH)


@pytest.mark.slow
@slow
@pytest.mark.parametrize("first", range(DEFAULT_SEEDS, SLOW_SEEDS, _BATCH))
def test_many_more_metadata_schedules(first: int) -> None:
    _check_seeds(first, _BATCH)


def test_histories_are_rich_enough_to_mean_something() -> None:
    outcomes: set[object] = set()
    unknown = 0
    for seed in range(10):
        for operation in run_clients(seed).history:
            if operation.known:
                outcomes.add((operation.input[0], operation.output is not None))
                outcomes.add(operation.output if operation.input[0] != "get" else "read")
            else:
                unknown += 1
    assert {"created", "exists", "conflict", "deleted", "not_found", "read"} <= outcomes
    assert unknown > 0


def test_the_checker_catches_reads_served_from_local_state() -> None:
    """A node answering reads from its own, possibly stale, state breaks linearizability."""
    caught = [
        seed
        for seed in range(10)
        if not check_history(run_clients(seed, stale_reads=True).history, MODEL).ok
    ]
    assert caught, "reads without ReadIndex went unnoticed in every schedule"
