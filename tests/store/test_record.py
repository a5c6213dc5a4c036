"""The message record codec: everything the broker stores comes back byte for byte."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from leveret.store.errors import CorruptRecord
from leveret.store.record import (
    FLAG_SHARED_BODY,
    FLAG_TRANSIENT,
    SEQ_FIELD,
    SEQ_OFFSET,
    BodyRef,
    decode_head,
    decode_message,
    encode_message,
    encode_name,
)

short_names = st.text(max_size=80).filter(lambda text: len(encode_name(text)) <= 255)
body_refs = st.builds(
    BodyRef,
    st.integers(0, 2**32 - 1),
    st.integers(0, 2**64 - 1),
    st.integers(0, 2**32 - 1),
)


@given(
    seq=st.integers(0, 2**64 - 1),
    exchange=short_names,
    routing_key=short_names,
    header=st.binary(max_size=200),
    body=st.one_of(st.binary(max_size=500), body_refs),
    persistent=st.booleans(),
)
def test_records_round_trip(
    seq: int,
    exchange: str,
    routing_key: str,
    header: bytes,
    body: bytes | BodyRef,
    persistent: bool,
) -> None:
    payload = memoryview(
        encode_message(
            seq, encode_name(exchange), encode_name(routing_key), header, body, persistent
        )
    )
    found_seq, flags, found_exchange, found_key, found_header, found_body = decode_message(payload)
    assert (found_seq, found_exchange, found_key) == (seq, exchange, routing_key)
    assert found_header == header
    assert found_body == body
    assert bool(flags & FLAG_TRANSIENT) is not persistent
    head = decode_head(payload)
    assert head.seq == seq
    assert bool(head.flags & FLAG_SHARED_BODY) is isinstance(body, BodyRef)
    assert head.body_size == (body.size if isinstance(body, BodyRef) else len(body))
    assert head.body_ref == (body if isinstance(body, BodyRef) else None)


def test_names_that_are_not_utf8_survive() -> None:
    odd = b"caf\xe9".decode("utf-8", "surrogateescape")
    payload = memoryview(encode_message(1, encode_name(odd), b"", b"", b"", True))
    assert decode_message(payload)[2] == odd


def test_short_strings_are_enforced() -> None:
    with pytest.raises(ValueError):
        encode_message(1, b"x" * 256, b"", b"", b"", True)


def test_unknown_versions_and_short_records_are_corrupt() -> None:
    payload = bytearray(encode_message(1, b"ex", b"rk", b"h", b"body", True))
    payload[0] = 99
    with pytest.raises(CorruptRecord):
        decode_head(memoryview(payload))
    with pytest.raises(CorruptRecord):
        decode_message(memoryview(bytes(payload[:5])))


def test_the_seq_can_be_peeked_without_decoding() -> None:
    payload = memoryview(encode_message(123456789, b"ex", b"rk", b"h", b"body", True))
    assert SEQ_FIELD.unpack_from(payload, SEQ_OFFSET)[0] == 123456789
