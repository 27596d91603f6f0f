"""The baseline controller: the least work that turns a pod change into a slice write.

``python -m benchmarks.lib.minimal_controller --url URL --namespace NS`` lists the opted-in pods
(by their benchmark label), groups them by their ``app`` label (the Service's name), creates one
EndpointSlice per Service (managed-by :data:`MANAGED_BY`), prints ``ready`` and then, for every
pod watch event, rebuilds that Service's endpoint list and PUTs the slice. No caches beyond one
dict per Service, no queue, no batching, no diffing, no topology, no retries: the floor the
operator's propagation latency is compared with. Runs until SIGTERM or until stdin closes.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import signal
import sys
from typing import Any

import aiohttp

from .cluster import OPTED_IN_LABEL

MANAGED_BY = "bench-minimal-controller"
PODS_PATH = "/api/v1/namespaces/{namespace}/pods"
SLICES_PATH = "/apis/discovery.k8s.io/v1/namespaces/{namespace}/endpointslices"

Endpoint = dict[str, Any]


def endpoint(pod: dict[str, Any]) -> Endpoint | None:
    """The pod's endpoint, or None without an IP."""
    status = pod.get("status") or {}
    ip = status.get("podIP")
    if not ip:
        return None
    ready = any(
        c.get("type") == "Ready" and c.get("status") == "True"
        for c in status.get("conditions") or ()
    )
    meta = pod["metadata"]
    return {
        "addresses": [ip],
        "conditions": {"ready": ready, "serving": ready, "terminating": False},
        "targetRef": {
            "kind": "Pod",
            "namespace": meta["namespace"],
            "name": meta["name"],
            "uid": meta.get("uid", ""),
        },
        "nodeName": (pod.get("spec") or {}).get("nodeName"),
    }


class MinimalController:
    def __init__(self, session: aiohttp.ClientSession, url: str, namespace: str) -> None:
        self.session = session
        self.url = url
        self.namespace = namespace
        self.services: dict[str, dict[str, Endpoint]] = {}

    def _slice(self, service: str) -> dict[str, Any]:
        return {
            "apiVersion": "discovery.k8s.io/v1",
            "kind": "EndpointSlice",
            "metadata": {
                "name": f"{service}-minimal",
                "namespace": self.namespace,
                "labels": {
                    "kubernetes.io/service-name": service,
                    "endpointslice.kubernetes.io/managed-by": MANAGED_BY,
                },
            },
            "addressType": "IPv4",
            "ports": [{"name": "http", "port": 8080, "protocol": "TCP"}],
            "endpoints": sorted(
                self.services[service].values(), key=lambda e: e["targetRef"]["name"]
            ),
        }

    def _apply(self, event_type: str, pod: dict[str, Any]) -> str | None:
        service = (pod["metadata"].get("labels") or {}).get("app")
        if not isinstance(service, str) or not service:
            return None
        endpoints = self.services.setdefault(service, {})
        name = pod["metadata"]["name"]
        found = None if event_type == "DELETED" else endpoint(pod)
        if found is None:
            endpoints.pop(name, None)
        else:
            endpoints[name] = found
        return service

    async def _write(self, service: str, *, create: bool) -> None:
        base = self.url + SLICES_PATH.format(namespace=self.namespace)
        body = json.dumps(self._slice(service))
        headers = {"Content-Type": "application/json"}
        if create:
            request = self.session.post(base, data=body, headers=headers)
        else:
            request = self.session.put(f"{base}/{service}-minimal", data=body, headers=headers)
        async with request as response:
            await response.read()
            if response.status >= 400 and not (create and response.status == 409):
                sys.stderr.write(f"write of {service} failed: {response.status}\n")

    async def run(self, ready: asyncio.Event) -> None:
        pods_url = self.url + PODS_PATH.format(namespace=self.namespace)
        selector = f"{OPTED_IN_LABEL}=true"
        async with self.session.get(pods_url, params={"labelSelector": selector}) as response:
            response.raise_for_status()
            listing = await response.json()
        for pod in listing["items"]:
            self._apply("ADDED", pod)
        for service in sorted(self.services):
            await self._write(service, create=True)
        ready.set()
        params = {
            "watch": "1",
            "labelSelector": selector,
            "resourceVersion": listing["metadata"]["resourceVersion"],
        }
        timeout = aiohttp.ClientTimeout(total=None, sock_read=None)
        async with self.session.get(pods_url, params=params, timeout=timeout) as response:
            response.raise_for_status()
            async for line in response.content:
                if not line.strip():
                    continue
                event = json.loads(line)
                if event.get("type") not in ("ADDED", "MODIFIED", "DELETED"):
                    continue
                changed = self._apply(event["type"], event["object"])
                if changed is not None:
                    await self._write(changed, create=False)


async def _stdin_closed() -> None:
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader()
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    while await reader.read(4096):
        pass


async def serve(url: str, namespace: str) -> None:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, stop.set)
    ready = asyncio.Event()
    async with aiohttp.ClientSession() as session:
        controller = MinimalController(session, url, namespace)
        tasks = {
            asyncio.create_task(controller.run(ready)),
            asyncio.create_task(stop.wait()),
            asyncio.create_task(_stdin_closed()),
        }
        announce = asyncio.create_task(ready.wait())
        announce.add_done_callback(lambda _: print("ready", flush=True))
        try:
            done, _ = await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
            for task in done:
                if not task.cancelled() and task.exception() is not None:
                    raise task.exception()  # type: ignore[misc]
        finally:
            announce.cancel()
            for task in tasks:
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.lib.minimal_controller")
    parser.add_argument("--url", required=True)
    parser.add_argument("--namespace", required=True)
    args = parser.parse_args(argv)
    asyncio.run(serve(args.url, args.namespace))
    return 0


if __name__ == "__main__":
    sys.exit(main())
