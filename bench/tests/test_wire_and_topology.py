"""The generator's new frames and flags: priorities in the header, queue arguments, queue names."""

from __future__ import annotations

import struct

import pytest

from bench import wire
from bench.perftest import build_parser, config_from_args
from bench.topology import parse_queue_arguments, queue_names


def _properties(persistent: bool, priority: int | None) -> tuple[int, bytes]:
    head, sizes = wire.publish_template(
        1, "", "q", 100, persistent=persistent, mandatory=False, frame_max=4096, priority=priority
    )
    method_size = struct.unpack_from(">I", head, 3)[0]
    header = head[7 + method_size + 1 :]
    payload = header[7:-1]
    # class id, weight, body size, then the property flags and values
    _class, _weight, body_size, flags = struct.unpack_from(">HHQH", payload)
    assert body_size == 100 and sizes == [100]
    return flags, payload[14:]


@pytest.mark.parametrize(
    ("persistent", "priority", "flags", "values"),
    [
        (False, None, 0x0000, b""),
        (True, None, 0x1000, b"\x02"),
        (False, 5, 0x0800, b"\x05"),
        (True, 0, 0x1800, b"\x02\x00"),
    ],
)
def test_delivery_mode_and_priority_are_encoded_in_flag_order(
    persistent: bool,
    priority: int | None,
    flags: int,
    values: bytes,
) -> None:
    assert _properties(persistent, priority) == (flags, values)


def test_queue_arguments_become_a_table_with_integers() -> None:
    assert parse_queue_arguments("x-max-length=1000, x-overflow=drop-head") == {
        "x-max-length": 1000,
        "x-overflow": "drop-head",
    }
    assert parse_queue_arguments("") == {}
    with pytest.raises(ValueError):
        parse_queue_arguments("x-max-length")


def test_a_queue_pattern_names_one_queue_per_number() -> None:
    assert queue_names("q", "", 1, 1) == ("q",)
    assert queue_names("q", "fan-%d", 1, 3) == ("fan-1", "fan-2", "fan-3")
    with pytest.raises(ValueError):
        queue_names("q", "fan-%d", 3, 1)


def test_the_new_flags_reach_the_configuration() -> None:
    args = build_parser().parse_args(
        [
            "-e",
            "x",
            "-t",
            "fanout",
            "--queue-pattern",
            "q-%d",
            "--queue-pattern-to",
            "4",
            "--queue-args",
            "x-max-priority=5",
            "--random-priority",
            "5",
            "-C",
            "300",
        ]
    )
    config = config_from_args(args)
    assert (config.exchange, config.exchange_type) == ("x", "fanout")
    assert (config.queue_pattern, config.queue_pattern_from, config.queue_pattern_to) == (
        "q-%d",
        1,
        4,
    )
    assert config.queue_args == {"x-max-priority": 5}
    assert config.random_priority == 5 and config.producer_messages == 300
    with pytest.raises(ValueError):
        config_from_args(build_parser().parse_args(["--random-priority", "256"]))
