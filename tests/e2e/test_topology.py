"""Zone hints: topology-mode Auto (reacting to node changes) and trafficDistribution."""

from __future__ import annotations

from typing import Any

from endpointslice_operator.testing import run_emulator
from tests.e2e.harness import cluster, endpoints, events, eventually, pod, running_operator, service


def hints(emu: Any, name: str) -> dict[str, list[str] | None]:
    found: dict[str, list[str] | None] = {}
    for ep in endpoints(emu, name):
        zones = (ep.get("hints") or {}).get("forZones")
        found[ep["addresses"][0]] = [z["name"] for z in zones] if zones else None
    return found


async def test_topology_auto_follows_node_zone_changes() -> None:
    async with run_emulator() as emu:
        cluster(emu)
        service(
            emu,
            "web",
            selector={"app": "web"},
            annotations={"service.kubernetes.io/topology-mode": "Auto"},
        )
        for i in range(4):
            pod(emu, f"web-{i}", f"10.1.0.{i + 1}", node_name="node-a" if i < 2 else "node-b")
        async with running_operator(emu):
            await eventually(
                lambda: (
                    hints(emu, "web")
                    == {
                        "10.1.0.1": ["zone-a"],
                        "10.1.0.2": ["zone-a"],
                        "10.1.0.3": ["zone-b"],
                        "10.1.0.4": ["zone-b"],
                    }
                )
            )
            await eventually(lambda: events(emu, "TopologyAwareHintsEnabled"))
            # node-b moves to zone-a: one zone left, so hints are disabled and removed
            node_b = emu.store.get("nodes", None, "node-b")
            assert node_b is not None
            node_b["metadata"]["labels"]["topology.kubernetes.io/zone"] = "zone-a"
            emu.store.update(node_b)
            await eventually(lambda: all(h is None for h in hints(emu, "web").values()))
            disabled = await eventually(lambda: events(emu, "TopologyAwareHintsDisabled"))
            # upstream's SetNodes treats fewer than two zones as insufficient node information
            assert disabled[0]["message"].startswith("Insufficient Node information")


async def test_traffic_distribution_prefer_close() -> None:
    async with run_emulator() as emu:
        cluster(emu)
        service(emu, "web", selector={"app": "web"}, trafficDistribution="PreferClose")
        pod(emu, "web-0", "10.1.0.1", node_name="node-a")
        pod(emu, "web-1", "10.1.0.2", node_name="node-b")
        pod(emu, "web-2", "10.1.0.3", node_name="node-b", ready=False)
        async with running_operator(emu) as op:
            await eventually(
                lambda: (
                    hints(emu, "web")
                    == {"10.1.0.1": ["zone-a"], "10.1.0.2": ["zone-b"], "10.1.0.3": None}
                )
            )
            assert (
                op.metrics.sample_value(
                    "endpoint_slice_controller_services_count_by_traffic_distribution",
                    {"traffic_distribution": "PreferClose"},
                )
                == 1
            )
