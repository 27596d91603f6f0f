"""Deletions a watch never reports: the gap between an expired watch and its re-listing."""

from __future__ import annotations

from functools import partial
from typing import Any

from endpointslice_operator.testing import Emulator
from endpointslice_operator.testing.faults import LATENCY
from tests.e2e.harness import eventually


def gone(emu: Emulator, plural: str, namespace: str, name: str) -> bool:
    return emu.store.get(plural, namespace, name) is None


async def miss_deletions(
    emu: Emulator, plural: str, namespace: str, names: tuple[str, ...], **delete: Any
) -> None:
    """The watches of ``plural`` end, and their resumption is slow (30 s) to reach the server
    while ``names`` are deleted (``delete``: the store's delete options); then the history is
    compacted: the resumption gets 410 Expired, the client lists again, and the listing merely
    leaves the objects out (no DELETED event)."""
    emu.faults.fault_verbs = {"watch"}
    emu.faults.fault_resources = {plural}
    emu.faults.latency = 30.0
    held = emu.faults_injected[LATENCY]
    emu.store.close_watchers(plural)
    await eventually(lambda: emu.faults_injected[LATENCY] > held)
    emu.faults.latency = 0.0
    for name in names:
        emu.store.delete(plural, namespace, name, **delete)
        await eventually(partial(gone, emu, plural, namespace, name))
    emu.store.compact(plural)
