"""Label selector parsing and matching, against apimachinery's documented semantics."""

from __future__ import annotations

import pytest

from endpointslice_operator.controller.cache.selectors import (
    Operator,
    SelectorError,
    from_match_labels,
    parse_selector,
)


@pytest.mark.parametrize(
    ("text", "labels", "expected"),
    [
        ("app=web", {"app": "web"}, True),
        ("app==web", {"app": "web", "x": "y"}, True),
        ("app=web", {"app": "db"}, False),
        ("app=web", {}, False),
        ("app!=web", {}, True),
        ("app!=web", {"app": "web"}, False),
        ("app!=web", {"app": "db"}, True),
        ("tier in (a, b)", {"tier": "b"}, True),
        ("tier in (a,b)", {"tier": "c"}, False),
        ("tier in (a,b)", {}, False),
        ("tier notin (a,b)", {}, True),
        ("tier notin (a,b)", {"tier": "a"}, False),
        ("canary", {"canary": ""}, True),
        ("canary", {}, False),
        ("!canary", {}, True),
        ("!canary", {"canary": "x"}, False),
        ("app=web,tier in (a),!legacy", {"app": "web", "tier": "a"}, True),
        ("app=web, tier in (a), !legacy", {"app": "web", "tier": "a", "legacy": "1"}, False),
        ("example.com/role=api", {"example.com/role": "api"}, True),
        ("app=", {"app": ""}, True),
        ("app=", {"app": "x"}, False),
        # gt / lt, as apimachinery's parser: integers only, a missing label never matches
        ("app>1", {"app": "2"}, True),
        ("app>1", {"app": "1"}, False),
        ("app > 1", {"app": "10"}, True),
        ("app<10", {"app": "9"}, True),
        ("app<10", {"app": "10"}, False),
        ("app>1", {}, False),
        ("app>1", {"app": "two"}, False),
        ("app<1", {"app": "0x0"}, False),
        ("gen>1,app=web", {"app": "web", "gen": "3"}, True),
    ],
)
def test_matches(text: str, labels: dict[str, str], expected: bool) -> None:
    assert parse_selector(text).matches(labels) is expected


@pytest.mark.parametrize(
    "text",
    [
        "",
        "   ",
        "app=web,",
        "app=web,,x",
        "app in a",
        "app in ()",
        "app in (a",
        "app ~ web",
        "=web",
        "app=we b",
        "-app=web",
        "app=-web",
        "Bad_Prefix/app=web",
        "a" * 64 + "=x",
        "app=" + "v" * 64,
        "!",
        "app=(x)",
        "app>",
        "app>x",
        "app>1.5",
        "app<99999999999999999999",
        "app>(1)",
        ">1",
    ],
)
def test_refuses_invalid(text: str) -> None:
    with pytest.raises(SelectorError):
        parse_selector(text)


def test_string_form_is_canonical() -> None:
    selector = parse_selector("z in (b, a),app=web,!old")
    assert str(selector) == "app=web,!old,z in (a,b)"
    assert parse_selector(str(selector)) == selector


def test_comparisons_have_a_canonical_string_form() -> None:
    selector = parse_selector("b < 5, a > 1")
    assert [r.operator for r in selector.requirements] == [
        Operator.GREATER_THAN,
        Operator.LESS_THAN,
    ]
    assert str(selector) == "a>1,b<5"
    assert parse_selector(str(selector)) == selector
    assert list(selector.anchors()) == []


def test_anchors_prefer_equality_then_in_then_exists() -> None:
    assert list(parse_selector("x,tier in (b,a),app=web").anchors()) == [("app", "web")]
    assert list(parse_selector("x,tier in (b,a)").anchors()) == [("tier", "a"), ("tier", "b")]
    assert list(parse_selector("x,y!=z").anchors()) == [("x", None)]
    assert list(parse_selector("!x,y notin (z)").anchors()) == []


def test_match_labels_selector() -> None:
    selector = from_match_labels({"b": "2", "a": "1"})
    assert [r.operator for r in selector.requirements] == [Operator.EQUALS, Operator.EQUALS]
    assert str(selector) == "a=1,b=2"
    assert selector.matches({"a": "1", "b": "2", "c": "3"})
    assert not selector.matches({"a": "1"})
    with pytest.raises(SelectorError):
        from_match_labels({"a": "not valid"})
