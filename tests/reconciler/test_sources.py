"""Address sources: the cluster network (default), Multus network-status, DRA device status, and
a user's own source, through ``desired_from_service_pods`` and ``plan_service``."""

from __future__ import annotations

import json
from typing import Any

import pytest

from endpointslice_operator.reconciler import (
    Addresses,
    ClusterNetwork,
    DesiredEndpoints,
    DeviceNetwork,
    LeftOut,
    MultusNetwork,
    PodRecord,
    ReconcilerConfig,
    desired_from_service_pods,
    plan_service,
)
from endpointslice_operator.reconciler.sources import (
    NETWORK_STATUS_ANNOTATION,
    claim_statuses_of,
    parse_device_network,
    parse_network_status,
)

Json = dict[str, Any]
NODES = [{"metadata": {"name": "node-1", "labels": {}}}]
CONFIG = ReconcilerConfig(controller_name="endpointslice-operator.io")


def _service(families: tuple[str, ...] = ("IPv4",), namespace: str = "ns") -> Json:
    return {
        "metadata": {"namespace": namespace, "name": "svc", "uid": "svc-uid"},
        "spec": {
            "selector": {"app": "a"},
            "ipFamilies": list(families),
            "ports": [{"name": "http", "port": 80, "targetPort": 8080, "protocol": "TCP"}],
        },
    }


def _pod(
    name: str,
    *,
    pod_ip: str = "10.0.0.1",
    network_status: Any = None,
    claims: list[Json] | None = None,
    ready: bool = True,
    namespace: str = "ns",
) -> Json:
    metadata: Json = {"namespace": namespace, "name": name, "uid": f"uid-{name}"}
    if network_status is not None:
        text = network_status if isinstance(network_status, str) else json.dumps(network_status)
        metadata["annotations"] = {NETWORK_STATUS_ANNOTATION: text}
    status: Json = {
        "phase": "Running",
        "podIP": pod_ip,
        "podIPs": [{"ip": pod_ip}],
        "conditions": [{"type": "Ready", "status": "True" if ready else "False"}],
    }
    if claims is not None:
        status["resourceClaimStatuses"] = claims
    return {
        "metadata": metadata,
        "spec": {"nodeName": "node-1", "containers": [{"name": "c"}]},
        "status": status,
    }


def _addresses(desired: Any, family: str = "IPv4") -> dict[str, list[tuple[str, ...]]]:
    """Pod name -> the address tuples of its endpoints in ``family``."""
    found: dict[str, list[tuple[str, ...]]] = {}
    for group in desired.groups.get(family, {}).values():
        for endpoint in group.endpoints.values():
            found.setdefault(endpoint.key[3], []).append(tuple(endpoint.addresses))
    return found


def _status(*entries: tuple[str, list[str]]) -> list[Json]:
    return [
        {"name": name, "interface": f"net{i}", "ips": ips, "mac": "02:00:00:00:00:01"}
        for i, (name, ips) in enumerate(entries)
    ]


DEFAULT = ("kindnet", ["10.0.0.1"])


# -- the default path ---------------------------------------------------------------------------


def test_no_source_and_the_cluster_network_source_agree() -> None:
    pods = [_pod(f"p{i}", pod_ip=f"10.0.0.{i + 1}") for i in range(5)]
    plain = desired_from_service_pods(_service(), pods, NODES)
    explicit = desired_from_service_pods(_service(), pods, NODES, ClusterNetwork())
    assert plain.groups == explicit.groups
    assert plain.left_out == explicit.left_out == []
    assert _addresses(plain) == {f"p{i}": [(f"10.0.0.{i + 1}",)] for i in range(5)}


# -- Multus -------------------------------------------------------------------------------------


def _multus(
    pods: list[Json], network: str = "ns/macvlan", families: tuple[str, ...] = ("IPv4",)
) -> DesiredEndpoints:
    return desired_from_service_pods(
        _service(families), pods, NODES, MultusNetwork.from_pods(network, pods)
    )


def test_multus_publishes_the_secondary_network_addresses() -> None:
    pods = [
        _pod("a", network_status=_status(DEFAULT, ("ns/macvlan", ["192.168.1.10"]))),
        _pod(
            "b", pod_ip="10.0.0.2", network_status=_status(DEFAULT, ("macvlan", ["192.168.1.11"]))
        ),
    ]
    desired = _multus(pods)
    # A bare entry name is in the pod's namespace, as Multus has it.
    assert _addresses(desired) == {"a": [("192.168.1.10",)], "b": [("192.168.1.11",)]}
    assert desired.left_out == []


def test_a_bare_network_name_is_in_the_pods_namespace() -> None:
    pods = [
        _pod("a", network_status=_status(("ns/macvlan", ["192.168.1.10"]))),
        _pod("b", network_status=_status(("other/macvlan", ["192.168.1.11"]))),
    ]
    desired = _multus(pods, network="macvlan")
    assert _addresses(desired) == {"a": [("192.168.1.10",)]}
    assert desired.left_out == [("ns/b", "not attached to network ns/macvlan")]


@pytest.mark.parametrize(
    ("status", "reason"),
    [
        pytest.param(None, f"no {NETWORK_STATUS_ANNOTATION} annotation", id="missing"),
        pytest.param(
            "[{", f"malformed {NETWORK_STATUS_ANNOTATION} annotation: not JSON", id="not JSON"
        ),
        pytest.param(
            '{"name": "ns/macvlan"}',
            f"malformed {NETWORK_STATUS_ANNOTATION} annotation: not a JSON list",
            id="not a list",
        ),
        pytest.param(
            [{"interface": "net1", "ips": ["192.168.1.1"]}],
            f"malformed {NETWORK_STATUS_ANNOTATION} annotation: entry 0 has no name",
            id="entry without name",
        ),
        pytest.param(
            [{"name": "ns/macvlan", "ips": "192.168.1.1"}],
            f"malformed {NETWORK_STATUS_ANNOTATION} annotation: entry 0 (ns/macvlan): "
            "ips is not a list of strings",
            id="ips not a list",
        ),
        pytest.param(
            [{"name": "ns/macvlan", "ips": ["192.168.1.300"]}],
            f"malformed {NETWORK_STATUS_ANNOTATION} annotation: '192.168.1.300' is not an IP "
            "address",
            id="bad address",
        ),
        pytest.param(["x"], None, id="entry not an object"),
        pytest.param(
            _status(DEFAULT, ("ns/other", ["192.168.2.1"])),
            "not attached to network ns/macvlan",
            id="other network only",
        ),
        pytest.param(
            _status(("ns/macvlan", ["127.0.0.1"])),
            "no usable address on network ns/macvlan",
            id="only a loopback address",
        ),
        pytest.param(
            _status(("ns/macvlan", [])),
            "no usable address on network ns/macvlan",
            id="attached without addresses",
        ),
    ],
)
def test_pods_without_a_usable_entry_are_left_out(status: Any, reason: str | None) -> None:
    good = _pod("good", network_status=_status(("ns/macvlan", ["192.168.1.1"])))
    bad = _pod("bad", pod_ip="10.0.0.2", network_status=status)
    desired = _multus([bad, good])
    assert _addresses(desired) == {"good": [("192.168.1.1",)]}
    assert [pod for pod, _ in desired.left_out] == ["ns/bad"]
    if reason is not None:
        assert desired.left_out[0][1].startswith(reason)
    assert desired.errors == []


def test_ipv6_and_dual_stack_go_to_one_family_each() -> None:
    pods = [
        _pod(
            "a",
            network_status=_status(("ns/macvlan", ["192.168.1.10", "fd00:0:0::0a", "2001:db8::1"])),
        )
    ]
    v6 = _multus(pods, families=("IPv6",))
    assert _addresses(v6, "IPv6") == {"a": [("fd00::a", "2001:db8::1")]}
    dual = _multus(pods, families=("IPv4", "IPv6"))
    assert _addresses(dual, "IPv4") == {"a": [("192.168.1.10",)]}
    assert _addresses(dual, "IPv6") == {"a": [("fd00::a", "2001:db8::1")]}


def test_several_interfaces_on_the_same_network_give_one_endpoint() -> None:
    status = _status(
        DEFAULT,
        ("ns/macvlan", ["192.168.1.10"]),
        ("ns/macvlan", ["192.168.1.20", "192.168.1.10"]),
    )
    desired = _multus([_pod("a", network_status=status)])
    assert _addresses(desired) == {"a": [("192.168.1.10", "192.168.1.20")]}


def test_an_address_change_changes_the_plan() -> None:
    service = _service()
    before = [_pod("a", network_status=_status(("ns/macvlan", ["192.168.1.10"])))]
    plan = plan_service(
        service, before, NODES, [], CONFIG, source=MultusNetwork.from_pods("ns/macvlan", before)
    )
    assert len(plan.creates) == 1
    created = dict(plan.creates[0], metadata={**plan.creates[0]["metadata"], "name": "svc-1"})
    assert [e["addresses"] for e in created["endpoints"]] == [["192.168.1.10"]]
    assert plan.creates[0]["metadata"]["labels"]["endpointslice.kubernetes.io/managed-by"] == (
        "endpointslice-operator.io"
    )

    same = plan_service(
        service,
        before,
        NODES,
        [created],
        CONFIG,
        source=MultusNetwork.from_pods("ns/macvlan", before),
    )
    assert same.write_count == 0

    after = [_pod("a", network_status=_status(("ns/macvlan", ["192.168.1.99"])))]
    changed = plan_service(
        service,
        after,
        NODES,
        [created],
        CONFIG,
        source=MultusNetwork.from_pods("ns/macvlan", after),
    )
    assert [e["addresses"] for e in changed.updates[0]["endpoints"]] == [["192.168.1.99"]]

    gone = [_pod("a", network_status=_status(DEFAULT))]
    dropped = plan_service(
        service, gone, NODES, [created], CONFIG, source=MultusNetwork.from_pods("ns/macvlan", gone)
    )
    assert dropped.left_out == [("ns/a", "not attached to network ns/macvlan")]
    assert dropped.updates[0]["endpoints"] == []  # becomes the placeholder


def test_readiness_and_pods_without_a_sandbox_are_as_for_the_cluster_network() -> None:
    not_ready = _pod("a", ready=False, network_status=_status(("ns/macvlan", ["192.168.1.10"])))
    pending = _pod("b", network_status=_status(("ns/macvlan", ["192.168.1.11"])))
    pending["status"] = {"phase": "Pending"}
    desired = _multus([not_ready, pending])
    (endpoint,) = next(iter(desired.groups["IPv4"].values())).endpoints.values()
    assert endpoint.addresses == ("192.168.1.10",)
    assert endpoint.state[2:5] == (False, False, False)  # ready, serving, terminating
    assert desired.left_out == []  # a pod without its sandbox is skipped, not left out


def test_parse_network_status_is_cached_by_text() -> None:
    text = json.dumps(_status(("ns/macvlan", ["192.168.1.10"])))
    assert parse_network_status(text) is parse_network_status(text)


# -- DRA ----------------------------------------------------------------------------------------


def _claim(name: str, *, results: list[Json] | None, devices: list[Json]) -> Json:
    status: Json = {"devices": devices}
    if results is not None:
        status["allocation"] = {"devices": {"results": results}}
    return {"metadata": {"namespace": "ns", "name": name}, "status": status}


def _result(request: str, device: str) -> Json:
    return {"request": request, "driver": "net.example.com", "pool": "node-1", "device": device}


def _device(device: str, ips: Any) -> Json:
    return {
        "driver": "net.example.com",
        "pool": "node-1",
        "device": device,
        "networkData": {"interfaceName": f"eth-{device}", "ips": ips},
    }


def _dra(
    pods: list[Json], claims: list[Json], spec: str, families: tuple[str, ...] = ("IPv4",)
) -> DesiredEndpoints:
    parsed = parse_device_network(spec)
    assert parsed is not None
    return desired_from_service_pods(
        _service(families), pods, NODES, DeviceNetwork.from_objects(*parsed, pods, claims)
    )


def _claimed(name: str, claim: str = "nic", resource_claim: str | None = None) -> Json:
    return _pod(
        name,
        claims=[{"name": claim, "resourceClaimName": resource_claim or f"{name}-{claim}"}],
    )


def test_dra_publishes_the_device_addresses_without_prefix_length() -> None:
    claims = [
        _claim(
            "a-nic",
            results=[_result("vf", "dev-0"), _result("vf", "dev-1")],
            devices=[
                _device("dev-0", ["192.168.5.2/24", "fd00::2/64"]),
                _device("dev-1", ["192.168.6.2/24"]),
            ],
        )
    ]
    desired = _dra([_claimed("a")], claims, "nic", ("IPv4", "IPv6"))
    assert _addresses(desired, "IPv4") == {"a": [("192.168.5.2", "192.168.6.2")]}
    assert _addresses(desired, "IPv6") == {"a": [("fd00::2",)]}


def test_dra_filters_by_request() -> None:
    claims = [
        _claim(
            "a-nic",
            results=[_result("fast", "dev-0"), _result("slow/any", "dev-1")],
            devices=[_device("dev-0", ["192.168.5.2/24"]), _device("dev-1", ["192.168.6.2/24"])],
        )
    ]
    assert _addresses(_dra([_claimed("a")], claims, "nic/fast")) == {"a": [("192.168.5.2",)]}
    # A prioritized list reports "<request>/<subrequest>": it belongs to the request.
    assert _addresses(_dra([_claimed("a")], claims, "nic/slow")) == {"a": [("192.168.6.2",)]}
    none = _dra([_claimed("a")], claims, "nic/other")
    assert none.left_out == [
        ("ns/a", "no device network address in request 'other' of ResourceClaim a-nic")
    ]


@pytest.mark.parametrize(
    ("pod", "claims", "reason"),
    [
        pytest.param(_pod("a"), [], "no ResourceClaim for pod claim 'nic' yet", id="no statuses"),
        pytest.param(
            _claimed("a", claim="gpu"), [], "no ResourceClaim for pod claim 'nic' yet", id="other"
        ),
        pytest.param(_claimed("a"), [], "ResourceClaim a-nic not found", id="claim not seen"),
        pytest.param(
            _claimed("a"),
            [_claim("a-nic", results=None, devices=[])],
            "ResourceClaim a-nic is not allocated yet",
            id="not allocated",
        ),
        pytest.param(
            _claimed("a"),
            [_claim("a-nic", results=[_result("vf", "dev-0")], devices=[])],
            "no device network address in ResourceClaim a-nic",
            id="no device status yet",
        ),
        pytest.param(
            _claimed("a"),
            [_claim("a-nic", results=[_result("vf", "dev-0")], devices=[_device("dev-0", "x")])],
            "malformed ResourceClaim a-nic: status.devices[].networkData.ips is not a list",
            id="ips not a list",
        ),
        pytest.param(
            _claimed("a"),
            [
                _claim(
                    "a-nic", results=[_result("vf", "dev-0")], devices=[_device("dev-0", ["x/1"])]
                )
            ],
            "malformed ResourceClaim a-nic: 'x/1' is not an IP address (CIDR)",
            id="bad CIDR",
        ),
    ],
)
def test_dra_pods_without_addresses_are_left_out(
    pod: Json, claims: list[Json], reason: str
) -> None:
    desired = _dra([pod], claims, "nic")
    assert _addresses(desired) == {}
    assert len(desired.left_out) == 1
    assert desired.left_out[0][0] == "ns/a"
    assert desired.left_out[0][1].startswith(reason)


def test_dra_address_change_and_late_allocation() -> None:
    pods = [_claimed("a")]
    unallocated = [_claim("a-nic", results=None, devices=[])]
    assert _addresses(_dra(pods, unallocated, "nic")) == {}
    allocated = [
        _claim("a-nic", results=[_result("vf", "d")], devices=[_device("d", ["10.9.0.1/16"])])
    ]
    assert _addresses(_dra(pods, allocated, "nic")) == {"a": [("10.9.0.1",)]}
    moved = [_claim("a-nic", results=[_result("vf", "d")], devices=[_device("d", ["10.9.0.2/16"])])]
    assert _addresses(_dra(pods, moved, "nic")) == {"a": [("10.9.0.2",)]}


@pytest.mark.parametrize(
    ("text", "parsed"),
    [
        ("nic", ("nic", None)),
        ("nic/vf", ("nic", "vf")),
        (" nic/vf ", ("nic", "vf")),
        ("", None),
        ("/vf", None),
        ("nic/", None),
        ("nic/vf/x", None),
    ],
)
def test_parse_device_network(text: str, parsed: tuple[str, str | None] | None) -> None:
    assert parse_device_network(text) == parsed


# -- a user's own source ------------------------------------------------------------------------


class FromLabel:
    """Addresses from a pod label, e.g. one an IPAM webhook stamps on: ``ipam.example/ip``."""

    def addresses(self, pod: PodRecord) -> Addresses | LeftOut:
        ip = pod.labels.get("ipam.example/ip")
        if ip is None:
            return LeftOut("no ipam.example/ip label")
        return Addresses((ip.replace("-", "."),), ())


def test_a_users_own_source_plugs_in() -> None:
    labelled = _pod("a")
    labelled["metadata"]["labels"] = {"app": "a", "ipam.example/ip": "172.16.0-9"}
    plan = plan_service(_service(), [labelled, _pod("b")], NODES, [], CONFIG, source=FromLabel())
    (created,) = plan.creates
    assert [e["addresses"] for e in created["endpoints"]] == [["172.16.0.9"]]
    assert created["endpoints"][0]["targetRef"]["name"] == "a"
    assert created["ports"] == [{"name": "http", "port": 8080, "protocol": "TCP"}]
    assert plan.left_out == [("ns/b", "no ipam.example/ip label")]


class Unsorted:
    """Several addresses per family, in the order a source happens to give them."""

    def addresses(self, pod: PodRecord) -> Addresses | LeftOut:
        return Addresses(("10.9.0.2", "10.9.0.1"), ("fd00::2", "fd00::1"))


@pytest.mark.parametrize("family", ["IPv4", "IPv6"])
def test_several_addresses_in_any_order_are_one_endpoint_identity(family: str) -> None:
    """An endpoint's identity is its sorted addresses, as an existing slice's is read: the
    slice written from a source's order is not rewritten on the next sync."""
    service = _service((family,))
    pods = [_pod("a")]
    plan = plan_service(service, pods, NODES, [], CONFIG, source=Unsorted())
    (created,) = plan.creates
    (endpoint,) = created["endpoints"]
    assert len(endpoint["addresses"]) == 2
    stored = dict(created, metadata={**created["metadata"], "name": "svc-1"})
    again = plan_service(service, pods, NODES, [stored], CONFIG, source=Unsorted())
    assert again.write_count == 0


# -- edges: entries skipped before others, names and claims missing -----------------------------


def test_a_refused_address_does_not_stop_the_addresses_after_it() -> None:
    pods = [_pod("a", network_status=_status(("ns/macvlan", ["127.0.0.1", "192.168.1.10"])))]
    assert _addresses(_multus(pods)) == {"a": [("192.168.1.10",)]}


def test_multus_addresses_with_a_prefix_length_are_malformed() -> None:
    # network-status lists plain addresses; "/24" belongs to DRA's CIDRs only.
    pods = [_pod("a", network_status=_status(("ns/macvlan", ["192.168.1.10/24"])))]
    desired = _multus(pods)
    assert _addresses(desired) == {}
    assert desired.left_out == [
        (
            "ns/a",
            f"malformed {NETWORK_STATUS_ANNOTATION} annotation: "
            "'192.168.1.10/24' is not an IP address",
        )
    ]


@pytest.mark.parametrize("name", ["", 5])
def test_a_network_status_entry_needs_a_name(name: Any) -> None:
    assert parse_network_status(json.dumps([{"name": name, "ips": []}])) == "entry 0 has no name"


def test_statuses_hold_only_the_pods_with_the_annotation() -> None:
    with_status = _pod("a", network_status=_status(DEFAULT))
    source = MultusNetwork.from_pods("ns/macvlan", [_pod("b"), with_status])
    assert dict(source.statuses) == {("ns", "a"): json.dumps(_status(DEFAULT))}


def test_claim_statuses_skip_junk_and_entries_without_a_claim() -> None:
    pod = _pod(
        "a",
        claims=[
            "junk",  # type: ignore[list-item]
            {"name": "pending"},
            {"name": "empty", "resourceClaimName": ""},
            {"name": "nic", "resourceClaimName": "a-nic"},
        ],
    )
    assert claim_statuses_of(pod) == {"nic": "a-nic"}


def test_device_statuses_skipped_do_not_stop_the_allocated_ones() -> None:
    # Junk, a device not allocated to the claim, an allocated one without network data.
    quiet = {"driver": "net.example.com", "pool": "node-1", "device": "dev-2"}
    devices: list[Any] = [
        "junk",
        _device("dev-0", ["192.168.5.2/24"]),
        quiet,
        _device("dev-1", ["192.168.6.2/24"]),
    ]
    claims = [
        _claim("a-nic", results=[_result("vf", "dev-1"), _result("vf", "dev-2")], devices=devices)
    ]
    desired = _dra([_claimed("a")], claims, "nic")
    assert _addresses(desired) == {"a": [("192.168.6.2",)]}
