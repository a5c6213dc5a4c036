"""Comparison of answer shapes with RabbitMQ's, and the differences Leveret makes on purpose."""

from __future__ import annotations

from fnmatch import fnmatchcase
from typing import Any

# Fields RabbitMQ shows that describe its Erlang runtime, mirroring or internals Leveret does
# not have; Leveret leaves them out rather than invent values. "capture:path" globs.
OMITTED = (
    # Erlang process internals.
    "*:*garbage_collection",
    "*:*reductions",
    "*:*reductions_details",
    "queue*:backing_queue_status",
    "node*:proc_total",
    "node*:proc_used*",
    "node*:run_queue",
    "node*:gc_*",
    "node*:context_switches*",
    "node*:ra_open_file_metrics",
    "node*:metrics_gc_queue_length",
    "node*:net_ticktime",
    "node*:mnesia_*",
    # Storage I/O counters of RabbitMQ's message store and queue index.
    "node*:io_*",
    "node*:msg_store_*",
    "node*:queue_index_*",
    # Exchanges and channels do not count their traffic yet (see the lead's notes).
    "exchange*:message_stats",
    "channel*:message_stats",
    "connection.channels:*message_stats",
    "overview*:message_stats.disk_*",
    # Exchange types used only inside RabbitMQ plugins are listed with their purpose.
    "*:*exchange_types[].internal_purpose",
    "vhost*:message_stats.confirm*",
    "vhost*:message_stats.drop_unroutable*",
    "vhost*:message_stats.return_unroutable*",
    "overview*:message_stats.confirm*",
    "overview*:message_stats.drop_unroutable*",
    "overview*:message_stats.return_unroutable*",
)
# Fields Leveret adds beyond RabbitMQ 3.10's.
ADDED = ("node*:being_drained", "node*:cluster")  # cluster: Raft and gossip state of each node
# Objects whose keys are data (node names), not field names: only their values are compared.
MAPS = ("*cluster_state", "*client_properties*", "*arguments", "*definition", "*limits", "*value")


def _matches(patterns: tuple[str, ...], capture: str, path: str) -> bool:
    key = f"{capture}:{path}"
    return any(fnmatchcase(key, pattern) for pattern in patterns)


def _is_map(path: str) -> bool:
    return any(fnmatchcase(path, pattern) for pattern in MAPS)


def compare(capture: str, expected: Any, actual: Any, path: str = "") -> list[str]:
    """Differences between RabbitMQ's shape and Leveret's, as readable lines."""
    problems: list[str] = []
    where = f"{capture}:{path or '.'}"
    if isinstance(expected, dict):
        if not isinstance(actual, dict):
            return [f"{where}: expected an object, got {actual!r}"]
        if _is_map(path):
            return problems
        for key in expected:
            child = f"{path}.{key}" if path else key
            if key not in actual:
                if not _matches(OMITTED, capture, child):
                    problems.append(f"{capture}:{child}: missing")
                continue
            problems += compare(capture, expected[key], actual[key], child)
        for key in actual:
            child = f"{path}.{key}" if path else key
            if key not in expected and not _matches(ADDED, capture, child):
                problems.append(f"{capture}:{child}: not in RabbitMQ's answer")
        return problems
    if isinstance(expected, list):
        if not isinstance(actual, list):
            return [f"{where}: expected a list, got {actual!r}"]
        if expected and actual:
            problems += compare(capture, expected[0], actual[0], f"{path}[]")
        return problems
    if expected in ("null", "mixed") or actual in ("null", "mixed"):
        return problems
    if expected != actual:
        problems.append(f"{where}: RabbitMQ has a {expected}, Leveret a {actual}")
    return problems


def shape_problems(expected: dict[str, Any], actual: dict[str, Any]) -> list[str]:
    """Differences for every captured answer (an answer not captured at all is one too)."""
    problems: list[str] = []
    for name, wanted in sorted(expected.items()):
        if name not in actual:
            problems.append(f"{name}: not captured")
            continue
        problems += compare(name, wanted, actual[name])
    return problems
