"""Traffic by the operator's mirrored slices (``<prefix>/source: endpoints``), through a real
kube-proxy in both modes.

kube-proxy v1.36 does not read ``core/v1`` Endpoints: a selectorless Service whose addresses
are kept in a hand-made Endpoints object is routed only by the slices mirrored from it, so on a
cluster whose kube-controller-manager runs without its mirroring controller (KEP-4974, see
``tests/realcluster/test_without_kcm_endpoints.py``) the operator's mirrored slices are what
carries the traffic. This layer's kube-controller-manager does run that controller, so the
Endpoints object is labelled ``endpointslice.kubernetes.io/skip-mirror: "true"``: it leaves
it alone, the operator mirrors it all the same, and the slices kube-proxy routes by are ours
only, as on such a cluster. The addresses are pod namespaces of the topology with no Pod
object: addresses outside the cluster, as mirroring is for.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest

from endpointslice_operator.testing.dataplane import POD_PORT
from endpointslice_operator.testing.dataplane_cluster import ENABLED, DataplaneCluster
from endpointslice_operator.testing.kube_proxy_rules import REJECTED
from tests.dataplane.conftest import App

pytestmark = [pytest.mark.dataplane, pytest.mark.usefixtures("proxy_mode")]

SOURCE = "endpointslice-operator.io/source"
SKIP_MIRROR = "endpointslice.kubernetes.io/skip-mirror"
MANAGED_BY = "endpointslice.kubernetes.io/managed-by"
OURS = "endpointslice-operator.io"


def subsets(ready: list[str], not_ready: list[str] | None = None) -> list[dict[str, Any]]:
    subset: dict[str, Any] = {
        "addresses": [{"ip": ip} for ip in ready],
        "ports": [{"name": "http", "port": POD_PORT, "protocol": "TCP"}],
    }
    if not_ready:
        subset["notReadyAddresses"] = [{"ip": ip} for ip in not_ready]
    return [subset]


@pytest.fixture
def endpoints(dc: DataplaneCluster, app: App) -> Iterator[str]:
    """The app's Endpoints object's name (deleted when the test ends)."""
    try:
        yield app.name
    finally:
        dc.call("DELETE", dc.ns_path("endpoints", app.name), ok=(404,))


def test_mirrored_slices_carry_the_traffic(dc: DataplaneCluster, app: App, endpoints: str) -> None:
    names = [f"{app.name}-{suffix}" for suffix in ("a", "b", "c")]
    ips = {}
    for name in names:
        app.pods.append(name)  # no Pod object: force_delete removes the namespace
        ips[name] = dc.net.add_pod(name)
    a, b, c = names
    key = dc.service(app.name, annotations={ENABLED: "true", SOURCE: "endpoints"})
    app.services.append(key)
    body = {
        "apiVersion": "v1",
        "kind": "Endpoints",
        "metadata": {"name": endpoints, "labels": {SKIP_MIRROR: "true"}},
        "subsets": subsets([ips[a], ips[b]], [ips[c]]),
    }
    dc.call("POST", dc.ns_path("endpoints"), body)

    dc.wait_rules({key: tuple(sorted([ips[a], ips[b]]))})
    assert {s["metadata"]["labels"][MANAGED_BY] for s in dc.slices(key)} == {OURS}
    assert set(dc.requests(key, 40)) == {a, b}

    # The Endpoints changed by hand: a made not ready, c ready.
    changed = {"subsets": subsets([ips[b], ips[c]], [ips[a]])}
    dc.call("PATCH", dc.ns_path("endpoints", endpoints), changed)
    dc.wait_rules({key: tuple(sorted([ips[b], ips[c]]))})
    assert set(dc.requests(key, 40)) == {b, c}

    # Deleted: the mirrored slices go, and the ClusterIP is rejected.
    dc.call("DELETE", dc.ns_path("endpoints", endpoints))
    dc.wait_rules({key: REJECTED})
    assert dc.slices(key) == []
    assert dc.requests(key, 5, timeout=5) == Counter({"ERR:refused": 5})
