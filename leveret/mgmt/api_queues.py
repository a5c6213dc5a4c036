"""`/api/queues`: list, declare, delete, purge, and fetch messages from queues."""

from __future__ import annotations

from collections.abc import Awaitable
from typing import TYPE_CHECKING

from ..amqp.errors import AMQPError
from ..declare_rules import MAX_NAME_BYTES, home_node_down, is_stream, not_found
from ..queues.remote import RemoteQueue
from ..queues.stream_rules import not_supported
from . import metadata_writes, remote_queue_ops
from .access import login_vhosts
from .cluster_link import cluster_control
from .context import (
    NO_CONTENT,
    Context,
    Reply,
    Route,
    body_flag,
    not_found_unless,
    ok,
    require_keys,
    truthy,
)
from .errors import ApiError, bad_request, from_amqp, not_authorised
from .exchange_view import binding_json
from .home_queue_view import view_query
from .listing import list_response, select_columns
from .message_view import message_json
from .queue_listing import list_queues
from .queue_view import add_queue_samples, queue_json
from .remote_queue_view import remote_queue_json

if TYPE_CHECKING:
    from ..queues.classic import ClassicQueue

_ACK_MODES = (
    "ack_requeue_true",
    "ack_requeue_false",
    "reject_requeue_true",
    "reject_requeue_false",
)


def _queue(ctx: Context) -> ClassicQueue:
    queue = ctx.vhost().queues.get(ctx.param("name"))
    not_found_unless(queue is not None)
    assert queue is not None
    return queue


def check_permission(
    ctx: Context, kind: str, vhost: str, resource: str, resource_kind: str
) -> None:
    """AMQP permissions apply to what a user does through the API (administrators included,
    when they have permissions in the vhost; administrators without any are let through)."""
    caller = ctx.caller
    if caller.is_admin and (caller.name, vhost) not in ctx.broker.permissions:
        return
    if not ctx.broker.permitted(caller.name, vhost, kind, resource):
        raise not_authorised(
            f"access to {resource_kind} '{resource}' in vhost '{vhost}' refused for user "
            f"'{caller.name}'"
        )


def list_all(ctx: Context) -> Reply | Awaitable[Reply]:
    return list_queues(ctx, login_vhosts(ctx.broker, ctx.caller))


def list_vhost(ctx: Context) -> Reply | Awaitable[Reply]:
    return list_queues(ctx, [ctx.vhost().name])


def show(ctx: Context) -> Reply | Awaitable[Reply]:
    remote = ctx.vhost().remote_queues.get(ctx.param("name"))
    if remote is not None:

        async def show_remote() -> Reply:
            assert remote is not None
            live = await remote_queue_ops.live_counts(
                ctx.broker, [remote], view=True, view_query=view_query(ctx.query)
            )
            shown = remote_queue_json(
                remote,
                cluster_control(ctx.broker),
                ctx.state,
                live=live.get((remote.vhost, remote.name)),
                detailed=True,
            )
            return ok(select_columns(shown, ctx.query.get("columns")))

        return show_remote()
    queue = _queue(ctx)
    figure = ctx.state.figure(queue)
    shown = queue_json(queue, figure, ctx.state, ctx.broker.config.node_name, detailed=True)
    add_queue_samples(ctx.state, queue, ctx.query, shown)
    return ok(select_columns(shown, ctx.query.get("columns")))


def declare(ctx: Context) -> Reply | Awaitable[Reply]:
    vhost = ctx.vhost_to_write()
    name = ctx.param("name")
    size = len(name.encode("utf-8"))
    if size > MAX_NAME_BYTES:
        raise bad_request(f"queue should be less than 255 bytes, actually was {size}\n")
    body = ctx.json_body()
    arguments = body.get("arguments") or {}
    if not isinstance(arguments, dict):
        raise bad_request("arguments should be an object")
    check_permission(ctx, "configure", vhost.name, name, "queue")
    durable = body_flag(body, "durable")
    auto_delete = body_flag(body, "auto_delete")
    return metadata_writes.declare_queue(
        ctx, vhost, name, durable=durable, auto_delete=auto_delete, arguments=dict(arguments)
    )


def _check_deletable(ctx: Context, queue: ClassicQueue) -> None:
    """The if-unused and if-empty conditions of a DELETE."""
    _check_counts(ctx, queue.vhost, queue.name, queue.consumer_count, queue.message_count)


def _check_counts(ctx: Context, vhost: str, name: str, consumers: int, messages: int) -> None:
    where = f"queue '{name}' in vhost '{vhost}'"
    if truthy(ctx.query.get("if-unused")) and consumers:
        raise bad_request(f"{where} in use")
    if truthy(ctx.query.get("if-empty")) and messages:
        raise bad_request(f"{where} not empty")


def delete(ctx: Context) -> Awaitable[Reply]:
    """DELETE, decided by the cluster's store; a remote queue's counts are its home node's."""
    vhost = ctx.vhost()
    name = ctx.param("name")
    queue = vhost.queues.get(name)
    not_found_unless(queue is not None or name in vhost.remote_queues)
    check_permission(ctx, "configure", vhost.name, name, "queue")
    if queue is not None:
        if not queue.stream:  # RabbitMQ deletes a stream whatever the conditions say
            _check_deletable(ctx, queue)
        return metadata_writes.delete_queue(ctx, vhost, name)
    remote = vhost.remote_queues[name]
    conditional = truthy(ctx.query.get("if-unused")) or truthy(ctx.query.get("if-empty"))
    if not conditional or is_stream(remote.decl.arguments):
        return metadata_writes.delete_queue(ctx, vhost, name)

    async def checked() -> Reply:
        # Counts are known where a queue lives: its home node's decide the conditions.
        found = await remote_queue_ops.status(ctx.broker, remote)
        if found.code:
            raise AMQPError(found.code, found.text)
        _check_counts(ctx, vhost.name, name, found.consumer_count, found.message_count)
        return await metadata_writes.delete_queue(ctx, vhost, name)

    return _on_home_node(ctx, remote, checked())


def purge(ctx: Context) -> Reply | Awaitable[Reply]:
    remote = ctx.vhost().remote_queues.get(ctx.param("name"))
    if remote is not None:
        check_permission(ctx, "read", remote.vhost, remote.name, "queue")
        _refuse_stream("queue.purge", remote.name, remote.vhost, is_stream(remote.decl.arguments))
        return _on_home_node(ctx, remote, _purge_remote(ctx, remote))
    queue = _queue(ctx)
    check_permission(ctx, "read", queue.vhost, queue.name, "queue")
    _refuse_stream("queue.purge", queue.name, queue.vhost, queue.stream)
    queue.purge()
    return Reply(NO_CONTENT)


async def _purge_remote(ctx: Context, remote: RemoteQueue) -> Reply:
    await remote_queue_ops.purge(ctx.broker, remote)
    return Reply(NO_CONTENT)


async def _on_home_node(ctx: Context, remote: RemoteQueue, work: Awaitable[Reply]) -> Reply:
    """`work` on a remote queue; its home node's refusal, or its being down, as RabbitMQ's 404."""
    try:
        return await work
    except remote_queue_ops.Unreachable:
        down = home_node_down(remote.name, remote.vhost, remote.home_node, (0, 0))
        raise ApiError(404, "not_found", down.reply_text) from None
    except AMQPError as error:
        raise from_amqp(error) from None


def _refuse_stream(what: str, name: str, vhost: str, stream: bool) -> None:
    """Streams cannot be read or purged here: RabbitMQ's 400, its get's text led by the code."""
    if stream:
        refused = not_supported(what, name, vhost, (0, 0))
        prefix = f"{int(refused.code)} " if what == "basic.get" else ""
        raise bad_request(prefix + refused.text)


def get_messages(ctx: Context) -> Reply | Awaitable[Reply]:
    """POST .../get: take up to `count` messages, then requeue or settle them per `ackmode`."""
    vhost = ctx.vhost()
    body = ctx.json_body()
    require_keys(body, "count", "ackmode", "encoding")
    count, ackmode, encoding = body["count"], body["ackmode"], body["encoding"]
    if ackmode not in _ACK_MODES:
        raise bad_request(f"Unsupported ackmode {ackmode}")
    if encoding not in ("auto", "base64"):
        raise bad_request(f"Unsupported encoding {encoding}")
    if not isinstance(count, int) or isinstance(count, bool) or count < 0:
        raise bad_request(f"count should be a non-negative integer, actually was {count!r}")
    truncate = body.get("truncate")
    if truncate is not None and (not isinstance(truncate, int) or truncate < 0):
        raise bad_request("truncate should be a non-negative integer")
    remote = vhost.remote_queues.get(ctx.param("name"))
    if remote is not None:
        check_permission(ctx, "read", remote.vhost, remote.name, "queue")
        _refuse_stream("basic.get", remote.name, remote.vhost, is_stream(remote.decl.arguments))
        work = _get_remote(ctx, remote, count, ackmode, encoding, truncate)
        return _on_home_node(ctx, remote, work)
    queue = vhost.queues.get(ctx.param("name"))
    if queue is None:
        # RabbitMQ reads through an AMQP channel here: a missing queue gets basic.get's reply text.
        missing = not_found("queue", ctx.param("name"), vhost.name, (0, 0))
        raise ApiError(404, "not_found", missing.reply_text)
    check_permission(ctx, "read", queue.vhost, queue.name, "queue")
    _refuse_stream("basic.get", queue.name, queue.vhost, queue.stream)
    taken = []
    shown = []
    for _ in range(count):
        entry = queue.get(False)
        if entry is None:
            break
        taken.append(entry)
        shown.append(message_json(entry, queue.message_count, encoding, truncate))
    if ackmode.endswith("requeue_true"):
        if taken:
            queue.requeue(taken)
    elif ackmode.startswith("reject"):
        for entry in taken:
            queue.reject(entry)  # dead-lettered as "rejected" where the queue has a DLX
    else:
        for entry in taken:
            queue.settle(entry)
    return ok(shown)


async def _get_remote(
    ctx: Context,
    remote: RemoteQueue,
    count: int,
    ackmode: str,
    encoding: str,
    truncate: int | None,
) -> Reply:
    handle, taken = await remote_queue_ops.take(ctx.broker, remote, count)
    shown = [message_json(entry, left, encoding, truncate) for entry, left in taken]
    entries = [entry for entry, _ in taken]
    if ackmode.endswith("requeue_true"):
        handle.requeue(entries)
    else:
        settle = handle.reject if ackmode.startswith("reject") else handle.settle
        for entry in entries:
            settle(entry)
    return ok(shown)


def bindings(ctx: Context) -> Reply:
    queue = _queue(ctx)
    vhost = ctx.broker.vhosts[queue.vhost]
    found = [binding_json(vhost.name, "", queue.name, "queue", queue.name, {})]
    explicit = []
    for exchange in vhost.exchanges.values():
        for binding in exchange.bindings():
            if binding.destination_kind == "queue" and binding.destination == queue.name:
                explicit.append(
                    binding_json(
                        vhost.name,
                        binding.source,
                        binding.destination,
                        "queue",
                        binding.routing_key,
                        binding.argument_table(),
                    )
                )
    explicit.sort(key=lambda b: (b["source"], b["routing_key"], b["properties_key"]))
    return ok(list_response(found + explicit, ctx.query, pageable=False, default_sort=()))


ROUTES = [
    Route("api/queues", {"GET": list_all}),
    Route("api/queues/{vhost}", {"GET": list_vhost}),
    Route("api/queues/{vhost}/{name}", {"GET": show, "PUT": declare, "DELETE": delete}),
    Route("api/queues/{vhost}/{name}/contents", {"DELETE": purge}),
    Route("api/queues/{vhost}/{name}/get", {"POST": get_messages}),
    Route("api/queues/{vhost}/{name}/bindings", {"GET": bindings}),
]
