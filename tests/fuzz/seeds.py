"""The fuzzers' seed inputs: recorded client transcripts, whole and cut down to single frames."""

from __future__ import annotations

from pathlib import Path

from leveret.amqp import methods as m
from leveret.amqp.constants import PROTOCOL_HEADER
from leveret.amqp.frames import method_frame
from tests.fuzz.streams import frames

CORPUS = Path(__file__).parent / "corpus"

# The shortest handshake a client can make, and a channel: short inputs run faster.
MINIMAL_OPENING = b"".join(
    (
        PROTOCOL_HEADER,
        method_frame(0, m.ConnectionStartOk({}, "PLAIN", b"\x00guest\x00guest", "en_US")),
        method_frame(0, m.ConnectionTuneOk(2047, 131072, 0)),
        method_frame(0, m.ConnectionOpen("/")),
        method_frame(1, m.ChannelOpen()),
    )
)


def transcripts() -> dict[str, bytes]:
    return {path.stem: path.read_bytes() for path in sorted(CORPUS.glob("*.amqp"))}


def seed_inputs() -> dict[str, bytes]:
    """Named inputs (first byte: how the stream is split, see streams.chunks)."""
    seeds: dict[str, bytes] = {}
    for name, transcript in transcripts().items():
        seeds[f"{name}-whole"] = b"\x00" + transcript
        seeds[f"{name}-by-5"] = b"\x05" + transcript
        for index, (kind, channel, payload) in enumerate(frames(transcript)):
            if channel == 0:
                continue  # the handshake is the minimal one's
            frame = bytes((kind,)) + channel.to_bytes(2, "big") + len(payload).to_bytes(4, "big")
            seeds[f"{name}-frame-{index}"] = b"\x00" + MINIMAL_OPENING + frame + payload + b"\xce"
    return seeds


def write_seeds(directory: Path) -> int:
    directory.mkdir(parents=True, exist_ok=True)
    seeds = seed_inputs()
    for name, data in seeds.items():
        (directory / name).write_bytes(data)
    return len(seeds)
