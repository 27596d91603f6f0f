"""generateName: a random 5-character suffix from Kubernetes' alphabet, seeded."""

from __future__ import annotations

import re

from endpointslice_operator.testing import Emulator, run_emulator
from endpointslice_operator.testing.store import NAME_ALPHABET
from tests.emulator.conftest import SLICES, Client, endpoint_slice


async def test_suffix_alphabet_and_length(client: Client) -> None:
    names = []
    for _ in range(20):
        status, body = await client.post(SLICES, endpoint_slice())
        assert status == 201
        names.append(body["metadata"]["name"])
    pattern = re.compile(f"^web-[{NAME_ALPHABET}]{{5}}$")
    assert all(pattern.match(name) for name in names), names
    assert len(set(names)) == 20


async def test_same_seed_same_names() -> None:
    async def names(seed: int) -> list[str]:
        async with run_emulator(seed=seed) as emu:
            return [emu.store.create(endpoint_slice())["metadata"]["name"] for _ in range(5)]

    assert await names(3) == await names(3)
    assert await names(3) != await names(4)


async def test_long_prefixes_are_truncated(emu: Emulator) -> None:
    created = emu.store.create(endpoint_slice(metadata={"generateName": "x" * 70 + "-"}))
    name = created["metadata"]["name"]
    assert len(name) == 63 and name.startswith("x" * 58)
    assert created["metadata"]["generateName"] == "x" * 70 + "-"


async def test_invalid_prefix_is_rejected(client: Client) -> None:
    status, body = await client.post(SLICES, endpoint_slice(metadata={"generateName": "Bad_"}))
    assert status == 422
    fields = {cause["field"] for cause in body["details"]["causes"]}
    assert fields == {"metadata.generateName", "metadata.name"}


async def test_kopf_style_event_posting(client: Client) -> None:
    event = {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"generateName": "kopf-event-", "namespace": "default"},
        "involvedObject": {"kind": "Service", "name": "web", "namespace": "default"},
        "reason": "Logging",
        "message": "hello",
        "type": "Normal",
    }
    status, body = await client.post("/api/v1/namespaces/default/events", event)
    assert status == 201 and body["metadata"]["name"].startswith("kopf-event-")


async def test_only_a_trailing_dash_is_allowed_in_a_prefix(client: Client) -> None:
    # apimachinery masks a trailing "-" only: "web." is an invalid prefix, as in a cluster.
    status, body = await client.post(SLICES, endpoint_slice(metadata={"generateName": "web."}))
    assert status == 422
    assert body["details"]["causes"][0]["field"] == "metadata.generateName"
