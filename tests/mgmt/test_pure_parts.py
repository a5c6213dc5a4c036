"""The management layer's pure parts: listing parameters, rates, the registry, policy validation."""

from __future__ import annotations

from typing import Any

import pytest

from leveret.definitions_registry import DefinitionsRegistry, Parameter, Policy
from leveret.mgmt.errors import ApiError, key_missing_reason
from leveret.mgmt.listing import list_response, select_columns
from leveret.mgmt.policy_validation import PolicyInvalid, parse_policy
from leveret.mgmt.queue_view import effective_definition
from leveret.mgmt.rates import RateTable, with_details

ITEMS: list[dict[str, Any]] = [
    {"name": "b", "vhost": "/", "messages": 3, "message_stats": {"publish": 9}},
    {"name": "a", "vhost": "/", "messages": 1},
    {"name": "c", "vhost": "v", "messages": 2, "message_stats": {"publish": 1}},
]


def test_columns_keep_only_the_named_fields_including_nested_ones() -> None:
    item = ITEMS[0]
    assert select_columns(item, "name,message_stats.publish,nope") == {
        "name": "b",
        "message_stats": {"publish": 9},
    }
    assert select_columns(item, None) is item


def test_sorting_puts_missing_values_first_and_can_reverse() -> None:
    names = [i["name"] for i in list_response(ITEMS, {"sort": "message_stats.publish"})]
    assert names == ["a", "c", "b"]
    names = [i["name"] for i in list_response(ITEMS, {"sort": "messages", "sort_reverse": "true"})]
    assert names == ["b", "c", "a"]
    assert [i["name"] for i in list_response(ITEMS, {})] == ["a", "b", "c"]  # by vhost, then name


def test_paging_filters_by_name_and_reports_counts() -> None:
    page = list_response(ITEMS, {"page": "1", "page_size": "2", "name": "B", "columns": "name"})
    assert page == {
        "filtered_count": 1,
        "item_count": 1,
        "items": [{"name": "b"}],
        "page": 1,
        "page_count": 1,
        "page_size": 2,
        "total_count": 3,
    }
    regex = list_response(
        ITEMS, {"page": "1", "name": "^[ac]$", "use_regex": "true", "columns": "name"}
    )
    assert [i["name"] for i in regex["items"]] == ["a", "c"]
    assert list_response(ITEMS, {"page": "2", "page_size": "2"})["items"][0]["name"] == "c"


@pytest.mark.parametrize(
    ("query", "error"),
    [
        ({"page": "9", "page_size": "2"}, "page_out_of_range"),
        ({"page": "0"}, "invalid_pagination_parameters"),
        ({"page": "1", "page_size": "501"}, "invalid_pagination_parameters"),
        ({"page": "x"}, "bad_request"),
        ({"page": "1", "name": "(", "use_regex": "true"}, "bad_request"),
    ],
)
def test_bad_paging_is_refused(query: dict[str, str], error: str) -> None:
    with pytest.raises(ApiError) as refused:
        list_response(ITEMS, query)
    assert (refused.value.status, refused.value.error) == (400, error)


def test_key_missing_reasons_wrap_like_erlang() -> None:
    assert key_missing_reason(["a", "b"]) == "[{key_missing,a},{key_missing,b}]"
    wrapped = key_missing_reason(["properties", "payload", "payload_encoding"])
    assert (
        wrapped
        == "[{key_missing,properties},\n {key_missing,payload},\n {key_missing,payload_encoding}]"
    )


def test_rates_are_the_change_per_second_between_the_last_two_samples() -> None:
    table = RateTable()
    table.observe("q", 10.0, {"publish": 5})
    assert table.rate("q", "publish") == 0.0
    table.observe("q", 12.0, {"publish": 25})
    assert table.rate("q", "publish") == 10.0
    assert with_details({"publish": 25}, table, "q") == {
        "publish": 25,
        "publish_details": {"rate": 10.0},
    }
    table.retain(set())
    assert table.rate("q", "publish") == 0.0


def test_the_highest_priority_matching_policy_applies() -> None:
    registry = DefinitionsRegistry()
    changes: list[tuple[str, str]] = []
    registry.subscribe(lambda what, vhost: changes.append((what, vhost)))
    registry.set_policy("policy", Policy("/", "low", "^q", {"max-length": 1}, 0, "queues"))
    registry.set_policy("policy", Policy("/", "high", "^q", {"max-length": 2}, 5, "all"))
    registry.set_policy(
        "policy", Policy("/", "exchanges", "^q", {"alternate-exchange": "x"}, 9, "exchanges")
    )
    registry.set_policy("policy", Policy("other", "elsewhere", ".*", {"max-length": 3}, 99, "all"))
    chosen = registry.effective_policy("policy", "/", "queue", "q1")
    assert chosen is not None and chosen.name == "high"
    assert registry.effective_policy("policy", "/", "queue", "x") is None
    exchange_policy = registry.effective_policy("policy", "/", "exchange", "q1")
    assert exchange_policy is not None and exchange_policy.name == "exchanges"
    assert changes[0] == ("policy", "/")
    registry.forget_vhost("/")
    assert registry.policies("policy") == [registry.policy("policy", "other", "elsewhere")]


def test_parameters_need_a_known_component() -> None:
    registry = DefinitionsRegistry()
    assert registry.validate_parameter("nope", "/", "x", {}) == "component nope not found"
    assert registry.validate_parameter("federation-upstream", "/", "x", {"uri": "amqp://h"}) is None
    registry.register_component(
        "shovel", lambda vhost, name, value: None if "src-uri" in value else "no src-uri"
    )
    assert registry.validate_parameter("shovel", "/", "s", {}) == "no src-uri"
    assert registry.set_parameter(Parameter("shovel", "/", "s", {"src-uri": "x"}))
    assert not registry.set_parameter(Parameter("shovel", "/", "s", {"src-uri": "y"}))
    assert [p.value for p in registry.parameters("shovel")] == [{"src-uri": "y"}]


def test_policy_documents_are_validated_with_rabbitmqs_texts() -> None:
    policy = parse_policy(
        "policy", "/", "p", {"pattern": "^q", "definition": {"max-length": 5}, "priority": "3"}
    )
    assert (policy.priority, policy.apply_to) == (3, "all")
    for accepted in (
        {"consumer-timeout": 1000},
        {"federation-upstream-set": "all"},
        {"federation-upstream": "u"},
    ):
        parse_policy("policy", "/", "p", {"pattern": ".", "definition": accepted})
    parse_policy(
        "policy",
        "/",
        "p",
        {"pattern": ".", "definition": {"max-length": 1}, "apply-to": "classic_queues"},
    )
    with pytest.raises(PolicyInvalid, match="are not recognised policy settings"):
        parse_policy(
            "operator_policy", "/", "p", {"pattern": ".", "definition": {"overflow": "drop-head"}}
        )
    with pytest.raises(PolicyInvalid, match=r'\[\{<<"x-max-priority">>,5\}\] are not recognised'):
        parse_policy("policy", "/", "p", {"pattern": ".", "definition": {"x-max-priority": 5}})
    with pytest.raises(PolicyInvalid, match="pattern should be a binary but was 5"):
        parse_policy("policy", "/", "p", {"pattern": 5, "definition": {"max-length": 1}})


def test_operator_policies_cap_numeric_limits() -> None:
    policy = Policy("/", "p", ".", {"max-length": 50, "overflow": "reject-publish"})
    operator = Policy("/", "o", ".", {"max-length": 10, "message-ttl": 5})
    assert effective_definition(policy, operator) == {
        "max-length": 10,
        "overflow": "reject-publish",
        "message-ttl": 5,
    }
    assert effective_definition(None, None) == {}
