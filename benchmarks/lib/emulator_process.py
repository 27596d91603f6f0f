"""The emulator as a benchmark process: populated at start, plus a control API.

``python -m benchmarks.lib.emulator_process --services N --pods-per-service M ... --kubeconfig F``
loads the scenario straight into the store, starts serving, then prints one JSON line
``{"url", "kubeconfig", "control", "populate_s", "objects"}`` and serves until SIGTERM/SIGINT or
until its stdin closes (so it never outlives the benchmark that started it).

The control API (on its own port, 127.0.0.1) is benchmark-only:

* ``GET /writes``: EndpointSlice writes served so far, ``{"create", "update", "patch",
  "delete"}`` (successful requests only), counted as they happen.
* ``GET /slices?managed_by=X``: how many EndpointSlices carry that managed-by label.
* ``POST /churn?count=K&start=S``: flip the readiness of ``K`` opted-in pods (the ``S``-th
  onwards, spread over Services) through the store, as fast as the store takes them; answers
  ``{"seconds", "count", "resource_version"}``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import signal
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

from aiohttp import web

from endpointslice_operator.testing import Emulator, RequestLog, RequestRecord

from .cluster import Scenario, populate

WRITE_VERBS = ("create", "update", "patch", "delete")
CHURN_YIELD_EVERY = 200
"""Store writes between two yields to the event loop during churn (so watches keep flowing)."""


class CountingRequestLog(RequestLog):
    """The request log plus live counters of successful EndpointSlice writes by verb.

    (Counting on append keeps ``GET /writes`` O(1) with hundreds of thousands of records.)
    """

    def __init__(self) -> None:
        super().__init__()
        self.slice_writes: Counter[str] = Counter()
        self.selector_writes = 0
        """Writes to EndpointSelectors (the operator's status patches)."""

    def append(self, record: RequestRecord) -> None:
        super().append(record)
        if record.resource == "endpointslices" and record.code < 400:
            self.slice_writes[record.verb] += 1
        elif (
            record.resource == "endpointselectors"
            and record.code < 400
            and record.verb in WRITE_VERBS
        ):
            self.selector_writes += 1


class Control:
    """The control API's handlers."""

    def __init__(self, emulator: Emulator, log: CountingRequestLog, scenario: Scenario) -> None:
        self.emulator = emulator
        self.log = log
        self.scenario = scenario
        self.app = web.Application()
        self.app.router.add_get("/writes", self.writes)
        self.app.router.add_get("/selector-writes", self.selector_writes)
        self.app.router.add_get("/slices", self.slices)
        self.app.router.add_post("/churn", self.churn)

    async def writes(self, _: web.Request) -> web.Response:
        return web.json_response({verb: self.log.slice_writes[verb] for verb in WRITE_VERBS})

    async def selector_writes(self, _: web.Request) -> web.Response:
        return web.json_response({"count": self.log.selector_writes})

    async def slices(self, request: web.Request) -> web.Response:
        managed_by = request.query.get("managed_by", "")
        count = sum(
            1
            for s in self.emulator.store.list("endpointslices", self.scenario.namespace)
            if s["metadata"].get("labels", {}).get("endpointslice.kubernetes.io/managed-by")
            == managed_by
        )
        return web.json_response({"count": count})

    async def churn(self, request: web.Request) -> web.Response:
        count = int(request.query.get("count", "0"))
        start = int(request.query.get("start", "0"))
        store = self.emulator.store
        pods = store.resolve("pods")
        began = time.perf_counter()
        for offset in range(count):
            _, name = self.scenario.opted_in_pod(start + offset)
            pod = store.get("pods", self.scenario.namespace, name)
            if pod is None:
                raise web.HTTPNotFound(text=name)
            for condition in pod["status"]["conditions"]:
                if condition["type"] == "Ready":
                    condition["status"] = "False" if condition["status"] == "True" else "True"
            # The store's own write (what a kubelet's status PATCH comes to), without
            # Store.update's copy of the body and decode of the result: the pod is ours.
            store.api_update(
                pods, self.scenario.namespace, name, pod, subresource="status", privileged=True
            )
            if offset % CHURN_YIELD_EVERY == CHURN_YIELD_EVERY - 1:
                await asyncio.sleep(0)
        return web.json_response(
            {
                "seconds": time.perf_counter() - began,
                "count": count,
                "resource_version": store.resource_version,
            }
        )


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.lib.emulator_process")
    parser.add_argument("--services", type=int, required=True)
    parser.add_argument("--pods-per-service", type=int, required=True)
    parser.add_argument("--other-services", type=int, default=0)
    parser.add_argument("--other-pods-per-service", type=int, default=0)
    parser.add_argument("--nodes", type=int, default=50)
    parser.add_argument("--namespace", default="bench")
    parser.add_argument("--slices", action="store_true", help="pre-create the right slices")
    parser.add_argument("--owner", choices=("service", "endpointselector"), default="service")
    parser.add_argument("--kubeconfig", type=Path, required=True)
    return parser


async def _stdin_closed() -> None:
    """Return when stdin reaches EOF (the parent went away or closed the pipe)."""
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader()
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    while await reader.read(4096):
        pass


async def serve(args: argparse.Namespace) -> None:
    scenario = Scenario(
        services=args.services,
        pods_per_service=args.pods_per_service,
        other_services=args.other_services,
        other_pods_per_service=args.other_pods_per_service,
        nodes=args.nodes,
        slices=args.slices,
        namespace=args.namespace,
        owner=args.owner,
    )
    emulator = Emulator(kubeconfig_path=args.kubeconfig)
    log = CountingRequestLog()
    emulator.requests = log
    began = time.perf_counter()
    objects = populate(emulator.store, scenario)
    populate_s = time.perf_counter() - began
    control = Control(emulator, log, scenario)
    runner = web.AppRunner(control.app, access_log=None, handle_signals=False)
    await emulator.start()
    await runner.setup()
    try:
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        control_port = runner.addresses[0][1]
        info: dict[str, Any] = {
            "url": emulator.url,
            "kubeconfig": str(emulator.kubeconfig_path),
            "control": f"http://127.0.0.1:{control_port}",
            "populate_s": populate_s,
            "objects": objects,
        }
        sys.stdout.write(json.dumps(info) + "\n")
        sys.stdout.flush()
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(signum, stop.set)
        stdin_task = asyncio.create_task(_stdin_closed())
        stop_task = asyncio.create_task(stop.wait())
        await asyncio.wait({stdin_task, stop_task}, return_when=asyncio.FIRST_COMPLETED)
        for task in (stdin_task, stop_task):
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
    finally:
        await runner.cleanup()
        await emulator.stop()


def main(argv: list[str] | None = None) -> int:
    asyncio.run(serve(build_parser().parse_args(argv)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
