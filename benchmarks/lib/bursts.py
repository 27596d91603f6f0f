"""Bursts of pod changes on Service pairs, measured for two EndpointSlice writers side by side.

Each pair is two Services selecting the same pods, one written by the operator and one by the
baseline (kube-controller-manager on a real control plane, the KCM-like operator on the
emulator). Three phases, each as fast as ``concurrency`` parallel API calls allow:

* ``arrivals``: every pod created and given a Running, Ready status (two API calls, as a
  kubelet reports status after the create);
* ``flips``: readiness flips of random pods (a pod is flipped once at most per round of the
  pods, so every flip is a real change);
* ``deletions``: pods deleted with no grace period.

After each phase the driver waits until both writers publish exactly the expected endpoints for
every Service, then reads from one watch of the namespace's EndpointSlices how many writes
(ADDED, MODIFIED, DELETED events) each made during the phase, and when each made its last one:
``converge`` is that moment minus the moment the last change of the phase was answered.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import random
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from tests.realcluster import objects as o
from tests.realcluster.kube import LABEL_MANAGED_BY, Kube

JSON = dict[str, Any]
LABEL_SERVICE_NAME = "kubernetes.io/service-name"
PHASES = ("arrivals", "flips", "deletions")


@dataclass(frozen=True, slots=True)
class Sizes:
    pairs: int
    pods_per_pair: int
    flips: int
    deletions: int


@dataclass
class Recorder:
    """Every EndpointSlice event of the namespace, with its arrival time (loop clock)."""

    events: list[tuple[float, JSON]] = field(default_factory=list)
    since: int = 0
    """The collection's resourceVersion the watch started from."""

    async def caught_up(self, kube: Kube, path: str, timeout: float = 30.0) -> None:
        """Wait until the watch has delivered every write that a list of ``path`` shows.

        A list answers from the store at once, a watch event may still be on its way: a phase
        that ends when a list shows the expected state must wait for its last writes to reach
        the recorder, or the next phase counts them as its own."""
        items = (await kube.get(path))["items"]
        wanted = {
            (item["metadata"]["name"], item["metadata"]["resourceVersion"])
            for item in items
            if int(item["metadata"]["resourceVersion"]) > self.since
        }
        deadline = asyncio.get_running_loop().time() + timeout
        while True:
            seen = {
                (e["object"]["metadata"]["name"], e["object"]["metadata"]["resourceVersion"])
                for _, e in self.events
            }
            if wanted <= seen:
                return
            if asyncio.get_running_loop().time() > deadline:
                raise TimeoutError(f"the watch of {path} did not deliver {sorted(wanted - seen)}")
            await asyncio.sleep(0.02)

    def writes(self, manager: str, since: int = 0) -> int:
        return len(self.of(manager, since))

    def shown(self, manager: str, pod: str, ready: bool, after: float) -> float | None:
        """Arrival time of the first event of ``manager`` after ``after`` showing ``pod`` so."""
        for at, event in self.events:
            obj = event["object"]
            if at < after or obj["metadata"].get("labels", {}).get(LABEL_MANAGED_BY) != manager:
                continue
            for endpoint in obj.get("endpoints") or []:
                if (endpoint.get("targetRef") or {}).get("name") == pod and bool(
                    endpoint.get("conditions", {}).get("ready")
                ) is ready:
                    return at
        return None

    def of(self, manager: str, since: int) -> list[float]:
        """Arrival times of the writes of ``manager`` among events ``since`` onwards."""
        return [
            at
            for at, event in self.events[since:]
            if event.get("type") in ("ADDED", "MODIFIED", "DELETED")
            and event["object"]["metadata"].get("labels", {}).get(LABEL_MANAGED_BY) == manager
        ]


@contextlib.asynccontextmanager
async def recording(kube: Kube, path: str) -> AsyncIterator[Recorder]:
    """Watch ``path`` (a list URL) from now on into a :class:`Recorder`."""
    version = (await kube.get(path))["metadata"]["resourceVersion"]
    recorder = Recorder(since=int(version))
    loop = asyncio.get_running_loop()
    params = {"watch": "true", "resourceVersion": version, "timeoutSeconds": "3600"}

    async def read() -> None:
        async with kube.session.get(kube.base + path, params=params) as response:
            async for line in response.content:
                if line.strip():
                    recorder.events.append((loop.time(), json.loads(line)))

    task = asyncio.create_task(read())
    try:
        yield recorder
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await task


@dataclass(frozen=True, slots=True)
class PhaseResult:
    writes: dict[str, int]
    """manager -> writes during the phase."""
    converge_s: dict[str, float]
    """manager -> seconds from the phase's last change to its last write (0 if none after)."""


@dataclass
class Pairs:
    """Service pairs and the pods they select; ``services[i]`` are the pair's two names, the
    first written by ``managers[0]``, the second by ``managers[1]``."""

    kube: Kube
    ns: str
    managers: tuple[str, str]
    services: list[tuple[str, str]]
    sizes: Sizes
    concurrency: int = 16
    ready: dict[str, bool] = field(default_factory=dict)
    """pod name -> readiness, of every pod that exists."""

    def pod_names(self, pair: int) -> list[str]:
        return [f"p{pair:04d}-{replica:03d}" for replica in range(self.sizes.pods_per_pair)]

    async def _each(self, items: list[Any], action: Callable[[Any], Awaitable[None]]) -> None:
        queue: asyncio.Queue[Any] = asyncio.Queue()
        for item in items:
            queue.put_nowait(item)

        async def worker() -> None:
            while not queue.empty():
                await action(queue.get_nowait())

        await asyncio.gather(*(worker() for _ in range(self.concurrency)))

    async def arrivals(self) -> None:
        names = [(pair, name) for pair in range(len(self.services)) for name in
                 self.pod_names(pair)]  # fmt: skip
        random.Random(1).shuffle(names)

        async def create(item: tuple[int, str]) -> None:
            pair, name = item
            number = pair * 1000 + int(name.rsplit("-", 1)[1])
            ip = f"10.{number >> 16 & 255}.{number >> 8 & 255}.{number & 255}"
            node = "node-a" if number % 2 else "node-b"
            await o.pod(self.kube, self.ns, name, ip, labels={"pair": f"p{pair:04d}"},
                        node_name=node)  # fmt: skip
            self.ready[name] = True

        await self._each(names, create)

    async def flips(self) -> None:
        rng = random.Random(2)
        names = sorted(self.ready)
        order: list[str] = []
        while len(order) < self.sizes.flips:
            rng.shuffle(names)
            order.extend(names[: self.sizes.flips - len(order)])
        # A pod is flipped at most once per round, and rounds are flipped one after another.
        rounds = [order[i : i + len(names)] for i in range(0, len(order), len(names))]
        for names_of_round in rounds:

            async def flip(name: str) -> None:
                self.ready[name] = not self.ready[name]
                await o.set_ready(self.kube, self.ns, name, self.ready[name],
                                  at=f"2026-01-01T01:00:{len(order) % 60:02d}Z")  # fmt: skip

            await self._each(names_of_round, flip)

    async def deletions(self) -> None:
        names = sorted(self.ready)
        random.Random(3).shuffle(names)
        doomed = names[: self.sizes.deletions]

        async def delete(name: str) -> None:
            await self.kube.delete(
                f"/api/v1/namespaces/{self.ns}/pods/{name}",
                {"apiVersion": "v1", "kind": "DeleteOptions", "gracePeriodSeconds": 0},
            )
            del self.ready[name]

        await self._each(doomed, delete)

    def expected(self, pair: int) -> dict[str, bool]:
        return {n: self.ready[n] for n in self.pod_names(pair) if n in self.ready}

    async def settled(self) -> bool:
        """Both writers publish exactly the expected endpoints for every pair."""
        items = (await self.kube.get(
            f"/apis/discovery.k8s.io/v1/namespaces/{self.ns}/endpointslices"))["items"]  # fmt: skip
        by_service: dict[str, list[JSON]] = {}
        for item in items:
            labels = item["metadata"].get("labels") or {}
            by_service.setdefault(labels.get(LABEL_SERVICE_NAME, ""), []).append(item)
        for pair, names in enumerate(self.services):
            want = self.expected(pair)
            for service in names:
                view = o.endpoint_view(by_service.get(service, []))
                if {pod: bool(state[1]) for pod, state in view.items()} != want:
                    return False
        return True

    async def run(self, recorder: Recorder, timeout: float = 300.0) -> dict[str, PhaseResult]:
        results: dict[str, PhaseResult] = {}
        loop = asyncio.get_running_loop()
        for phase in PHASES:
            mark = len(recorder.events)
            await getattr(self, phase)()
            last_change = loop.time()
            deadline = last_change + timeout
            while not await self.settled():
                if loop.time() > deadline:
                    raise TimeoutError(f"the writers did not settle after {phase}")
                await asyncio.sleep(0.1)
            await asyncio.sleep(1.0)  # trailing writes (there should be none) are counted too
            await recorder.caught_up(
                self.kube, f"/apis/discovery.k8s.io/v1/namespaces/{self.ns}/endpointslices"
            )
            writes, converge = {}, {}
            for manager in self.managers:
                times = recorder.of(manager, mark)
                writes[manager] = len(times)
                converge[manager] = max(0.0, max(times, default=last_change) - last_change)
            results[phase] = PhaseResult(writes, converge)
        return results
