"""The samples behind the UI's charts: which ranges are honoured, and what they hold."""

from __future__ import annotations

from leveret.mgmt.history import History, SampleRange

KEY = ("queue", "/", "q", 1)


def test_a_range_needs_two_positive_integers() -> None:
    assert SampleRange.from_query({"msg_rates_age": "60", "msg_rates_incr": "5"}, "msg_rates") == (
        SampleRange(60, 5)
    )
    for bad in (
        {},
        {"msg_rates_age": "60"},
        {"msg_rates_age": "x", "msg_rates_incr": "5"},
        {"msg_rates_age": "0", "msg_rates_incr": "5"},
        {"msg_rates_age": "60", "msg_rates_incr": "-5"},
    ):
        assert SampleRange.from_query(bad, "msg_rates") is None
    # An hour at most, and no more than 720 samples however small the increment.
    assert SampleRange.from_query({"lengths_age": "86400", "lengths_incr": "1"}, "lengths") == (
        SampleRange(3600, 5)
    )


def test_samples_are_newest_first_with_average_and_average_rate() -> None:
    history = History()
    history.watch(KEY, now=0.0)
    for second, published in ((100.0, 0), (105.0, 50), (110.0, 150)):
        history.record(KEY, second, {"publish": published})
    details: dict[str, object] = {"publish_details": {"rate": 20.0}}
    history.add_samples(details, KEY, ["publish"], SampleRange(10, 5), wall=112.0)
    assert details["publish_details"] == {
        "rate": 20.0,
        "samples": [
            {"sample": 150, "timestamp": 110_000},
            {"sample": 50, "timestamp": 105_000},
            {"sample": 0, "timestamp": 100_000},
        ],
        "avg": 66.7,
        "avg_rate": 15.0,
    }


def test_a_queue_nobody_watches_keeps_no_history() -> None:
    history = History()
    history.record(KEY, 100.0, {"publish": 1})
    details: dict[str, object] = {"publish_details": {"rate": 0.0}}
    history.add_samples(details, KEY, ["publish"], SampleRange(60, 5), wall=101.0)
    assert details["publish_details"] == {"rate": 0.0, "samples": [], "avg": 0.0, "avg_rate": 0.0}
    history.watch(KEY, now=0.0)
    history.record(KEY, 100.0, {"publish": 1})
    history.retain(now=10_000.0, keys={KEY})  # long after the last look
    assert not history.wanted(KEY)
