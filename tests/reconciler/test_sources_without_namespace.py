"""Address sources: pods and ResourceClaims without a namespace (objects read from files) are
found under the namespace ``""`` their records have."""

from __future__ import annotations

import json
from typing import Any

from endpointslice_operator.reconciler import Addresses, DeviceNetwork, MultusNetwork
from endpointslice_operator.reconciler.records import pod_record
from endpointslice_operator.reconciler.sources import NETWORK_STATUS_ANNOTATION


def _pod(metadata: dict[str, Any], status: dict[str, Any]) -> dict[str, Any]:
    return {
        "metadata": {"name": "a", "uid": "uid-a", **metadata},
        "spec": {"nodeName": "node-1"},
        "status": {"phase": "Running", "podIPs": [{"ip": "10.0.0.1"}], **status},
    }


def test_multus_finds_the_status_of_a_pod_without_namespace() -> None:
    text = json.dumps([{"name": "macvlan", "interface": "net1", "ips": ["192.168.1.2"]}])
    pod = _pod({"annotations": {NETWORK_STATUS_ANNOTATION: text}}, {})
    source = MultusNetwork.from_pods("macvlan", [pod])
    assert source.addresses(pod_record(pod)) == Addresses(("192.168.1.2",), ())


def test_dra_finds_the_claim_of_a_pod_without_namespace() -> None:
    pod = _pod({}, {"resourceClaimStatuses": [{"name": "nic", "resourceClaimName": "a-nic"}]})
    device = {"driver": "net.example.com", "pool": "node-1", "device": "dev-0"}
    claim = {
        "metadata": {"name": "a-nic"},
        "status": {
            "allocation": {"devices": {"results": [{"request": "vf", **device}]}},
            "devices": [{**device, "networkData": {"ips": ["192.168.5.2/24"]}}],
        },
    }
    source = DeviceNetwork.from_objects("nic", None, [pod], [claim])
    assert source.addresses(pod_record(pod)) == Addresses(("192.168.5.2",), ())
