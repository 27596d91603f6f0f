"""The reconciler-facing cases of upstream util/controller_utils_test.go, ported.

``ShouldPodBeInEndpoints``, ``ShouldSetHostname`` and ``EndpointsEqualBeyondHash`` are inlined
in our desired-state loop and endpoint state, so their cases run through
``desired_from_service_pods`` and ``existing_entry``. The pod→Service mapping cases
(``determineNeededServiceUpdates``, ``podChanged``, ``GetPodServicesToUpdate``) belong to the
operator's pod handlers and are tested there; ``DeepHashObject`` has no counterpart (tuples
are their own keys).
"""

from __future__ import annotations

from typing import Any

import pytest

from endpointslice_operator.reconciler import desired_from_service_pods
from endpointslice_operator.reconciler.endpoints import existing_entry
from endpointslice_operator.reconciler.ports import ports_from_dicts

SERVICE = {
    "metadata": {"name": "svc-name", "namespace": "ns"},
    "spec": {"ipFamilies": ["IPv4"], "ports": [{"port": 80}]},
}
NODE = {"metadata": {"name": "node-1"}}


def _pod(
    phase: str, *, ip: str = "1.2.3.4", pod_ips: list[str] | None = None, deleting: bool = False
) -> Any:
    metadata: dict[str, Any] = {"name": "pod", "namespace": "ns"}
    if deleting:
        metadata["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    return {
        "metadata": metadata,
        "spec": {"nodeName": "node-1"},
        "status": {
            "phase": phase,
            "podIP": ip,
            "podIPs": [
                {"ip": i} for i in (pod_ips if pod_ips is not None else ([ip] if ip else []))
            ],
        },
    }


@pytest.mark.parametrize(
    ("pod", "expected"),
    [
        pytest.param(_pod("Failed"), False, id="Failed pod with Never RestartPolicy"),
        pytest.param(_pod("Succeeded"), False, id="Succeeded pod with Never RestartPolicy"),
        pytest.param(_pod("Succeeded"), False, id="Succeeded pod with OnFailure RestartPolicy"),
        pytest.param(
            _pod("Running", ip="", pod_ips=[]),
            False,
            id="Empty Pod IPs, Running pod with OnFailure RestartPolicy",
        ),
        pytest.param(_pod("Failed"), False, id="Failed pod with Always RestartPolicy"),
        pytest.param(_pod("Pending"), True, id="Pending pod with Never RestartPolicy"),
        pytest.param(_pod("Unknown"), True, id="Unknown pod with OnFailure RestartPolicy"),
        pytest.param(_pod("Running"), True, id="Running pod with Never RestartPolicy"),
        pytest.param(
            _pod("Running", ip="", pod_ips=["1.2.3.4", "1234::5678:0000:0000:9abc:def0"]),
            True,
            id="Multiple Pod IPs, Running pod with OnFailure RestartPolicy",
        ),
        pytest.param(
            _pod("Running", deleting=True), True, id="Terminating Pod with includeTerminating=true"
        ),
        # "Terminating Pod with includeTerminating=false" has no counterpart: the reconciler
        # always includes terminating pods.
    ],
)
def test_should_pod_be_in_endpoints(pod: Any, expected: bool) -> None:
    desired = desired_from_service_pods(SERVICE, [pod], [NODE])
    assert desired.endpoint_count("IPv4") == (1 if expected else 0)
    # A counted pod creates its port group even before its addresses are looked at.
    assert bool(desired.groups["IPv4"]) is expected


@pytest.mark.parametrize(
    ("pod_ns", "hostname", "subdomain", "svc_ns", "svc_name", "expected"),
    [
        pytest.param("ns", "foo", "svc-name", "ns", "svc-name", True, id="all matching"),
        pytest.param(
            "ns", "", "svc-name", "ns", "svc-name", False, id="all matching, hostname not set"
        ),
        pytest.param(
            "ns",
            "hostname",
            "subdomain",
            "ns",
            "name",
            False,
            id="all set, different name/subdomain",
        ),
        pytest.param(
            "ns1",
            "hostname",
            "svc-name",
            "ns2",
            "svc-name",
            False,
            id="all set, different namespace",
        ),
    ],
)
def test_should_set_hostname(
    pod_ns: str, hostname: str, subdomain: str, svc_ns: str, svc_name: str, expected: bool
) -> None:
    pod = _pod("Running")
    pod["metadata"]["namespace"] = pod_ns
    pod["spec"].update(hostname=hostname, subdomain=subdomain)
    service = {**SERVICE, "metadata": {"name": svc_name, "namespace": svc_ns}}
    desired = desired_from_service_pods(service, [pod], [NODE])
    (group,) = desired.groups["IPv4"].values()
    (endpoint,) = group.endpoints.values()
    assert ("hostname" in endpoint.to_dict()) is expected


def _ep(ready: bool | None = True, *, name: str = "pod0", **fields: Any) -> dict[str, Any]:
    conditions = {"ready": ready} if ready is not None else {}
    conditions.update(fields.pop("conditions", {}))
    ref = {"kind": "Pod", "namespace": "default", "name": name, **fields.pop("ref", {})}
    return {"conditions": conditions, "addresses": ["10.0.0.1"], "targetRef": ref, **fields}


@pytest.mark.parametrize(
    ("ep1", "ep2", "expected"),
    [
        pytest.param(_ep(nodeName="node-1"), _ep(nodeName="node-1"), True, id="No change"),
        pytest.param(_ep(nodeName="node-1"), _ep(nodeName="node-2"), False, id="NodeName changed"),
        pytest.param(_ep(zone="zone-1"), _ep(zone="zone-2"), False, id="Zone changed"),
        pytest.param(
            _ep(True, zone="zone-1", nodeName="node-1"),
            _ep(False, zone="zone-1", nodeName="node-1"),
            False,
            id="Ready condition changed",
        ),
        pytest.param(
            _ep(zone="zone-1", nodeName="node-1"),
            _ep(
                conditions={"serving": True, "terminating": False}, zone="zone-1", nodeName="node-1"
            ),
            False,
            id="Serving condition changed from nil to true",
        ),
        pytest.param(
            _ep(conditions={"serving": False, "terminating": False}, zone="zone-1"),
            _ep(conditions={"serving": True, "terminating": False}, zone="zone-1"),
            False,
            id="Serving condition changed from false to true",
        ),
        pytest.param(
            _ep(zone="zone-1"), _ep(name="pod1", zone="zone-1"), False, id="Pod name changed"
        ),
        pytest.param(
            _ep(ref={"resourceVersion": "1"}),
            _ep(ref={"resourceVersion": "2"}),
            True,
            id="Pod resourceVersion changed",
        ),
        pytest.param(
            _ep(ref={"resourceVersion": "1"}),
            _ep(ref={"resourceVersion": ""}),
            True,
            id="Pod resourceVersion removed",
        ),
    ],
)
def test_endpoints_equal_beyond_hash(
    ep1: dict[str, Any], ep2: dict[str, Any], expected: bool
) -> None:
    assert (existing_entry(ep1)[1] == existing_entry(ep2)[1]) is expected


def test_new_port_map_key_nil_vs_empty_slice() -> None:
    assert ports_from_dicts(None) == ports_from_dicts([]) == ()
