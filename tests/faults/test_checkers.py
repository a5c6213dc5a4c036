"""The checkers judge what they are given: made-up histories with known faults are caught."""

from __future__ import annotations

from cluster.metadata.linearizability import Operation, check_history
from tests.faults.harness import schedule
from tests.faults.metadata import AmqpQueueModel
from tests.faults.nemesis import NEMESES
from tests.faults.total_queue import check

TEN = ("max-length", 10)
TWENTY = ("max-length", 20)


def test_a_clean_run_passes_and_counts_what_came_back_unconfirmed() -> None:
    verdict = check({1, 2, 3, 4}, {1, 2, 3}, [(1, False), (2, False), (3, False), (4, False)])
    assert verdict.ok
    assert (verdict.confirmed, verdict.delivered, verdict.recovered) == (3, 4, 1)
    assert not verdict.lost and not verdict.unexpected and verdict.duplicated == 0


def test_a_confirmed_integer_never_delivered_is_lost() -> None:
    verdict = check({1, 2, 3}, {1, 2, 3}, [(1, False), (3, False)])
    assert not verdict.ok
    assert verdict.lost == (2,)


def test_an_integer_never_published_is_unexpected() -> None:
    verdict = check({1}, {1}, [(1, False), (7, False)])
    assert not verdict.ok
    assert verdict.unexpected == (7,)


def test_a_repeat_must_be_marked_redelivered() -> None:
    marked = check({1}, {1}, [(1, False), (1, True), (1, True)])
    assert marked.ok and marked.duplicated == 1
    unmarked = check({1, 2}, {1, 2}, [(1, False), (1, True), (1, False), (2, False), (2, False)])
    assert not unmarked.ok
    assert unmarked.unmarked == (1, 2)


def _op(
    client: str, op_input: tuple[object, ...], start: float, end: float | None, out: object
) -> Operation:
    return Operation(client, "q", op_input, start, end, out)


def test_amqp_outcomes_that_follow_the_model_are_linearizable() -> None:
    history = [
        _op("a", ("declare", TEN), 0, 1, "ok"),
        _op("b", ("declare", TWENTY), 2, 3, "conflict"),
        _op("b", ("bind",), 4, 5, "ok"),
        _op("c", ("bind",), 5.5, 6, "home_down"),
        _op("a", ("delete",), 7, 8, "ok"),
        _op("b", ("bind",), 9, 10, "not_found"),
        _op("b", ("delete",), 11, 12, "ok"),
        _op("c", ("declare", TWENTY), 13, None, None),
        _op("a", ("declare", TEN), 14, 15, "conflict"),
    ]
    assert check_history(history, AmqpQueueModel()).ok


def test_a_stale_answer_after_a_completed_change_is_caught() -> None:
    model = AmqpQueueModel()
    made_then_not_found = [
        _op("a", ("declare", TEN), 0, 1, "ok"),
        _op("b", ("bind",), 2, 3, "not_found"),
    ]
    deleted_then_conflict = [
        _op("a", ("declare", TEN), 0, 1, "ok"),
        _op("a", ("delete",), 2, 3, "ok"),
        _op("b", ("declare", TWENTY), 4, 5, "conflict"),
    ]
    home_down_of_nothing = [_op("a", ("bind",), 0, 1, "home_down")]
    delete_refused_no_queue = [_op("a", ("delete",), 0, 1, "not_found")]
    declare_refused_no_queue = [_op("a", ("declare", TEN), 0, 1, "not_found")]
    for history in (
        made_then_not_found,
        deleted_then_conflict,
        home_down_of_nothing,
        delete_refused_no_queue,
        declare_refused_no_queue,
    ):
        assert not check_history(history, model).ok, history


def test_schedules_replay_from_their_seed_and_use_every_nemesis() -> None:
    assert schedule(7, 30, tuple(NEMESES)) == schedule(7, 30, tuple(NEMESES))
    assert schedule(7, 30, tuple(NEMESES)) != schedule(8, 30, tuple(NEMESES))
    assert set(schedule(7, len(NEMESES), tuple(NEMESES))) == set(NEMESES)
