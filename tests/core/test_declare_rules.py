"""Declaration rules: every error RabbitMQ gives, with its reply code, text and method."""

from __future__ import annotations

import datetime
import re
from collections.abc import Callable
from decimal import Decimal
from typing import Any

import pytest

from leveret.amqp.errors import AMQPError
from leveret.declare_rules import (
    CharList,
    ExchangeDecl,
    QueueDecl,
    check_bind,
    check_exchange_declare,
    check_exchange_delete,
    check_exchange_equivalence,
    check_exclusive_access,
    check_publish_exchange,
    check_queue_declare,
    check_queue_equivalence,
    check_unbind,
    erlang_term,
    field_type_name,
    name_fits,
    server_named_queue_name,
    strip_cr_lf,
)
from leveret.exchanges import exchange_type
from leveret.queue_arguments import validate_queue_arguments


def error_of(action: Callable[[], Any]) -> tuple[int, str, tuple[int, int]]:
    with pytest.raises(AMQPError) as info:
        action()
    error = info.value
    return int(error.code), error.text, error.method


# --- exchange.declare -------------------------------------------------------------------------

DIRECT = ExchangeDecl("direct")


def declare_exchange(
    name: str, requested: ExchangeDecl, existing: ExchangeDecl | None = None, passive: bool = False
) -> bool:
    return check_exchange_declare(
        name, requested, passive=passive, existing=existing, known_types=exchange_type
    )


def test_exchange_declare_creates_or_accepts_an_equivalent() -> None:
    assert declare_exchange("x", DIRECT) is True
    assert declare_exchange("x", DIRECT, existing=DIRECT) is False
    assert declare_exchange("x", ExchangeDecl("topic"), existing=DIRECT, passive=True) is False
    # an existing amq.* exchange may be redeclared equivalently
    predeclared = ExchangeDecl("direct", durable=True)
    assert declare_exchange("amq.direct", predeclared, existing=predeclared) is False


def test_exchange_declare_unknown_type_is_a_connection_error() -> None:
    with pytest.raises(AMQPError) as info:
        declare_exchange("x", ExchangeDecl("nope"), existing=DIRECT)
    assert (info.value.code, info.value.text, info.value.hard) == (
        503,
        "unknown exchange type 'nope'",
        True,
    )
    # a passive declare does not look at the type
    assert declare_exchange("x", ExchangeDecl("nope"), existing=DIRECT, passive=True) is False


@pytest.mark.parametrize("passive", [False, True])
def test_exchange_declare_of_the_default_exchange(passive: bool) -> None:
    assert error_of(lambda: declare_exchange("", DIRECT, existing=DIRECT, passive=passive)) == (
        403,
        "operation not permitted on the default exchange",
        (40, 10),
    )


def test_exchange_declare_reserved_prefix_on_create_only() -> None:
    assert error_of(lambda: declare_exchange("amq.mine", DIRECT)) == (
        403,
        "exchange name 'amq.mine' contains reserved prefix 'amq.*'",
        (40, 10),
    )
    assert declare_exchange("AMQ.mine", DIRECT) is True


def test_exchange_declare_passive_missing() -> None:
    assert error_of(lambda: declare_exchange("x", DIRECT, passive=True)) == (
        404,
        "no exchange 'x' in vhost '/'",
        (40, 10),
    )


def test_exchange_declare_alternate_exchange_must_be_a_string() -> None:
    requested = ExchangeDecl("direct", arguments={"alternate-exchange": 5})
    assert error_of(lambda: declare_exchange("x", requested)) == (
        406,
        "invalid type 'signedint' for arg 'alternate-exchange' in exchange 'x' in vhost '/'",
        (40, 10),
    )
    typed = ExchangeDecl(
        "direct", arguments={"alternate-exchange": 5}, argument_types={"alternate-exchange": "b"}
    )
    assert error_of(lambda: declare_exchange("x", typed))[1].startswith("invalid type 'byte' ")


@pytest.mark.parametrize(
    ("requested", "text"),
    [
        (
            ExchangeDecl("fanout"),
            "inequivalent arg 'type' for exchange 'x' in vhost '/': received 'fanout' but current "
            "is 'direct'",
        ),
        (
            ExchangeDecl("direct", durable=True),
            "inequivalent arg 'durable' for exchange 'x' in vhost '/': received 'true' but current "
            "is 'false'",
        ),
        (
            ExchangeDecl("direct", auto_delete=True),
            "inequivalent arg 'auto_delete' for exchange 'x' in vhost '/': received 'true' but "
            "current is 'false'",
        ),
        (
            ExchangeDecl("direct", internal=True),
            "inequivalent arg 'internal' for exchange 'x' in vhost '/': received 'true' but "
            "current is 'false'",
        ),
        (
            ExchangeDecl("direct", arguments={"alternate-exchange": "ae"}),
            (
                "inequivalent arg 'alternate-exchange' for exchange 'x' in vhost '/': "
                "received the value 'ae' of type 'longstr' but current is none"
            ),
        ),
    ],
)
def test_exchange_inequivalent(requested: ExchangeDecl, text: str) -> None:
    assert error_of(lambda: declare_exchange("x", requested, existing=DIRECT)) == (
        406,
        text,
        (40, 10),
    )


def test_exchange_alternate_exchange_equivalence() -> None:
    existing = ExchangeDecl("direct", arguments={"alternate-exchange": "ae", "other": 1})
    same = ExchangeDecl("direct", arguments={"alternate-exchange": "ae", "other": 2})
    check_exchange_equivalence("x", existing, same)  # only alternate-exchange is compared
    assert error_of(lambda: check_exchange_equivalence("x", existing, DIRECT))[1] == (
        "inequivalent arg 'alternate-exchange' for exchange 'x' in vhost '/': "
        "received none but current is the value 'ae' of type 'longstr'"
    )
    other = ExchangeDecl("direct", arguments={"alternate-exchange": "ae2"})
    assert error_of(lambda: check_exchange_equivalence("x", existing, other, vhost="v"))[1] == (
        "inequivalent arg 'alternate-exchange' for exchange 'x' in vhost 'v': received 'ae2' but "
        "current is 'ae'"
    )


# --- exchange.delete, basic.publish -------------------------------------------------------------


def delete_exchange(
    name: str, exists: bool = True, if_unused: bool = False, bound: bool = False
) -> bool:
    return check_exchange_delete(
        name, exists=exists, if_unused=if_unused, has_bindings_as_source=bound
    )


def test_exchange_delete() -> None:
    assert delete_exchange("x") is True
    assert delete_exchange("x", bound=True) is True
    assert delete_exchange("x", if_unused=True) is True
    assert delete_exchange("missing", exists=False, if_unused=True) is False
    assert error_of(lambda: delete_exchange("x", if_unused=True, bound=True)) == (
        406,
        "exchange 'x' in vhost '/' in use",
        (40, 20),
    )
    assert error_of(lambda: delete_exchange("")) == (
        403,
        "operation not permitted on the default exchange",
        (40, 20),
    )
    assert error_of(lambda: delete_exchange("amq.direct")) == (
        403,
        "deletion of system exchange 'amq.direct' in vhost '/' not allowed",
        (40, 20),
    )
    assert error_of(lambda: delete_exchange("amq.anything", exists=False))[0] == 403


def test_publish_checks() -> None:
    check_publish_exchange("x", exists=True, internal=False)
    assert error_of(lambda: check_publish_exchange("x", exists=False, internal=False)) == (
        404,
        "no exchange 'x' in vhost '/'",
        (60, 40),
    )
    assert error_of(lambda: check_publish_exchange("x", exists=True, internal=True)) == (
        403,
        "cannot publish to internal exchange 'x' in vhost '/'",
        (60, 40),
    )


# --- bind / unbind ----------------------------------------------------------------------------


def test_bind_checks() -> None:
    check_bind("x", "q", "queue", source_exists=True, destination_exists=True)
    default = (403, "operation not permitted on the default exchange", (50, 20))
    assert (
        error_of(lambda: check_bind("", "q", "queue", source_exists=True, destination_exists=True))
        == default
    )
    assert error_of(
        lambda: check_bind(
            "x", "", "exchange", source_exists=True, destination_exists=True, method=(40, 30)
        )
    ) == (403, "operation not permitted on the default exchange", (40, 30))
    assert error_of(
        lambda: check_bind("x", "q", "queue", source_exists=False, destination_exists=True)
    ) == (
        404,
        "no exchange 'x' in vhost '/'",
        (50, 20),
    )
    assert error_of(
        lambda: check_bind("x", "q", "queue", source_exists=True, destination_exists=False)
    ) == (
        404,
        "no queue 'q' in vhost '/'",
        (50, 20),
    )
    assert error_of(
        lambda: check_bind(
            "x", "d", "exchange", source_exists=True, destination_exists=False, method=(40, 30)
        )
    ) == (404, "no exchange 'd' in vhost '/'", (40, 30))
    # with both missing, the source is reported
    assert error_of(
        lambda: check_bind("x", "q", "queue", source_exists=False, destination_exists=False)
    )[1] == ("no exchange 'x' in vhost '/'")


def test_unbind_checks() -> None:
    check_unbind("missing", "missing", "queue")  # unbinding what does not exist succeeds
    assert error_of(lambda: check_unbind("", "q", "queue")) == (
        403,
        "operation not permitted on the default exchange",
        (50, 50),
    )
    assert error_of(lambda: check_unbind("x", "", "exchange", (40, 40))) == (
        403,
        "operation not permitted on the default exchange",
        (40, 40),
    )


# --- queue.declare ----------------------------------------------------------------------------

PLAIN = QueueDecl()
LOCKED = (
    "cannot obtain exclusive access to locked queue 'q' in vhost '/'. It could be originally "
    "declared on another connection or the exclusive property value does not match that of "
    "the original declaration."
)


def test_queue_declare_creates_or_accepts_an_equivalent() -> None:
    assert check_queue_declare("q", PLAIN, passive=False, existing=None) is True
    assert check_queue_declare("q", PLAIN, passive=False, existing=PLAIN) is False
    assert check_queue_declare("q", QueueDecl(durable=True), passive=True, existing=PLAIN) is False


def test_queue_declare_reserved_prefix() -> None:
    refused = (403, "queue name 'amq.q' contains reserved prefix 'amq.*'", (50, 10))
    assert (
        error_of(lambda: check_queue_declare("amq.q", PLAIN, passive=False, existing=None))
        == refused
    )
    # refused even when it exists, allowed passively, case-sensitive, and not for server names
    assert (
        error_of(lambda: check_queue_declare("amq.q", PLAIN, passive=False, existing=PLAIN))
        == refused
    )
    assert check_queue_declare("amq.q", PLAIN, passive=True, existing=PLAIN) is False
    assert error_of(lambda: check_queue_declare("amq.q", PLAIN, passive=True, existing=None)) == (
        404,
        "no queue 'amq.q' in vhost '/'",
        (50, 10),
    )
    assert check_queue_declare("AMQ.q", PLAIN, passive=False, existing=None) is True
    name = server_named_queue_name()
    assert check_queue_declare(name, PLAIN, passive=False, existing=None, server_named=True) is True


def test_queue_declare_passive_missing() -> None:
    assert error_of(
        lambda: check_queue_declare("q", PLAIN, passive=True, existing=None, vhost="v")
    ) == (
        404,
        "no queue 'q' in vhost 'v'",
        (50, 10),
    )


def test_queue_exclusive_access() -> None:
    mine, theirs = object(), object()
    exclusive = QueueDecl(exclusive=True)
    check_exclusive_access("q", None, mine)
    check_exclusive_access("q", mine, mine)
    assert error_of(lambda: check_exclusive_access("q", theirs, mine, method=(60, 70))) == (
        405,
        LOCKED,
        (60, 70),
    )
    assert (
        check_queue_declare(
            "q", PLAIN, passive=True, existing=exclusive, owner=mine, connection=mine
        )
        is False
    )
    assert error_of(
        lambda: check_queue_declare(
            "q", PLAIN, passive=True, existing=exclusive, owner=theirs, connection=mine
        )
    ) == (405, LOCKED, (50, 10))


def test_queue_redeclare_with_other_exclusivity_is_locked() -> None:
    mine, theirs = object(), object()
    exclusive = QueueDecl(exclusive=True)
    # a shared queue redeclared as exclusive, an exclusive one redeclared as shared
    assert error_of(
        lambda: check_queue_declare("q", exclusive, passive=False, existing=PLAIN, connection=mine)
    ) == (
        405,
        LOCKED,
        (50, 10),
    )
    assert error_of(
        lambda: check_queue_declare(
            "q", PLAIN, passive=False, existing=exclusive, owner=mine, connection=mine
        )
    ) == (405, LOCKED, (50, 10))
    assert error_of(
        lambda: check_queue_declare(
            "q", exclusive, passive=False, existing=exclusive, owner=theirs, connection=mine
        )
    ) == (405, LOCKED, (50, 10))
    assert (
        check_queue_declare(
            "q", exclusive, passive=False, existing=exclusive, owner=mine, connection=mine
        )
        is False
    )


def test_exclusive_queues_are_never_durable() -> None:
    stored = QueueDecl(durable=True, exclusive=True).as_stored()
    assert stored == QueueDecl(durable=False, exclusive=True)
    check_queue_equivalence("q", "/", stored, QueueDecl(durable=True, exclusive=True))
    check_queue_equivalence("q", "/", stored, QueueDecl(durable=False, exclusive=True))


@pytest.mark.parametrize(
    ("existing", "requested", "text"),
    [
        (
            QueueDecl(),
            QueueDecl(durable=True),
            "inequivalent arg 'durable' for queue 'q' in vhost '/': received 'true' but current is "
            "'false'",
        ),
        (
            QueueDecl(durable=True),
            QueueDecl(),
            "inequivalent arg 'durable' for queue 'q' in vhost '/': received 'false' but current "
            "is 'true'",
        ),
        (
            QueueDecl(),
            QueueDecl(auto_delete=True),
            "inequivalent arg 'auto_delete' for queue 'q' in vhost '/': received 'true' but "
            "current is 'false'",
        ),
        (
            QueueDecl(arguments={"x-max-length": 10}),
            QueueDecl(arguments={"x-max-length": 20}),
            "inequivalent arg 'x-max-length' for queue 'q' in vhost '/': received '20' but current "
            "is '10'",
        ),
        (
            QueueDecl(arguments={"x-max-length": 10}),
            QueueDecl(),
            (
                "inequivalent arg 'x-max-length' for queue 'q' in vhost '/': "
                "received none but current is the value '10' of type 'signedint'"
            ),
        ),
        (
            QueueDecl(),
            QueueDecl(arguments={"x-max-length": 10}, argument_types={"x-max-length": "l"}),
            (
                "inequivalent arg 'x-max-length' for queue 'q' in vhost '/': "
                "received the value '10' of type 'long' but current is none"
            ),
        ),
        (
            QueueDecl(arguments={"x-message-ttl": 1000}),
            QueueDecl(arguments={"x-message-ttl": 1000.0}),
            "inequivalent arg 'x-message-ttl' for queue 'q' in vhost '/': received '1000.0' but "
            "current is '1000'",
        ),
        (
            QueueDecl(arguments={"x-single-active-consumer": True}),
            QueueDecl(arguments={"x-single-active-consumer": 1}),
            "inequivalent arg 'x-single-active-consumer' for queue 'q' in vhost '/': received '1' "
            "but current is 'true'",
        ),
        (
            QueueDecl(arguments={"x-dead-letter-exchange": "a"}),
            QueueDecl(arguments={"x-dead-letter-exchange": "b"}),
            "inequivalent arg 'x-dead-letter-exchange' for queue 'q' in vhost '/': received 'b' "
            "but current is 'a'",
        ),
        (
            QueueDecl(),
            QueueDecl(arguments={"x-queue-type": "quorum"}),
            (
                "inequivalent arg 'x-queue-type' for queue 'q' in vhost '/': "
                "received the value 'quorum' of type 'longstr' but current is none"
            ),
        ),
        (
            QueueDecl(arguments={"x-max-priority": 5}),
            QueueDecl(arguments={"x-max-priority": Decimal(5)}),
            (
                "inequivalent arg 'x-max-priority' for queue 'q' in vhost '/': "
                "received the value '5' of type '0' but current is '5'"
            ),
        ),
        (
            QueueDecl(arguments={"x-queue-leader-locator": "client-local"}),
            QueueDecl(arguments={"x-queue-leader-locator": "balanced"}),
            (
                "inequivalent arg 'x-queue-leader-locator' for queue 'q' in vhost '/': "
                "received 'balanced' but current is 'client-local'"
            ),
        ),
    ],
)
def test_queue_inequivalent(existing: QueueDecl, requested: QueueDecl, text: str) -> None:
    assert error_of(
        lambda: check_queue_declare("q", requested, passive=False, existing=existing)
    ) == (
        406,
        text,
        (50, 10),
    )


@pytest.mark.parametrize(
    ("existing", "requested"),
    [
        # integer widths do not matter: RabbitMQ compares values of one type class
        (
            QueueDecl(arguments={"x-max-length": 10}, argument_types={"x-max-length": "I"}),
            QueueDecl(arguments={"x-max-length": 10}, argument_types={"x-max-length": "b"}),
        ),
        (
            QueueDecl(arguments={"x-expires": 60000}, argument_types={"x-expires": "l"}),
            QueueDecl(arguments={"x-expires": 60000}, argument_types={"x-expires": "u"}),
        ),
        # unknown x-arguments are not compared
        (QueueDecl(arguments={"x-custom": 1}), QueueDecl(arguments={"x-custom": 2})),
        (QueueDecl(), QueueDecl(arguments={"x-custom": 2, "plain": "z"})),
        # a missing x-queue-type is classic
        (QueueDecl(), QueueDecl(arguments={"x-queue-type": "classic"})),
        (QueueDecl(arguments={"x-queue-type": "classic"}), QueueDecl()),
        # strings and binaries of equal bytes are the same value
        (
            QueueDecl(arguments={"x-dead-letter-exchange": "dlx"}),
            QueueDecl(arguments={"x-dead-letter-exchange": b"dlx"}),
        ),
        (
            QueueDecl(arguments={"x-message-ttl": 1.5}),
            QueueDecl(arguments={"x-message-ttl": 1.5}, argument_types={"x-message-ttl": "f"}),
        ),
    ],
)
def test_queue_equivalent(existing: QueueDecl, requested: QueueDecl) -> None:
    check_queue_equivalence("q", "/", existing, requested)
    assert check_queue_declare("q", requested, passive=False, existing=existing) is False


_NEW_QUEUE_ERRORS: list[tuple[dict[str, Any], dict[str, str], str]] = [
    (
        {"x-message-ttl": -1},
        {},
        "invalid arg 'x-message-ttl' for queue 'q' in vhost '/': {value_negative,-1}",
    ),
    (
        {"x-message-ttl": 315_360_000_001},
        {},
        "invalid arg 'x-message-ttl' for queue 'q' in vhost '/': {value_too_large,315360000001}",
    ),
    (
        {"x-message-ttl": "1000"},
        {},
        "invalid arg 'x-message-ttl' for queue 'q' in vhost '/': \"expected integer, got longstr\"",
    ),
    (
        {"x-message-ttl": 1.5},
        {},
        "invalid arg 'x-message-ttl' for queue 'q' in vhost '/': \"expected integer, got double\"",
    ),
    (
        {"x-message-ttl": 1.5},
        {"x-message-ttl": "f"},
        "invalid arg 'x-message-ttl' for queue 'q' in vhost '/': \"expected integer, got float\"",
    ),
    (
        {"x-message-ttl": Decimal(1)},
        {},
        "invalid arg 'x-message-ttl' for queue 'q' in vhost '/': \"expected integer, got decimal\"",
    ),
    (
        {"x-message-ttl": True},
        {},
        "invalid arg 'x-message-ttl' for queue 'q' in vhost '/': \"expected integer, got bool\"",
    ),
    (
        {"x-message-ttl": datetime.datetime(2020, 1, 1, tzinfo=datetime.UTC)},
        {},
        "invalid arg 'x-message-ttl' for queue 'q' in vhost '/': \"expected integer, got "
        'timestamp"',
    ),
    ({"x-expires": 0}, {}, "invalid arg 'x-expires' for queue 'q' in vhost '/': {value_zero,0}"),
    (
        {"x-expires": -5},
        {"x-expires": "b"},
        "invalid arg 'x-expires' for queue 'q' in vhost '/': {value_negative,-5}",
    ),
    (
        {"x-expires": 315_360_000_001},
        {},
        "invalid arg 'x-expires' for queue 'q' in vhost '/': {value_too_large,315360000001}",
    ),
    (
        {"x-max-length": -1},
        {},
        "invalid arg 'x-max-length' for queue 'q' in vhost '/': {value_negative,-1}",
    ),
    (
        {"x-max-length": b"1"},
        {},
        "invalid arg 'x-max-length' for queue 'q' in vhost '/': \"expected integer, got binary\"",
    ),
    (
        {"x-max-length-bytes": -2},
        {"x-max-length-bytes": "l"},
        "invalid arg 'x-max-length-bytes' for queue 'q' in vhost '/': {value_negative,-2}",
    ),
    (
        {"x-max-priority": 256},
        {},
        "invalid arg 'x-max-priority' for queue 'q' in vhost '/': {max_value_exceeded,256}",
    ),
    (
        {"x-max-priority": 1000},
        {},
        "invalid arg 'x-max-priority' for queue 'q' in vhost '/': {max_value_exceeded,1000}",
    ),
    (
        {"x-max-priority": -1},
        {},
        "invalid arg 'x-max-priority' for queue 'q' in vhost '/': {value_negative,-1}",
    ),
    (
        {"x-overflow": "drop-tail"},
        {},
        "invalid arg 'x-overflow' for queue 'q' in vhost '/': invalid_overflow",
    ),
    (
        {"x-overflow": 1},
        {},
        "invalid arg 'x-overflow' for queue 'q' in vhost '/': {unacceptable_type,signedint}",
    ),
    (
        {"x-dead-letter-exchange": 1},
        {},
        "invalid type 'signedint' for arg 'x-dead-letter-exchange' in queue 'q' in vhost '/'",
    ),
    (
        {"x-dead-letter-exchange": b"dlx"},
        {},
        "invalid type 'binary' for arg 'x-dead-letter-exchange' in queue 'q' in vhost '/'",
    ),
    (
        {"x-dead-letter-routing-key": "rk"},
        {},
        "invalid arg 'x-dead-letter-routing-key' for queue 'q' in vhost '/': "
        "routing_key_but_no_dlx_defined",
    ),
    (
        {"x-dead-letter-exchange": "dlx", "x-dead-letter-routing-key": 5},
        {"x-dead-letter-routing-key": "s"},
        "invalid arg 'x-dead-letter-routing-key' for queue 'q' in vhost '/': "
        "{unacceptable_type,short}",
    ),
    (
        {"x-single-active-consumer": "yes"},
        {},
        "invalid arg 'x-single-active-consumer' for queue 'q' in vhost '/': "
        "{unacceptable_type,longstr}",
    ),
    (
        {"x-single-active-consumer": 1},
        {"x-single-active-consumer": "B"},
        "invalid arg 'x-single-active-consumer' for queue 'q' in vhost '/': "
        "{unacceptable_type,unsignedbyte}",
    ),
    (
        {"x-queue-mode": "fast"},
        {},
        "invalid arg 'x-queue-mode' for queue 'q' in vhost '/': \"unsupported queue mode 'fast'\"",
    ),
    (
        {"x-queue-mode": 1},
        {},
        "invalid arg 'x-queue-mode' for queue 'q' in vhost '/': {unacceptable_type,signedint}",
    ),
    (
        {"x-queue-version": 3},
        {},
        "invalid arg 'x-queue-version' for queue 'q' in vhost '/': \"unsupported queue version "
        "'3'\"",
    ),
    (
        {"x-queue-version": -1},
        {},
        "invalid arg 'x-queue-version' for queue 'q' in vhost '/': {value_negative,-1}",
    ),
    (
        {"x-queue-type": "bogus"},
        {},
        "invalid arg 'x-queue-type' for queue 'q' in vhost '/': \"unsupported queue type 'bogus'\"",
    ),
    (
        {"x-queue-type": "quorum"},
        {},
        "invalid arg 'x-queue-type' for queue 'q' in vhost '/': \"unsupported queue type "
        "'quorum'\"",
    ),
    (
        {"x-queue-type": 7},
        {},
        "invalid arg 'x-queue-type' for queue 'q' in vhost '/': {unacceptable_type,signedint}",
    ),
    (
        {"x-queue-leader-locator": "nearest"},
        {},
        "invalid arg 'x-queue-leader-locator' for queue 'q' in vhost '/': "
        "invalid_queue_locator_arg",
    ),
    (
        {"x-queue-leader-locator": 1},
        {},
        "invalid arg 'x-queue-leader-locator' for queue 'q' in vhost '/': "
        "{unacceptable_type,signedint}",
    ),
    (
        {"x-delivery-limit": 5},
        {},
        "invalid arg 'x-delivery-limit' for queue 'q' in vhost '/' of queue type "
        "rabbit_classic_queue",
    ),
    (
        {"x-max-age": "1D"},
        {},
        "invalid arg 'x-max-age' for queue 'q' in vhost '/' of queue type rabbit_classic_queue",
    ),
    (
        {"x-quorum-initial-group-size": 3},
        {},
        "invalid arg 'x-quorum-initial-group-size' for queue 'q' in vhost '/' of queue type "
        "rabbit_classic_queue",
    ),
    # RabbitMQ's order: the DLX type first, then x-queue-type, then each validator in its own
    # order (not the table's), then arguments of other queue types in the table's order
    (
        {"x-max-length": -1, "x-expires": 0, "x-dead-letter-exchange": 5},
        {},
        "invalid type 'signedint' for arg 'x-dead-letter-exchange' in queue 'q' in vhost '/'",
    ),
    (
        {"x-max-length": -1, "x-queue-type": "nope"},
        {},
        "invalid arg 'x-queue-type' for queue 'q' in vhost '/': \"unsupported queue type 'nope'\"",
    ),
    (
        {"x-max-length": -1, "x-expires": 0},
        {},
        "invalid arg 'x-expires' for queue 'q' in vhost '/': {value_zero,0}",
    ),
    (
        {"x-delivery-limit": 1, "x-max-length": -1},
        {},
        "invalid arg 'x-max-length' for queue 'q' in vhost '/': {value_negative,-1}",
    ),
    (
        {"x-max-age": "1D", "x-delivery-limit": 1},
        {},
        "invalid arg 'x-max-age' for queue 'q' in vhost '/' of queue type rabbit_classic_queue",
    ),
]


@pytest.mark.parametrize(("arguments", "types", "text"), _NEW_QUEUE_ERRORS)
def test_new_queue_argument_errors(
    arguments: dict[str, Any], types: dict[str, str], text: str
) -> None:
    requested = QueueDecl(arguments=arguments, argument_types=types)
    assert error_of(lambda: check_queue_declare("q", requested, passive=False, existing=None)) == (
        406,
        text,
        (50, 10),
    )


@pytest.mark.parametrize(
    "arguments",
    [
        {"x-max-priority": 0},
        {"x-max-priority": 255},
        {"x-message-ttl": 0, "x-expires": 1, "x-max-length": 0, "x-max-length-bytes": 0},
        {"x-message-ttl": 315_360_000_000},
        {"x-overflow": "drop-head"},
        {"x-overflow": "reject-publish"},
        {"x-overflow": "reject-publish-dlx"},
        {"x-dead-letter-exchange": "", "x-dead-letter-routing-key": "rk"},
        {"x-single-active-consumer": False},
        {"x-queue-mode": "lazy"},
        {"x-queue-mode": "default"},
        {"x-queue-version": 1},
        {"x-queue-version": 2},
        {"x-queue-type": "classic"},
        {"x-queue-master-locator": "anything"},
        {"x-queue-leader-locator": "client-local"},
        {"x-queue-leader-locator": "balanced"},
        {"x-unknown": [1, {"a": None}], "not-x": 1.5},
    ],
)
def test_new_queue_accepted_arguments(arguments: dict[str, Any]) -> None:
    validate_queue_arguments("queue 'q' in vhost '/'", arguments, None, (50, 10))
    assert (
        check_queue_declare("q", QueueDecl(arguments=arguments), passive=False, existing=None)
        is True
    )


def test_existing_queue_arguments_are_compared_not_validated() -> None:
    # RabbitMQ validates x-arguments only when it creates the queue
    odd = QueueDecl(arguments={"x-custom-and-invalid-elsewhere": -1, "x-delivery-limit": 5})
    assert check_queue_declare("q", odd, passive=False, existing=odd) is False


# --- helpers ----------------------------------------------------------------------------------


def test_names() -> None:
    assert strip_cr_lf("a\r\nb\n") == "ab"
    assert strip_cr_lf("plain") == "plain"
    assert name_fits("q" * 255) and not name_fits("q" * 256)
    assert not name_fits("é" * 128)  # 256 bytes
    first, second = server_named_queue_name(), server_named_queue_name()
    assert first != second
    assert re.fullmatch(r"amq\.gen-[A-Za-z0-9_-]{22}", first)


@pytest.mark.parametrize(
    ("value", "printed"),
    [
        (True, "true"),
        (-3, "-3"),
        (1.5, "1.5"),
        (1e20, "1.0e20"),
        (1.5e-07, "1.5e-7"),
        ("abc", '<<"abc">>'),
        ('a"b\\c\n', '<<"a\\"b\\\\c\\n">>'),
        (b"", "<<>>"),
        (b"\x00\x01", "<<0,1>>"),
        ("é", '<<"é">>'),  # UTF-8 bytes 195,169 are printable latin-1
        ("€", "<<226,130,172>>"),
        (Decimal("1.50"), "{2,150}"),
        (None, "undefined"),
        ([1, "a"], '[{signedint,1},{longstr,<<"a">>}]'),
        ({"k": True}, '[{<<"k">>,bool,true}]'),
        (CharList.of("a 'b'"), "\"a 'b'\""),
        (CharList(b"\x01"), "[1]"),
    ],
)
def test_erlang_term(value: Any, printed: str) -> None:
    assert erlang_term(value) == printed


@pytest.mark.parametrize(
    ("value", "declared", "name"),
    [
        (1, None, "signedint"),
        (2**31, None, "long"),
        (-(2**31), None, "signedint"),
        (1, "b", "byte"),
        (1, "L", "long"),
        (1, "u", "unsignedshort"),
        (True, None, "bool"),
        ("s", None, "longstr"),
        (b"s", None, "binary"),
        (1.0, None, "double"),
        (Decimal(1), None, "decimal"),
        (datetime.datetime.now(datetime.UTC), None, "timestamp"),
        ({}, None, "table"),
        ([], None, "array"),
        (None, None, "void"),
        (1, "signedint", "signedint"),
    ],
)
def test_field_type_name(value: Any, declared: str | None, name: str) -> None:
    assert field_type_name(value, declared) == name
