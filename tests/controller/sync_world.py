"""The harness of the syncer tests: an emulator over real HTTP, a client of it, and the
operator's indexes fed by hand (instead of through watches, so that the cache is exactly as
stale as each test needs) beside a :class:`ServiceSyncer`."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from kubernetes_asyncio import config as k8s_config
from kubernetes_asyncio.client import ApiClient, Configuration

from endpointslice_operator.controller.api.writer import SliceWriter
from endpointslice_operator.controller.cache.indexes import Indexes
from endpointslice_operator.controller.sync.apply import SliceWrites
from endpointslice_operator.controller.sync.events import EventRecorder
from endpointslice_operator.controller.sync.service import ServiceSyncer
from endpointslice_operator.metrics import OperatorMetrics
from endpointslice_operator.reconciler.config import ReconcilerConfig
from endpointslice_operator.reconciler.records import pod_record
from endpointslice_operator.testing import Emulator, run_emulator

ME = "endpointslice-operator.io"
NS = "s"


def pod_json(name: str, ip: str, ready: bool = True) -> dict[str, Any]:
    """A running pod of ``app: web`` on node ``n1`` in :data:`NS`."""
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": NS, "labels": {"app": "web"}},
        "spec": {"nodeName": "n1", "containers": [{"name": "c", "image": "i"}]},
        "status": {
            "phase": "Running",
            "podIPs": [{"ip": ip}],
            "conditions": [{"type": "Ready", "status": "True" if ready else "False"}],
        },
    }


class SyncWorld:
    """The emulator, and the indexes and Service syncer of an operator that uses it."""

    def __init__(self, emu: Emulator, api: ApiClient) -> None:
        self.emu = emu
        self.metrics = OperatorMetrics()
        self.indexes = Indexes(
            enabled_annotation=f"{ME}/enabled", selector_annotation=f"{ME}/selector", managed_by=ME
        )
        recorder = EventRecorder(api)
        config = ReconcilerConfig(controller_name=ME)
        self.services = ServiceSyncer(
            indexes=self.indexes,
            writes=SliceWrites(
                writer=SliceWriter(api),
                recorder=recorder,
                metrics=self.metrics,
                max_endpoints_per_slice=config.max_endpoints_per_slice,
            ),
            recorder=recorder,
            metrics=self.metrics,
            config=config,
            topology=None,
        )

    def load(self) -> None:
        """Bring the indexes up to date with the emulator (what the watches would do)."""
        for svc in self.emu.store.list("services", NS):
            self.indexes.services.upsert(svc)
        for pod in self.emu.store.list("pods", NS):
            self.indexes.pods.put(pod_record(pod))
        for node in self.emu.store.list("nodes"):
            self.indexes.nodes.put(node)
        for existing in self.emu.store.list("endpointslices", NS):
            self.indexes.slices.put(existing)

    def writes(self, verb: str) -> int:
        """EndpointSlice requests of ``verb`` the emulator served."""
        return self.emu.requests.count(verb=verb, resource="endpointslices")

    def synced(self, result: str) -> float | None:
        return self.metrics.sample_value("endpoint_slice_controller_syncs", {"result": result})


@asynccontextmanager
async def emulated() -> AsyncIterator[tuple[Emulator, ApiClient]]:
    """An emulator with namespace :data:`NS` and a Ready node ``n1``, and a client of it."""
    async with run_emulator() as emu:
        configuration = Configuration()
        await k8s_config.load_kube_config(
            config_file=str(emu.kubeconfig_path), client_configuration=configuration
        )
        async with ApiClient(configuration) as api:
            emu.store.create_namespace(NS)
            emu.store.create(
                {
                    "apiVersion": "v1",
                    "kind": "Node",
                    "metadata": {"name": "n1"},
                    "status": {"conditions": [{"type": "Ready", "status": "True"}]},
                }
            )
            yield emu, api
