"""``endpointslice-operator demo``: the operator against the built-in API emulator, in-process.

Creates a namespace, three nodes in two zones, an opted-in Service and five pods, runs the
operator, and prints the EndpointSlices it writes: first as they are, then after one pod turns
not-ready, then after scaling to 120 pods (across the 100-endpoints-per-slice boundary),
each time with the API writes that step cost. ``--keep-running`` then leaves the emulator and
the operator up for kubectl until Ctrl-C.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import signal
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TextIO

from endpointslice_operator.controller.operator import Operator
from endpointslice_operator.settings import Settings
from endpointslice_operator.testing import Emulator, run_emulator
from endpointslice_operator.testing.objects import running_pod

__all__ = ["main"]

NAMESPACE = "demo"
SERVICE = "web"
NODES = (("node-a1", "zone-a"), ("node-a2", "zone-a"), ("node-b1", "zone-b"))
CONVERGENCE_TIMEOUT = 30.0
LABEL_SERVICE_NAME = "kubernetes.io/service-name"
ENDPOINT_ROWS = 12
"""Slices with at most this many endpoints are printed endpoint by endpoint."""


def _node(name: str, zone: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "labels": {"kubernetes.io/hostname": name, "topology.kubernetes.io/zone": zone},
        },
        "status": {
            "allocatable": {"cpu": "4", "memory": "16Gi", "pods": "110"},
            "conditions": [{"type": "Ready", "status": "True"}],
        },
    }


def _service() -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {
            "name": SERVICE,
            "namespace": NAMESPACE,
            "annotations": {"endpointslice-operator.io/enabled": "true"},
        },
        "spec": {
            "selector": {"app": SERVICE},
            "ports": [{"name": "http", "port": 80, "targetPort": "http", "protocol": "TCP"}],
        },
    }


def _pod(index: int) -> dict[str, Any]:
    return running_pod(
        f"{SERVICE}-{index}",
        NAMESPACE,
        {"app": SERVICE},
        f"10.244.{index // 250}.{index % 250 + 2}",
        NODES[index % len(NODES)][0],
        image="registry.example/web:1.0",
    )


def _slices(emu: Emulator) -> list[dict[str, Any]]:
    found = [
        s
        for s in emu.store.list("endpointslices", NAMESPACE)
        if (s["metadata"].get("labels") or {}).get(LABEL_SERVICE_NAME) == SERVICE
    ]
    return sorted(found, key=lambda s: s["metadata"]["name"])


def _endpoints(emu: Emulator) -> list[dict[str, Any]]:
    return [ep for s in _slices(emu) for ep in s.get("endpoints") or []]


def _yes(value: object) -> str:
    return "yes" if value else "no"


def _table(rows: list[list[str]]) -> str:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return "\n".join(
        "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip()
        for row in rows
    )


def render_slices(slices: list[dict[str, Any]]) -> str:
    """The slices as a table: one row per slice, then its endpoints when there are few."""
    rows = [["NAME", "ADDRESS TYPE", "PORTS", "ENDPOINTS", "READY", "SERVING", "TERMINATING"]]
    details: list[str] = []
    for s in slices:
        endpoints = s.get("endpoints") or []
        ports = ",".join(
            f"{p.get('name') or '-'}:{p.get('port')}/{p.get('protocol', 'TCP')}"
            for p in s.get("ports") or []
        )
        conditions = [ep.get("conditions") or {} for ep in endpoints]
        rows.append(
            [
                s["metadata"]["name"],
                s["addressType"],
                ports or "<none>",
                str(len(endpoints)),
                str(sum(1 for c in conditions if c.get("ready"))),
                str(sum(1 for c in conditions if c.get("serving"))),
                str(sum(1 for c in conditions if c.get("terminating"))),
            ]
        )
        if len(endpoints) <= ENDPOINT_ROWS:
            ep_rows = [["  ENDPOINT", "POD", "READY", "SERVING", "TERMINATING", "ZONE"]]
            for ep in endpoints:
                c = ep.get("conditions") or {}
                ep_rows.append(
                    [
                        "  " + ",".join(ep.get("addresses") or []),
                        (ep.get("targetRef") or {}).get("name", ""),
                        _yes(c.get("ready")),
                        _yes(c.get("serving")),
                        _yes(c.get("terminating")),
                        ep.get("zone") or "",
                    ]
                )
            details.append(f"{s['metadata']['name']}:\n{_table(ep_rows)}")
        else:
            zones: dict[str, int] = {}
            for ep in endpoints:
                zones[ep.get("zone") or "-"] = zones.get(ep.get("zone") or "-", 0) + 1
            by_zone = ", ".join(f"{zone} {count}" for zone, count in sorted(zones.items()))
            details.append(f"{s['metadata']['name']}: endpoints by zone: {by_zone}")
    return _table(rows) + "\n\n" + "\n".join(details)


class _Step:
    """Counts the EndpointSlice writes made since the previous step."""

    def __init__(self, emu: Emulator) -> None:
        self.emu = emu
        self.seen = self._counts()

    def _counts(self) -> dict[str, int]:
        return {
            verb: self.emu.requests.count(verb=verb, resource="endpointslices")
            for verb in ("create", "update", "delete")
        }

    def writes(self) -> str:
        now = self._counts()
        delta = {verb: now[verb] - self.seen[verb] for verb in now}
        self.seen = now
        return (
            f"API writes for this step: {delta['create']} create (POST), "
            f"{delta['update']} update (PUT), {delta['delete']} delete"
        )


async def _converge(operator: Operator, check: Callable[[], bool]) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + CONVERGENCE_TIMEOUT
    while not check():
        if loop.time() > deadline:
            raise TimeoutError("the operator did not converge in time")
        await asyncio.sleep(0.05)
    # let any trailing events settle, so the write counts are final
    await asyncio.sleep(0.3)
    if operator.queue is not None:
        await operator.queue.wait_idle()


def _header(out: TextIO, text: str) -> None:
    out.write(f"\n=== {text} ===\n")


async def run_demo(keep_running: bool, out: TextIO) -> None:
    async with run_emulator() as emu:
        emu.store.create_namespace(NAMESPACE)
        for name, zone in NODES:
            emu.store.create(_node(name, zone))
        emu.store.create(_service())
        for i in range(5):
            emu.store.create(_pod(i))
        settings = Settings(
            kubeconfig=Path(emu.kubeconfig_path), leader_election=False, metrics_port=0
        )
        operator = Operator(settings, serve_health=False)
        task = asyncio.create_task(operator.run())
        step = _Step(emu)
        try:
            await operator.wait_leading()
            await _converge(operator, lambda: len(_endpoints(emu)) == 5)
            _header(out, "Service demo/web with 5 ready pods")
            out.write(render_slices(_slices(emu)) + "\n" + step.writes() + "\n")

            pod = emu.store.get("pods", NAMESPACE, f"{SERVICE}-2")
            assert pod is not None
            pod["status"]["conditions"][0].update(
                status="False", lastTransitionTime="2026-01-01T00:05:00Z"
            )
            emu.store.update(pod, subresource="status")
            await _converge(
                operator,
                lambda: any(
                    not (ep.get("conditions") or {}).get("ready")
                    and (ep.get("targetRef") or {}).get("name") == f"{SERVICE}-2"
                    for ep in _endpoints(emu)
                ),
            )
            _header(out, "web-2 is no longer ready")
            out.write(render_slices(_slices(emu)) + "\n" + step.writes() + "\n")

            for i in range(5, 120):
                emu.store.create(_pod(i))
            await _converge(operator, lambda: len(_endpoints(emu)) == 120)
            _header(out, "Scaled to 120 pods (at most 100 endpoints per slice)")
            out.write(render_slices(_slices(emu)) + "\n" + step.writes() + "\n")

            if keep_running:
                kubectl = f"kubectl --kubeconfig {emu.kubeconfig_path} -n {NAMESPACE}"
                out.write(
                    f"\nThe emulator serves the API at {emu.url}; the operator keeps running.\n"
                    f"Try:\n  {kubectl} get endpointslices -o yaml\n"
                    f"  {kubectl} delete pod {SERVICE}-7   (and watch the slices follow)\n"
                    f"  {kubectl} annotate service {SERVICE} "
                    "endpointslice-operator.io/enabled-   (opt out: the slices go away)\n"
                    "Press Ctrl-C to stop.\n"
                )
                out.flush()
                stop = asyncio.Event()
                loop = asyncio.get_running_loop()
                for signum in (signal.SIGINT, signal.SIGTERM):
                    loop.add_signal_handler(signum, stop.set)
                waiter = asyncio.create_task(stop.wait())
                await asyncio.wait({waiter, task}, return_when=asyncio.FIRST_COMPLETED)
                waiter.cancel()
        finally:
            operator.stop()
            with contextlib.suppress(asyncio.CancelledError):
                await task


def main(argv: Sequence[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="endpointslice-operator demo",
        description="Run the operator against the built-in API emulator and show what it does.",
    )
    parser.add_argument(
        "--keep-running",
        action="store_true",
        help="keep the emulator and the operator up afterwards (for kubectl) until Ctrl-C",
    )
    args = parser.parse_args(list(argv))
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    try:
        asyncio.run(run_demo(args.keep_running, sys.stdout))
    except KeyboardInterrupt:
        pass
    except Exception as exc:
        sys.stderr.write(f"endpointslice-operator demo: {exc}\n")
        return 1
    return 0
