"""The core/v1 Endpoints object: ports of upstream's ``pkg/api/v1/endpoints`` util tests
(``TestPackSubsets``) and ``pkg/controller/endpoint`` controller tests (``TestSyncEndpoints*``,
``TestSyncServiceOverCapacity``, ``TestTruncateEndpoints``, ``TestPodToEndpointAddressForService``),
as pure-function expectations."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import pytest

from endpointslice_operator.reconciler import (
    ANNOTATION_OVER_CAPACITY,
    LABEL_HEADLESS,
    LABEL_SKIP_MIRROR,
    LAST_CHANGE_TRIGGER_TIME,
    endpoints_need_update,
    plan_endpoints,
    repack_subsets,
    truncate_subsets,
)
from endpointslice_operator.reconciler.sources import MultusNetwork

NS = "other"


def ref(uid: str = "", name: str = "") -> dict[str, Any]:
    result: dict[str, Any] = {}
    if uid:
        result["uid"] = uid
    if name:
        result["name"] = name
    return result


def addr(ip: str, **extra: Any) -> dict[str, Any]:
    return {"ip": ip, **extra}


def port(number: int) -> dict[str, Any]:
    return {"port": number}


# (name, given, expected): upstream TestPackSubsets, with the port-less sentinel of today's
# RepackSubsets (a subset without ports keeps its addresses).
PACK_CASES: list[tuple[str, list[dict[str, Any]], list[dict[str, Any]]]] = [
    ("empty everything", [{"addresses": [], "ports": []}], []),
    ("empty addresses", [{"addresses": [], "ports": [port(111)]}], []),
    (
        "empty ports",
        [{"addresses": [addr("1.2.3.4")], "ports": []}],
        [{"addresses": [addr("1.2.3.4")]}],
    ),
    (
        "empty ports, not ready",
        [{"notReadyAddresses": [addr("1.2.3.4")], "ports": []}],
        [{"notReadyAddresses": [addr("1.2.3.4")]}],
    ),
    (
        "one set, one ip, one port",
        [{"addresses": [addr("1.2.3.4")], "ports": [port(111)]}],
        [{"addresses": [addr("1.2.3.4")], "ports": [port(111)]}],
    ),
    (
        "one set, one ip, one port (IPv6)",
        [{"addresses": [addr("beef::1:2:3:4")], "ports": [port(111)]}],
        [{"addresses": [addr("beef::1:2:3:4")], "ports": [port(111)]}],
    ),
    (
        "one set, one notReady ip, one port",
        [{"notReadyAddresses": [addr("1.2.3.4")], "ports": [port(111)]}],
        [{"notReadyAddresses": [addr("1.2.3.4")], "ports": [port(111)]}],
    ),
    (
        "one set, one ip, one UID, one port",
        [{"addresses": [addr("1.2.3.4", targetRef=ref("uid-1"))], "ports": [port(111)]}],
        [{"addresses": [addr("1.2.3.4", targetRef=ref("uid-1"))], "ports": [port(111)]}],
    ),
    (
        "one set, one ip, empty UID, one port",
        [{"addresses": [addr("1.2.3.4", targetRef=ref())], "ports": [port(111)]}],
        [{"addresses": [addr("1.2.3.4", targetRef=ref())], "ports": [port(111)]}],
    ),
    (
        "one set, two ips, one port",
        [{"addresses": [addr("1.2.3.4"), addr("5.6.7.8")], "ports": [port(111)]}],
        [{"addresses": [addr("1.2.3.4"), addr("5.6.7.8")], "ports": [port(111)]}],
    ),
    (
        "one set, two mixed ips, one port",
        [
            {
                "addresses": [addr("1.2.3.4")],
                "notReadyAddresses": [addr("5.6.7.8")],
                "ports": [port(111)],
            }
        ],
        [
            {
                "addresses": [addr("1.2.3.4")],
                "notReadyAddresses": [addr("5.6.7.8")],
                "ports": [port(111)],
            }
        ],
    ),
    (
        "one set, two duplicate ips, one port, notReady is covered by ready",
        [
            {
                "addresses": [addr("1.2.3.4")],
                "notReadyAddresses": [addr("1.2.3.4")],
                "ports": [port(111)],
            }
        ],
        [{"notReadyAddresses": [addr("1.2.3.4")], "ports": [port(111)]}],
    ),
    (
        "one set, one ip, two ports",
        [{"addresses": [addr("1.2.3.4")], "ports": [port(111), port(222)]}],
        [{"addresses": [addr("1.2.3.4")], "ports": [port(111), port(222)]}],
    ),
    (
        "one set, dup ips, one port",
        [{"addresses": [addr("1.2.3.4"), addr("1.2.3.4")], "ports": [port(111)]}],
        [{"addresses": [addr("1.2.3.4")], "ports": [port(111)]}],
    ),
    (
        "one set, dup ips with target-refs, one port",
        [
            {
                "addresses": [
                    addr("1.2.3.4", targetRef=ref(name="foo")),
                    addr("1.2.3.4", targetRef=ref(name="bar")),
                ],
                "ports": [port(111)],
            }
        ],
        [{"addresses": [addr("1.2.3.4", targetRef=ref(name="foo"))], "ports": [port(111)]}],
    ),
    (
        "one set, dup mixed ips with target-refs, one port",
        [
            {
                "addresses": [addr("1.2.3.4", targetRef=ref(name="foo"))],
                "notReadyAddresses": [addr("1.2.3.4", targetRef=ref(name="bar"))],
                "ports": [port(111)],
            }
        ],
        # the same address twice is an input error: the first one is kept, not ready
        [
            {
                "notReadyAddresses": [addr("1.2.3.4", targetRef=ref(name="foo"))],
                "ports": [port(111)],
            }
        ],
    ),
    (
        "one set, one ip, dup ports",
        [{"addresses": [addr("1.2.3.4")], "ports": [port(111), port(111)]}],
        [{"addresses": [addr("1.2.3.4")], "ports": [port(111)]}],
    ),
    (
        "two sets, dup ip, dup port",
        [
            {"addresses": [addr("1.2.3.4")], "ports": [port(111)]},
            {"addresses": [addr("1.2.3.4")], "ports": [port(111)]},
        ],
        [{"addresses": [addr("1.2.3.4")], "ports": [port(111)]}],
    ),
    (
        "two sets, dup mixed ip, dup port",
        [
            {"addresses": [addr("1.2.3.4")], "ports": [port(111)]},
            {"notReadyAddresses": [addr("1.2.3.4")], "ports": [port(111)]},
        ],
        [{"notReadyAddresses": [addr("1.2.3.4")], "ports": [port(111)]}],
    ),
    (
        "two sets, dup ip, two ports",
        [
            {"addresses": [addr("1.2.3.4")], "ports": [port(111)]},
            {"addresses": [addr("1.2.3.4")], "ports": [port(222)]},
        ],
        [{"addresses": [addr("1.2.3.4")], "ports": [port(111), port(222)]}],
    ),
    (
        "two sets, dup mixed ip, dup uids, two ports",
        [
            {"addresses": [addr("1.2.3.4", targetRef=ref("uid-1"))], "ports": [port(111)]},
            {
                "notReadyAddresses": [addr("1.2.3.4", targetRef=ref("uid-1"))],
                "ports": [port(222)],
            },
        ],
        [
            {"addresses": [addr("1.2.3.4", targetRef=ref("uid-1"))], "ports": [port(111)]},
            {
                "notReadyAddresses": [addr("1.2.3.4", targetRef=ref("uid-1"))],
                "ports": [port(222)],
            },
        ],
    ),
    (
        "two sets, two ips, dup port",
        [
            {"addresses": [addr("1.2.3.4")], "ports": [port(111)]},
            {"addresses": [addr("5.6.7.8")], "ports": [port(111)]},
        ],
        [{"addresses": [addr("1.2.3.4"), addr("5.6.7.8")], "ports": [port(111)]}],
    ),
    (
        "two set, dup ip, two uids, dup ports",
        [
            {"addresses": [addr("1.2.3.4", targetRef=ref("uid-1"))], "ports": [port(111)]},
            {"addresses": [addr("1.2.3.4", targetRef=ref("uid-2"))], "ports": [port(111)]},
        ],
        [
            {
                "addresses": [
                    addr("1.2.3.4", targetRef=ref("uid-1")),
                    addr("1.2.3.4", targetRef=ref("uid-2")),
                ],
                "ports": [port(111)],
            }
        ],
    ),
    (
        "two sets, two ips, two dup ip with uid, dup port, wrong order",
        [
            {"addresses": [addr("5.6.7.8")], "ports": [port(111)]},
            {"addresses": [addr("5.6.7.8", targetRef=ref("uid-1"))], "ports": [port(111)]},
            {"addresses": [addr("1.2.3.4", targetRef=ref("uid-1"))], "ports": [port(111)]},
            {"addresses": [addr("1.2.3.4")], "ports": [port(111)]},
        ],
        [
            {
                "addresses": [
                    addr("1.2.3.4"),
                    addr("1.2.3.4", targetRef=ref("uid-1")),
                    addr("5.6.7.8"),
                    addr("5.6.7.8", targetRef=ref("uid-1")),
                ],
                "ports": [port(111)],
            }
        ],
    ),
    (
        "two sets, two mixed ips, two dup ip with uid, dup port, wrong order, split addresses",
        [
            {"addresses": [addr("5.6.7.8")], "ports": [port(111)]},
            {
                "notReadyAddresses": [addr("5.6.7.8", targetRef=ref("uid-1"))],
                "ports": [port(111)],
            },
            {
                "notReadyAddresses": [addr("1.2.3.4", targetRef=ref("uid-1"))],
                "ports": [port(111)],
            },
            {"notReadyAddresses": [addr("1.2.3.4")], "ports": [port(111)]},
        ],
        [
            {
                "addresses": [addr("5.6.7.8")],
                "notReadyAddresses": [
                    addr("1.2.3.4"),
                    addr("1.2.3.4", targetRef=ref("uid-1")),
                    addr("5.6.7.8", targetRef=ref("uid-1")),
                ],
                "ports": [port(111)],
            }
        ],
    ),
    (
        "two sets, two ips, two ports",
        [
            {"addresses": [addr("1.2.3.4")], "ports": [port(111)]},
            {"addresses": [addr("5.6.7.8")], "ports": [port(222)]},
        ],
        [
            {"addresses": [addr("1.2.3.4")], "ports": [port(111)]},
            {"addresses": [addr("5.6.7.8")], "ports": [port(222)]},
        ],
    ),
    (
        "four sets, three ips, three ports, jumbled",
        [
            {"addresses": [addr("1.2.3.4")], "ports": [port(111)]},
            {"addresses": [addr("1.2.3.5")], "ports": [port(222)]},
            {"addresses": [addr("1.2.3.6")], "ports": [port(111)]},
            {"addresses": [addr("1.2.3.5")], "ports": [port(333)]},
        ],
        [
            {"addresses": [addr("1.2.3.4"), addr("1.2.3.6")], "ports": [port(111)]},
            {"addresses": [addr("1.2.3.5")], "ports": [port(222), port(333)]},
        ],
    ),
    (
        "four sets, three mixed ips, three ports, jumbled",
        [
            {"addresses": [addr("1.2.3.4")], "ports": [port(111)]},
            {"notReadyAddresses": [addr("1.2.3.5")], "ports": [port(222)]},
            {"addresses": [addr("1.2.3.6")], "ports": [port(111)]},
            {"notReadyAddresses": [addr("1.2.3.5")], "ports": [port(333)]},
        ],
        [
            {"addresses": [addr("1.2.3.4"), addr("1.2.3.6")], "ports": [port(111)]},
            {"notReadyAddresses": [addr("1.2.3.5")], "ports": [port(222), port(333)]},
        ],
    ),
]


@pytest.mark.parametrize(
    ("given", "expected"), [c[1:] for c in PACK_CASES], ids=[c[0] for c in PACK_CASES]
)
def test_pack_subsets(given: list[dict[str, Any]], expected: list[dict[str, Any]]) -> None:
    assert repack_subsets(given) == expected


def test_pack_subsets_leaves_its_input_alone() -> None:
    given = [{"addresses": [addr("1.2.3.4"), addr("1.2.3.4")], "ports": [port(111)]}]
    repack_subsets(given)
    assert given == [{"addresses": [addr("1.2.3.4"), addr("1.2.3.4")], "ports": [port(111)]}]


def test_pack_subsets_is_independent_of_input_order() -> None:
    subsets = [case[1] for case in PACK_CASES]
    for given in subsets:
        assert repack_subsets(list(reversed(given))) == repack_subsets(given)


# --- the Endpoints controller --------------------------------------------------------------


def service(
    *,
    name: str = "foo",
    ports: list[dict[str, Any]] | None = None,
    labels: dict[str, str] | None = None,
    cluster_ip: str = "10.0.0.1",
    **spec: Any,
) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": name, "namespace": NS}
    if labels is not None:
        metadata["labels"] = labels
    body: dict[str, Any] = {
        "selector": {"foo": "bar"},
        "clusterIP": cluster_ip,
        "ports": ports
        if ports is not None
        else [{"port": 80, "protocol": "TCP", "targetPort": 8080}],
        **spec,
    }
    return {"metadata": metadata, "spec": body}


def pod(
    index: int,
    *,
    ready: bool = True,
    ip: str | None = None,
    ips: list[str] | None = None,
    phase: str = "Running",
    terminating: bool = False,
    container_ports: list[dict[str, Any]] | None = None,
    **spec: Any,
) -> dict[str, Any]:
    address = ip or f"1.2.3.{4 + index}"
    metadata: dict[str, Any] = {"name": f"pod{index}", "namespace": NS, "uid": f"uid{index}"}
    if terminating:
        metadata["deletionTimestamp"] = "2024-01-01T00:00:00Z"
    return {
        "metadata": metadata,
        "spec": {
            "nodeName": "node1",
            "containers": [
                {"ports": container_ports or [{"name": "port1", "containerPort": 8080}]}
            ],
            **spec,
        },
        "status": {
            "phase": phase,
            "podIP": address,
            "podIPs": [{"ip": i} for i in (ips or [address])],
            "conditions": [{"type": "Ready", "status": "True" if ready else "False"}],
        },
    }


def pod_address(index: int, ip: str | None = None, **extra: Any) -> dict[str, Any]:
    return {
        "ip": ip or f"1.2.3.{4 + index}",
        "nodeName": "node1",
        "targetRef": {"kind": "Pod", "namespace": NS, "name": f"pod{index}", "uid": f"uid{index}"},
        **extra,
    }


def test_sync_endpoints_protocol_tcp() -> None:
    """TestSyncEndpointsProtocolTCP / TestSyncEndpointsItemsPreexisting: one ready pod."""
    plan = plan_endpoints(service(), [pod(0)], None)
    assert plan.action == "create"
    assert plan.endpoints == {
        "apiVersion": "v1",
        "kind": "Endpoints",
        "metadata": {"name": "foo", "namespace": NS, "labels": {LABEL_SKIP_MIRROR: "true"}},
        "subsets": [{"addresses": [pod_address(0)], "ports": [{"port": 8080, "protocol": "TCP"}]}],
    }


def test_sync_endpoints_protocol_udp_and_sctp() -> None:
    for protocol in ("UDP", "SCTP"):
        svc = service(ports=[{"port": 80, "protocol": protocol, "targetPort": 8080}])
        plan = plan_endpoints(svc, [pod(0)], None, extra_labels={})
        assert plan.subsets == [
            {"addresses": [pod_address(0)], "ports": [{"port": 8080, "protocol": protocol}]}
        ]


def test_sync_endpoints_headless_service_label() -> None:
    """TestSyncEndpointsHeadlessServiceLabel / TestSyncServiceHeadless*: the headless label."""
    plan = plan_endpoints(service(cluster_ip="None"), [pod(0)], None, extra_labels={})
    assert plan.endpoints is not None
    assert plan.endpoints["metadata"]["labels"] == {LABEL_HEADLESS: ""}


def test_headless_service_without_ports_has_portless_addresses() -> None:
    """TestSyncEndpointsHeadlessWithoutPort."""
    plan = plan_endpoints(service(cluster_ip="None", ports=[]), [pod(0)], None)
    assert plan.subsets == [{"addresses": [pod_address(0)]}]


def test_service_without_ports_and_cluster_ip_has_no_subsets() -> None:
    plan = plan_endpoints(service(ports=[]), [pod(0)], None)
    assert plan.action == "create"
    assert plan.subsets == []


def test_sync_endpoints_items_not_ready_and_publish_not_ready() -> None:
    """TestSyncEndpointsItemsPreserveNoSelector's siblings: not-ready pods go to
    notReadyAddresses, and all go to addresses with publishNotReadyAddresses."""
    pods = [pod(0), pod(1, ready=False)]
    plan = plan_endpoints(service(), pods, None)
    assert plan.subsets == [
        {
            "addresses": [pod_address(0)],
            "notReadyAddresses": [pod_address(1)],
            "ports": [{"port": 8080, "protocol": "TCP"}],
        }
    ]
    assert (plan.ready, plan.not_ready) == (1, 1)
    published = plan_endpoints(service(publishNotReadyAddresses=True), pods, None)
    assert published.subsets == [
        {
            "addresses": [pod_address(0), pod_address(1)],
            "ports": [{"port": 8080, "protocol": "TCP"}],
        }
    ]


def test_terminating_and_terminal_pods() -> None:
    """ShouldPodBeInEndpoints: terminal pods never; terminating ones only when the Service
    publishes not-ready addresses; pods without an IP never."""
    pods = [
        pod(0),
        pod(1, phase="Succeeded"),
        pod(2, phase="Failed"),
        pod(3, terminating=True),
    ]
    no_ip = pod(4)
    no_ip["status"]["podIP"] = ""
    no_ip["status"]["podIPs"] = []
    pods.append(no_ip)
    plan = plan_endpoints(service(), pods, None)
    assert plan.subsets == [
        {"addresses": [pod_address(0)], "ports": [{"port": 8080, "protocol": "TCP"}]}
    ]
    published = plan_endpoints(service(publishNotReadyAddresses=True), pods, None)
    assert published.subsets[0]["addresses"] == [pod_address(0), pod_address(3)]


def test_named_ports_and_multiple_ports() -> None:
    """TestSyncEndpointsItemsMultiplePods / named target ports: a port that does not resolve
    for a pod leaves that pod out of that port's subset only."""
    svc = service(
        ports=[
            {"name": "port0", "port": 80, "protocol": "TCP", "targetPort": "port1"},
            {"name": "port1", "port": 88, "protocol": "TCP", "targetPort": 8088},
        ]
    )
    pods = [pod(0), pod(1, container_ports=[{"name": "other", "containerPort": 9000}])]
    plan = plan_endpoints(svc, pods, None)
    assert plan.subsets == [
        {
            "addresses": [pod_address(0)],
            "ports": [{"name": "port0", "port": 8080, "protocol": "TCP"}],
        },
        {
            "addresses": [pod_address(0), pod_address(1)],
            "ports": [{"name": "port1", "port": 8088, "protocol": "TCP"}],
        },
    ]


def test_app_protocol_is_copied() -> None:
    svc = service(ports=[{"port": 80, "protocol": "TCP", "targetPort": 8080, "appProtocol": "h2c"}])
    plan = plan_endpoints(svc, [pod(0)], None)
    assert plan.subsets[0]["ports"] == [{"port": 8080, "protocol": "TCP", "appProtocol": "h2c"}]


def test_hostname_is_set_for_the_service_subdomain() -> None:
    """ShouldSetHostname: the pod's hostname when its subdomain is the Service's name."""
    pods = [pod(0, hostname="h0", subdomain="foo"), pod(1, hostname="h1", subdomain="bar")]
    plan = plan_endpoints(service(), pods, None)
    assert plan.subsets[0]["addresses"] == [pod_address(0, hostname="h0"), pod_address(1)]


@pytest.mark.parametrize(
    ("spec", "pod_ips", "expected"),
    [
        ({"ipFamilies": ["IPv4"]}, ["1.1.1.1", "2000::"], "1.1.1.1"),
        ({"ipFamilies": ["IPv6"]}, ["1.1.1.1", "2000::"], "2000::"),
        ({"ipFamilies": ["IPv6", "IPv4"]}, ["1.1.1.1", "2000::"], "2000::"),
        ({"clusterIP": "10.0.0.1"}, ["1.1.1.1", "2000::"], "1.1.1.1"),
        ({"clusterIP": "3000::1"}, ["1.1.1.1", "2000::"], "2000::"),
        ({"clusterIP": "None"}, ["1.1.1.1", "2000::"], "1.1.1.1"),
        ({"clusterIP": "None"}, ["2000::", "1.1.1.1"], "2000::"),
        ({"clusterIP": "3000::1"}, ["1.1.1.1"], None),
        ({"ipFamilies": ["IPv4"]}, ["2000::"], None),
    ],
)
def test_pod_to_endpoint_address_for_service(
    spec: dict[str, Any], pod_ips: list[str], expected: str | None
) -> None:
    """TestPodToEndpointAddressForService: one address, of the Service's primary family."""
    svc = service(cluster_ip=spec.pop("clusterIP", ""), **spec)
    plan = plan_endpoints(svc, [pod(0, ip=pod_ips[0], ips=pod_ips)], None)
    if expected is None:
        assert plan.subsets == []
        assert plan.errors
    else:
        assert plan.subsets[0]["addresses"] == [pod_address(0, ip=expected)]


def test_external_name_services_get_no_endpoints() -> None:
    plan = plan_endpoints(service(type="ExternalName"), [pod(0)], None)
    assert (plan.action, plan.endpoints) == ("none", None)


def existing_for(plan_obj: dict[str, Any], **metadata: Any) -> dict[str, Any]:
    result = dict(plan_obj)
    result["metadata"] = {**plan_obj["metadata"], "resourceVersion": "1", **metadata}
    return result


def test_sync_endpoints_items_preexisting_equal_is_left_alone() -> None:
    """TestSyncEndpointsItemsPreexistingIdentical: no write when nothing changed, even if the
    pods' resourceVersions in the targetRefs differ."""
    first = plan_endpoints(service(), [pod(0)], None)
    assert first.endpoints is not None
    existing = existing_for(first.endpoints)
    existing["subsets"][0]["addresses"][0]["targetRef"]["resourceVersion"] = "7"
    again = plan_endpoints(service(), [pod(0)], existing)
    assert again.action == "none"


def test_sync_endpoints_items_preexisting_labels_change() -> None:
    """TestSyncEndpointsItemsPreexistingLabelsChange: the Service's labels replace the old ones,
    and the existing annotations stay."""
    first = plan_endpoints(service(labels={"foo": "bar"}), [pod(0)], None)
    assert first.endpoints is not None
    existing = existing_for(first.endpoints, annotations={"keep": "me"})
    svc = service(labels={"foo": "baz"})
    plan = plan_endpoints(svc, [pod(0)], existing)
    assert plan.action == "update"
    assert plan.endpoints is not None
    assert plan.endpoints["metadata"] == {
        "name": "foo",
        "namespace": NS,
        "resourceVersion": "1",
        "labels": {"foo": "baz", LABEL_SKIP_MIRROR: "true"},
        "annotations": {"keep": "me"},
    }


def test_sync_endpoints_headless_label_alone_changes_nothing() -> None:
    """The headless label is ignored in the comparison (upstream removes it first)."""
    first = plan_endpoints(service(cluster_ip="None"), [pod(0)], None)
    assert first.endpoints is not None
    existing = existing_for(first.endpoints)
    assert plan_endpoints(service(cluster_ip="None"), [pod(0)], existing).action == "none"
    existing["metadata"]["labels"].pop(LABEL_HEADLESS)
    assert plan_endpoints(service(cluster_ip="None"), [pod(0)], existing).action == "none"


def test_sync_endpoints_new_no_subsets() -> None:
    """TestSyncEndpointsNewNoSubsets: a Service without pods still gets (empty) Endpoints."""
    plan = plan_endpoints(service(), [], None)
    assert plan.action == "create"
    assert plan.endpoints is not None and plan.endpoints["subsets"] == []


def test_trigger_time_annotation() -> None:
    """TestLastTriggerChangeTimeAnnotation(_AnnotationOverridden/_AnnotationCleared)."""
    moment = datetime(2024, 5, 6, 7, 8, 9, 120000, tzinfo=UTC)
    plan = plan_endpoints(service(), [pod(0)], None, trigger_time=moment)
    assert plan.endpoints is not None
    assert plan.endpoints["metadata"]["annotations"] == {
        LAST_CHANGE_TRIGGER_TIME: "2024-05-06T07:08:09.12Z"
    }
    existing = existing_for(plan.endpoints)
    changed = plan_endpoints(service(), [pod(0), pod(1)], existing)
    assert changed.endpoints is not None
    assert "annotations" not in changed.endpoints["metadata"]


def endpoints_with(ready: int, not_ready: int = 0, annotation: str | None = None) -> dict[str, Any]:
    subset: dict[str, Any] = {"ports": [{"port": 8080, "protocol": "TCP"}]}
    if ready:
        subset["addresses"] = [pod_address(i, ip=_ip(i)) for i in range(ready)]
    if not_ready:
        subset["notReadyAddresses"] = [
            pod_address(i, ip=_ip(i)) for i in range(ready, ready + not_ready)
        ]
    metadata: dict[str, Any] = {
        "name": "foo",
        "namespace": NS,
        "resourceVersion": "1",
        "labels": {LABEL_SKIP_MIRROR: "true"},
    }
    if annotation is not None:
        metadata["annotations"] = {ANNOTATION_OVER_CAPACITY: annotation}
    return {"metadata": metadata, "subsets": [subset]}


def _ip(index: int) -> str:
    return f"10.{index // 65536}.{index // 256 % 256}.{index % 256}"


def many_pods(ready: int, not_ready: int) -> list[dict[str, Any]]:
    return [pod(i, ip=_ip(i), ready=i < ready) for i in range(ready + not_ready)]


@pytest.mark.parametrize(
    ("starting", "existing", "desired", "desired_not_ready", "exp_ready", "exp_not_ready", "flag"),
    [
        (None, 0, 0, 0, 0, 0, False),
        (None, 999, 999, 10, 999, 1, True),
        (None, 999, 1001, 10, 1000, 0, True),
        ("truncated", 999, 999, 0, 999, 0, False),
        ("warning", 1000, 1000, 0, 1000, 0, False),
        ("warning", 1001, 1001, 0, 1000, 0, True),
        ("truncated", 1000, 1000, 0, 1000, 0, False),
        ("invalid", 1001, 1001, 0, 1000, 0, True),
    ],
)
def test_sync_service_over_capacity(
    starting: str | None,
    existing: int,
    desired: int,
    desired_not_ready: int,
    exp_ready: int,
    exp_not_ready: int,
    flag: bool,
) -> None:
    """TestSyncServiceOverCapacity: the 1,000-address cap and its annotation."""
    current = endpoints_with(existing, annotation=starting)
    plan = plan_endpoints(
        service(), many_pods(desired, desired_not_ready), current, extra_labels=None
    )
    written = plan.endpoints if plan.endpoints is not None else current
    subsets = written["subsets"]
    ready = sum(len(s.get("addresses", [])) for s in subsets)
    not_ready = sum(len(s.get("notReadyAddresses", [])) for s in subsets)
    assert (ready, not_ready) == (exp_ready, exp_not_ready)
    annotations = written["metadata"].get("annotations", {})
    if flag:
        assert annotations.get(ANNOTATION_OVER_CAPACITY) == "truncated"
    else:
        assert ANNOTATION_OVER_CAPACITY not in annotations


def _subsets(*sizes: tuple[int, int]) -> list[dict[str, Any]]:
    result = []
    start = 0
    for ready, not_ready in sizes:
        subset: dict[str, Any] = {"ports": [{"port": 80 + start}]}
        if ready:
            subset["addresses"] = [addr(_ip(start + i)) for i in range(ready)]
        start += ready
        if not_ready:
            subset["notReadyAddresses"] = [addr(_ip(start + i)) for i in range(not_ready)]
        start += not_ready
        result.append(subset)
    return result


def _counts(subsets: list[dict[str, Any]]) -> list[tuple[int, int]]:
    return [(len(s.get("addresses", [])), len(s.get("notReadyAddresses", []))) for s in subsets]


@pytest.mark.parametrize(
    ("sizes", "expected"),
    [
        # under capacity: untouched
        ([(500, 0), (499, 0)], [(500, 0), (499, 0)]),
        # ready under capacity: not-ready addresses share what is left, in proportion
        ([(50, 600), (50, 1200)], [(50, 300), (50, 600)]),
        ([(100, 1000), (100, 1000)], [(100, 400), (100, 400)]),
        # ready over capacity: not-ready all dropped, ready in proportion, rounded up
        ([(600, 5), (300, 0), (200, 0)], [(546, 0), (273, 0), (181, 0)]),
        ([(1001, 1)], [(1000, 0)]),
    ],
)
def test_truncate_endpoints(sizes: list[tuple[int, int]], expected: list[tuple[int, int]]) -> None:
    """TestTruncateEndpoints: proportional shares, ready before not ready."""
    subsets = _subsets(*sizes)
    truncated = truncate_subsets(subsets)
    assert truncated == (sizes != expected)
    assert _counts(subsets) == expected
    assert sum(r + n for r, n in _counts(subsets)) <= 1000


def test_endpoints_need_update_reads_labels_subsets_and_capacity() -> None:
    first = plan_endpoints(service(), [pod(0)], None)
    assert first.endpoints is not None
    existing = existing_for(first.endpoints)
    labels = {LABEL_SKIP_MIRROR: "true"}
    assert not endpoints_need_update(existing, first.subsets, labels)
    assert endpoints_need_update(existing, first.subsets, {})
    assert endpoints_need_update(existing, [], labels)
    flagged = existing_for(first.endpoints, annotations={ANNOTATION_OVER_CAPACITY: "truncated"})
    assert endpoints_need_update(flagged, first.subsets, labels)


def test_an_address_source_gives_the_endpoints_the_slices_addresses() -> None:
    """Not upstream: a Service on a secondary network gets the same addresses in its Endpoints
    as in its slices; pods the source leaves out are left out here too, without an error."""
    attached = pod(0)
    attached["metadata"]["annotations"] = {
        "k8s.v1.cni.cncf.io/network-status": json.dumps(
            [{"name": "net", "ips": ["fd00::7", "192.168.7.1"]}]
        )
    }
    other = pod(1)  # no network-status: left out
    pods = [attached, other]
    source = MultusNetwork.from_pods(f"{NS}/net", pods)
    plan = plan_endpoints(service(), pods, None, source=source)
    assert plan.endpoints is not None
    assert plan.endpoints["subsets"] == [
        {"addresses": [pod_address(0, "192.168.7.1")], "ports": [{"port": 8080, "protocol": "TCP"}]}
    ]
    assert plan.errors == []
    # The Service's family picks the address, as for the cluster network.
    v6 = plan_endpoints(service(ipFamilies=["IPv6"]), pods, None, source=source)
    assert v6.endpoints is not None
    assert v6.endpoints["subsets"][0]["addresses"] == [pod_address(0, "fd00::7")]
    # Without a source: status.podIPs, as upstream.
    plain = plan_endpoints(service(), pods, None)
    assert plain.endpoints is not None
    assert [a["ip"] for a in plain.endpoints["subsets"][0]["addresses"]] == ["1.2.3.4", "1.2.3.5"]
