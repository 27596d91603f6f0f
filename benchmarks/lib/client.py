"""The load generator's side: readiness flips over HTTP, slice watches, latency bookkeeping.

A flip is a JSON merge patch of the pod's ``status`` subresource (what a kubelet's status
update amounts to). A flip counts as propagated when a watch on EndpointSlices (filtered by
managed-by label) delivers a slice in which the pod's endpoint has the new ``ready`` value; the
latency is from just before the patch is sent to the moment that event is decoded.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import math
import time
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import aiohttp
import orjson

__all__ = [
    "LatencyTracker",
    "SliceWatch",
    "create_pod",
    "delete_pod",
    "flip_ready",
    "patch_status",
    "percentile",
    "ready_condition",
    "slice_watch",
]

SLICES_PATH = "/apis/discovery.k8s.io/v1/namespaces/{namespace}/endpointslices"
PODS_PATH = "/api/v1/namespaces/{namespace}/pods"
POD_STATUS_PATH = PODS_PATH + "/{name}/status"
LABEL_MANAGED_BY = "endpointslice.kubernetes.io/managed-by"


def percentile(values: Sequence[float], share: float) -> float:
    """The nearest-rank percentile (``share`` in 0..1) of ``values``."""
    if not values:
        raise ValueError("no values")
    ordered = sorted(values)
    rank = max(1, math.ceil(share * len(ordered)))
    return ordered[rank - 1]


async def _check(response: aiohttp.ClientResponse, what: str) -> None:
    if response.status >= 400:
        raise RuntimeError(f"{what} failed: {response.status} {await response.text()}")
    await response.read()


def ready_condition(ready: bool) -> dict[str, str]:
    """A Ready condition that changed now."""
    return {
        "type": "Ready",
        "status": "True" if ready else "False",
        "lastTransitionTime": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }


async def patch_status(
    session: aiohttp.ClientSession, url: str, namespace: str, name: str, status: dict[str, Any]
) -> None:
    """A JSON merge patch of the pod's status subresource (lists are replaced whole)."""
    async with session.patch(
        url + POD_STATUS_PATH.format(namespace=namespace, name=name),
        data=json.dumps({"status": status}),
        headers={"Content-Type": "application/merge-patch+json"},
    ) as response:
        await _check(response, f"status patch of {name}")


async def flip_ready(
    session: aiohttp.ClientSession, url: str, namespace: str, name: str, ready: bool
) -> None:
    """Set the pod's Ready condition (and its transition time)."""
    await patch_status(session, url, namespace, name, {"conditions": [ready_condition(ready)]})


async def create_pod(session: aiohttp.ClientSession, url: str, body: dict[str, Any]) -> None:
    """POST a pod (the API server resets its status to Pending, as for any client)."""
    namespace = body["metadata"]["namespace"]
    async with session.post(
        url + PODS_PATH.format(namespace=namespace),
        data=json.dumps(body),
        headers={"Content-Type": "application/json"},
    ) as response:
        await _check(response, f"creation of {body['metadata']['name']}")


async def delete_pod(session: aiohttp.ClientSession, url: str, namespace: str, name: str) -> None:
    """DELETE a pod with no grace period (it is gone at once)."""
    async with session.delete(
        f"{url}{PODS_PATH.format(namespace=namespace)}/{name}",
        params={"gracePeriodSeconds": "0"},
    ) as response:
        await _check(response, f"deletion of {name}")


@dataclass(slots=True)
class LatencyTracker:
    """Pods waiting for their new readiness to show in a slice, and the latencies seen."""

    pending: dict[str, tuple[bool, float]] = field(default_factory=dict)
    latencies: list[float] = field(default_factory=list)
    changed: asyncio.Event = field(default_factory=asyncio.Event)

    def expect(self, pod: str, ready: bool) -> None:
        self.pending[pod] = (ready, time.perf_counter())

    def observe(self, endpoint_slice: dict[str, Any]) -> None:
        if not self.pending:
            return
        now = time.perf_counter()
        for endpoint in endpoint_slice.get("endpoints") or ():
            name = (endpoint.get("targetRef") or {}).get("name")
            wanted = self.pending.get(name) if isinstance(name, str) else None
            if wanted is None or not isinstance(name, str):
                continue
            ready = bool((endpoint.get("conditions") or {}).get("ready"))
            if ready == wanted[0]:
                del self.pending[name]
                self.latencies.append(now - wanted[1])
                self.changed.set()

    async def wait_drained(self, timeout: float) -> None:
        """Wait until nothing is pending, at most ``timeout`` seconds."""
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(timeout):
                while self.pending:
                    self.changed.clear()
                    await self.changed.wait()


@dataclass(slots=True)
class SliceWatch:
    """A running watch on the slices of one managed-by label, feeding ``on_slice``."""

    events: int = 0


async def _list_version(session: aiohttp.ClientSession, url: str, selector: str) -> str:
    async with session.get(url, params={"labelSelector": selector, "limit": "1"}) as response:
        response.raise_for_status()
        body = await response.json()
    return str(body["metadata"]["resourceVersion"])


async def _stream(
    session: aiohttp.ClientSession,
    url: str,
    selector: str,
    version: str,
    on_slice: Callable[[dict[str, Any]], None],
    stats: SliceWatch,
    started: asyncio.Event,
) -> None:
    params = {
        "watch": "1",
        "labelSelector": selector,
        "resourceVersion": version,
        "allowWatchBookmarks": "false",
    }
    timeout = aiohttp.ClientTimeout(total=None, sock_read=None)
    async with session.get(url, params=params, timeout=timeout) as response:
        response.raise_for_status()
        started.set()
        async for line in response.content:
            if not line.strip():
                continue
            event = orjson.loads(line)
            stats.events += 1
            if event.get("type") in ("ADDED", "MODIFIED"):
                on_slice(event["object"])


@contextlib.asynccontextmanager
async def slice_watch(
    session: aiohttp.ClientSession,
    url: str,
    namespace: str,
    managed_by: str,
    on_slice: Callable[[dict[str, Any]], None],
) -> AsyncIterator[SliceWatch]:
    """Watch the namespace's slices managed by ``managed_by`` from now on, while in the block."""
    slices_url = url + SLICES_PATH.format(namespace=namespace)
    selector = f"{LABEL_MANAGED_BY}={managed_by}"
    version = await _list_version(session, slices_url, selector)
    stats = SliceWatch()
    started = asyncio.Event()
    task = asyncio.create_task(
        _stream(session, slices_url, selector, version, on_slice, stats, started)
    )
    try:
        waiter = asyncio.create_task(started.wait())
        await asyncio.wait({task, waiter}, timeout=30, return_when=asyncio.FIRST_COMPLETED)
        waiter.cancel()
        if task.done():
            task.result()
            raise RuntimeError("the slice watch ended at once")
        yield stats
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
