"""A single node's definitions as one batch command, for when it starts sharing them.

A node runs alone with its own journal until another node joins it; from then on the cluster's
store holds the definitions, starting with everything this node had (as RabbitMQ keeps the
definitions of the node others join).
"""

from __future__ import annotations

from typing import Any

from leveret import shared_commands as commands
from leveret.broker import Broker
from leveret.declare_rules import QueueDecl

Command = dict[str, Any]


def import_command(broker: Broker, node_name: str) -> Command:
    """Everything `broker` defines, as a "batch" of metadata commands in replayable order."""
    items: list[Command] = []
    registry = broker.registry
    for name in broker.vhosts:
        metadata = registry.metadata(name)
        items.append(
            {
                "op": "add_vhost",
                "name": name,
                "description": metadata.description,
                "tags": list(metadata.tags),
            }
        )
    for user in broker.users.values():
        items.append(
            {
                "op": "put_user",
                "name": user.name,
                "password_hash": user.password_hash,
                "tags": list(user.tags),
            }
        )
    for (user_name, vhost_name), permission in broker.permissions.items():
        items.append(
            {
                "op": "set_permissions",
                "user": user_name,
                "vhost": vhost_name,
                "configure": permission.configure,
                "write": permission.write,
                "read": permission.read,
            }
        )
    for kind, policy in registry.all_policies():
        items.append(
            {
                "op": "set_policy" if kind == "policy" else "set_operator_policy",
                "vhost": policy.vhost,
                "name": policy.name,
                "pattern": policy.pattern,
                "apply_to": policy.apply_to,
                "definition": policy.definition,
                "priority": policy.priority,
            }
        )
    for parameter in registry.parameters():
        items.append(
            {
                "op": "set_parameter",
                "component": parameter.component,
                "vhost": parameter.vhost,
                "name": parameter.name,
                "value": parameter.value,
            }
        )
    for name, value in registry.global_parameters.items():
        # internal_cluster_id among them: the cluster keeps the identity of the node joined.
        items.append({"op": "set_global_parameter", "name": name, "value": value})
    for vhost in broker.vhosts.values():
        for exchange in vhost.exchanges.values():
            if exchange.name and not exchange.name.startswith("amq."):
                items.append(commands.declare_exchange(vhost.name, exchange.name, exchange.decl))
        for queue in vhost.queues.values():
            owner = queue.exclusive_owner
            decl = QueueDecl(
                queue.durable,
                owner is not None,
                queue.auto_delete,
                queue.arguments,
                queue.argument_types,
            )
            owner_tag = owner.owner_tag if owner is not None else None
            items.append(commands.declare_queue(vhost.name, queue.name, decl, owner_tag, node_name))
        for exchange in vhost.exchanges.values():
            for binding in exchange.bindings():
                items.append(commands.binding_command("bind", vhost.name, binding))
    return {"op": "batch", "commands": items}
