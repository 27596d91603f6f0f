"""Upstream utils_test.go, ported case by case (``Test_hintsEnabled`` lives with the topology
tests, next to ``hints_enabled``)."""

from __future__ import annotations

from typing import Any

import pytest

from endpointslice_operator.reconciler import (
    address_types_for_service,
    desired_from_service_pods,
    labels_from_service,
    pod_record,
)
from endpointslice_operator.reconciler.ports import (
    ServicePort,
    find_port,
    port_key,
    resolve_ports,
    service_ports,
)
from endpointslice_operator.reconciler.slices import Owner, new_slice, service_controller_key

from .harness import CONTROLLER_NAME, Json, new_pod, new_service_and_endpoint_meta, owner_ref

SERVICE: Json = {
    "metadata": {"name": "foo", "namespace": "test"},
    "spec": {"clusterIP": "1.1.1.1", "ports": [{"port": 80}], "selector": {"foo": "bar"}},
}
NAMED = {
    "kubernetes.io/service-name": "foo",
    "endpointslice.kubernetes.io/managed-by": CONTROLLER_NAME,
}


def _with(labels: dict[str, str] | None = None, **spec: Any) -> Json:
    service: Json = {"metadata": dict(SERVICE["metadata"]), "spec": {**SERVICE["spec"], **spec}}
    if labels is not None:
        service["metadata"]["labels"] = labels
    return service


@pytest.mark.parametrize(
    ("service", "labels"),
    [
        pytest.param(_with(), NAMED, id="Service without labels"),
        pytest.param(_with({"foo": "bar"}), {**NAMED, "foo": "bar"}, id="Service with labels"),
        pytest.param(
            _with({"foo": "bar"}, clusterIP="None"),
            {**NAMED, "service.kubernetes.io/headless": "", "foo": "bar"},
            id="Headless Service with labels",
        ),
        pytest.param(
            _with({"foo": "bar", "foo2": "bar2"}),
            {**NAMED, "foo": "bar", "foo2": "bar2"},
            id="Service with multiple labels",
        ),
        pytest.param(
            _with(
                {
                    "kubernetes.io/service-name": "bad",
                    "endpointslice.kubernetes.io/managed-by": "actor",
                    "foo": "bar",
                }
            ),
            {**NAMED, "foo": "bar"},
            id="Evil service hijacking endpoint slices labels",
        ),
        pytest.param(
            {**_with(), "metadata": {**SERVICE["metadata"], "annotations": {"foo": "bar"}}},
            NAMED,
            id="Service with annotations",
        ),
    ],
)
def test_new_endpoint_slice(service: Json, labels: dict[str, str]) -> None:
    ports = (("foo", None, "TCP", None),)
    generated = new_slice(
        Owner.of(service), "IPv4", ports, labels_from_service(service)(None, CONTROLLER_NAME)[0], []
    )
    assert generated == {
        "apiVersion": "discovery.k8s.io/v1",
        "kind": "EndpointSlice",
        "metadata": {
            "labels": labels,
            "generateName": "foo-",
            "ownerReferences": [owner_ref(service)],
            "namespace": "test",
        },
        "ports": [{"name": "foo", "protocol": "TCP"}],
        "addressType": "IPv4",
        "endpoints": [],
    }


def _pod_to_endpoint_cases() -> list[Any]:
    svc, _ = new_service_and_endpoint_meta("foo", "test")
    publish, _ = new_service_and_endpoint_meta("publishnotready", "test")
    publish["spec"]["publishNotReadyAddresses"] = True
    ready = new_pod(1, "test", True, 1, False)
    ready_terminating = new_pod(1, "test", True, 1, True)
    hostname = new_pod(1, "test", True, 1, False)
    hostname["spec"]["subdomain"] = "foo"
    hostname["spec"]["hostname"] = "example-hostname"
    unready = new_pod(1, "test", False, 1, False)
    unready_terminating = new_pod(1, "test", False, 1, True)
    multi_ip = new_pod(1, "test", True, 1, False)
    multi_ip["status"]["podIPs"] = [{"ip": "1.2.3.4"}, {"ip": "1234::5678:0000:0000:9abc:def0"}]
    node1 = {
        "metadata": {
            "name": "node-1",
            "labels": {
                "topology.kubernetes.io/zone": "us-central1-a",
                "topology.kubernetes.io/region": "us-central1",
            },
        }
    }

    def ep(
        ready: bool,
        serving: bool,
        terminating: bool,
        address: str = "1.2.3.5",
        zone: bool = False,
        host: str | None = None,
    ) -> Json:
        result: Json = {
            "addresses": [address],
            "conditions": {"ready": ready, "serving": serving, "terminating": terminating},
            "targetRef": {"kind": "Pod", "namespace": "test", "name": "pod1"},
            "nodeName": "node-1",
        }
        if zone:
            result["zone"] = "us-central1-a"
        if host is not None:
            result["hostname"] = host
        return result

    return [
        pytest.param(ready, None, svc, ep(True, True, False), id="Ready pod"),
        pytest.param(
            ready, None, publish, ep(True, True, False), id="Ready pod + publishNotReadyAddresses"
        ),
        pytest.param(unready, None, svc, ep(False, False, False), id="Unready pod"),
        pytest.param(
            unready,
            None,
            publish,
            ep(True, False, False),
            id="Unready pod + publishNotReadyAddresses",
        ),
        pytest.param(
            ready, node1, svc, ep(True, True, False, zone=True), id="Ready pod + node labels"
        ),
        pytest.param(
            multi_ip,
            node1,
            svc,
            ep(True, True, False, "1.2.3.4", zone=True),
            id="Multi IP Ready pod + node labels",
        ),
        pytest.param(
            hostname,
            node1,
            svc,
            ep(True, True, False, zone=True, host="example-hostname"),
            id="Ready pod + hostname",
        ),
        pytest.param(
            ready_terminating, None, svc, ep(False, True, True), id="Ready terminating pod"
        ),
        pytest.param(
            unready_terminating, None, svc, ep(False, False, True), id="Not ready terminating pod"
        ),
    ]


@pytest.mark.parametrize(("pod", "node", "service", "expected"), _pod_to_endpoint_cases())
def test_pod_to_endpoint(pod: Json, node: Json | None, service: Json, expected: Json) -> None:
    # Upstream passes a nil node for "no node information"; a node without labels is the same.
    nodes = [node if node is not None else {"metadata": {"name": "node-1"}}]
    desired = desired_from_service_pods(service, [pod], nodes)
    (group,) = desired.groups["IPv4"].values()
    (endpoint,) = group.endpoints.values()
    assert endpoint.to_dict() == expected


@pytest.mark.parametrize(
    ("slice_", "key", "error"),
    [
        pytest.param(
            None, None, "nil EndpointSlice passed to ServiceControllerKey()", id="nil EndpointSlice"
        ),
        pytest.param(
            {},
            None,
            "EndpointSlice missing kubernetes.io/service-name label",
            id="empty EndpointSlice",
        ),
        pytest.param(
            {"metadata": {"namespace": "ns", "labels": {"kubernetes.io/service-name": "svc"}}},
            "ns/svc",
            None,
            id="valid EndpointSlice",
        ),
    ],
)
def test_service_controller_key(slice_: Json | None, key: str | None, error: str | None) -> None:
    if error is None:
        assert service_controller_key(slice_) == key
    else:
        with pytest.raises(ValueError, match=error.replace("(", r"\(").replace(")", r"\)")):
            service_controller_key(slice_)


_HTTPS_POD = {
    "spec": {
        "containers": [{"ports": [{"name": "https", "containerPort": 443, "protocol": "TCP"}]}]
    }
}
_SIDECAR_POD = {
    "spec": {
        "initContainers": [
            {
                "ports": [{"name": "http-sidecar", "containerPort": 8080, "protocol": "TCP"}],
                "restartPolicy": "Always",
            }
        ],
        "containers": [{"ports": [{"name": "http", "containerPort": 8090, "protocol": "TCP"}]}],
    }
}
_SAME_NAME_POD = {
    "spec": {
        "initContainers": [
            {
                "ports": [{"name": "http", "containerPort": 8080, "protocol": "TCP"}],
                "restartPolicy": "Always",
            }
        ],
        "containers": [{"ports": [{"name": "http", "containerPort": 8090, "protocol": "TCP"}]}],
    }
}


@pytest.mark.parametrize(
    ("ports", "pod", "expected"),
    [
        pytest.param(
            [
                {
                    "name": "http",
                    "port": 80,
                    "targetPort": 80,
                    "protocol": "TCP",
                    "appProtocol": "example.com/custom-protocol",
                }
            ],
            {"spec": {"containers": [{"ports": []}]}},
            [("http", 80, "TCP", "example.com/custom-protocol")],
            id="service with AppProtocol on one port",
        ),
        pytest.param(
            [
                {"name": "http", "port": 80, "targetPort": 80, "protocol": "TCP"},
                {"name": "https", "protocol": "TCP", "targetPort": "https", "appProtocol": "https"},
            ],
            _HTTPS_POD,
            [("http", 80, "TCP", None), ("https", 443, "TCP", "https")],
            id="service with named port and AppProtocol on one port",
        ),
        pytest.param(
            [
                {"name": "http-sidecar", "port": 8080, "targetPort": 8080, "protocol": "TCP"},
                {"name": "http", "port": 8090, "targetPort": "http", "protocol": "TCP"},
            ],
            _SIDECAR_POD,
            [("http-sidecar", 8080, "TCP", None), ("http", 8090, "TCP", None)],
            id="service with named port for restartable init container",
        ),
        pytest.param(
            [{"name": "http", "port": 80, "targetPort": "http", "protocol": "TCP"}],
            _SAME_NAME_POD,
            [("http", 8090, "TCP", None)],
            id="service with same named port for regular and restartable init container",
        ),
    ],
)
def test_get_endpoint_ports(ports: list[Json], pod: Json, expected: list[Any]) -> None:
    errors: list[str] = []
    parsed = service_ports({"spec": {"ports": ports}}, errors)
    assert errors == []
    # Upstream returns them in service-port order and sorts them when keying the group; our
    # port set is the sorted key itself.
    assert resolve_ports(parsed, pod_record(pod)) == port_key(expected)


_SET_LABELS_CASES = [
    pytest.param(None, _with(), NAMED, False, id="Service without labels and empty endpoint slice"),
    pytest.param(
        None,
        _with({"foo": "bar"}, clusterIP="None"),
        {**NAMED, "service.kubernetes.io/headless": "", "foo": "bar"},
        True,
        id="Headless service with labels and empty endpoint slice",
    ),
    pytest.param(
        None,
        _with(clusterIP="None"),
        {**NAMED, "service.kubernetes.io/headless": ""},
        False,
        id="Headless service without labels and empty endpoint slice",
    ),
    pytest.param(
        None,
        _with({"service.kubernetes.io/headless": ""}),
        NAMED,
        False,
        id="Non Headless service with Headless label and empty endpoint slice",
    ),
    pytest.param(
        {**NAMED, "service.kubernetes.io/headless": ""},
        _with({"service.kubernetes.io/headless": ""}),
        NAMED,
        False,
        id="Headless Service change to ClusterIP Service with headless label",
    ),
    pytest.param(
        {**NAMED, "service.kubernetes.io/headless": ""},
        _with(),
        NAMED,
        False,
        id="Headless Service change to ClusterIP Service",
    ),
    pytest.param(
        {**NAMED, "foo": "bar"},
        _with({"foo": "bar"}, clusterIP="None"),
        {**NAMED, "service.kubernetes.io/headless": "", "foo": "bar"},
        False,
        id="Headless service and endpoint slice with same labels",
    ),
    pytest.param(
        None,
        _with({"foo": "bar"}),
        {**NAMED, "foo": "bar"},
        True,
        id="Service with labels and empty endpoint slice",
    ),
    pytest.param(
        {**NAMED, "foo": "bar"},
        _with(),
        NAMED,
        True,
        id="Slice with labels and service without labels",
    ),
    pytest.param(
        {**NAMED, "service.kubernetes.io/headless": ""},
        _with(),
        NAMED,
        False,
        id="Slice with headless label and service with ClusterIP",
    ),
    pytest.param(
        NAMED,
        _with({"foo": "bar"}),
        {**NAMED, "foo": "bar"},
        True,
        id="Slice with reserved labels and service with labels",
    ),
    pytest.param(
        NAMED,
        _with(
            {
                "kubernetes.io/service-name": "bad",
                "endpointslice.kubernetes.io/managed-by": "actor",
                "service.kubernetes.io/headless": "invalid",
            }
        ),
        NAMED,
        False,
        id="Evil service trying to hijack slice labels only well-known slice labels",
    ),
    pytest.param(
        NAMED,
        _with(
            {
                "kubernetes.io/service-name": "bad",
                "endpointslice.kubernetes.io/managed-by": "actor",
                "foo": "bar",
            }
        ),
        {**NAMED, "foo": "bar"},
        True,
        id="Evil service trying to hijack slice labels with updates",
    ),
]


@pytest.mark.parametrize(("slice_labels", "service", "expected", "update"), _SET_LABELS_CASES)
def test_set_endpoint_slice_labels(
    slice_labels: dict[str, str] | None, service: Json, expected: dict[str, str], update: bool
) -> None:
    labels, updated = labels_from_service(service)(slice_labels, CONTROLLER_NAME)
    assert updated is update
    assert labels == expected


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        pytest.param(
            {"clusterIP": "10.0.0.10"},
            {"IPv4"},
            id="v4 service with no ip families (cluster upgrade)",
        ),
        pytest.param(
            {"clusterIP": "2000::1"},
            {"IPv6"},
            id="v6 service with no ip families (cluster upgrade)",
        ),
        pytest.param({"ipFamilies": ["IPv4"]}, {"IPv4"}, id="v4 service"),
        pytest.param({"ipFamilies": ["IPv6"]}, {"IPv6"}, id="v6 services"),
        pytest.param({"ipFamilies": ["IPv4", "IPv6"]}, {"IPv4", "IPv6"}, id="v4,v6 service"),
        pytest.param({"ipFamilies": ["IPv6", "IPv4"]}, {"IPv4", "IPv6"}, id="v6,v4 service"),
        pytest.param(
            {"clusterIP": "None"},
            {"IPv4", "IPv6"},
            id="headless with no selector and no families (old api-server)",
        ),
        pytest.param(
            {"selector": {"foo": "bar"}, "clusterIP": "None"},
            {"IPv4", "IPv6"},
            id="headless with selector and no families (old api-server)",
        ),
        pytest.param(
            {"clusterIP": "None", "ipFamilies": ["IPv4", "IPv6"]},
            {"IPv4", "IPv6"},
            id="headless with no selector with families",
        ),
        pytest.param(
            {"selector": {"foo": "bar"}, "clusterIP": "None", "ipFamilies": ["IPv4", "IPv6"]},
            {"IPv4", "IPv6"},
            id="headless with selector with families",
        ),
    ],
)
def test_supported_service_address_type(spec: Json, expected: set[str]) -> None:
    types = address_types_for_service({"spec": spec})
    assert len(types) == len(expected)
    assert set(types) == expected


def _ctr(*ports: tuple[str, int, str]) -> Json:
    return {"ports": [{"name": n, "containerPort": p, "protocol": proto} for n, p, proto in ports]}


_UDP_TCP = _ctr(("", 11, "UDP"), ("p", 22, "TCP"), ("q", 33, "TCP"))


@pytest.mark.parametrize(
    ("containers", "init_containers", "target", "expected"),
    [
        pytest.param([{}], [], 93, 93, id="valid int, no ports"),
        pytest.param(
            [_ctr(("", 11, "TCP"), ("p", 22, "TCP"))], [], 93, 93, id="valid int, with ports"
        ),
        pytest.param([{}], [], "p", None, id="valid str, no ports"),
        pytest.param([_UDP_TCP], [], "q", 33, id="valid str, one ctr with ports"),
        pytest.param([{}, _UDP_TCP], [], "q", 33, id="valid str, two ctr with ports"),
        pytest.param(
            [{}, _ctr(("", 11, "UDP"), ("p", 22, "TCP"), ("q", 22, "TCP"))],
            [],
            "q",
            22,
            id="valid str, two ctr with same port",
        ),
        pytest.param(
            [{}, _ctr(("a", 11, "snmp"))], [], "a", None, id="valid str, invalid protocol"
        ),
        pytest.param(
            [
                {},
                {"ports": [{"name": "a", "containerPort": 11, "hostPort": 81, "protocol": "TCP"}]},
            ],
            [],
            "a",
            11,
            id="valid hostPort",
        ),
        pytest.param(
            [
                {},
                {"ports": [{"name": "a", "containerPort": 11, "hostPort": -1, "protocol": "TCP"}]},
            ],
            [],
            "a",
            11,
            id="invalid hostPort",
        ),
        pytest.param([{}, _ctr(("a", -1, "TCP"))], [], "a", -1, id="invalid ContainerPort"),
        pytest.param(
            [
                {},
                {
                    "ports": [
                        {
                            "name": "a",
                            "containerPort": 11,
                            "hostIP": "192.168.1.1",
                            "protocol": "TCP",
                        }
                    ]
                },
            ],
            [],
            "a",
            11,
            id="HostIP Address",
        ),
        pytest.param(
            [],
            [{**_ctr(("a", 80, "TCP")), "restartPolicy": "Always"}],
            "a",
            80,
            id="Sidecar initContainer named port",
        ),
        pytest.param(
            [],
            [_ctr(("a", 80, "TCP"))],
            "a",
            None,
            id="Invalid(restartPolicy != Always) initContainer named port",
        ),
        pytest.param(
            [_ctr(("a", 81, "TCP")), _ctr(("a", 82, "TCP"))],
            [{**_ctr(("a", 80, "TCP")), "restartPolicy": "Always"}],
            "a",
            81,
            id="App and sidecar containers have the same named port, first app container "
            "port will be used",
        ),
    ],
)
def test_find_port(
    containers: list[Json], init_containers: list[Json], target: int | str, expected: int | None
) -> None:
    pod = pod_record({"spec": {"containers": containers, "initContainers": init_containers}})
    assert (
        find_port(pod, ServicePort(name="", protocol="TCP", app_protocol=None, target=target))
        == expected
    )
