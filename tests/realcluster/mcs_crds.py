"""Installing the MCS CRDs of deploy/crds/ on a real API server (idempotent, waits until served)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from tests.realcluster.kube import Kube, eventually

CRD_DIR = Path(__file__).resolve().parents[2] / "deploy" / "crds"
CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"


def crd_manifests() -> list[dict[str, Any]]:
    return [
        yaml.safe_load(path.read_text(encoding="utf-8")) for path in sorted(CRD_DIR.glob("*.yaml"))
    ]


async def install_crds(kube: Kube) -> None:
    """Create every CRD of deploy/crds/ (a 409 means a test before installed it), then wait
    until each is Established."""
    for crd in crd_manifests():
        status, body = await kube.status_of("POST", CRDS, crd)
        assert status in (200, 409), body
    for crd in crd_manifests():
        name = crd["metadata"]["name"]

        async def established(name: str = name) -> bool:
            body = await kube.get(f"{CRDS}/{name}")
            conditions = body.get("status", {}).get("conditions") or []
            return any(c["type"] == "Established" and c["status"] == "True" for c in conditions)

        await eventually(established, timeout=60)
