"""Frame-level constants of AMQP 0-9-1."""

from typing import Final

PROTOCOL_HEADER: Final = b"AMQP\x00\x00\x09\x01"

FRAME_METHOD: Final = 1
FRAME_HEADER: Final = 2
FRAME_BODY: Final = 3
FRAME_HEARTBEAT: Final = 8
FRAME_END: Final = 0xCE
FRAME_END_BYTE: Final = b"\xce"

# type (1) + channel (2) + size (4) + frame-end (1)
FRAME_OVERHEAD: Final = 8
FRAME_MIN_SIZE: Final = 4096

DEFAULT_FRAME_MAX: Final = 131072
DEFAULT_CHANNEL_MAX: Final = 2047
DEFAULT_HEARTBEAT: Final = 60

# RabbitMQ's max_message_size default (128 MiB) bounds a single content body.
MAX_MESSAGE_SIZE: Final = 134217728

CLASS_CONNECTION: Final = 10
CLASS_CHANNEL: Final = 20
CLASS_EXCHANGE: Final = 40
CLASS_QUEUE: Final = 50
CLASS_BASIC: Final = 60
CLASS_CONFIRM: Final = 85
CLASS_TX: Final = 90
