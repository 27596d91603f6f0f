"""A Kubernetes API emulator with real semantics, for tests, demos and chaos runs.

    async with run_emulator(seed=1) as emu:
        emu.store.create({...})              # synchronous access, emits watch events
        ...                                  # talk HTTP to emu.url / emu.kubeconfig_path
        assert emu.requests.count(verb="update", resource="endpointslices") == 1

It is independent of the rest of the package: nothing here imports the operator.
"""

from endpointslice_operator.testing.faults import FaultConfig
from endpointslice_operator.testing.requestlog import RequestLog, RequestRecord
from endpointslice_operator.testing.server import Emulator, run_emulator
from endpointslice_operator.testing.store import Store

__all__ = ["Emulator", "FaultConfig", "RequestLog", "RequestRecord", "Store", "run_emulator"]
