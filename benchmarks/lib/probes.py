"""Reading the processes under test: emulator write counts, operator metrics, quiescence."""

from __future__ import annotations

import asyncio
import time

import aiohttp
from prometheus_client.parser import text_string_to_metric_families

from .processes import get_json

__all__ = ["metric", "slice_writes", "wait_quiet", "wait_slices"]


async def slice_writes(session: aiohttp.ClientSession, control: str) -> int:
    """EndpointSlice writes the emulator has served so far (all verbs)."""
    counts: dict[str, int] = await get_json(session, f"{control}/writes")
    return sum(counts.values())


async def metric(
    session: aiohttp.ClientSession, metrics_url: str, name: str, **labels: str
) -> float:
    """The sum of the operator's samples called ``name`` whose labels include ``labels``."""
    async with session.get(f"{metrics_url}/metrics") as response:
        response.raise_for_status()
        text = await response.text()
    total = 0.0
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name == name and all(sample.labels.get(k) == v for k, v in labels.items()):
                total += sample.value
    return total


async def wait_quiet(
    session: aiohttp.ClientSession,
    control: str,
    *,
    quiet: float = 1.0,
    timeout: float = 300.0,
    interval: float = 0.1,
) -> int:
    """Wait until the emulator has served no slice write for ``quiet`` seconds; returns the
    write count then. Raises TimeoutError after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    last = await slice_writes(session, control)
    still_since = time.monotonic()
    while time.monotonic() - still_since < quiet:
        if time.monotonic() > deadline:
            raise TimeoutError(f"slice writes did not stop within {timeout} s")
        await asyncio.sleep(interval)
        current = await slice_writes(session, control)
        if current != last:
            last, still_since = current, time.monotonic()
    return last


async def wait_slices(
    session: aiohttp.ClientSession,
    control: str,
    managed_by: str,
    count: int,
    *,
    timeout: float = 600.0,
) -> None:
    """Wait until at least ``count`` EndpointSlices are managed by ``managed_by``."""
    deadline = time.monotonic() + timeout
    while True:
        found = await get_json(session, f"{control}/slices?managed_by={managed_by}")
        if found["count"] >= count:
            return
        if time.monotonic() > deadline:
            raise TimeoutError(f"{found['count']} of {count} slices after {timeout} s")
        await asyncio.sleep(0.1)
