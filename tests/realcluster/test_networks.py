"""Secondary networks against a real kube-apiserver: the Multus network source (annotations
work on any version), and the DRA device-network source (KEP-4817's ResourceClaim device
status): on a server that serves ``resource.k8s.io`` (GA since v1.34) the addresses come from
real ResourceClaims; on one that does not (v1.24) the operator reports it instead of failing."""

from __future__ import annotations

import json

import pytest

from tests.realcluster import objects as o
from tests.realcluster.kube import JSON, Kube, eventually
from tests.realcluster.operator_process import OperatorProcess

pytestmark = pytest.mark.realcluster

NETWORK = "endpointslice-operator.io/network"
DEVICE_NETWORK = "endpointslice-operator.io/device-network"
NETWORK_STATUS = "k8s.v1.cni.cncf.io/network-status"
PROXY_NAME = "service.kubernetes.io/service-proxy-name"


def _status(ns: str, *ips: str) -> str:
    return json.dumps(
        [
            {"name": "kindnet", "interface": "eth0", "ips": ["10.1.0.250"], "default": True},
            {"name": f"{ns}/storage-net", "interface": "net1", "ips": list(ips)},
        ]
    )


async def _annotate(kube: Kube, ns: str, name: str, status: str) -> None:
    await kube.patch(
        f"/api/v1/namespaces/{ns}/pods/{name}",
        {"metadata": {"annotations": {NETWORK_STATUS: status}}},
    )


async def test_multus_network_status_addresses(
    kube: Kube, ns: str, operator: OperatorProcess
) -> None:
    await o.service(
        kube,
        ns,
        "storage",
        annotations={o.SELECTOR: "app=web", NETWORK: f"{ns}/storage-net"},
        labels={PROXY_NAME: "none"},
        ipFamilies=["IPv4", "IPv6"],
        ipFamilyPolicy="PreferDualStack",
        clusterIP="None",
    )
    for i in range(3):
        await o.pod(kube, ns, f"web-{i}", f"10.1.0.{i + 1}")
    await _annotate(kube, ns, "web-0", _status(ns, "192.168.7.1"))
    await _annotate(kube, ns, "web-1", _status(ns, "192.168.7.2", "fd00:7::2"))
    # web-2 has no network-status: left out, counted, named in an Event.

    async def published() -> bool:
        slices = await kube.slices(ns, "storage")
        by_family: dict[str, set[str]] = {}
        for s in slices:
            by_family.setdefault(s["addressType"], set()).update(o.addresses([s]))
        assert by_family.get("IPv4") == {"192.168.7.1", "192.168.7.2"}, slices
        # The server took the Service as single-stack or dual-stack; either way IPv6 addresses
        # only ever go to IPv6 slices.
        assert by_family.get("IPv6", {"fd00:7::2"}) == {"fd00:7::2"}, slices
        return True

    await eventually(published)
    service: JSON = await kube.get(f"/api/v1/namespaces/{ns}/services/storage")
    assert service["metadata"]["labels"][PROXY_NAME] == "none"

    async def reported() -> bool:
        # One Event per change of the set of left-out pods (the pods were annotated after
        # they were created); the latest names web-2 alone.
        events = await kube.events(ns, "PodsLeftOut")
        latest = max(
            events, key=lambda e: (e["lastTimestamp"], int(e["metadata"]["resourceVersion"]))
        )
        assert latest["type"] == "Warning"
        assert latest["message"].startswith("1 selected pod(s) left out"), latest["message"]
        assert f"{ns}/web-2 (no {NETWORK_STATUS} annotation)" in latest["message"]
        assert (
            await operator.metric(r'endpointslice_operator_pods_left_out\{source="network"\}') == 1
        )
        return True

    await eventually(reported)

    # Only the annotation changes: the slices follow.
    await _annotate(kube, ns, "web-2", _status(ns, "192.168.7.3"))
    await _annotate(kube, ns, "web-0", _status(ns, "192.168.7.10"))

    async def moved() -> bool:
        slices = [s for s in await kube.slices(ns, "storage") if s["addressType"] == "IPv4"]
        assert o.addresses(slices) == {"192.168.7.10", "192.168.7.2", "192.168.7.3"}, slices
        assert (
            await operator.metric(r'endpointslice_operator_pods_left_out\{source="network"\}') == 0
        )
        return True

    await eventually(moved)

    # A malformed annotation: the pod is left out, and the operator goes on.
    await _annotate(kube, ns, "web-1", "{not json")

    async def dropped() -> bool:
        slices = [s for s in await kube.slices(ns, "storage") if s["addressType"] == "IPv4"]
        assert o.addresses(slices) == {"192.168.7.10", "192.168.7.3"}, slices
        return True

    await eventually(dropped)
    assert operator.log().count("Traceback") == 0


@pytest.mark.k8s_below("1.34")
async def test_device_network_without_resource_k8s_io_is_reported(
    kube: Kube, ns: str, operator: OperatorProcess
) -> None:
    await o.service(kube, ns, "fast", annotations={o.SELECTOR: "app=web", DEVICE_NETWORK: "nic"})
    await o.service(kube, ns, "web", annotations={o.SELECTOR: "app=web"})
    await o.pod(kube, ns, "web-0", "10.1.0.1")

    async def reported() -> bool:
        events = await kube.events(ns, "InvalidNetwork")
        assert any(
            e["involvedObject"]["name"] == "fast" and "resource.k8s.io" in e["message"]
            for e in events
        ), events
        assert o.addresses(await kube.slices(ns, "web")) == {"10.1.0.1"}
        return True

    await eventually(reported)
    assert await kube.slices(ns, "fast") == []


# -- DRA on a server that serves resource.k8s.io ------------------------------------------------

CLAIMS = "/apis/resource.k8s.io/v1/namespaces/{ns}/resourceclaims"


async def _claim(kube: Kube, ns: str, name: str) -> None:
    await kube.create(
        CLAIMS.format(ns=ns),
        {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "ResourceClaim",
            "metadata": {"name": name},
            "spec": {
                "devices": {
                    "requests": [{"name": "vf", "exactly": {"deviceClassName": "nic.example.com"}}]
                }
            },
        },
    )


async def _allocate(kube: Kube, ns: str, name: str, ips: list[str]) -> None:
    """What a DRA driver writes: the allocation, and the device's network data."""
    path = f"{CLAIMS.format(ns=ns)}/{name}"
    current = await kube.get(path)
    device = {"driver": "nic.example.com", "pool": "node-a", "device": f"{name}-dev"}
    current["status"] = {
        "allocation": {"devices": {"results": [{**device, "request": "vf"}]}},
        "devices": [{**device, "networkData": {"interfaceName": "net1", "ips": ips}}],
    }
    await kube.request("PUT", f"{path}/status", current)


async def _claimed_pod(kube: Kube, ns: str, name: str, ip: str, claim: str | None) -> None:
    await o.pod(
        kube, ns, name, ip, resourceClaims=[{"name": "nic", "resourceClaimTemplateName": "nic"}]
    )
    if claim is not None:
        await kube.patch(
            f"/api/v1/namespaces/{ns}/pods/{name}/status",
            {"status": {"resourceClaimStatuses": [{"name": "nic", "resourceClaimName": claim}]}},
        )


@pytest.mark.k8s_min("1.34")
async def test_device_network_addresses_from_real_resource_claims(
    kube: Kube, ns: str, operator: OperatorProcess
) -> None:
    await _claim(kube, ns, "web-0-nic")
    await _claim(kube, ns, "web-1-nic")
    await _allocate(kube, ns, "web-0-nic", ["192.168.50.1/24"])
    await _claimed_pod(kube, ns, "web-0", "10.1.0.1", "web-0-nic")
    await _claimed_pod(kube, ns, "web-1", "10.1.0.2", "web-1-nic")
    await _claimed_pod(kube, ns, "web-2", "10.1.0.3", None)
    await o.service(
        kube,
        ns,
        "fast",
        annotations={o.SELECTOR: "app=web", DEVICE_NETWORK: "nic/vf"},
        labels={PROXY_NAME: "none"},
    )
    await o.service(kube, ns, "web", annotations={o.SELECTOR: "app=web"})

    async def first() -> bool:
        assert o.addresses(await kube.slices(ns, "fast")) == {"192.168.50.1"}
        assert o.addresses(await kube.slices(ns, "web")) == {"10.1.0.1", "10.1.0.2", "10.1.0.3"}
        left_out = [
            e for e in await kube.events(ns, "PodsLeftOut") if e["involvedObject"]["name"] == "fast"
        ]
        assert left_out and "ResourceClaim web-1-nic is not allocated yet" in left_out[0]["message"]
        return True

    await eventually(first, timeout=60)

    # The driver allocates the second claim later, and changes the first device's address.
    await _allocate(kube, ns, "web-1-nic", ["192.168.50.2/24", "fd00:50::2/64"])
    await _allocate(kube, ns, "web-0-nic", ["192.168.50.11/24"])

    async def followed() -> bool:
        assert o.addresses(await kube.slices(ns, "fast")) == {"192.168.50.11", "192.168.50.2"}
        return True

    await eventually(followed, timeout=60)
