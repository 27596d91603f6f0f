"""What the EndpointSelector CRD's schema cannot refuse, the operator does (and says why)."""

from __future__ import annotations

from typing import Any

import pytest

from endpointslice_operator.controller.endpoint_selector.index import (
    EndpointSelectorEntry,
    status_patch,
    validate,
)


def body(spec: dict[str, Any], generation: int = 1) -> dict[str, Any]:
    return {"metadata": {"name": "s", "namespace": "ns", "generation": generation}, "spec": spec}


GOOD = {"selector": {"matchLabels": {"app": "web"}}, "ports": [{"name": "a", "port": 80}]}


@pytest.mark.parametrize(
    ("spec", "reason"),
    [
        ({"selector": {}}, "InvalidSelector"),
        ({"selector": {"matchLabels": {}}}, "InvalidSelector"),
        ({"selector": {"matchLabels": {"bad key!": "x"}}}, "InvalidSelector"),
        ({"selector": {"matchExpressions": [{"key": "a", "operator": "In"}]}}, "InvalidSelector"),
        (
            {
                "selector": {
                    "matchExpressions": [{"key": "a", "operator": "Exists", "values": ["x"]}]
                }
            },
            "InvalidSelector",
        ),
        (
            {**GOOD, "ports": [{"name": "a", "port": 1}, {"name": "a", "port": 2}]},
            "DuplicatePortName",
        ),
        ({**GOOD, "ports": [{"name": "a", "port": 1, "protocol": "ICMP"}]}, "UnknownProtocol"),
        ({**GOOD, "ports": [{"name": "a", "port": 0}]}, "InvalidPort"),
        ({**GOOD, "ports": [{"name": "a", "port": "Not_A_Name"}]}, "InvalidPort"),
        ({**GOOD, "ports": [{"port": 1}, {"port": 2}]}, "InvalidPort"),
        ({**GOOD, "ipFamilies": ["IPv4", "IPv4"]}, "InvalidIPFamily"),
        ({**GOOD, "ipFamilies": ["IPv5"]}, "InvalidIPFamily"),
    ],
)
def test_problems_are_named_by_reason(spec: dict[str, Any], reason: str) -> None:
    selector, problems = validate(body(spec))
    assert selector is None
    assert problems[0][0] == reason, problems


def test_a_valid_spec_selects_with_both_kinds_of_requirement() -> None:
    spec = {
        "selector": {
            "matchLabels": {"app": "web"},
            "matchExpressions": [{"key": "track", "operator": "NotIn", "values": ["canary"]}],
        },
        "ports": [{"name": "a", "port": "http"}, {"name": "b", "port": 81, "protocol": "UDP"}],
        "ipFamilies": ["IPv6", "IPv4"],
    }
    selector, problems = validate(body(spec))
    assert problems == [] and selector is not None
    assert selector.matches({"app": "web"})
    assert selector.matches({"app": "web", "track": "stable"})
    assert not selector.matches({"app": "web", "track": "canary"})
    assert not selector.matches({"app": "db"})


def test_status_is_written_only_when_it_changes() -> None:
    entry = EndpointSelectorEntry("endpointselector:ns/s", body(GOOD, 3), None, ())
    first = status_patch(entry, None)
    assert first is not None
    assert first["observedGeneration"] == 3
    (ready,) = first["conditions"]
    assert (ready["status"], ready["reason"], ready["observedGeneration"]) == (
        "True",
        "Accepted",
        3,
    )
    assert status_patch(entry, first) is None
    newer = EndpointSelectorEntry("endpointselector:ns/s", body(GOOD, 4), None, ())
    again = status_patch(newer, first)
    assert (
        again is not None
        and again["conditions"][0]["lastTransitionTime"] == ready["lastTransitionTime"]
    )
    broken = EndpointSelectorEntry(
        "endpointselector:ns/s", body(GOOD, 5), None, (("UnknownProtocol", "no"),)
    )
    failed = status_patch(broken, again)
    assert failed is not None
    assert (failed["conditions"][0]["status"], failed["conditions"][0]["reason"]) == (
        "False",
        "UnknownProtocol",
    )


def _port_problems(*ports: Any) -> list[tuple[str, str]]:
    return validate(body({**GOOD, "ports": list(ports)}))[1]


def test_port_names_up_to_63_characters_and_one_unnamed_port_alone() -> None:
    assert _port_problems({"name": "a" * 63, "port": 1}) == []
    assert [r for r, _ in _port_problems({"name": "a" * 64, "port": 1})] == ["InvalidPort"]
    assert [r for r, _ in _port_problems({"name": 5, "port": 1})] == ["InvalidPort"]
    assert [r for r, _ in _port_problems({"name": "Upper", "port": 1})] == ["InvalidPort"]
    assert _port_problems({"port": 1}) == []
    assert _port_problems({"name": "", "port": 1}) == []


def test_port_numbers_from_1_to_65535_and_a_string_app_protocol() -> None:
    assert _port_problems({"name": "a", "port": 1}, {"name": "b", "port": 65535}) == []
    for number in (0, 65536, -1, True, 80.0, None):
        problems = _port_problems({"name": "a", "port": number})
        assert [r for r, _ in problems] == ["InvalidPort"], number
    assert _port_problems({"name": "a", "port": 1, "appProtocol": "http"}) == []
    problems = _port_problems({"name": "a", "port": 1, "appProtocol": 5})
    assert problems == [("InvalidPort", "spec.ports[0].appProtocol must be a string")]


def test_every_bad_port_is_reported_not_only_the_first() -> None:
    problems = _port_problems("junk", {"name": "b", "port": 0}, {"name": "c", "port": 1})
    assert problems[0] == ("InvalidPort", "spec.ports[0] is not an object")
    assert [r for r, _ in problems] == ["InvalidPort", "InvalidPort"]
    assert "spec.ports[1].port" in problems[1][1]


def test_only_the_ready_condition_is_read_and_a_new_status_gets_a_new_time() -> None:
    entry = EndpointSelectorEntry("endpointselector:ns/s", body(GOOD, 1), None, ())
    old = "2000-01-01T00:00:00Z"
    other = {
        "type": "Other",
        "status": "True",
        "reason": "Accepted",
        "message": "The operator publishes the EndpointSlices of this selector",
        "observedGeneration": 1,
        "lastTransitionTime": old,
    }
    patch = status_patch(entry, {"observedGeneration": 1, "conditions": ["junk", other]})
    assert patch is not None
    assert patch["conditions"][0]["lastTransitionTime"] != old
    was_false = {**other, "type": "Ready", "status": "False", "reason": "InvalidPort"}
    patch = status_patch(entry, {"observedGeneration": 1, "conditions": [was_false]})
    assert patch is not None
    (ready,) = patch["conditions"]
    assert (ready["status"], ready["reason"]) == ("True", "Accepted")
    assert ready["lastTransitionTime"] != old
    same = {**was_false, "status": "True", "reason": "Accepted"}
    assert status_patch(entry, {"observedGeneration": 1, "conditions": [same]}) is None


def test_target_port_is_an_alias_of_port_and_both_must_agree() -> None:
    """As the CRD's validation rules (1.25 and later): one of them, both equal, or refused;
    the operator refuses the same for servers without CRD validation rules."""
    assert _port_problems({"name": "a", "targetPort": "http"}) == []
    assert _port_problems({"name": "a", "targetPort": 8080}) == []
    assert _port_problems({"name": "a", "port": 8080, "targetPort": 8080}) == []
    assert _port_problems({"name": "a", "port": "http", "targetPort": "http"}) == []
    for port, target in ((8080, 8081), (8080, "8080"), ("http", 8080), ("http", "grpc")):
        problems = _port_problems({"name": "a", "port": port, "targetPort": target})
        assert [r for r, _ in problems] == ["InvalidPort"], (port, target)
        assert "differ" in problems[0][1]
    (problem,) = _port_problems({"name": "a", "targetPort": 0})
    assert problem[0] == "InvalidPort" and "spec.ports[0].targetPort 0" in problem[1]
    (problem,) = _port_problems({"name": "a"})
    assert problem[0] == "InvalidPort" and "spec.ports[0].port None" in problem[1]


def test_a_name_longer_than_a_label_value_is_refused() -> None:
    """The slices carry the name as a label value (63 characters at most): the CRD's rule
    refuses a longer one at admission (1.25 and later), the operator on older servers."""
    spec = dict(GOOD)
    assert validate({"metadata": {"name": "a" * 63}, "spec": spec})[1] == []
    selector, problems = validate({"metadata": {"name": "a" * 64}, "spec": spec})
    assert selector is None
    assert [r for r, _ in problems] == ["InvalidName"]
    assert "64 characters" in problems[0][1]
