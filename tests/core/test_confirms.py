"""The publisher-confirm tracker: ordered, coalesced answers from out-of-order confirmations."""

from __future__ import annotations

import random
from collections import Counter

from hypothesis import given
from hypothesis import strategies as st

from leveret.confirms import Confirms


def publish(confirms: Confirms, count: int) -> list[int]:
    return [confirms.next_seq() for _ in range(count)]


def test_publishes_nobody_waits_for_are_acked_at_once_as_one_multiple_ack() -> None:
    confirms = Confirms()
    publish(confirms, 3)
    assert confirms.awaiting()
    assert confirms.settle() == [(True, 3, True)]
    assert not confirms.awaiting()
    assert not confirms.settle()
    confirms.next_seq()
    assert confirms.settle() == [(True, 4, False)]


def test_out_of_order_confirmations_from_several_queues_are_answered_in_order() -> None:
    confirms = Confirms()
    one, two, three = publish(confirms, 3)
    for seq in (one, two, three):
        confirms.expect(seq)  # a queue on node b
    confirms.expect(two)  # and one on node c
    confirms.confirm(three)
    confirms.confirm(two)
    assert not confirms.settle()  # one is still waited for
    confirms.confirm(one)
    assert confirms.settle() == [(True, 1, False)]  # two waits for its second queue
    confirms.confirm(two)
    assert confirms.settle() == [(True, 3, True)]
    assert not confirms.awaiting()


def test_a_refused_publish_is_nacked_alone_between_multiple_acks() -> None:
    confirms = Confirms()
    publish(confirms, 6)
    confirms.reject(3)
    confirms.reject(4)
    assert confirms.settle() == [
        (True, 2, True),
        (False, 3, False),
        (False, 4, False),
        (True, 6, True),
    ]


def test_a_remote_refusal_counts_as_that_queues_answer() -> None:
    confirms = Confirms()
    seq = confirms.next_seq()
    confirms.expect(seq)
    confirms.reject(seq)
    confirms.confirm(seq)
    assert confirms.settle() == [(False, 1, False)]


def test_durable_batches_hold_back_what_follows_them_until_their_fsync() -> None:
    confirms = Confirms()
    publish(confirms, 2)
    first = confirms.hold()
    publish(confirms, 2)
    second = confirms.hold()
    confirms.next_seq()
    assert not confirms.settle()
    confirms.durable(first, ok=True)
    assert confirms.settle() == [(True, 2, True)]
    confirms.durable(second, ok=True)
    assert confirms.settle() == [(True, 5, True)]


def test_a_failed_fsync_nacks_every_publish_it_covered() -> None:
    confirms = Confirms()
    publish(confirms, 1)
    confirms.durable(confirms.hold(), ok=True)
    publish(confirms, 2)
    confirms.durable(confirms.hold(), ok=False)
    assert confirms.settle() == [(True, 1, False), (False, 2, False), (False, 3, False)]


def test_a_remote_wait_and_a_durable_wait_both_hold_the_answer() -> None:
    confirms = Confirms()
    one, two = publish(confirms, 2)
    confirms.expect(one)
    upto = confirms.hold()
    confirms.confirm(one)
    assert not confirms.settle()
    confirms.durable(upto, ok=True)
    assert confirms.settle() == [(True, two, True)]


@given(
    st.lists(st.tuples(st.integers(0, 2), st.booleans()), min_size=1, max_size=30),
    st.randoms(use_true_random=False),
)
def test_every_publish_is_answered_once_in_order_after_all_its_queues(
    publishes: list[tuple[int, bool]], rng: random.Random
) -> None:
    """Publishes to 0-2 queues that confirm one by one, some refused, confirmed in any order."""
    confirms = Confirms()
    pending: list[int] = []
    for queues, refused in publishes:
        seq = confirms.next_seq()
        for _ in range(queues):
            confirms.expect(seq)
            pending.append(seq)
        if refused:
            confirms.reject(seq)
    rng.shuffle(pending)
    answered: list[tuple[bool, int]] = []
    left = Counter(pending)
    while True:
        for ack, seq, multiple in confirms.settle():
            first = answered[-1][1] + 1 if answered else 1
            if ack:
                assert seq >= first and multiple == (seq > first)
            else:
                assert seq == first and not multiple  # a nack is alone
            for covered in range(first, seq + 1):
                assert not left[covered]  # no queue still has to confirm it
                answered.append((ack, covered))
        if not pending:
            break
        seq = pending.pop()
        left[seq] -= 1
        confirms.confirm(seq)
    assert [seq for _, seq in answered] == list(range(1, len(publishes) + 1))
    assert [not ack for ack, _ in answered] == [refused for _, refused in publishes]
    assert not confirms.awaiting()
