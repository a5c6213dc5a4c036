"""Queue listings paged before their queues are rendered (sorted by names) answer as those rendered
in full do; the overview's totals are the sum of the queues'; a node with many queues shares an
answer for a second among callers asking the same thing, and forgets it at a change."""

from __future__ import annotations

import re
from urllib.parse import quote

import pika

from tests.mgmt.conftest import ManagedNode, amqp_connection
from tests.mgmt.scenario import Api

COLUMNS = "name,vhost,messages,messages_ready,messages_unacknowledged,consumers,message_stats"


def fill(managed: ManagedNode) -> None:
    """Queues in two vhosts, one name in both, some with messages and one with a consumer."""
    api = managed.api
    api.put("/api/vhosts/other", {})
    api.put("/api/permissions/other/guest", {"configure": ".*", "write": ".*", "read": ".*"})
    for vhost, names in (("/", ("q1", "q2", "alpha", "dup", "Q3")), ("other", ("dup", "b", "q9"))):
        for name in names:
            api.put(f"/api/queues/{quote(vhost, safe='')}/{name}", {})
    with amqp_connection(managed) as connection:
        channel = connection.channel()
        for index, name in enumerate(("q1", "q2", "dup")):
            for _ in range(index + 1):
                channel.basic_publish("", name, b"m", pika.BasicProperties(delivery_mode=2))
        channel.basic_get("dup", auto_ack=False)  # one unacknowledged while the channel is open
        channel.queue_declare("dup", passive=True)
        check_pages(api)


def matches(name: str, query: dict[str, str]) -> bool:
    wanted = query.get("name", "")
    if not wanted:
        return True
    if query.get("use_regex") == "true":
        return re.search(wanted, name, re.IGNORECASE) is not None  # as RabbitMQ matches
    return wanted.lower() in name.lower()


def check_pages(api: Api) -> None:
    for sort in ("", "name", "vhost", "vhost,name", "name,vhost"):
        for reverse in ("false", "true"):
            for name, regex in (("", "false"), ("Q", "false"), ("^q[0-9]", "true")):
                for size in (2, 3, 100):
                    query = {
                        "sort": sort,
                        "sort_reverse": reverse,
                        "name": name,
                        "use_regex": regex,
                        "columns": COLUMNS,
                    }
                    check_one(api, query, size)


def check_one(api: Api, query: dict[str, str], size: int) -> None:
    text = "&".join(f"{key}={quote(value, safe='')}" for key, value in query.items())
    whole = [q for q in api.get(f"/api/queues?{text}") if matches(q["name"], query)]
    total = len(api.get("/api/queues?columns=name"))
    pages = max(1, -(-len(whole) // size))
    for page in range(1, pages + 1):
        answer = api.get(f"/api/queues?{text}&page={page}&page_size={size}")
        chosen = whole[(page - 1) * size : page * size]
        assert answer == {
            "filtered_count": len(whole),
            "item_count": len(chosen),
            "items": chosen,
            "page": page,
            "page_count": pages,
            "page_size": size,
            "total_count": total,
        }, (query, size, page)
        if query["sort"]:
            # Sorted on a further key as well, the page is rendered in full before it is chosen.
            full = api.get(f"/api/queues?{text},messages_ready&page={page}&page_size={size}")
            if not any(q["name"] == "dup" for q in chosen):  # "dup" ties on names alone
                assert full == answer, (query, size, page)
    refused = api.request("GET", f"/api/queues?{text}&page={pages + 1}&page_size={size}")
    assert refused.status == 400
    assert refused.json()["reason"] == (
        f"Page out of range, page: {pages + 1} page size: {size}, len: {len(whole)}"
    )


def test_a_page_sorted_by_names_is_the_slice_of_the_whole_listing(managed: ManagedNode) -> None:
    fill(managed)


def test_the_overview_totals_are_the_sum_of_the_queues(managed: ManagedNode) -> None:
    with amqp_connection(managed) as connection:
        channel = connection.channel()
        for name, count in (("t1", 3), ("t2", 5)):
            channel.queue_declare(name)
            for _ in range(count):
                channel.basic_publish("", name, b"m")
        channel.basic_get("t1", auto_ack=False)
        channel.basic_get("t2", auto_ack=True)
        channel.basic_get("t2", auto_ack=False)
        channel.queue_declare("t2", passive=True)
        queues = managed.api.get("/api/queues")
        overview = managed.api.get("/api/overview")
        for field in ("messages", "messages_ready", "messages_unacknowledged"):
            assert overview["queue_totals"][field] == sum(q[field] for q in queues), field
        assert (overview["queue_totals"]["messages"], overview["object_totals"]["queues"]) == (
            7,
            2,
        )
        stats = overview["message_stats"]
        for field in ("publish", "deliver_get", "get", "get_no_ack", "deliver", "ack"):
            assert stats[field] == sum(q["message_stats"].get(field, 0) for q in queues), field


def shared(api: Api) -> int:
    return int(api.get("/api/live/stats")["answers_shared"])


def test_many_queues_share_answers_for_a_second_and_forget_them_at_a_change(
    managed: ManagedNode,
) -> None:
    api = managed.api
    api.get("/api/overview")
    api.get("/api/overview")
    assert shared(api) == 0  # a small node answers each request afresh
    with amqp_connection(managed) as connection:
        channel = connection.channel()
        for index in range(1000):
            channel.queue_declare(f"many-{index:04d}")
    listing = "/api/queues?page=1&page_size=5&name=made-here&columns=name"
    before = shared(api)
    first = api.get(listing)
    assert api.get(listing) == first == {**first, "filtered_count": 0}
    assert shared(api) == before + 1
    api.put("/api/queues/%2F/made-here", {})
    # The change was made through the API: the next answer shows it.
    assert [q["name"] for q in api.get(listing)["items"]] == ["made-here"]
    assert api.get("/api/overview")["object_totals"]["queues"] == 1001
