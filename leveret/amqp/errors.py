"""The one error type of the protocol layer, and the reply codes RabbitMQ uses with it."""

from __future__ import annotations

from enum import IntEnum


class ReplyCode(IntEnum):
    """AMQP 0-9-1 reply codes, as RabbitMQ sends them."""

    REPLY_SUCCESS = 200
    CONTENT_TOO_LARGE = 311
    NO_ROUTE = 312
    NO_CONSUMERS = 313
    CONNECTION_FORCED = 320
    INVALID_PATH = 402
    ACCESS_REFUSED = 403
    NOT_FOUND = 404
    RESOURCE_LOCKED = 405
    PRECONDITION_FAILED = 406
    FRAME_ERROR = 501
    SYNTAX_ERROR = 502
    COMMAND_INVALID = 503
    CHANNEL_ERROR = 504
    UNEXPECTED_FRAME = 505
    RESOURCE_ERROR = 506
    NOT_ALLOWED = 530
    NOT_IMPLEMENTED = 540
    INTERNAL_ERROR = 541


# Codes that can only close the whole connection (the AMQP spec's "hard errors").
HARD_CODES = frozenset(
    {
        ReplyCode.CONNECTION_FORCED,
        ReplyCode.INVALID_PATH,
        ReplyCode.FRAME_ERROR,
        ReplyCode.SYNTAX_ERROR,
        ReplyCode.COMMAND_INVALID,
        ReplyCode.CHANNEL_ERROR,
        ReplyCode.UNEXPECTED_FRAME,
        ReplyCode.RESOURCE_ERROR,
        ReplyCode.NOT_ALLOWED,
        ReplyCode.NOT_IMPLEMENTED,
        ReplyCode.INTERNAL_ERROR,
    }
)

MAX_REPLY_TEXT = 255


class AMQPError(Exception):
    """A protocol error: becomes channel.close (soft) or connection.close (hard).

    `text` is the part after the code name; RabbitMQ's reply text is "NAME - text".
    `method` is the (class_id, method_id) that caused it, or (0, 0).
    """

    def __init__(
        self,
        code: int,
        text: str,
        method: tuple[int, int] = (0, 0),
        *,
        hard: bool | None = None,
    ) -> None:
        super().__init__(code, text)
        self.code = ReplyCode(code)
        self.text = text
        self.method = method
        self.hard = self.code in HARD_CODES if hard is None else hard

    @property
    def reply_text(self) -> str:
        """The reply text as sent on the wire, capped to a shortstr."""
        # Without a text, the code name alone: what RabbitMQ sends when a process of it failed.
        full = f"{self.code.name} - {self.text}" if self.text else self.code.name
        encoded = full.encode("utf-8")
        if len(encoded) <= MAX_REPLY_TEXT:
            return full
        return encoded[:MAX_REPLY_TEXT].decode("utf-8", "ignore")

    def __str__(self) -> str:
        return f"{int(self.code)} {self.reply_text}"


def precondition_failed(text: str, method: tuple[int, int] = (0, 0)) -> AMQPError:
    return AMQPError(ReplyCode.PRECONDITION_FAILED, text, method)


def not_found(text: str, method: tuple[int, int] = (0, 0)) -> AMQPError:
    return AMQPError(ReplyCode.NOT_FOUND, text, method)


def access_refused(text: str, method: tuple[int, int] = (0, 0)) -> AMQPError:
    return AMQPError(ReplyCode.ACCESS_REFUSED, text, method)


def resource_locked(text: str, method: tuple[int, int] = (0, 0)) -> AMQPError:
    return AMQPError(ReplyCode.RESOURCE_LOCKED, text, method)
