"""The bad-input corpus: each case, how it reaches the operator, and its documented behaviour.

A case either goes through the API (the emulator validates like kube-apiserver, so these are
inputs a real cluster accepts) or, for inputs the API server refuses, is delivered straight to
the operator's event router as a watch event with a newer resourceVersion (what a misbehaving
or older API server, or a bug upstream of us, would hand the operator). ``docs/reliability.md``
lists the same table.
"""

from __future__ import annotations

import copy
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from endpointslice_operator.controller.operator import Operator
from endpointslice_operator.testing import Emulator
from tests.e2e.harness import (
    NS,
    SELECTOR,
    addresses,
    events,
    eventually,
    pod,
    pod_body,
    service,
)

JSON = dict[str, Any]
BAD = "bad"
"""Every case's Service is named ``bad`` and selects ``app=bad`` pods unless it says otherwise."""
NEWER = "900000000"
"""resourceVersion of injected watch events: newer than anything the emulator has written."""

# What the operator does with the case's Service (checked by the test).
NO_SLICES = "no slices"
SLICES = "slices"
UNCHANGED = "slices unchanged"


@dataclass(frozen=True)
class Case:
    id: str
    family: str
    behaviour: str
    inject: Callable[[Emulator, Operator], Awaitable[None]]
    outcome: str
    addresses: frozenset[str] = frozenset()
    """With ``SLICES``: exactly the addresses the Service's slices must hold."""
    event: str | None = None
    """A Warning Event reason expected on the Service."""
    log: str | None = None
    """A substring of a log line the case must produce."""
    via_api: bool = True
    namespace: str = NS


async def seen(emu: Emulator, op: Operator, kind: str, name: str) -> None:
    """Wait until the operator's index holds the API's current version of a Service or pod, so
    that the injected event comes after it (a later watch event would overwrite it)."""
    stored = emu.store.get(kind, NS, name)
    assert stored is not None
    version = stored["metadata"]["resourceVersion"]

    def indexed() -> bool:
        if kind == "services":
            entry = op.indexes.services.get(f"{NS}/{name}")
            return entry is not None and entry.body["metadata"]["resourceVersion"] == version
        record = op.indexes.pods.get(NS, name)
        return record is not None and record.resource_version == version

    await eventually(indexed)


async def inject_service(emu: Emulator, op: Operator, change: Callable[[JSON], None]) -> None:
    """Deliver a changed, opted-in copy of the (not yet opted-in) ``bad`` Service as a watch
    event: the API would refuse the change."""
    await seen(emu, op, "services", BAD)
    body = emu.store.get("services", NS, BAD)
    assert body is not None and op.router is not None
    changed = copy.deepcopy(body)
    changed["metadata"].setdefault("annotations", {})["endpointslice-operator.io/enabled"] = "true"
    change(changed)
    changed["metadata"]["resourceVersion"] = NEWER
    op.router.on_service("MODIFIED", changed)


async def inject_pod(
    emu: Emulator, op: Operator, name: str, change: Callable[[JSON], None]
) -> None:
    await seen(emu, op, "pods", name)
    body = emu.store.get("pods", NS, name)
    assert body is not None and op.router is not None
    changed = copy.deepcopy(body)
    change(changed)
    changed["metadata"]["resourceVersion"] = NEWER
    op.router.on_pod("MODIFIED", changed)


def bad_service(emu: Emulator, **kwargs: Any) -> None:
    kwargs.setdefault("selector", {"app": BAD})
    service(emu, BAD, **kwargs)


def bad_pod(
    emu: Emulator, name: str = "bad-0", ip: str | list[str] = "10.9.0.1", **kw: Any
) -> None:
    kw.setdefault("labels", {"app": BAD})
    pod(emu, name, ip, **kw)


CASES: list[Case] = []


def case(
    family: str,
    behaviour: str,
    outcome: str,
    *,
    addresses: tuple[str, ...] = (),
    event: str | None = None,
    log: str | None = None,
    via_api: bool = True,
    namespace: str = NS,
) -> Callable[[Callable[[Emulator, Operator], Awaitable[None]]], None]:
    def register(inject: Callable[[Emulator, Operator], Awaitable[None]]) -> None:
        CASES.append(
            Case(
                inject.__name__,
                family,
                behaviour,
                inject,
                outcome,
                frozenset(addresses),
                event,
                log,
                via_api,
                namespace,
            )
        )

    return register


# -- selector annotation ------------------------------------------------------------------------

_BAD_SELECTORS = {
    "unclosed_set": "app in (a,b",
    "missing_key": "=web",
    "empty_set": "app in ()",
    "space_in_key": "bad key!=x",
    "double_comma": "app=web,,tier=x",
    "non_ascii_key": "Ünicode=web",
    "value_too_long": "app=" + "x" * 64,
    "bare_negation": "!",
    "missing_set": "app notin",
    "empty_string": "",
    "missing_comma": "app=web tier=x",
}


def _selector_case(key: str, text: str) -> None:
    async def inject(emu: Emulator, op: Operator) -> None:
        bad_service(emu, selector=None, annotations={SELECTOR: text})
        bad_pod(emu)

    inject.__name__ = f"selector_annotation_{key}"
    case(
        "selector annotation",
        f"`{text[:24]}`: Warning Event InvalidSelector naming the problem, no writes",
        NO_SLICES,
        event="InvalidSelector",
    )(inject)


for _key, _text in _BAD_SELECTORS.items():
    _selector_case(_key, _text)


@case(
    "selector annotation",
    "set-based `app in (bad, other), !canary` is valid: pods selected",
    SLICES,
    addresses=("10.9.0.1",),
)
async def selector_annotation_set_based(emu: Emulator, op: Operator) -> None:
    bad_service(emu, selector=None, annotations={SELECTOR: "app in (bad, other), !canary"})
    bad_pod(emu)
    bad_pod(emu, "bad-canary", "10.9.0.2", labels={"app": BAD, "canary": "1"})


# -- opt-in values ---------------------------------------------------------------------------


def _opt_in_case(key: str, value: str, event: str | None) -> None:
    async def inject(emu: Emulator, op: Operator) -> None:
        bad_service(emu, opt_in=False, annotations={"endpointslice-operator.io/enabled": value})
        bad_pod(emu)

    inject.__name__ = f"opt_in_{key}"
    said = f", a Warning Event `{event}` naming the fix" if event else ""
    case(
        "opt-in value",
        f'`"{value}"`: not opted in (only `"true"` is), nothing written{said}',
        NO_SLICES,
        event=event,
    )(inject)


for _key, _value, _event in (
    ("yes", "yes", "OptInIgnored"),
    ("upper_true", "TRUE", "OptInIgnored"),
    ("title_true", "True", "OptInIgnored"),
    ("empty", "", None),
    ("one", "1", "OptInIgnored"),
    ("padded", " true", "OptInIgnored"),
):
    _opt_in_case(_key, _value, _event)


@case(
    "opt-in value",
    "KEP-4770 label naming another controller wins over our annotation: nothing written",
    NO_SLICES,
)
async def opt_in_label_names_other_controller(emu: Emulator, op: Operator) -> None:
    bad_service(emu, labels={"service.kubernetes.io/endpoint-controller-name": "someone-else"})
    bad_pod(emu)


# -- services --------------------------------------------------------------------------------


@case(
    "service",
    "headless Service without ports: one slice per family, endpoints without ports",
    SLICES,
    addresses=("10.9.0.1",),
)
async def service_headless_without_ports(emu: Emulator, op: Operator) -> None:
    bad_service(emu, ports=[], clusterIP="None")
    bad_pod(emu)


@case(
    "service",
    "ClusterIP Service without ports (API refuses): handled like upstream, endpoints published",
    SLICES,
    addresses=("10.9.0.1",),
    via_api=False,
)
async def service_without_ports(emu: Emulator, op: Operator) -> None:
    bad_service(emu, opt_in=False)
    bad_pod(emu)
    await inject_service(emu, op, lambda s: s["spec"].update(ports=[]))


@case("service", "200 ports: one slice carrying all 200 ports", SLICES, addresses=("10.9.0.1",))
async def service_200_ports(emu: Emulator, op: Operator) -> None:
    ports = [{"name": f"p{i}", "port": 1000 + i, "targetPort": 2000 + i} for i in range(200)]
    bad_service(emu, ports=ports)
    bad_pod(emu)


@case(
    "service",
    "invalid port name `HTTP_1` (API refuses): the API rejects the slice with 422; Warning "
    "FailedToUpdateEndpointSlices with the API's message, retried with backoff",
    NO_SLICES,
    event="FailedToUpdateEndpointSlices",
    via_api=False,
)
async def service_invalid_port_name(emu: Emulator, op: Operator) -> None:
    bad_service(emu, opt_in=False)
    bad_pod(emu)
    await inject_service(
        emu,
        op,
        lambda s: s["spec"].update(
            ports=[{"name": "HTTP_1", "port": 80, "targetPort": 8080, "protocol": "TCP"}]
        ),
    )


@case(
    "service",
    "protocol `ICMP` (API refuses): 422 from the API, Warning FailedToUpdateEndpointSlices",
    NO_SLICES,
    event="FailedToUpdateEndpointSlices",
    via_api=False,
)
async def service_invalid_protocol(emu: Emulator, op: Operator) -> None:
    bad_service(emu, opt_in=False)
    bad_pod(emu)
    await inject_service(
        emu,
        op,
        lambda s: s["spec"].update(
            ports=[{"name": "http", "port": 80, "targetPort": 8080, "protocol": "ICMP"}]
        ),
    )


@case(
    "service",
    "duplicate port names (API refuses): 422 from the API, Warning FailedToUpdateEndpointSlices",
    NO_SLICES,
    event="FailedToUpdateEndpointSlices",
    via_api=False,
)
async def service_duplicate_port_names(emu: Emulator, op: Operator) -> None:
    bad_service(emu, opt_in=False)
    bad_pod(emu)
    port = {"name": "http", "port": 80, "targetPort": 8080, "protocol": "TCP"}
    await inject_service(emu, op, lambda s: s["spec"].update(ports=[port, {**port, "port": 81}]))


@case(
    "service",
    "targetPort name no container has: the pod is published in a slice without ports (upstream)",
    SLICES,
    addresses=("10.9.0.1",),
)
async def service_target_port_unknown_name(emu: Emulator, op: Operator) -> None:
    bad_service(emu, ports=[{"name": "http", "port": 80, "targetPort": "nope"}])
    bad_pod(emu)


@case(
    "service",
    "targetPort name only some pods have: those pods in a slice with the port, the others in a "
    "slice without ports (upstream)",
    SLICES,
    addresses=("10.9.0.1", "10.9.0.2"),
)
async def service_target_port_on_some_pods(emu: Emulator, op: Operator) -> None:
    bad_service(emu, ports=[{"name": "http", "port": 80, "targetPort": "metrics"}])
    bad_pod(emu)
    bad_pod(
        emu,
        "bad-1",
        "10.9.0.2",
        container_ports=[{"name": "metrics", "containerPort": 9090, "protocol": "TCP"}],
    )


@case("service", "ExternalName Service with our annotation: ignored, nothing written", NO_SLICES)
async def service_external_name(emu: Emulator, op: Operator) -> None:
    service(emu, BAD, type="ExternalName", externalName="example.com", ports=[])
    bad_pod(emu)


@case(
    "service",
    "spec.selector with an invalid value (API refuses): Warning InvalidSelector, no writes",
    NO_SLICES,
    event="InvalidSelector",
    via_api=False,
)
async def service_selector_invalid_value(emu: Emulator, op: Operator) -> None:
    bad_service(emu, opt_in=False)
    bad_pod(emu)
    await inject_service(emu, op, lambda s: s["spec"].update(selector={"app": "not valid!"}))


@case(
    "service",
    "spec.selector that is not a map (API refuses): Warning InvalidSelector, no writes",
    NO_SLICES,
    event="InvalidSelector",
    via_api=False,
)
async def service_selector_not_a_map(emu: Emulator, op: Operator) -> None:
    bad_service(emu, opt_in=False)
    await inject_service(emu, op, lambda s: s["spec"].update(selector="app=bad"))


@case(
    "service label",
    "Service labelled `kubernetes.io/service-name: other`: slices still carry their own name",
    SLICES,
    addresses=("10.9.0.1",),
)
async def service_label_overrides_service_name(emu: Emulator, op: Operator) -> None:
    bad_service(emu, labels={"kubernetes.io/service-name": "control"})
    bad_pod(emu)


@case(
    "service label",
    "Service labelled `endpointslice.kubernetes.io/managed-by: someone-else`: slices are ours",
    SLICES,
    addresses=("10.9.0.1",),
)
async def service_label_overrides_managed_by(emu: Emulator, op: Operator) -> None:
    bad_service(emu, labels={"endpointslice.kubernetes.io/managed-by": "someone-else"})
    bad_pod(emu)


@case(
    "service label",
    "Service label value of 64 characters (API refuses): copied to the slice, so the API "
    "rejects it with 422; Warning FailedToUpdateEndpointSlices",
    NO_SLICES,
    event="FailedToUpdateEndpointSlices",
    via_api=False,
)
async def service_label_value_too_long(emu: Emulator, op: Operator) -> None:
    bad_service(emu, opt_in=False)
    bad_pod(emu)
    await inject_service(
        emu, op, lambda s: s["metadata"].setdefault("labels", {}).update(team="x" * 64)
    )


@case(
    "service name",
    "63-character Service name (the longest the API takes): generateName is cut to 58 "
    "characters by the API, slices are created",
    SLICES,
    addresses=("10.9.0.3",),
)
async def service_name_63_characters(emu: Emulator, op: Operator) -> None:
    name = "s" + "x" * 62
    service(emu, name, selector={"app": BAD})
    # the check looks at Service "bad"; give it the same pod so both are exercised
    bad_service(emu)
    bad_pod(emu, "bad-3", "10.9.0.3")


# -- pods --------------------------------------------------------------------------------------


@case(
    "pod",
    "pod IP `not-an-ip` (API refuses): Warning InvalidInput naming it, pod skipped, not retried",
    SLICES,
    addresses=("10.9.0.2",),
    event="InvalidInput",
    via_api=False,
)
async def pod_ip_not_an_ip(emu: Emulator, op: Operator) -> None:
    bad_service(emu)
    bad_pod(emu)
    bad_pod(emu, "bad-1", "10.9.0.2")
    await inject_pod(emu, op, "bad-0", lambda p: p["status"].update(podIPs=[{"ip": "not-an-ip"}]))


@case(
    "pod",
    "duplicate pod IPs (API refuses): the address is published once",
    SLICES,
    addresses=("10.9.0.1",),
    via_api=False,
)
async def pod_duplicate_ips(emu: Emulator, op: Operator) -> None:
    bad_service(emu)
    bad_pod(emu)
    await inject_pod(
        emu, op, "bad-0", lambda p: p["status"].update(podIPs=[{"ip": "10.9.0.1"}] * 2)
    )


@case(
    "pod",
    "IPv6 pod IP with a zone id `fd00::1%eth0` (API refuses): Warning InvalidInput, skipped",
    SLICES,
    addresses=(),
    event="InvalidInput",
    via_api=False,
)
async def pod_ipv6_zone_id(emu: Emulator, op: Operator) -> None:
    bad_service(emu, ipFamilyPolicy="SingleStack", ipFamilies=["IPv6"], clusterIP="None")
    bad_pod(emu, ip="fd00::1")
    await inject_pod(
        emu,
        op,
        "bad-0",
        lambda p: p["status"].update(podIP="fd00::1%eth0", podIPs=[{"ip": "fd00::1%eth0"}]),
    )


@case(
    "pod",
    "IPv6-only pod behind an IPv4 Service: no IPv4 address, so no endpoint (upstream)",
    SLICES,
    addresses=("10.9.0.2",),
)
async def pod_family_mismatch(emu: Emulator, op: Operator) -> None:
    bad_service(emu)
    bad_pod(emu, ip="fd00::9")
    bad_pod(emu, "bad-1", "10.9.0.2")


@case(
    "pod",
    "IPv4-mapped IPv6 `::ffff:10.9.0.1` (v1.36 refuses it in pods unless StrictIPCIDRValidation "
    "is off; v1.24 accepts it): read as the IPv4 address 10.9.0.1 and published in that "
    "canonical form, as upstream does since 1.33",
    SLICES,
    addresses=("10.9.0.1", "10.9.0.2"),
    via_api=False,
)
async def pod_ipv4_mapped_ipv6(emu: Emulator, op: Operator) -> None:
    bad_service(emu)
    bad_pod(emu)
    bad_pod(emu, "bad-1", "10.9.0.2")
    await eventually(lambda: addresses(emu, BAD) == {"10.9.0.1", "10.9.0.2"})
    await inject_pod(
        emu,
        op,
        "bad-0",
        lambda p: p["status"].update(podIP="::ffff:10.9.0.1", podIPs=[{"ip": "::ffff:10.9.0.1"}]),
    )


@case("pod", "pod without status: no IP yet, left out until it has one", SLICES, addresses=())
async def pod_missing_status(emu: Emulator, op: Operator) -> None:
    bad_service(emu)
    body = pod_body("bad-0", "10.9.0.1", labels={"app": BAD})
    del body["status"]
    emu.store.create(body)


@case(
    "pod",
    "Running pod without podIPs: left out until it has one",
    SLICES,
    addresses=("10.9.0.2",),
)
async def pod_running_without_ips(emu: Emulator, op: Operator) -> None:
    bad_service(emu)
    body = pod_body("bad-0", "10.9.0.1", labels={"app": BAD})
    del body["status"]["podIP"], body["status"]["podIPs"]
    emu.store.create(body)
    bad_pod(emu, "bad-1", "10.9.0.2")


@case(
    "pod",
    "Ready condition `Maybe`: published as not ready (only `True` is ready)",
    SLICES,
    addresses=("10.9.0.1",),
)
async def pod_ready_condition_garbage(emu: Emulator, op: Operator) -> None:
    bad_service(emu)
    body = pod_body("bad-0", "10.9.0.1", labels={"app": BAD})
    body["status"]["conditions"][0]["status"] = "Maybe"
    emu.store.create(body)


@case(
    "pod",
    "pod whose labels are not a map (API refuses): logged and skipped, nothing crashes",
    SLICES,
    addresses=("10.9.0.2",),
    via_api=False,
)
async def pod_labels_not_a_map(emu: Emulator, op: Operator) -> None:
    bad_service(emu)
    bad_pod(emu, "bad-1", "10.9.0.2")
    body = pod_body("bad-0", "10.9.0.1", labels={"app": BAD})
    body["metadata"].update(labels=["app=bad"], uid="u-1", resourceVersion=NEWER)
    assert op.router is not None
    op.router.on_pod("ADDED", body)


@case(
    "pod",
    "pod event without a name (API refuses): logged (`without a name`) and ignored",
    SLICES,
    addresses=("10.9.0.1",),
    log="without a name",
    via_api=False,
)
async def pod_without_name(emu: Emulator, op: Operator) -> None:
    bad_service(emu)
    bad_pod(emu)
    body = pod_body("", "10.9.0.5", labels={"app": BAD})
    assert op.router is not None
    op.router.on_pod("ADDED", body)


@case(
    "pod",
    "pod on a node missing from the cache: published without it, Warning "
    "FailedToUpdateEndpointSlices, retried with backoff until the node appears (upstream)",
    SLICES,
    addresses=("10.9.0.2",),
    event="FailedToUpdateEndpointSlices",
)
async def pod_on_unknown_node(emu: Emulator, op: Operator) -> None:
    bad_service(emu)
    bad_pod(emu, node_name="node-nowhere")
    bad_pod(emu, "bad-1", "10.9.0.2")


async def special_pod_ip(
    emu: Emulator, op: Operator, ip: str, reason: str, *, ipv6: bool = False
) -> None:
    """Pod ``bad-0`` moves to the special address ``ip`` (the API refuses it in a pod, and
    refuses an EndpointSlice holding it): the operator drops that address, names it in a
    Warning InvalidInput and keeps ``bad-1`` published; no slice write is refused."""
    if ipv6:
        bad_service(emu, ipFamilyPolicy="SingleStack", ipFamilies=["IPv6"], clusterIP="None")
    else:
        bad_service(emu)
    first, second = ("fd00::1", "fd00::2") if ipv6 else ("10.9.0.1", "10.9.0.2")
    bad_pod(emu, ip=first)
    bad_pod(emu, "bad-1", second)
    await eventually(lambda: addresses(emu, BAD) == {first, second})
    await inject_pod(emu, op, "bad-0", lambda p: p["status"].update(podIP=ip, podIPs=[{"ip": ip}]))
    await eventually(
        lambda: any(
            repr(ip) in e["message"] and reason in e["message"] for e in events(emu, "InvalidInput")
        )
    )
    assert addresses(emu, BAD) == {second}
    assert events(emu, "FailedToUpdateEndpointSlices") == []


SPECIAL_POD_IPS = (
    ("pod_unspecified_ip", "unspecified address", "0.0.0.0", False),
    ("pod_loopback_ip", "loopback address", "127.0.0.1", False),
    ("pod_link_local_ip", "link-local address", "169.254.1.1", False),
    ("pod_ipv6_link_local_ip", "link-local address", "fe80::1", True),
    ("pod_link_local_multicast_ip", "link-local multicast address", "224.0.0.5", False),
)


def special_pod_ip_case(name: str, reason: str, ip: str, ipv6: bool) -> None:
    async def inject(emu: Emulator, op: Operator) -> None:
        await special_pod_ip(emu, op, ip, reason, ipv6=ipv6)

    inject.__name__ = name
    case(
        "pod",
        f"{'IPv6 ' if ipv6 else ''}{reason} `{ip}` (API refuses, in pods and slices): Warning "
        "InvalidInput naming it, pod skipped, the other pod stays published (no refused write)",
        SLICES,
        addresses=("fd00::2",) if ipv6 else ("10.9.0.2",),
        event="InvalidInput",
        via_api=False,
    )(inject)


for special in SPECIAL_POD_IPS:
    special_pod_ip_case(*special)


# -- nodes and namespaces -------------------------------------------------------------------


@case(
    "node",
    "node with allocatable CPU `lots` (API refuses) under topology Auto: hints not computed, "
    "endpoints still published",
    SLICES,
    addresses=("10.9.0.1",),
    via_api=False,
)
async def node_garbage_cpu(emu: Emulator, op: Operator) -> None:
    bad_service(emu, annotations={"service.kubernetes.io/topology-mode": "Auto"})
    bad_pod(emu)
    node = emu.store.get("nodes", None, "node-a")
    assert node is not None and op.router is not None
    node["status"]["allocatable"]["cpu"] = "lots"
    node["metadata"]["resourceVersion"] = NEWER
    op.router.on_node("MODIFIED", node)


DOOMED = "doomed"


@case(
    "namespace",
    "namespace being deleted: creates refused with NamespaceTerminating; logged at info, not an "
    "error, no Warning Event, no retry",
    NO_SLICES,
    log="is terminating",
    via_api=False,
    namespace=DOOMED,
)
async def namespace_terminating(emu: Emulator, op: Operator) -> None:
    # A finalizer keeps the namespace Terminating; the API then refuses every create in it, so
    # the Service and its pod reach the operator as the watch events it would have seen just
    # before the deletion.
    emu.store.create(
        {
            "apiVersion": "v1",
            "kind": "Namespace",
            "metadata": {"name": DOOMED, "finalizers": ["example.com/hold"]},
        }
    )
    emu.store.delete("namespaces", None, DOOMED)
    assert op.router is not None
    body: JSON = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {
            "name": BAD,
            "namespace": DOOMED,
            "uid": "doomed-service",
            "resourceVersion": NEWER,
            "annotations": {"endpointslice-operator.io/enabled": "true"},
        },
        "spec": {
            "selector": {"app": BAD},
            "ports": [{"name": "http", "port": 80, "targetPort": 8080, "protocol": "TCP"}],
            "clusterIP": "10.96.9.9",
            "ipFamilies": ["IPv4"],
        },
    }
    op.router.on_pod(
        "ADDED",
        {
            **pod_body("bad-0", "10.9.0.1", labels={"app": BAD}, namespace=DOOMED),
            "metadata": {
                "name": "bad-0",
                "namespace": DOOMED,
                "uid": "doomed-pod",
                "resourceVersion": NEWER,
                "labels": {"app": BAD},
            },
        },
    )
    op.router.on_service("ADDED", body)


# -- secondary networks -------------------------------------------------------------------------

NETWORK = "endpointslice-operator.io/network"
NETWORK_STATUS = "k8s.v1.cni.cncf.io/network-status"


def _network_service(emu: Emulator, network: str, **annotations: str) -> None:
    bad_service(emu, selector=None, annotations={SELECTOR: f"app={BAD}", NETWORK: network,
                                                 **annotations})  # fmt: skip


def _attached_pod(emu: Emulator, name: str, ip: str, network_status: str) -> None:
    body = pod_body(name, ip, labels={"app": BAD})
    body["metadata"]["annotations"] = {NETWORK_STATUS: network_status}
    emu.store.create(body)


@case(
    "secondary network",
    "`<prefix>/network` not `<namespace>/<name>` (`a/b/c`): Warning InvalidNetwork, no writes",
    NO_SLICES,
    event="InvalidNetwork",
)
async def network_annotation_malformed(emu: Emulator, op: Operator) -> None:
    _network_service(emu, "a/b/c")
    _attached_pod(emu, "bad-0", "10.9.0.1", '[{"name": "a/b", "ips": ["192.168.9.1"]}]')


@case(
    "secondary network",
    "both `<prefix>/network` and `<prefix>/device-network`: Warning InvalidNetwork, no writes",
    NO_SLICES,
    event="InvalidNetwork",
)
async def network_and_device_network(emu: Emulator, op: Operator) -> None:
    _network_service(emu, f"{NS}/net", **{"endpointslice-operator.io/device-network": "nic"})
    _attached_pod(emu, "bad-0", "10.9.0.1", '[{"name": "net", "ips": ["192.168.9.1"]}]')


def _network_status_case(key: str, text: str, what: str) -> None:
    async def inject(emu: Emulator, op: Operator) -> None:
        _network_service(emu, f"{NS}/net")
        _attached_pod(emu, "bad-0", "10.9.0.1", text)
        _attached_pod(emu, "bad-1", "10.9.0.2", '[{"name": "net", "ips": ["192.168.9.2"]}]')

    inject.__name__ = f"network_status_{key}"
    case(
        "secondary network",
        f"pod network-status {what}: Warning PodsLeftOut naming the pod, the other pod published",
        SLICES,
        addresses=("192.168.9.2",),
        event="PodsLeftOut",
    )(inject)


for _key, _text, _what in (
    ("not_json", "[{", "not JSON"),
    ("not_a_list", '{"name": "net"}', "not a list"),
    ("ips_not_strings", '[{"name": "net", "ips": [1]}]', "`ips` not strings"),
    ("bad_ip", '[{"name": "net", "ips": ["192.168.9.300"]}]', "with an invalid IP"),
):
    _network_status_case(_key, _text, _what)
