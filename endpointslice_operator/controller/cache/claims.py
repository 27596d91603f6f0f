"""DRA ResourceClaims (``resource.k8s.io``) for the ``<prefix>/device-network`` source.

The claims are watched only once some managed Service uses that annotation (most clusters have
no DRA drivers, and RBAC to read claims is a chart option): :class:`ClaimIndex` keeps, per
``(namespace, name)``, only what :class:`~..reconciler.sources.DeviceNetwork` reads (the
allocation results and the devices' network data). The API version is found by discovery:
the first of :data:`VERSIONS` the server serves (the fields read are the same in all of them).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from endpointslice_operator.controller.cache.on_demand import OnDemand

__all__ = ["GROUP", "PLURAL", "VERSIONS", "ClaimIndex", "pick_version", "slim_claim"]

log = logging.getLogger(__name__)

GROUP = "resource.k8s.io"
PLURAL = "resourceclaims"
VERSIONS = ("v1", "v1beta2", "v1beta1")
"""Versions whose ResourceClaim status has ``devices[].networkData`` (Kubernetes 1.32+)."""


def pick_version(group_document: Mapping[str, Any]) -> str | None:
    """The version to watch from a ``/apis/resource.k8s.io`` APIGroup document, if any."""
    versions = group_document.get("versions")
    served = {
        v.get("version")
        for v in (versions if isinstance(versions, list) else ())
        if isinstance(v, Mapping)
    }
    return next((version for version in VERSIONS if version in served), None)


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def slim_claim(claim: Mapping[str, Any]) -> dict[str, Any]:
    """Metadata identity, allocation results and device network data of a ResourceClaim."""
    metadata = _mapping(claim.get("metadata"))
    status = _mapping(claim.get("status"))
    slim_status: dict[str, Any] = {}
    devices = _mapping(_mapping(status.get("allocation")).get("devices"))
    results = devices.get("results")
    if "allocation" in status:
        slim_status["allocation"] = {
            "devices": {
                "results": [
                    {k: r.get(k) for k in ("request", "driver", "pool", "device")}
                    if isinstance(r, Mapping)
                    else r
                    for r in (results if isinstance(results, list) else ())
                ]
            }
        }
    device_statuses = status.get("devices")
    if isinstance(device_statuses, list):
        slim_status["devices"] = [
            {k: d.get(k) for k in ("driver", "pool", "device", "networkData") if k in d}
            if isinstance(d, Mapping)
            else d
            for d in device_statuses
        ]
    return {
        "metadata": {k: metadata.get(k) for k in ("namespace", "name", "uid", "resourceVersion")},
        "status": slim_status,
    }


class ClaimIndex(OnDemand):
    """Slim ResourceClaims by ``(namespace, name)``, and the watch's state (started by the
    first Service that uses a device network, see :class:`~.on_demand.OnDemand`)."""

    def __init__(self) -> None:
        super().__init__()
        self.claims: dict[tuple[str, str], dict[str, Any]] = {}
        self.version: str | None = None
        """The served version being watched (None before discovery)."""
        self.unavailable: str | None = None
        """Why claims cannot be watched (no served version), if so."""

    def __len__(self) -> int:
        return len(self.claims)

    def put(self, claim: Mapping[str, Any]) -> tuple[dict[str, Any] | None, dict[str, Any]]:
        slim = slim_claim(claim)
        key = (str(slim["metadata"]["namespace"] or ""), str(slim["metadata"]["name"] or ""))
        previous = self.claims.get(key)
        self.claims[key] = slim
        return previous, slim

    def remove(self, namespace: str, name: str) -> dict[str, Any] | None:
        return self.claims.pop((namespace, name), None)
