"""A Node's zone label changes: the endpoints on it follow.

Issue 4 asks that node zone changes requeue the affected Services; upstream only refreshes its
topology cache (zones are treated as immutable there), so without that requeue the ``zone`` of
existing endpoints would stay stale until their pods change.
"""

from __future__ import annotations

import pytest

from endpointslice_operator.testing import run_emulator
from tests.e2e.harness import cluster, endpoints, eventually, pod, running_operator, service

pytestmark = pytest.mark.looptime(resolution=1 / 1024)


async def test_endpoint_zones_follow_a_node_zone_change() -> None:
    async with run_emulator() as emu:
        cluster(emu)
        service(emu, "web", selector={"app": "web"})
        pod(emu, "web-0", "10.1.0.1", node_name="node-a")
        async with running_operator(emu):
            await eventually(lambda: [e.get("zone") for e in endpoints(emu, "web")] == ["zone-a"])
            node = emu.store.get("nodes", None, "node-a")
            assert node is not None
            node["metadata"]["labels"]["topology.kubernetes.io/zone"] = "zone-c"
            emu.store.update(node)
            await eventually(lambda: [e.get("zone") for e in endpoints(emu, "web")] == ["zone-c"])
