"""EndpointSelectors through a real kube-proxy (the CRD is installed before the operator starts,
see conftest.py).

KEP-6116's rule: an EndpointSelector whose controller owner is a Service has its slices
labelled ``kubernetes.io/service-name: <service>``, so kube-proxy routes that Service's
ClusterIP by them, here a selectorless Service the operator is not asked to serve, so the
EndpointSelector's slices are the only ones it has. One owned by no Service carries no such
label: kube-proxy programs nothing for it, even for a Service of the same name.
"""

from __future__ import annotations

import re
import time
from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest

from endpointslice_operator.testing.dataplane_cluster import DataplaneCluster
from endpointslice_operator.testing.kube_proxy_rules import REJECTED
from tests.dataplane.conftest import App

pytestmark = [pytest.mark.dataplane, pytest.mark.usefixtures("proxy_mode")]

GROUP_VERSION = "endpointslice-operator.io/v1alpha1"
SELECTOR_NAME = "endpointslice-operator.io/endpoint-selector-name"
SERVICE_NAME = "kubernetes.io/service-name"
MANAGED_BY = "endpointslice.kubernetes.io/managed-by"
OURS = "endpointslice-operator.io"


class Selectors:
    """The test's EndpointSelectors, deleted when it ends (their slices go with them)."""

    def __init__(self, dc: DataplaneCluster) -> None:
        self.dc = dc
        self.names: list[str] = []

    def path(self, name: str = "") -> str:
        path = f"/apis/{GROUP_VERSION}/namespaces/{self.dc.namespace}/endpointselectors"
        return f"{path}/{name}" if name else path

    def create(
        self, name: str, match_labels: dict[str, str], tiers: list[str], *, owner: Any = None
    ) -> None:
        metadata: dict[str, Any] = {"name": name}
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
        body = {
            "apiVersion": GROUP_VERSION,
            "kind": "EndpointSelector",
            "metadata": metadata,
            "spec": {
                "selector": {
                    "matchLabels": match_labels,
                    "matchExpressions": [{"key": "tier", "operator": "In", "values": tiers}],
                },
                # The container port's name, resolved per pod as a Service's targetPort is.
                "ports": [{"name": "http", "port": "http", "protocol": "TCP"}],
            },
        }
        self.dc.call("POST", self.path(), body)
        self.names.append(name)

    def slices(self, name: str) -> list[dict[str, Any]]:
        path = self.dc.ns_path("endpointslices")
        query = f"?labelSelector={SELECTOR_NAME}={name},{MANAGED_BY}={OURS}"
        return list(self.dc.call("GET", path + query)["items"])

    def cleanup(self) -> None:
        for name in self.names:
            self.dc.call("DELETE", self.path(name), ok=(404,))


@pytest.fixture
def selectors(dc: DataplaneCluster) -> Iterator[Selectors]:
    made = Selectors(dc)
    try:
        yield made
    finally:
        made.cleanup()


def tiered_pod(app: App, suffix: str, tier: str, *, ready: bool = True) -> str:
    name = f"{app.name}-{suffix}"
    app.pods.append(name)
    app.dc.add_pod(name, {**app.labels, "tier": tier}, node="node-a", ready=ready)
    return name


def in_rules(dc: DataplaneCluster, ip: str) -> bool:
    """Whether any of kube-proxy's rules names the address (as a source or a destination): in
    iptables-save's ``10.0.0.1/32`` or ``10.0.0.1:8080``, nft's JSON strings ``"10.0.0.1"`` or its
    chain names ``...__10.0.0.1/8080``."""
    return re.search(rf"(?<![0-9.]){re.escape(ip)}[:/\"]", dc.net.ruleset()) is not None


def wait_slices(selectors: Selectors, name: str, ips: tuple[str, ...], timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while True:
        slices = selectors.slices(name)
        found = tuple(sorted(e["addresses"][0] for s in slices for e in s.get("endpoints") or []))
        if found == ips:
            return
        assert time.monotonic() < deadline, (name, found, ips)
        time.sleep(0.2)


def test_an_endpoint_selector_owned_by_a_service_is_routed_by_kube_proxy(
    dc: DataplaneCluster, app: App, selectors: Selectors
) -> None:
    a, b = tiered_pod(app, "a", "web"), tiered_pod(app, "b", "web")
    slow = tiered_pod(app, "c", "web", ready=False)
    other = tiered_pod(app, "d", "db")  # has app=<name> but not the selected tier
    # Selectorless and not opted in: nothing writes its slices but the EndpointSelector's.
    owner_key = dc.service(f"{app.name}-svc")
    app.services.append(owner_key)
    owner = dc.call("GET", dc.ns_path("services", f"{app.name}-svc"))
    selectors.create(f"{app.name}-sel", app.labels, ["web"], owner=owner)

    dc.wait_rules({owner_key: app.ips(a, b)})
    (slice_,) = dc.slices(owner_key)
    assert slice_["metadata"]["labels"][SELECTOR_NAME] == f"{app.name}-sel"
    assert slice_["metadata"]["labels"][MANAGED_BY] == OURS
    assert dc.ips(slow) == tuple(
        e["addresses"][0] for e in slice_["endpoints"] if not e["conditions"]["ready"]
    )
    assert set(dc.requests(owner_key, 40)) == {a, b}

    # Readiness flips move the ClusterIP's backends, and the unselected pod never joins.
    dc.set_ready(slow, True)
    dc.wait_rules({owner_key: app.ips(a, b, slow)})
    assert set(dc.requests(owner_key, 60)) == {a, b, slow}
    dc.set_ready(a, False)
    dc.wait_rules({owner_key: app.ips(b, slow)})
    assert set(dc.requests(owner_key, 40)) == {b, slow}
    assert in_rules(dc, app.ips(b)[0])
    assert not in_rules(dc, app.ips(other)[0])


def test_an_endpoint_selector_owned_by_no_service_is_ignored_by_kube_proxy(
    dc: DataplaneCluster, app: App, selectors: Selectors
) -> None:
    loose = tiered_pod(app, "x", "db")
    a = tiered_pod(app, "a", "web")
    # A Service with the EndpointSelector's very name, which does not own it.
    namesake_key = dc.service(f"{app.name}-free")
    app.services.append(namesake_key)
    selectors.create(f"{app.name}-free", app.labels, ["db"])
    wait_slices(selectors, f"{app.name}-free", app.ips(loose))
    (free,) = selectors.slices(f"{app.name}-free")
    assert SERVICE_NAME not in free["metadata"]["labels"], free["metadata"]["labels"]

    # Then one owned by a Service: once kube-proxy programs it, it has seen the free slice too.
    owner_key = dc.service(f"{app.name}-svc")
    app.services.append(owner_key)
    owner = dc.call("GET", dc.ns_path("services", f"{app.name}-svc"))
    selectors.create(f"{app.name}-sel", app.labels, ["web"], owner=owner)
    dc.wait_rules({owner_key: app.ips(a)})

    assert dc.net.rules(namesake_key) == REJECTED  # a Service without endpoints
    assert in_rules(dc, app.ips(a)[0])
    assert not in_rules(dc, app.ips(loose)[0])  # no rule sends anything there
    assert dc.requests(namesake_key, 5, timeout=5) == Counter({"ERR:refused": 5})
