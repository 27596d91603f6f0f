"""DRA: a ResourceClaim whose status is absent or not an object is not allocated yet; one whose
allocation results hold an entry that is not an object is malformed (the pod is left out with
the reason, nothing raises)."""

from __future__ import annotations

from typing import Any

import pytest

from endpointslice_operator.reconciler import DeviceNetwork, LeftOut
from endpointslice_operator.reconciler.records import pod_record

POD = {
    "metadata": {"namespace": "ns", "name": "a", "uid": "uid-a"},
    "spec": {"nodeName": "node-1"},
    "status": {
        "phase": "Running",
        "podIPs": [{"ip": "10.0.0.1"}],
        "resourceClaimStatuses": [{"name": "nic", "resourceClaimName": "a-nic"}],
    },
}


def _left_out(claim: dict[str, Any]) -> Any:
    claim = {"metadata": {"namespace": "ns", "name": "a-nic"}, **claim}
    return DeviceNetwork.from_objects("nic", None, [POD], [claim]).addresses(pod_record(POD))


@pytest.mark.parametrize("claim", [{}, {"status": None}, {"status": ["junk"]}])
def test_a_claim_without_a_status_object_is_not_allocated_yet(claim: dict[str, Any]) -> None:
    assert _left_out(claim) == LeftOut("ResourceClaim a-nic is not allocated yet")


def test_a_result_that_is_not_an_object_makes_the_claim_malformed() -> None:
    claim = {"status": {"allocation": {"devices": {"results": ["junk"]}}, "devices": []}}
    assert _left_out(claim) == LeftOut(
        "malformed ResourceClaim a-nic: "
        "status.allocation.devices.results has an entry that is not an object"
    )
