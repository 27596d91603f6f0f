"""Secondary networks end to end on the emulator: Multus network-status and DRA device status."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from endpointslice_operator.controller.watch.claim_watch import RETRY_MAX
from endpointslice_operator.testing import Emulator, run_emulator
from tests.e2e.harness import (
    NS,
    SELECTOR,
    addresses,
    cluster,
    endpoints,
    events,
    eventually,
    namespace,
    pod_body,
    running_operator,
    service,
    set_ready,
    settle,
    slices,
    writes,
)

NETWORK = "endpointslice-operator.io/network"
DEVICE_NETWORK = "endpointslice-operator.io/device-network"
NETWORK_STATUS = "k8s.v1.cni.cncf.io/network-status"
PROXY_NAME = "service.kubernetes.io/service-proxy-name"


def _status(*entries: tuple[str, list[str]]) -> str:
    return json.dumps(
        [{"name": "kindnet", "interface": "eth0", "ips": ["10.1.0.250"], "default": True}]
        + [
            {"name": name, "interface": f"net{i + 1}", "ips": ips, "mac": "02:00:00:00:00:01"}
            for i, (name, ips) in enumerate(entries)
        ]
    )


def attached_pod(emu: Emulator, name: str, ip: str, status: str | None, **kwargs: Any) -> None:
    body = pod_body(name, ip, **kwargs)
    if status is not None:
        body["metadata"]["annotations"] = {NETWORK_STATUS: status}
    emu.store.create(body)


def set_network_status(emu: Emulator, name: str, status: str) -> None:
    current = emu.store.get("pods", NS, name)
    assert current is not None
    current["metadata"].setdefault("annotations", {})[NETWORK_STATUS] = status
    emu.store.update(current)


def _left_out(op: Any, source: str) -> float | None:
    value: float | None = op.metrics.sample_value(
        "endpointslice_operator_pods_left_out", {"source": source}
    )
    return value


async def test_multus_network_addresses_end_to_end() -> None:
    async with run_emulator() as emu:
        cluster(emu)
        service(
            emu,
            "storage",
            annotations={SELECTOR: "app=web", NETWORK: f"{NS}/storage-net"},
            labels={PROXY_NAME: "none"},
            clusterIP="None",
        )
        service(emu, "web", selector={"app": "web"})  # the cluster network, as before
        attached_pod(emu, "web-0", "10.1.0.1", _status((f"{NS}/storage-net", ["192.168.7.1"])))
        # A bare name in network-status is in the pod's namespace, as Multus has it.
        attached_pod(emu, "web-1", "10.1.0.2", _status(("storage-net", ["192.168.7.2"])))
        attached_pod(emu, "web-2", "10.1.0.3", _status(("other/storage-net", ["192.168.9.3"])))
        attached_pod(emu, "web-3", "10.1.0.4", None)
        async with running_operator(emu) as op:
            await eventually(lambda: addresses(emu, "storage") == {"192.168.7.1", "192.168.7.2"})
            await eventually(
                lambda: addresses(emu, "web") == {"10.1.0.1", "10.1.0.2", "10.1.0.3", "10.1.0.4"}
            )
            await settle(op)
            (left_out,) = events(emu, "PodsLeftOut")
            assert left_out["involvedObject"]["name"] == "storage"
            assert left_out["type"] == "Warning"
            assert f"{NS}/web-2 (not attached to network {NS}/storage-net)" in left_out["message"]
            assert f"{NS}/web-3 (no {NETWORK_STATUS} annotation)" in left_out["message"]
            assert _left_out(op, "network") == 2
            (written,) = [s for s in slices(emu, "storage") if s["addressType"] == "IPv4"]
            assert written["ports"] == [{"name": "http", "port": 8080, "protocol": "TCP"}]
            refs = {ep["addresses"][0]: ep["targetRef"]["name"] for ep in written["endpoints"]}
            assert refs == {"192.168.7.1": "web-0", "192.168.7.2": "web-1"}

            # Only the annotation changes: the pod is synced again.
            before = writes(emu)
            set_network_status(emu, "web-1", _status((f"{NS}/storage-net", ["192.168.7.22"])))
            await eventually(lambda: addresses(emu, "storage") == {"192.168.7.1", "192.168.7.22"})
            set_network_status(emu, "web-3", _status((f"{NS}/storage-net", ["192.168.7.4"])))
            await eventually(lambda: "192.168.7.4" in addresses(emu, "storage"))
            await settle(op)
            assert writes(emu)["update"] - before["update"] >= 2
            assert _left_out(op, "network") == 1
            assert addresses(emu, "web") == {"10.1.0.1", "10.1.0.2", "10.1.0.3", "10.1.0.4"}

            # Readiness as for the cluster network.
            set_ready(emu, "web-0", False)
            await eventually(
                lambda: (
                    {
                        ep["addresses"][0]: ep["conditions"]["ready"]
                        for ep in endpoints(emu, "storage")
                    }["192.168.7.1"]
                    is False
                )
            )

            # A malformed annotation leaves the pod out; nothing crashes, the rest goes on.
            set_network_status(emu, "web-1", "[{not json")
            await eventually(lambda: addresses(emu, "storage") == {"192.168.7.1", "192.168.7.4"})
            await settle(op)
            assert _left_out(op, "network") == 2
            assert any(
                e["message"].startswith("2 selected pod(s)")
                and f"{NS}/web-1 (malformed {NETWORK_STATUS} annotation: not JSON" in e["message"]
                for e in events(emu, "PodsLeftOut")
            )

            # Without the annotation the Service is on the cluster network again.
            current = emu.store.get("services", NS, "storage")
            assert current is not None
            del current["metadata"]["annotations"][NETWORK]
            emu.store.update(current)
            await eventually(
                lambda: (
                    addresses(emu, "storage") == {"10.1.0.1", "10.1.0.2", "10.1.0.3", "10.1.0.4"}
                )
            )
            await settle(op)
            assert _left_out(op, "network") == 0


async def test_multus_several_interfaces_and_dual_stack() -> None:
    async with run_emulator() as emu:
        cluster(emu)
        service(
            emu,
            "dual",
            annotations={SELECTOR: "app=web", NETWORK: f"{NS}/storage-net"},
            ipFamilies=["IPv4", "IPv6"],
            ipFamilyPolicy="PreferDualStack",
            clusterIP="None",
        )
        status = _status(
            (f"{NS}/storage-net", ["192.168.7.1", "fd00:7::1"]),
            (f"{NS}/storage-net", ["192.168.8.1"]),
        )
        attached_pod(emu, "web-0", "10.1.0.1", status)
        async with running_operator(emu) as op:
            await eventually(lambda: len(slices(emu, "dual")) == 2)
            await settle(op)
            by_family = {s["addressType"]: s["endpoints"] for s in slices(emu, "dual")}
            assert [ep["addresses"] for ep in by_family["IPv4"]] == [["192.168.7.1", "192.168.8.1"]]
            assert [ep["addresses"] for ep in by_family["IPv6"]] == [["fd00:7::1"]]
            assert events(emu, "PodsLeftOut") == []


async def test_an_invalid_network_annotation_is_reported_and_writes_nothing() -> None:
    async with run_emulator() as emu:
        cluster(emu)
        service(
            emu,
            "bad",
            annotations={SELECTOR: "app=web", NETWORK: "a/b/c"},
        )
        service(
            emu,
            "both",
            annotations={SELECTOR: "app=web", NETWORK: "net", DEVICE_NETWORK: "nic"},
        )
        service(emu, "good", annotations={SELECTOR: "app=web"})
        attached_pod(emu, "web-0", "10.1.0.1", _status((f"{NS}/net", ["192.168.7.1"])))
        async with running_operator(emu) as op:
            await eventually(lambda: addresses(emu, "good") == {"10.1.0.1"})
            await settle(op)
            assert slices(emu, "bad") == [] and slices(emu, "both") == []
            reported = {
                e["involvedObject"]["name"]: e["message"] for e in events(emu, "InvalidNetwork")
            }
            assert "is not <namespace>/<name>" in reported["bad"]
            assert "exclude each other" in reported["both"]
            # No device network in use: the operator never asked for ResourceClaims.
            assert emu.requests.count(resource="resourceclaims") == 0


# -- DRA ----------------------------------------------------------------------------------------


def claimed_pod(emu: Emulator, name: str, ip: str, claim: str | None, *, ns: str = NS) -> None:
    body = pod_body(name, ip, namespace=ns)
    body["spec"]["resourceClaims"] = [{"name": "nic", "resourceClaimTemplateName": "nic"}]
    if claim is not None:
        body["status"]["resourceClaimStatuses"] = [{"name": "nic", "resourceClaimName": claim}]
    emu.store.create(body)


def resource_claim(emu: Emulator, name: str, *, ns: str = NS) -> None:
    emu.store.create(
        {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "ResourceClaim",
            "metadata": {"name": name, "namespace": ns},
            "spec": {
                "devices": {
                    "requests": [{"name": "vf", "exactly": {"deviceClassName": "nic.example.com"}}]
                }
            },
        }
    )


def allocate(
    emu: Emulator, name: str, ips: list[str], *, request: str = "vf", ns: str = NS
) -> None:
    current = emu.store.get("resourceclaims.resource.k8s.io", ns, name)
    assert current is not None
    device = {"driver": "nic.example.com", "pool": "node-a", "device": f"{name}-dev"}
    current["status"] = {
        "allocation": {"devices": {"results": [{**device, "request": request}]}},
        "devices": [{**device, "networkData": {"interfaceName": "net1", "ips": ips}}],
    }
    emu.store.update(current, subresource="status")


async def test_dra_device_network_addresses_end_to_end() -> None:
    async with run_emulator() as emu:
        cluster(emu)
        resource_claim(emu, "web-0-nic")
        resource_claim(emu, "web-1-nic")
        allocate(emu, "web-0-nic", ["192.168.50.1/24"])
        claimed_pod(emu, "web-0", "10.1.0.1", "web-0-nic")
        claimed_pod(emu, "web-1", "10.1.0.2", "web-1-nic")
        claimed_pod(emu, "web-2", "10.1.0.3", None)
        service(emu, "web", selector={"app": "web"})
        async with running_operator(emu) as op:
            await eventually(lambda: addresses(emu, "web") == {"10.1.0.1", "10.1.0.2", "10.1.0.3"})
            await settle(op)
            # Nothing asked for ResourceClaims until a Service uses a device network.
            assert emu.requests.count(resource="resourceclaims") == 0
            service(emu, "fast", annotations={SELECTOR: "app=web", DEVICE_NETWORK: "nic/vf"})
            await eventually(lambda: addresses(emu, "fast") == {"192.168.50.1"})
            await settle(op)
            assert emu.requests.count(resource="resourceclaims", verb="list") >= 1
            assert _left_out(op, "device-network") == 2
            (left_out,) = events(emu, "PodsLeftOut")
            assert "ResourceClaim web-1-nic is not allocated yet" in left_out["message"]
            assert "no ResourceClaim for pod claim 'nic' yet" in left_out["message"]

            # The claim is allocated later: the watch brings it in.
            allocate(emu, "web-1-nic", ["192.168.50.2/24", "fd00:50::2/64"])
            await eventually(lambda: addresses(emu, "fast") == {"192.168.50.1", "192.168.50.2"})
            # An address change on the device.
            allocate(emu, "web-0-nic", ["192.168.50.11/24"])
            await eventually(lambda: addresses(emu, "fast") == {"192.168.50.11", "192.168.50.2"})
            # Another request of the claim has no such device.
            other = service(
                emu, "other", annotations={SELECTOR: "app=web", DEVICE_NETWORK: "nic/slow"}
            )
            assert other["metadata"]["name"] == "other"
            await eventually(lambda: len(slices(emu, "other")) == 1)
            await settle(op)
            assert endpoints(emu, "other") == []
            assert addresses(emu, "web") == {"10.1.0.1", "10.1.0.2", "10.1.0.3"}


async def test_dra_without_rbac_for_claims_is_reported() -> None:
    async with run_emulator() as emu:
        cluster(emu)
        # The API server forbids listing ResourceClaims (the chart's rbac.resourceClaims off).
        emu.faults.fail_codes = (403,)
        emu.faults.fault_verbs = {"list", "watch"}
        emu.faults.fault_resources = {"resourceclaims.resource.k8s.io"}
        emu.faults.fail_rate = 1.0
        claimed_pod(emu, "web-0", "10.1.0.1", "web-0-nic")
        service(emu, "fast", annotations={SELECTOR: "app=web", DEVICE_NETWORK: "nic"})
        service(emu, "web", annotations={SELECTOR: "app=web"})
        async with running_operator(emu) as op:
            await eventually(lambda: addresses(emu, "web") == {"10.1.0.1"})
            await eventually(lambda: events(emu, "InvalidNetwork"))
            await settle(op)
            (reported,) = events(emu, "InvalidNetwork")
            assert reported["involvedObject"]["name"] == "fast"
            assert "rbac.resourceClaims: true" in reported["message"]
            assert slices(emu, "fast") == []


async def test_claims_deleted_while_the_watch_was_down_are_dropped_on_relisting() -> None:
    async with run_emulator() as emu:
        cluster(emu)
        resource_claim(emu, "web-0-nic")
        allocate(emu, "web-0-nic", ["192.168.50.1/24"])
        claimed_pod(emu, "web-0", "10.1.0.1", "web-0-nic")
        service(emu, "fast", annotations={SELECTOR: "app=web", DEVICE_NETWORK: "nic"})
        async with running_operator(emu) as op:
            await eventually(lambda: addresses(emu, "fast") == {"192.168.50.1"})
            # Every claim watch is cut and cannot resume: the operator lists again.
            emu.faults.fault_resources = {"resourceclaims.resource.k8s.io"}
            emu.faults.watch_drop_seconds = 0.2
            emu.faults.gone_rate = 1.0
            listed = emu.requests.count(resource="resourceclaims", verb="list")
            await eventually(
                lambda: emu.requests.count(resource="resourceclaims", verb="list") > listed
            )
            emu.store.delete("resourceclaims.resource.k8s.io", NS, "web-0-nic")
            await eventually(lambda: addresses(emu, "fast") == set(), timeout=30)
            await settle(op)
            assert ("e2e", "web-0-nic") not in op.indexes.claims.claims


def _claim_checks(emu: Emulator, code: int) -> int:
    """Listings of ResourceClaims answered with ``code`` (the access check lists one)."""
    return emu.requests.count(resource="resourceclaims", verb="list", code=code)


def _group_lookups(emu: Emulator) -> int:
    return sum(1 for r in emu.requests if r.path == "/apis/resource.k8s.io")


@pytest.mark.looptime
async def test_claims_are_checked_again_with_a_backoff_until_rbac_allows_them() -> None:
    async with run_emulator() as emu:
        cluster(emu)
        resource_claim(emu, "web-0-nic")
        allocate(emu, "web-0-nic", ["192.168.50.1/24"])
        claimed_pod(emu, "web-0", "10.1.0.1", "web-0-nic")
        # Installed with rbac.resourceClaims off: listing ResourceClaims is forbidden.
        emu.faults.fail_codes = (403,)
        emu.faults.fault_verbs = {"list", "watch"}
        emu.faults.fault_resources = {"resourceclaims.resource.k8s.io"}
        emu.faults.fail_rate = 1.0
        service(emu, "fast", annotations={SELECTOR: "app=web", DEVICE_NETWORK: "nic"})
        async with running_operator(emu) as op:
            await eventually(lambda: events(emu, "InvalidNetwork"))
            loop = asyncio.get_running_loop()
            first = _claim_checks(emu, 403)
            # Checked again after 5, 10, 20 ... s, at most 300 s apart: at +5, 15, 35, 75, 155,
            # 315, 615, 915, 1215 and 1515 s (uncapped: 8 by then; every 5 s: 340).
            await asyncio.sleep(1700)
            assert _claim_checks(emu, 403) - first == 10
            assert _claim_checks(emu, 200) == 0
            # One Warning Event for the whole time, not one per check.
            (reported,) = events(emu, "InvalidNetwork")
            assert "rbac.resourceClaims: true" in reported["message"]
            assert reported.get("count", 1) == 1
            assert slices(emu, "fast") == []

            # helm upgrade --set rbac.resourceClaims=true: no restart needed.
            emu.faults.fail_rate = 0.0
            granted = loop.time()
            await eventually(
                lambda: addresses(emu, "fast") == {"192.168.50.1"}, timeout=RETRY_MAX + 5
            )
            assert loop.time() - granted <= RETRY_MAX + 1
            await settle(op)
            assert op.indexes.claims.unavailable is None
            assert len(events(emu, "InvalidNetwork")) == 1
            # The watch runs: a claim change arrives as usual.
            allocate(emu, "web-0-nic", ["192.168.50.9/24"])
            await eventually(lambda: addresses(emu, "fast") == {"192.168.50.9"})


@pytest.mark.looptime
async def test_a_resource_api_served_later_is_found_without_a_restart() -> None:
    async with run_emulator() as emu:
        cluster(emu)
        # A cluster before the upgrade that brings resource.k8s.io (or before a CRD-based DRA).
        emu.store.registry.unserved.add("resource.k8s.io")
        resource_claim(emu, "web-0-nic")
        allocate(emu, "web-0-nic", ["192.168.50.1/24"])
        claimed_pod(emu, "web-0", "10.1.0.1", "web-0-nic")
        service(emu, "fast", annotations={SELECTOR: "app=web", DEVICE_NETWORK: "nic"})
        service(emu, "web", annotations={SELECTOR: "app=web"})
        async with running_operator(emu) as op:
            await eventually(lambda: events(emu, "InvalidNetwork"))
            await eventually(lambda: addresses(emu, "web") == {"10.1.0.1"})
            first = _group_lookups(emu)
            await asyncio.sleep(400)  # +5, 15, 35, 75, 155, 315 s
            assert _group_lookups(emu) - first == 6
            (reported,) = events(emu, "InvalidNetwork")
            assert "serves no resource.k8s.io version" in reported["message"]
            assert emu.requests.count(resource="resourceclaims") == 0

            emu.store.registry.unserved.discard("resource.k8s.io")
            await eventually(
                lambda: addresses(emu, "fast") == {"192.168.50.1"}, timeout=RETRY_MAX + 5
            )
            await settle(op)
            assert op.indexes.claims.version == "v1"
            assert len(events(emu, "InvalidNetwork")) == 1
            assert addresses(emu, "web") == {"10.1.0.1"}


@pytest.mark.looptime
async def test_each_watched_namespace_prunes_its_own_claims_on_relisting() -> None:
    other = "e2e-other"
    async with run_emulator() as emu:
        cluster(emu)
        namespace(emu, other)
        for ns, ip in ((NS, "192.168.50.1/24"), (other, "192.168.60.1/24")):
            resource_claim(emu, "web-0-nic", ns=ns)
            allocate(emu, "web-0-nic", [ip], ns=ns)
            claimed_pod(emu, "web-0", "10.1.0.1", "web-0-nic", ns=ns)
            service(
                emu,
                "fast",
                annotations={SELECTOR: "app=web", DEVICE_NETWORK: "nic"},
                namespace=ns,
            )
        async with running_operator(emu, namespaces=(NS, other)) as op:
            await eventually(lambda: addresses(emu, "fast") == {"192.168.50.1"})
            await eventually(lambda: addresses(emu, "fast", namespace=other) == {"192.168.60.1"})

            def listings(ns: str) -> int:
                return emu.requests.count(resource="resourceclaims", verb="list", namespace=ns)

            # Every claim watch is cut and refused (410): the operator only lists, one scope
            # per namespace, and no watch sees what happens in between.
            emu.faults.fault_resources = {"resourceclaims.resource.k8s.io"}
            emu.faults.fault_verbs = {"watch"}
            emu.faults.fail_codes = (410,)
            emu.faults.fail_rate = 1.0
            emu.faults.watch_drop_seconds = 0.2
            before = {ns: listings(ns) for ns in (NS, other)}
            await eventually(lambda: all(listings(ns) >= before[ns] + 2 for ns in (NS, other)))
            emu.store.delete("resourceclaims.resource.k8s.io", other, "web-0-nic")
            deleted = listings(other)
            await eventually(lambda: listings(other) > deleted)
            emu.faults.fail_rate = 0.0
            emu.faults.watch_drop_seconds = 0.0
            await eventually(lambda: addresses(emu, "fast", namespace=other) == set())
            await settle(op)
            assert (other, "web-0-nic") not in op.indexes.claims.claims
            # The other namespace's listings keep its claims.
            assert (NS, "web-0-nic") in op.indexes.claims.claims
            assert addresses(emu, "fast") == {"192.168.50.1"}


async def test_the_endpoints_object_of_a_network_service_carries_the_network_addresses() -> None:
    """With Endpoints writing on, a Service on a secondary network gets the same addresses in
    its core/v1 Endpoints as in its slices (not the pods' cluster addresses)."""
    async with run_emulator() as emu:
        cluster(emu)
        service(
            emu,
            "storage",
            annotations={
                SELECTOR: "app=web",
                NETWORK: f"{NS}/storage-net",
                "endpointslice-operator.io/endpoints": "true",
            },
            labels={PROXY_NAME: "none"},
        )
        attached_pod(emu, "web-0", "10.1.0.1", _status((f"{NS}/storage-net", ["192.168.7.1"])))
        attached_pod(emu, "web-1", "10.1.0.2", None)  # left out of both

        def endpoints_ips() -> set[str] | None:
            body = emu.store.get("endpoints", NS, "storage")
            if body is None:
                return None
            return {a["ip"] for s in body.get("subsets") or [] for a in s.get("addresses") or []}

        async with running_operator(emu):
            await eventually(lambda: addresses(emu, "storage") == {"192.168.7.1"})
            await eventually(lambda: endpoints_ips() == {"192.168.7.1"})
            set_network_status(emu, "web-1", _status((f"{NS}/storage-net", ["192.168.7.2"])))
            await eventually(lambda: endpoints_ips() == {"192.168.7.1", "192.168.7.2"})
            assert addresses(emu, "storage") == {"192.168.7.1", "192.168.7.2"}
