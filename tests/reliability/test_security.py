"""Security: least privilege as the API server would evaluate it, a locked-down container, no
object data on the HTTP endpoints, and foreign EndpointSlices never written."""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from endpointslice_operator.testing import Emulator, run_emulator
from tests.e2e.harness import (
    NS,
    addresses,
    cluster,
    eventually,
    pod,
    running_operator,
    service,
    set_ready,
    settle,
)
from tests.reliability.invariants import LABEL_MANAGED_BY, LABEL_SERVICE_NAME, foreign_writes
from tests.ship.conftest import rendered
from tests.ship.values import container, one

# -- RBAC, evaluated like the API server's RBAC authorizer -------------------------------------

VERBS = ("get", "list", "watch", "create", "update", "patch", "delete", "deletecollection")
RESOURCES = (
    ("", "pods"),
    ("", "services"),
    ("", "nodes"),
    ("", "endpoints"),
    ("", "events"),
    ("", "secrets"),
    ("", "configmaps"),
    ("", "serviceaccounts"),
    ("", "namespaces"),
    ("discovery.k8s.io", "endpointslices"),
    ("events.k8s.io", "events"),
    ("coordination.k8s.io", "leases"),
    ("rbac.authorization.k8s.io", "clusterroles"),
    ("apps", "deployments"),
)
CLUSTER_SCOPED = {"nodes", "namespaces", "clusterroles"}
READ = {"get", "list", "watch"}
LEASE = "endpointslice-operator"


def allowed(
    objects: list[dict[str, Any]],
    verb: str,
    group: str,
    resource: str,
    namespace: str,
    name: str = "",
) -> bool:
    """Whether the chart's ServiceAccount may do this, following its bindings to their roles.

    ``namespace=""`` asks about a cluster-scoped resource, which only ClusterRoleBindings grant.
    """
    account = one(objects, "ServiceAccount")["metadata"]
    subject = {"kind": "ServiceAccount", "name": account["name"], "namespace": account["namespace"]}
    roles = {
        (o["kind"], o["metadata"].get("namespace"), o["metadata"]["name"]): o
        for o in objects
        if o["kind"] in {"Role", "ClusterRole"}
    }
    for binding in objects:
        if binding["kind"] not in {"RoleBinding", "ClusterRoleBinding"}:
            continue
        if subject not in binding.get("subjects", []):
            continue
        bound_ns = binding["metadata"].get("namespace")  # None: cluster-wide
        if bound_ns is not None and (not namespace or bound_ns != namespace):
            continue
        ref = binding["roleRef"]
        role = roles.get((ref["kind"], bound_ns if ref["kind"] == "Role" else None, ref["name"]))
        for rule in (role or {}).get("rules", []):
            if (
                verb in rule.get("verbs", [])
                and group in rule.get("apiGroups", [])
                and resource in rule.get("resources", [])
                and (not rule.get("resourceNames") or name in rule["resourceNames"])
            ):
                return True
    return False


EXPECTED = {
    ("", "pods"): READ,
    ("", "services"): READ,
    ("", "nodes"): READ,
    ("", "endpoints"): READ,
    ("discovery.k8s.io", "endpointslices"): READ | {"create", "update", "patch", "delete"},
    ("", "events"): {"create", "patch"},
    ("events.k8s.io", "events"): {"create", "patch"},
}
#: With ``writeEndpoints`` (or ``endpoints.write``), Endpoints are written too.
WRITING_ENDPOINTS = {**EXPECTED, ("", "endpoints"): READ | {"create", "update", "delete"}}


@pytest.mark.parametrize("value_set", ["defaults", "namespaced", "everything", "write-endpoints"])
def test_rbac_grants_exactly_what_the_operator_needs(value_set: str) -> None:
    objects = rendered(value_set)
    grants = WRITING_ENDPOINTS if value_set == "write-endpoints" else EXPECTED
    for verb, (group, resource) in itertools.product(VERBS, RESOURCES):
        if resource == "leases":
            continue
        namespace = "" if resource in CLUSTER_SCOPED else "team-a"
        expected = verb in grants.get((group, resource), set())
        assert allowed(objects, verb, group, resource, namespace, "x") == expected, (
            verb,
            group,
            resource,
        )
    for verb, (group, resource) in itertools.product(VERBS, RESOURCES):
        # nothing anywhere on secrets, and no writes outside slices, events and the Lease
        assert not (
            resource == "secrets" and allowed(objects, verb, group, resource, "kube-system")
        )


def test_the_lease_is_the_only_writable_lease() -> None:
    objects = rendered("defaults")
    lease_ns = "operators"  # the release namespace the ship tests render into
    assert allowed(objects, "update", "coordination.k8s.io", "leases", lease_ns, LEASE)
    assert allowed(objects, "get", "coordination.k8s.io", "leases", lease_ns, LEASE)
    assert allowed(objects, "create", "coordination.k8s.io", "leases", lease_ns, "")
    for verb in ("update", "patch", "delete", "get"):
        assert not allowed(objects, verb, "coordination.k8s.io", "leases", lease_ns, "other")
        assert not allowed(objects, verb, "coordination.k8s.io", "leases", "kube-system", LEASE)
    assert not allowed(objects, "delete", "coordination.k8s.io", "leases", lease_ns, LEASE)


@pytest.mark.parametrize("value_set", ["defaults", "everything"])
def test_container_runs_non_root_with_a_read_only_root(value_set: str) -> None:
    objects = rendered(value_set)
    pod_spec = one(objects, "Deployment")["spec"]["template"]["spec"]
    context = container(objects)["securityContext"]
    assert pod_spec["securityContext"]["runAsNonRoot"] is True
    assert context["runAsNonRoot"] is True and context["runAsUser"] != 0
    assert context["readOnlyRootFilesystem"] is True
    assert context["allowPrivilegeEscalation"] is False
    assert context["capabilities"]["drop"] == ["ALL"]
    assert "add" not in context["capabilities"]


# -- the HTTP endpoints expose counts only ---------------------------------------------------

SECRET_MARKERS = ("zebra-payroll", "quokka-team", "10.77.66.55", "fd00::7777", "wombat-node")


async def test_metrics_and_health_expose_no_object_data() -> None:
    async with run_emulator() as emu:
        cluster(emu)
        from tests.e2e.harness import node

        node(emu, "wombat-node", "zone-a")
        service(
            emu,
            "zebra-payroll",
            selector={"app": "quokka-team"},
            labels={"owner": "quokka-team"},
            ipFamilyPolicy="RequireDualStack",
            ipFamilies=["IPv4", "IPv6"],
        )
        pod(
            emu,
            "quokka-team-0",
            ["10.77.66.55", "fd00::7777"],
            labels={"app": "quokka-team"},
            node_name="wombat-node",
        )
        async with running_operator(emu, serve_health=True) as op:
            await eventually(
                lambda: addresses(emu, "zebra-payroll") == {"10.77.66.55", "fd00::7777"}
            )
            set_ready(emu, "quokka-team-0", False)
            await settle(op)
            assert op.health is not None
            bodies = []
            async with aiohttp.ClientSession() as session:
                for path in ("/metrics", "/healthz", "/readyz", "/", "/metrics?name=zebra-payroll"):
                    async with session.get(op.health.url + path) as response:
                        bodies.append(await response.text())
        exposed = "\n".join(bodies)
        assert "endpoint_slice_controller_syncs" in exposed  # counts are there
        for marker in (*SECRET_MARKERS, NS, "quokka"):
            assert marker not in exposed, marker


# -- foreign slices: never updated, never deleted -------------------------------------------


def foreign_slice(
    emu: Emulator,
    name: str,
    labels: dict[str, str],
    *,
    namespace: str = NS,
    owner: dict[str, Any] | None = None,
) -> tuple[tuple[str, str], str]:
    metadata: dict[str, Any] = {"name": name, "namespace": namespace, "labels": labels}
    if owner is not None:
        metadata["ownerReferences"] = [
            {
                "apiVersion": "v1",
                "kind": "Service",
                "name": owner["metadata"]["name"],
                "uid": owner["metadata"]["uid"],
                "controller": True,
            }
        ]
    created = emu.store.create(
        {
            "apiVersion": "discovery.k8s.io/v1",
            "kind": "EndpointSlice",
            "metadata": metadata,
            "addressType": "IPv4",
            "endpoints": [{"addresses": ["10.66.0.1"], "conditions": {"ready": True}}],
            "ports": [{"name": "http", "port": 8080, "protocol": "TCP"}],
        }
    )
    return (namespace, name), created["metadata"]["resourceVersion"]


async def test_foreign_slices_are_never_updated_or_deleted(tmp_path: Path) -> None:
    async with run_emulator() as emu:
        cluster(emu)
        web = service(emu, "web", selector={"app": "web"})
        gone = service(emu, "gone", selector={"app": "web"})
        service(emu, "quitter", selector={"app": "web"})
        pod(emu, "web-0", "10.1.0.1")
        foreign: dict[tuple[str, str], str] = {}
        for name, labels, owner in (
            ("other-manager", {LABEL_SERVICE_NAME: "web", LABEL_MANAGED_BY: "someone-else"}, None),
            (
                "upstream",
                {LABEL_SERVICE_NAME: "web", LABEL_MANAGED_BY: "endpointslice-controller.k8s.io"},
                None,
            ),
            ("unmanaged", {LABEL_SERVICE_NAME: "web"}, None),
            (
                "case-twin",
                {LABEL_SERVICE_NAME: "web", LABEL_MANAGED_BY: "Endpointslice-Operator.io"},
                None,
            ),
            (
                "owned-by-web",
                {LABEL_SERVICE_NAME: "web", LABEL_MANAGED_BY: "someone-else"},
                web,
            ),
            ("quitter-other", {LABEL_SERVICE_NAME: "quitter", LABEL_MANAGED_BY: "x.io"}, None),
            ("gone-other", {LABEL_SERVICE_NAME: "gone", LABEL_MANAGED_BY: "x.io"}, None),
            ("web-abcde", {LABEL_SERVICE_NAME: "web", LABEL_MANAGED_BY: "x.io"}, None),
        ):
            key, version = foreign_slice(emu, name, labels, owner=owner)
            foreign[key] = version
        async with running_operator(emu) as op:
            await eventually(lambda: addresses(emu, "web") == {"10.1.0.1"})
            await settle(op)
            # Everything that makes the operator write or clean up for these Services:
            pod(emu, "web-1", "10.1.0.2")
            set_ready(emu, "web-0", False)
            quitter = emu.store.get("services", NS, "quitter")
            assert quitter is not None
            quitter["metadata"]["annotations"]["endpointslice-operator.io/enabled"] = "false"
            emu.store.update(quitter)
            emu.store.delete("services", NS, gone["metadata"]["name"])
            await eventually(lambda: addresses(emu, "web") == {"10.1.0.1", "10.1.0.2"})
            await settle(op)
            await emu.wait_idle()
        # "owned-by-web" is garbage-collected only when web goes; web stays, so all are intact
        assert foreign_writes(emu, foreign) == []


async def test_a_slice_whose_managed_by_is_flipped_away_is_left_alone_and_replaced() -> None:
    async with run_emulator() as emu:
        cluster(emu)
        service(emu, "web", selector={"app": "web"})
        pod(emu, "web-0", "10.1.0.1")
        async with running_operator(emu) as op:
            await eventually(lambda: addresses(emu, "web") == {"10.1.0.1"})
            await settle(op)
            ours = next(
                s
                for s in emu.store.list("endpointslices", NS)
                if s["metadata"]["labels"].get(LABEL_MANAGED_BY) == "endpointslice-operator.io"
            )
            ours["metadata"]["labels"][LABEL_MANAGED_BY] = "hijacked.example.com"
            emu.requests.clear()  # our own writes to it, from before the flip, are not at issue
            flipped = emu.store.update(ours)
            foreign = {(NS, flipped["metadata"]["name"]): flipped["metadata"]["resourceVersion"]}
            # the Service gets a slice of ours again, and keeps following its pods
            await eventually(lambda: addresses(emu, "web") == {"10.1.0.1"})
            pod(emu, "web-1", "10.1.0.2")
            await eventually(lambda: addresses(emu, "web") == {"10.1.0.1", "10.1.0.2"})
            await settle(op)
        assert foreign_writes(emu, foreign) == []


async def test_a_slice_of_ours_relabelled_to_another_service_does_not_freeze_either() -> None:
    async with run_emulator() as emu:
        cluster(emu)
        service(emu, "web", selector={"app": "web"})
        service(emu, "api", selector={"app": "api"})
        pod(emu, "web-0", "10.1.0.1")
        pod(emu, "api-0", "10.1.0.9", labels={"app": "api"})
        async with running_operator(emu) as op:
            await eventually(lambda: addresses(emu, "web") == {"10.1.0.1"})
            await eventually(lambda: addresses(emu, "api") == {"10.1.0.9"})
            await settle(op)
            ours = next(
                s
                for s in emu.store.list("endpointslices", NS)
                if s["metadata"]["labels"].get(LABEL_SERVICE_NAME) == "web"
            )
            ours["metadata"]["labels"][LABEL_SERVICE_NAME] = "api"
            emu.store.update(ours)
            # web gets its slice back, api drops the stray one, and both keep following pods
            pod(emu, "web-1", "10.1.0.2")
            pod(emu, "api-1", "10.1.0.8", labels={"app": "api"})
            await eventually(lambda: addresses(emu, "web") == {"10.1.0.1", "10.1.0.2"})
            await eventually(lambda: addresses(emu, "api") == {"10.1.0.8", "10.1.0.9"})
            await settle(op)
