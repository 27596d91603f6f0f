"""Metric values after a known sequence, scraped over HTTP from /metrics."""

from __future__ import annotations

import aiohttp

from endpointslice_operator.testing import run_emulator
from tests.e2e.harness import (
    NS,
    addresses,
    cluster,
    conditions,
    eventually,
    pod,
    running_operator,
    service,
    set_ready,
    settle,
    slices,
)


def parse(text: str) -> dict[str, float]:
    samples: dict[str, float] = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            name, _, value = line.rpartition(" ")
            samples[name] = float(value)
    return samples


async def scrape(url: str) -> dict[str, float]:
    async with aiohttp.ClientSession() as session, session.get(f"{url}/metrics") as response:
        assert response.status == 200
        return parse(await response.text())


async def test_metrics_after_a_known_sequence() -> None:
    async with run_emulator() as emu:
        cluster(emu)
        service(emu, "web", selector={"app": "web"})
        for i in range(3):
            pod(emu, f"web-{i}", f"10.1.0.{i + 1}")
        async with running_operator(emu, serve_health=True) as op:
            assert op.health is not None
            async with aiohttp.ClientSession() as session:
                async with session.get(f"{op.health.url}/readyz") as response:
                    assert response.status == 200
            await eventually(lambda: len(addresses(emu, "web")) == 3)
            await settle(op)
            m = await scrape(op.health.url)
            assert m['endpoint_slice_controller_changes{operation="create"}'] == 1
            assert m["endpoint_slice_controller_endpoints_added_per_sync_sum"] == 3
            assert m["endpoint_slice_controller_endpoints_desired"] == 3
            assert m["endpoint_slice_controller_num_endpoint_slices"] == 1
            assert m["endpoint_slice_controller_desired_endpoint_slices"] == 1
            assert m['endpoint_slice_controller_syncs{result="success"}'] == 1
            assert m['workqueue_adds_total{name="endpoint_slice"}'] >= 1

            set_ready(emu, "web-1", False)
            await eventually(lambda: conditions(emu, "web")["10.1.0.2"][0] is False)
            await settle(op)
            m = await scrape(op.health.url)
            assert m['endpoint_slice_controller_changes{operation="update"}'] == 1
            assert m['endpoint_slice_controller_syncs{result="success"}'] == 2
            assert m["endpoint_slice_controller_endpoints_desired"] == 3

            emu.store.delete("services", NS, "web")
            await eventually(lambda: slices(emu, "web") == [])
            await settle(op)
            m = await scrape(op.health.url)
            assert m["endpoint_slice_controller_endpoints_desired"] == 0
            assert m["endpoint_slice_controller_num_endpoint_slices"] == 0
            assert m["endpoint_slice_controller_desired_endpoint_slices"] == 0
            assert 'endpoint_slice_controller_changes{operation="delete"}' not in m  # GC did it


async def test_mirroring_metrics() -> None:
    """Upstream's endpoint_slice_mirroring_controller_* for a Service mirroring its Endpoints;
    the slice controller's gauges do not count it. One address over the per-subset cap is
    skipped (an invalid IP, the other way to skip one, cannot be stored: v1.36 refuses it in
    Endpoints, and so does the emulator)."""
    async with run_emulator() as emu:
        cluster(emu)
        emu.store.create(
            {
                "apiVersion": "v1",
                "kind": "Endpoints",
                "metadata": {"name": "db", "namespace": NS},
                "subsets": [
                    {
                        "addresses": [{"ip": "192.0.2.1"}, {"ip": "192.0.2.2"}],
                        "notReadyAddresses": [{"ip": "192.0.2.3"}],
                        "ports": [{"port": 5432, "protocol": "TCP"}],
                    }
                ],
            }
        )
        service(emu, "db", annotations={"endpointslice-operator.io/source": "endpoints"})
        async with running_operator(emu, serve_health=True, max_endpoints_per_subset=2) as op:
            assert op.health is not None
            await eventually(lambda: len(addresses(emu, "db")) == 2)
            await settle(op)
            m = await scrape(op.health.url)
            prefix = "endpoint_slice_mirroring_controller"
            assert m[f'{prefix}_changes{{operation="create"}}'] == 1
            assert m[f"{prefix}_endpoints_added_per_sync_sum"] == 2
            assert m[f"{prefix}_addresses_skipped_per_sync_sum"] == 1
            assert m[f"{prefix}_endpoints_desired"] == 2
            assert m[f"{prefix}_num_endpoint_slices"] == 1
            assert m[f"{prefix}_desired_endpoint_slices"] == 1
            assert m[f"{prefix}_endpoints_sync_duration_count"] >= 1
            assert m["endpoint_slice_controller_endpoints_desired"] == 0
            emu.store.delete("services", NS, "db")
            await eventually(lambda: slices(emu, "db") == [])
            await settle(op)
            m = await scrape(op.health.url)
            assert m[f"{prefix}_endpoints_desired"] == 0
            assert m[f'{prefix}_changes{{operation="delete"}}'] == 1
