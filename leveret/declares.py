"""Declares, deletes and bindings from a channel: checked here, decided by the metadata store.

Each function checks a channel method against this node's view and answers at once when there
is nothing to change. Otherwise it submits a command and holds
the connection's later frames until the cluster has decided and this node's model reflects it.
A conflicting declaration that won the race elsewhere is checked again against the winner, so
the client gets the error RabbitMQ would give. When no majority decides in time, the error is
RabbitMQ's for a metadata store timeout: 541 INTERNAL_ERROR, which closes the connection.
"""

from __future__ import annotations

import asyncio
import functools
import itertools
import logging
import random
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, Protocol

from . import declare_rules as rules
from . import metadata_commands as commands
from . import placement
from .amqp import methods as m
from .amqp.errors import AMQPError, ReplyCode, precondition_failed
from .amqp.fields import argument_types
from .exchanges.base import Binding
from .limits import check_queue_limit
from .metadata import Command, MetadataStore, MetadataUnavailable, Reply
from .names import RUN_ID
from .queues.remote import RemoteQueue, RequestKind

if TYPE_CHECKING:
    from .broker import Broker
    from .queues.classic import ClassicQueue
    from .queues.remote_type import RemoteQueueClient
    from .vhost import VirtualHost

log = logging.getLogger(__name__)


class DeclaringConnection(Protocol):
    """The connection a declare came on, as far as declares look at it."""

    @property
    def broker(self) -> Broker: ...

    @property
    def owner_tag(self) -> str: ...


class Declaring(Protocol):
    """The channel a declare came on: its vhost, its connection, where its answer goes."""

    last_queue_name: str | None

    @property
    def session(self) -> DeclaringConnection: ...

    @property
    def vhost(self) -> VirtualHost: ...

    def reply(self, method: m.Method) -> None: ...

    def wait_then(self, pending: Awaitable[Any], then: Callable[[Any], None]) -> None: ...

    def remote_client(self, remote: RemoteQueue, method: m.Method) -> RemoteQueueClient: ...

    def check_deletable(self, queue: ClassicQueue, method: m.QueueDelete) -> None: ...


# How many times a declare is made again when the queue it found is deleted before its
# declare-ok (each time needs another client's delete in that window).
_DECLARE_ATTEMPTS = 20
# Before it is made again, the declare waits a random part of this many seconds: against a client
# that deletes and declares the queue in a loop, attempts paced by the same Raft commits fell
# into step with its deletes, 20 in a row (with one Raft heartbeat every 3 ticks).
_DECLARE_RETRY_JITTER = 0.005


async def _decide(
    metadata: MetadataStore, command: Command, timeout_text: str, method: tuple[int, int]
) -> Reply:
    try:
        reply = await metadata.submit(command)
    except MetadataUnavailable as error:
        log.warning("%s: %s", timeout_text, error)
        raise AMQPError(ReplyCode.INTERNAL_ERROR, timeout_text, method, hard=True) from None
    if reply.get("status") == "error":
        # The checks above should have refused anything the store refuses.
        log.error("the cluster refused %s: %s", command.op, reply.get("reason"))
        raise AMQPError(
            ReplyCode.INTERNAL_ERROR,
            f"the cluster refused the change: {reply.get('reason')}",
            method,
            hard=True,
        )
    return reply


async def _barrier(metadata: MetadataStore, timeout_text: str, method: tuple[int, int]) -> None:
    try:
        await metadata.catch_up()
    except MetadataUnavailable as error:
        log.warning("%s: %s", timeout_text, error)
        raise AMQPError(ReplyCode.INTERNAL_ERROR, timeout_text, method, hard=True) from None


def when_current(
    channel: Declaring,
    metadata: MetadataStore,
    again: Callable[[], None],
    timeout_text: str,
    method: tuple[int, int],
) -> None:
    """Run `again` (the same method, this time answered from this node's view) once the view is
    known current. A node back from a pause, a restart or a partition may not yet have applied
    what other nodes' clients were already told (a queue deleted, made or bound); an answer from
    that view ("exists", "no queue", "inequivalent arg") would contradict them, as the fault
    harness's linearizability check showed. Without a majority the method fails as a change
    does: 541, with its timeout text. A lone node's view is always current."""
    if not metadata.may_lag:
        again()
        return
    channel.wait_then(_barrier(metadata, timeout_text, method), lambda _: again())


def _reply_unless(channel: Declaring, no_wait: bool, method: m.Method) -> None:
    if not no_wait:
        channel.reply(method)


def _answer(channel: Declaring, ok: m.Method | None) -> None:
    """Send `ok`, the reply of a binding method (None when the client asked for no-wait)."""
    if ok is not None:
        channel.reply(ok)


# --- exchanges ----------------------------------------------------------------------------------


def exchange_declare(
    channel: Declaring, metadata: MetadataStore, method: m.ExchangeDeclare, *, current: bool = False
) -> None:
    vhost = channel.vhost
    name = rules.strip_cr_lf(method.exchange)
    described = rules.describe("exchange", name, vhost.name)
    text = f"failed to declare {described} because the operation timed out"
    if name in vhost.exchanges and not current:
        again = functools.partial(exchange_declare, channel, metadata, method, current=True)
        when_current(channel, metadata, again, text, method.ids)
        return
    requested = vhost.check_exchange_declare(
        name,
        method.type,
        passive=False,
        durable=method.durable,
        auto_delete=method.auto_delete,
        internal=method.internal,
        arguments=method.arguments,
        method=method.ids,
    )
    if requested is None:
        _reply_unless(channel, method.no_wait, m.ExchangeDeclareOk())
        return

    async def decide() -> None:
        reply = await _decide(
            metadata, commands.declare_exchange(vhost.name, name, requested), text, method.ids
        )
        if reply["status"] != "created":
            existing = commands.exchange_decl(commands.replied_exchange(reply))
            rules.check_exchange_equivalence(name, existing, requested, vhost.name, method.ids)

    channel.wait_then(
        decide(), lambda _: _reply_unless(channel, method.no_wait, m.ExchangeDeclareOk())
    )


def exchange_delete(
    channel: Declaring, metadata: MetadataStore, method: m.ExchangeDelete, *, current: bool = False
) -> None:
    vhost = channel.vhost
    name = rules.strip_cr_lf(method.exchange)
    exchange = vhost.exchanges.get(name)
    text = f"failed to delete {rules.describe('exchange', name, vhost.name)} due to a timeout"
    if exchange is None and not current:
        again = functools.partial(exchange_delete, channel, metadata, method, current=True)
        when_current(channel, metadata, again, text, method.ids)
        return
    # Refuses the default and "amq." exchanges; a missing exchange is deleted already.
    rules.check_exchange_delete(
        name,
        exists=exchange is not None,
        if_unused=method.if_unused,
        has_bindings_as_source=exchange is not None and exchange.has_bindings(),
        vhost=vhost.name,
        method=method.ids,
    )
    if exchange is None:
        _reply_unless(channel, method.no_wait, m.ExchangeDeleteOk())
        return

    async def decide() -> None:
        reply = await _decide(
            metadata, commands.delete_exchange(vhost.name, name, method.if_unused), text, method.ids
        )
        if reply["status"] == "in_use":
            raise precondition_failed(
                f"{rules.describe('exchange', name, vhost.name)} in use", method.ids
            )

    channel.wait_then(
        decide(), lambda _: _reply_unless(channel, method.no_wait, m.ExchangeDeleteOk())
    )


# --- bindings -----------------------------------------------------------------------------------


def bind(
    channel: Declaring,
    metadata: MetadataStore,
    source: str,
    destination: str,
    kind: str,
    routing_key: str,
    arguments: dict[str, Any],
    method: m.Method,
    ok: m.Method | None,
    *,
    current: bool = False,
) -> None:
    """Add a binding (`ok` is the reply to send, None for no-wait)."""
    vhost = channel.vhost
    ids = method.ids
    text = "Could not add binding due to timeout"

    def check(source_exists: bool, destination_exists: bool) -> None:
        rules.check_bind(
            source,
            destination,
            kind,
            source_exists=source_exists,
            destination_exists=destination_exists,
            vhost=vhost.name,
            method=ids,
        )

    source_exists = source in vhost.exchanges
    destination_exists = vhost.has_destination(kind, destination)
    binding = Binding.of(source, destination, kind, routing_key, arguments)  # type: ignore[arg-type]
    answered_here = not (source_exists and destination_exists) or vhost.exchanges[
        source
    ].has_binding(binding)
    if answered_here and not current:
        again = functools.partial(
            bind, channel, metadata, source, destination, kind, routing_key, arguments, method, ok,
            current=True,
        )  # fmt: skip
        when_current(channel, metadata, again, text, ids)
        return
    check(source_exists, destination_exists)
    exchange = vhost.exchanges[source]
    exchange.validate_binding(binding, ids)
    if exchange.has_binding(binding):
        _answer(channel, ok)
        return

    async def decide() -> None:
        reply = await _decide(
            metadata,
            commands.bind(vhost.name, binding),
            text,
            ids,
        )
        if reply["status"] == "not_found":
            check(reply.get("missing") != "source", reply.get("missing") != "destination")

    channel.wait_then(decide(), lambda _: _answer(channel, ok))


def unbind(
    channel: Declaring,
    metadata: MetadataStore,
    source: str,
    destination: str,
    kind: str,
    routing_key: str,
    arguments: dict[str, Any],
    method: m.Method,
    ok: m.Method | None,
    *,
    current: bool = False,
) -> None:
    """Remove a binding; removing a missing one succeeds, as in RabbitMQ."""
    vhost = channel.vhost
    text = "Could not remove binding due to timeout"
    rules.check_unbind(source, destination, kind, method.ids)
    binding = Binding.of(source, destination, kind, routing_key, arguments)  # type: ignore[arg-type]
    exchange = vhost.exchanges.get(source)
    if exchange is None or not exchange.has_binding(binding):
        if not current:
            again = functools.partial(
                unbind, channel, metadata, source, destination, kind, routing_key, arguments,
                method, ok, current=True,
            )  # fmt: skip
            when_current(channel, metadata, again, text, method.ids)
            return
        _answer(channel, ok)
        return
    command = commands.unbind(vhost.name, binding)
    pending = _decide(metadata, command, text, method.ids)
    channel.wait_then(pending, lambda _: _answer(channel, ok))


# --- queues -------------------------------------------------------------------------------------


def queue_declare(
    channel: Declaring,
    metadata: MetadataStore,
    method: m.QueueDeclare,
    *,
    current: bool = False,
    attempt: int = 0,
) -> None:
    """A non-passive queue.declare: the queue's home is this node when it is created."""
    session, vhost = channel.session, channel.vhost
    name = rules.strip_cr_lf(method.queue)
    server_named = not name
    if server_named:
        name = rules.server_named_queue_name()
    requested = rules.QueueDecl(
        method.durable,
        method.exclusive,
        method.auto_delete,
        method.arguments,
        argument_types(method.arguments),
    )

    def check(existing: rules.QueueDecl | None, owner: Any) -> bool:
        return rules.check_queue_declare(
            name,
            requested,
            passive=False,
            existing=existing,
            owner=owner,
            connection=session,
            server_named=server_named,
            vhost=vhost.name,
            method=method.ids,
        )

    def declared(_: object = None) -> None:
        if server_named:
            channel.last_queue_name = name
        queue = vhost.queues.get(name)
        if queue is None:
            remote = vhost.remote_queues.get(name)
            if remote is not None:
                # A server-named queue is this client's own: no one else deletes it meanwhile.
                again = (
                    None
                    if server_named or attempt + 1 >= _DECLARE_ATTEMPTS
                    else functools.partial(
                        queue_declare, channel, metadata, method, current=True, attempt=attempt + 1
                    )
                )
                _remote_declare_ok(channel, metadata, remote, method, timeout_text, again)
                return
        if queue is not None:
            queue.touch()  # a redeclare, passive or not, renews an x-expires lease
        if not method.no_wait:
            counts = (queue.message_count, queue.consumer_count) if queue is not None else (0, 0)
            channel.reply(m.QueueDeclareOk(name, *counts))

    timeout_text = (
        f"Could not declare {rules.describe('queue', name, vhost.name)} on node "
        f"'{metadata.node_name}' because the metadata store operation timed out"
    )
    known = vhost.known_queue(name)
    if known is not None and not current:
        again = functools.partial(queue_declare, channel, metadata, method, current=True)
        when_current(channel, metadata, again, timeout_text, method.ids)
        return
    if not check(*(known or (None, None))):
        declared()
        return
    check_queue_limit(session.broker.registry.vhost_limits.get(vhost.name), vhost, name, method.ids)
    owner_tag = session.owner_tag if method.exclusive else None
    # An exclusive queue stays with its connection; others go where their locator says.
    home, run = (
        (metadata.node_name, RUN_ID)
        if method.exclusive
        else _place(channel, metadata, name, method.arguments)
    )
    command = commands.declare_queue(vhost.name, name, requested.as_stored(), owner_tag, home, run)

    async def decide() -> None:
        reply = await _decide(metadata, command, timeout_text, method.ids)
        if reply["status"] != "created":
            record = commands.replied_queue(reply)
            owner = record.exclusive_owner
            check(commands.queue_decl(record), session if owner == session.owner_tag else owner)

    channel.wait_then(decide(), declared)


def _remote_declare_ok(
    channel: Declaring,
    metadata: MetadataStore,
    remote: RemoteQueue,
    method: m.QueueDeclare,
    timeout_text: str,
    again: Callable[[], None] | None,
) -> None:
    """declare-ok with the counts of the queue's home node. A delete decided between this
    declare and the home node's answer leaves no queue there: then the declare is made `again`
    (it creates the queue anew), as RabbitMQ's channel loops between declare and stat, instead
    of refusing a declare with "no queue"."""
    client = channel.remote_client(remote, method)

    async def counts() -> tuple[int, int] | None:
        link = client.link()
        try:
            status = await client.request(link, RequestKind.STATUS)
        except AMQPError as error:
            if error.code != ReplyCode.NOT_FOUND or again is None:
                raise
            # Deleted meanwhile (and perhaps declared again: this node may apply both at once,
            # so the name it lists proves nothing). The declare is made again once this node's
            # view has caught up; `again` is None after a bounded number of attempts, and then
            # the home node's refusal stands.
            await asyncio.sleep(random.uniform(0, _DECLARE_RETRY_JITTER))
            await _barrier(metadata, timeout_text, method.ids)
            return None
        return status.message_count, status.consumer_count

    def answer(found: tuple[int, int] | None) -> None:
        if found is None:
            assert again is not None
            again()
        elif not method.no_wait:
            channel.reply(m.QueueDeclareOk(remote.name, *found))

    channel.wait_then(counts(), answer)


def _place(
    channel: Declaring, metadata: MetadataStore, name: str, arguments: dict[str, Any]
) -> tuple[str, str]:
    """The home node of a new queue and that node's run: the x-queue-leader-locator argument,
    else the queue-leader-locator policy key, else the node's configured default decides."""
    broker, vhost = channel.session.broker, channel.vhost
    policy = broker.registry.effective_policy("policy", vhost.name, "queue", name)
    locator = (
        arguments.get("x-queue-leader-locator")
        or (policy.definition.get("queue-leader-locator") if policy is not None else None)
        or broker.config.queue_leader_locator
    )
    if isinstance(locator, bytes):
        locator = locator.decode("utf-8", "replace")
    if locator == placement.CLIENT_LOCAL:
        return metadata.node_name, RUN_ID
    running = metadata.running_nodes()
    vhosts = list(broker.vhosts.values())
    homes = itertools.chain.from_iterable(
        itertools.chain(
            itertools.repeat(metadata.node_name, len(each.queues)),
            (queue.home_node for queue in each.remote_queues.values()),
        )
        for each in vhosts
    )
    count = sum(len(each.queues) + len(each.remote_queues) for each in vhosts)
    home = placement.home_node(locator, metadata.node_name, sorted(running), homes, count)
    return home, running[home]


def queue_delete(
    channel: Declaring,
    metadata: MetadataStore,
    name: str,
    method: m.QueueDelete,
    *,
    current: bool = False,
) -> None:
    session, vhost = channel.session, channel.vhost
    queue = vhost.queues.get(name)
    remote = vhost.remote_queues.get(name)
    text = "The operation to delete the queue from the metadata store timed out"
    if queue is None and not current:
        # A remote queue's answers (its home node down, if-unused) come from this view as well.
        again = functools.partial(queue_delete, channel, metadata, name, method, current=True)
        when_current(channel, metadata, again, text, method.ids)
        return
    if queue is None and remote is None:
        if not current:
            again = functools.partial(queue_delete, channel, metadata, name, method, current=True)
            when_current(channel, metadata, again, text, method.ids)
            return
        # Deleting a missing queue succeeds, as in RabbitMQ.
        _reply_unless(channel, method.no_wait, m.QueueDeleteOk(0))
        return
    if queue is None and remote is not None:
        _delete_remote(channel, metadata, remote, method)
        return
    assert queue is not None
    channel.check_deletable(queue, method)
    owner_tag = session.owner_tag if queue.exclusive_owner is session else None
    pending = _decide(
        metadata, commands.delete_queue(vhost.name, name, owner_tag), text, method.ids
    )

    def deleted(_: object) -> None:
        _reply_unless(channel, method.no_wait, m.QueueDeleteOk(queue.deleted_message_count))

    channel.wait_then(pending, deleted)


def _delete_remote(
    channel: Declaring, metadata: MetadataStore, remote: RemoteQueue, method: m.QueueDelete
) -> None:
    """Deleting a queue homed elsewhere: its home node's counts decide if-unused and if-empty
    (and say how many messages went with it); the cluster decides the deletion."""
    vhost = channel.vhost
    client = channel.remote_client(remote, method)
    link = client.link()
    where = f"queue '{remote.name}' in vhost '{vhost.name}'"
    text = "The operation to delete the queue from the metadata store timed out"

    async def delete() -> int:
        try:
            status = await client.request(link, RequestKind.STATUS)
        except AMQPError as error:
            if error.code != ReplyCode.NOT_FOUND:
                raise
            # Deleted meanwhile through another node: a missing queue is deleted already.
            await _barrier(metadata, text, method.ids)
            if vhost.remote_queues.get(remote.name) is remote:
                raise
            return 0
        if client.stream:
            # RabbitMQ deletes a stream whatever if-unused and if-empty say, and counts 0.
            await _decide(
                metadata, commands.delete_queue(vhost.name, remote.name, None), text, method.ids
            )
            return 0
        if method.if_unused and status.consumer_count:
            raise precondition_failed(f"{where} in use", method.ids)
        if method.if_empty and status.message_count:
            raise precondition_failed(f"{where} not empty", method.ids)
        await _decide(
            metadata, commands.delete_queue(vhost.name, remote.name, None), text, method.ids
        )
        return status.message_count

    channel.wait_then(
        delete(),
        lambda count: _reply_unless(channel, method.no_wait, m.QueueDeleteOk(count)),
    )
