"""``endpointslice-operator demo``: the operator against the built-in API emulator, in-process.

Three simulated nodes in three zones, the example application (``deploy/examples/web.yaml``),
then the EndpointSlices and Endpoints it writes as a pod turns not-ready, the Deployment scales
to 120 pods (across the 100-per-slice boundary) and a hand-made Endpoints object is mirrored,
each step with the writes it cost. The emulator serves the EndpointSelector CRD, as a cluster
installed as README.md says (``deploy/crds/`` first). ``--keep-running`` leaves it up for
kubectl. The operator's flags apply too; ``--kubeconfig``, leader election and the metrics port
are the demo's own.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import signal
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TextIO

from endpointslice_operator.controller.operator import Operator
from endpointslice_operator.logging_setup import configure_logging
from endpointslice_operator.settings import ENV_PREFIX, Settings, SettingsError, load_settings
from endpointslice_operator.testing import Emulator, run_emulator

__all__ = ["main"]

NAMESPACE = "demo"
SERVICE = "web"
NODE_COUNT = 3
POD_START_DELAY = 0.2
CONVERGENCE_TIMEOUT = 60.0
LABEL_SERVICE_NAME = "kubernetes.io/service-name"
ENDPOINT_ROWS = 12
"""Slices with at most this many endpoints are printed endpoint by endpoint."""
ENABLED_ANNOTATION = "endpointslice-operator.io/enabled"
SELECTOR_ANNOTATION = "endpointslice-operator.io/selector"
ENDPOINT_SELECTOR_GROUP = "endpointslice-operator.io"
"""The EndpointSelector CRD's API group (deploy/crds/endpointselectors...yaml)."""


def _deployment(replicas: int) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": SERVICE, "namespace": NAMESPACE, "labels": {"app": SERVICE}},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": SERVICE}},
            "template": {
                "metadata": {"labels": {"app": SERVICE, "tier": "frontend"}},
                "spec": {
                    "terminationGracePeriodSeconds": 5,
                    "containers": [
                        {
                            "name": SERVICE,
                            "image": "registry.k8s.io/e2e-test-images/agnhost:2.53",
                            "args": ["netexec", "--http-port=8080"],
                            "ports": [{"name": "http", "containerPort": 8080}],
                        }
                    ],
                },
            },
        },
    }


def _service(annotation_prefix: str) -> dict[str, Any]:
    # Selectorless, so kube-controller-manager would leave it alone; the operator selects the
    # pods through the selector annotation.
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {
            "name": SERVICE,
            "namespace": NAMESPACE,
            "annotations": {
                f"{annotation_prefix}/enabled": "true",
                f"{annotation_prefix}/selector": "app=web,tier in (frontend)",
                f"{annotation_prefix}/endpoints": "true",
            },
        },
        "spec": {
            "ports": [{"name": "http", "port": 80, "targetPort": "http", "protocol": "TCP"}],
        },
    }


MIRRORED = "db"
"""The demo's selectorless Service whose slices mirror a hand-made Endpoints object."""


def _mirrored_service(annotation_prefix: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {
            "name": MIRRORED,
            "namespace": NAMESPACE,
            "annotations": {
                f"{annotation_prefix}/enabled": "true",
                f"{annotation_prefix}/source": "endpoints",
            },
        },
        "spec": {"ports": [{"name": "pg", "port": 5432, "protocol": "TCP"}]},
    }


def _mirrored_endpoints() -> dict[str, Any]:
    # Labelled skip-mirror so that kube-controller-manager's mirroring (on a real cluster)
    # leaves it to the operator.
    return {
        "apiVersion": "v1",
        "kind": "Endpoints",
        "metadata": {
            "name": MIRRORED,
            "namespace": NAMESPACE,
            "labels": {"endpointslice.kubernetes.io/skip-mirror": "true"},
        },
        "subsets": [
            {
                "addresses": [{"ip": "192.0.2.10"}, {"ip": "192.0.2.11"}],
                "notReadyAddresses": [{"ip": "192.0.2.12"}],
                "ports": [{"name": "pg", "port": 5432, "protocol": "TCP"}],
            }
        ],
    }


def render_endpoints_object(emu: Emulator, name: str = SERVICE) -> str:
    """One line about the Service's core/v1 Endpoints object."""
    obj = emu.store.get("endpoints", NAMESPACE, name)
    if obj is None:
        return f"Endpoints {NAMESPACE}/{name}: none"
    subsets = obj.get("subsets") or []
    ready = sum(len(s.get("addresses") or []) for s in subsets)
    not_ready = sum(len(s.get("notReadyAddresses") or []) for s in subsets)
    labels = obj["metadata"].get("labels") or {}
    return (
        f"Endpoints {NAMESPACE}/{name} (core/v1): {ready} ready, {not_ready} not ready "
        f"addresses; managed-by {labels.get('endpointslice.kubernetes.io/managed-by')}"
    )


def _endpoints_object_ready(emu: Emulator) -> int:
    obj = emu.store.get("endpoints", NAMESPACE, SERVICE)
    return sum(len(s.get("addresses") or []) for s in (obj or {}).get("subsets") or [])


def _slices(emu: Emulator, service: str = SERVICE) -> list[dict[str, Any]]:
    found = [
        s
        for s in emu.store.list("endpointslices", NAMESPACE)
        if (s["metadata"].get("labels") or {}).get(LABEL_SERVICE_NAME) == service
    ]
    return sorted(found, key=lambda s: s["metadata"]["name"])


def _endpoints(emu: Emulator) -> list[dict[str, Any]]:
    return [ep for s in _slices(emu) for ep in s.get("endpoints") or []]


def _yes(value: object) -> str:
    """yes / no, or - for a condition not set (mirrored endpoints carry only ``ready``)."""
    if value is None:
        return "-"
    return "yes" if value else "no"


UNSET_NOTE = "  (-: not set; kube-proxy reads an unset ready or serving as yes, terminating as no)"


def _count(conditions: list[dict[str, Any]], name: str) -> str:
    """A slice's summary of one condition, as its endpoint rows show it: how many say yes;
    ``-`` when none sets it; ``N (M -)`` when M of them leave it unset."""
    values = [c.get(name) for c in conditions]
    unset = sum(1 for v in values if v is None)
    if values and unset == len(values):
        return "-"
    yes = str(sum(1 for v in values if v))
    return f"{yes} ({unset} -)" if unset else yes


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
                _count(conditions, "ready"),
                _count(conditions, "serving"),
                _count(conditions, "terminating"),
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
            note = f"\n{UNSET_NOTE}" if any("-" in row[2:5] for row in ep_rows[1:]) else ""
            details.append(f"{s['metadata']['name']}:\n{_table(ep_rows)}{note}")
        else:
            zones: dict[str, int] = {}
            for ep in endpoints:
                zones[ep.get("zone") or "-"] = zones.get(ep.get("zone") or "-", 0) + 1
            by_zone = ", ".join(f"{zone} {count}" for zone, count in sorted(zones.items()))
            details.append(f"{s['metadata']['name']}: endpoints by zone: {by_zone}")
    return _table(rows) + "\n\n" + "\n".join(details)


def render_view(emu: Emulator) -> str:
    """The endpoint view of the demo's Service, as ``endpointslice-operator endpoints`` shows
    it: every slice merged, one row per (service port, ready address)."""
    from endpointslice_operator.commands.endpoints import render_table
    from endpointslice_operator.view import EndpointView, ServiceFilter

    view = EndpointView(
        service_filter=ServiceFilter(namespace=NAMESPACE, services=frozenset({SERVICE}))
    )
    for service in emu.store.list("services", NAMESPACE):
        view.apply_service(service)
    for endpoint_slice in _slices(emu):
        view.apply_slice(endpoint_slice)
    return render_table(view.snapshot())


class _Step:
    """Counts the EndpointSlice writes made since the previous step."""

    def __init__(self, emu: Emulator) -> None:
        self.emu = emu
        self.seen = self._counts()

    def _counts(self) -> dict[str, int]:
        return {
            f"{resource}/{verb}": self.emu.requests.count(verb=verb, resource=resource)
            for verb in ("create", "update", "delete")
            for resource in ("endpointslices", "endpoints")
        }

    def writes(self) -> str:
        now = self._counts()
        delta = {key: now[key] - self.seen[key] for key in now}
        self.seen = now
        slices = {k.split("/")[1]: v for k, v in delta.items() if k.startswith("endpointslices/")}
        endpoints = {k.split("/")[1]: v for k, v in delta.items() if k.startswith("endpoints/")}
        return (
            f"API writes for this step: {slices['create']} create (POST), "
            f"{slices['update']} update (PUT), {slices['delete']} delete"
            f"; Endpoints: {endpoints['create']} create, {endpoints['update']} update, "
            f"{endpoints['delete']} delete"
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


def _pods(emu: Emulator) -> list[dict[str, Any]]:
    found = emu.store.list("pods", NAMESPACE, label_selector=f"app={SERVICE}")
    return sorted(
        (p for p in found if not p["metadata"].get("deletionTimestamp")),
        key=lambda p: p["metadata"]["name"],
    )


def _ready_endpoints(emu: Emulator) -> int:
    return sum(1 for ep in _endpoints(emu) if (ep.get("conditions") or {}).get("ready"))


async def run_demo(
    settings: Settings, keep_running: bool, out: TextIO, kubeconfig: Path | None = None
) -> None:
    """The demo's three steps (see the module docstring), with ``settings`` for the operator
    (its kubeconfig, leader election and metrics port are replaced by the demo's). The
    emulator's kubeconfig is written to ``kubeconfig`` (default: a temporary file)."""
    async with run_emulator(
        nodes=NODE_COUNT, pod_start_delay=POD_START_DELAY, kubeconfig_path=kubeconfig
    ) as emu:
        # The cluster as README.md installs the operator: the EndpointSelector CRD applied
        # first (deploy/crds/), so the operator serves the kind as it would there.
        emu.store.registry.unserved.discard(ENDPOINT_SELECTOR_GROUP)
        emu.store.create_namespace(NAMESPACE)
        emu.store.create(_service(settings.annotation_prefix))
        emu.store.create(_deployment(5))
        settings = settings.model_copy(
            update={
                "kubeconfig": Path(emu.kubeconfig_path),
                "leader_election": False,
                "metrics_port": 0,
            }
        )
        operator = Operator(settings, serve_health=False)
        task = asyncio.create_task(operator.run())
        step = _Step(emu)
        try:
            await operator.wait_leading()
            await _converge(
                operator, lambda: _ready_endpoints(emu) == 5 == _endpoints_object_ready(emu)
            )
            _header(out, f"Deployment {NAMESPACE}/{SERVICE} with 5 ready pods on 3 nodes")
            out.write(render_slices(_slices(emu)) + "\n" + render_endpoints_object(emu) + "\n")
            out.write(step.writes() + "\n")

            unready = _pods(emu)[2]
            name = unready["metadata"]["name"]
            emu.store.patch(
                "pods",
                NAMESPACE,
                name,
                {"status": {"conditions": [{"type": "Ready", "status": "False"}]}},
                patch_type="strategic",
                subresource="status",
            )
            await _converge(
                operator, lambda: _ready_endpoints(emu) == 4 == _endpoints_object_ready(emu)
            )
            _header(out, f"{name} is no longer ready")
            out.write(render_slices(_slices(emu)) + "\n" + render_endpoints_object(emu) + "\n")
            out.write(step.writes() + "\n")
            out.write(
                f"\nThe endpoint view, all slices merged "
                f"(endpointslice-operator endpoints -n {NAMESPACE} --service {SERVICE}):\n"
                + render_view(emu)
            )

            emu.store.patch(
                "deployments",
                NAMESPACE,
                SERVICE,
                {"spec": {"replicas": 120}},
            )
            await _converge(
                operator,
                lambda: (
                    len(_endpoints(emu)) == 120
                    and _ready_endpoints(emu) == 119 == _endpoints_object_ready(emu)
                ),
            )
            _header(out, "Scaled to 120 pods (at most 100 endpoints per slice)")
            out.write(render_slices(_slices(emu)) + "\n" + render_endpoints_object(emu) + "\n")
            out.write(step.writes() + "\n")

            emu.store.create(_mirrored_endpoints())
            emu.store.create(_mirrored_service(settings.annotation_prefix))
            await _converge(
                operator,
                lambda: sum(len(s.get("endpoints") or []) for s in _slices(emu, MIRRORED)) == 3,
            )
            _header(
                out,
                f"Service {NAMESPACE}/{MIRRORED} with source: endpoints, mirroring a hand-made "
                "Endpoints object",
            )
            out.write(render_slices(_slices(emu, MIRRORED)) + "\n" + step.writes() + "\n")

            if keep_running:
                kubectl = f"kubectl -n {NAMESPACE}"
                out.write(
                    f"\nThe emulator serves the API at {emu.url} with {NODE_COUNT} simulated "
                    "nodes; the operator keeps running.\n"
                    f"  export KUBECONFIG={emu.kubeconfig_path}\n"
                    f"Try:\n  {kubectl} get endpointslices -o wide -w\n"
                    f"  endpointslice-operator endpoints -n {NAMESPACE} --service {SERVICE} "
                    "--watch   (the endpoint view, one line per change)\n"
                    f"  {kubectl} scale deployment {SERVICE} --replicas 3\n"
                    f"  {kubectl} rollout restart deployment {SERVICE}   (terminating endpoints "
                    "stay serving for the grace period)\n"
                    f"  {kubectl} annotate service {SERVICE} "
                    f"{settings.annotation_prefix}/enabled-   (opt out: the slices go away)\n"
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


DEMO_FLAGS_NOTE = """\
The demo also takes the operator's flags (see 'endpointslice-operator run --help'), for
example --log-level debug or --max-endpoints-per-slice 50; its --kubeconfig, leader election
and metrics port are its own. Without --log-level (or ENDPOINTSLICE_OPERATOR_LOG_LEVEL) only
warnings are logged, to keep the tables readable.
"""


def main(argv: Sequence[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="endpointslice-operator demo",
        description="Run the operator against the built-in API emulator (3 simulated nodes, "
        "the example Deployment and Service) and show the EndpointSlices it writes.",
        epilog=DEMO_FLAGS_NOTE,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--keep-running",
        action="store_true",
        help="keep the emulator and the operator up afterwards (for kubectl) until Ctrl-C",
    )
    parser.add_argument(
        "--write-kubeconfig",
        metavar="PATH",
        type=Path,
        default=None,
        help="with --keep-running: where to write the emulator's kubeconfig "
        "(default: ./demo.kubeconfig)",
    )
    args, rest = parser.parse_known_args(list(argv))
    kubeconfig: Path | None = args.write_kubeconfig
    if args.keep_running and kubeconfig is None:
        kubeconfig = Path("demo.kubeconfig")
    if kubeconfig is not None:
        kubeconfig = kubeconfig.absolute()
    try:
        settings = load_settings(rest, os.environ)
    except SettingsError as exc:
        for line in str(exc).splitlines():
            sys.stderr.write(f"endpointslice-operator demo: {line}\n")
        return 2
    explicit_level = "--log-level" in " ".join(rest) or f"{ENV_PREFIX}LOG_LEVEL" in os.environ
    configure_logging(settings.log_format, settings.log_level if explicit_level else "warning")
    try:
        asyncio.run(run_demo(settings, args.keep_running, sys.stdout, kubeconfig))
    except KeyboardInterrupt:
        pass
    except Exception as exc:
        sys.stderr.write(f"endpointslice-operator demo: {exc}\n")
        return 1
    return 0
