"""What "converged" means, checked from the emulator's state alone.

Nothing here asks the operator: the expected slices are recomputed from scratch with the pure
reconciler on the objects the API server holds, and opt-in and selectors are evaluated with the
emulator's own label-selector parser (an implementation independent of the operator's).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from endpointslice_operator.reconciler import (
    ReconcilerConfig,
    plan_endpoints,
    plan_mirroring,
    plan_service,
)
from endpointslice_operator.testing import Emulator
from endpointslice_operator.testing.selectors import (
    parse_label_selector,
    selector_from_match_labels,
)

MANAGED_BY = "endpointslice-operator.io"
ENABLED = "endpointslice-operator.io/enabled"
SELECTOR = "endpointslice-operator.io/selector"
ENDPOINTS = "endpointslice-operator.io/endpoints"
SOURCE = "endpointslice-operator.io/source"
SKIP_MIRROR = "endpointslice.kubernetes.io/skip-mirror"
CONTROLLER_NAME_LABEL = "service.kubernetes.io/endpoint-controller-name"
LABEL_SERVICE_NAME = "kubernetes.io/service-name"
LABEL_MANAGED_BY = "endpointslice.kubernetes.io/managed-by"
ENDPOINTS_MANAGED_BY = "endpoints.kubernetes.io/managed-by"
WRITE_VERBS = ("create", "update", "patch", "delete", "deletecollection")

JSON = dict[str, Any]


def labels_of(obj: Mapping[str, Any]) -> Mapping[str, str]:
    return obj.get("metadata", {}).get("labels") or {}


def annotations_of(obj: Mapping[str, Any]) -> Mapping[str, str]:
    return obj.get("metadata", {}).get("annotations") or {}


def opted_in(service: Mapping[str, Any], managed_by: str = MANAGED_BY) -> bool:
    named = labels_of(service).get(CONTROLLER_NAME_LABEL)
    if named is not None:
        return named == managed_by
    return annotations_of(service).get(ENABLED) == "true"


def source(service: Mapping[str, Any]) -> str:
    """``pods`` unless an opted-in Service names another address source."""
    if not opted_in(service):
        return "pods"
    return annotations_of(service).get(SOURCE, "pods")


def mirrors(service: Mapping[str, Any]) -> bool:
    """An opted-in selectorless Service, without the selector annotation, mirroring its
    Endpoints object."""
    return (
        source(service) == "endpoints"
        and not (service.get("spec") or {}).get("selector")
        and SELECTOR not in annotations_of(service)
    )


def selected_pods(emu: Emulator, service: Mapping[str, Any]) -> list[JSON] | None:
    """The pods a managed Service selects, or None when it is not managed at all."""
    spec = service.get("spec") or {}
    if not opted_in(service) or spec.get("type") == "ExternalName" or source(service) != "pods":
        return None
    if spec.get("selector"):
        selector = selector_from_match_labels({"matchLabels": spec["selector"]})
    elif SELECTOR in annotations_of(service):
        selector = parse_label_selector(annotations_of(service)[SELECTOR])
    else:
        return None
    namespace = service["metadata"]["namespace"]
    return [p for p in emu.store.list("pods", namespace) if selector.matches(labels_of(p))]


def is_ours(obj: Mapping[str, Any]) -> bool:
    return labels_of(obj).get(LABEL_MANAGED_BY) == MANAGED_BY


def our_endpoints(emu: Emulator) -> dict[tuple[str, str], JSON]:
    """The core/v1 Endpoints objects the operator wrote."""
    return {
        (e["metadata"]["namespace"], e["metadata"]["name"]): e
        for e in emu.store.list("endpoints")
        if is_ours(e)
    }


def our_slices(emu: Emulator, namespace: str | None = None) -> list[JSON]:
    return [
        s
        for s in emu.store.list("endpointslices", namespace)
        if labels_of(s).get(LABEL_MANAGED_BY) == MANAGED_BY
        and not s["metadata"].get("deletionTimestamp")
    ]


@dataclass
class Report:
    """Everything wrong with the current state (empty lists: converged)."""

    pending_writes: dict[str, int] = field(default_factory=dict)
    duplicates: list[str] = field(default_factory=list)
    orphans: list[str] = field(default_factory=list)
    managed: int = 0

    @property
    def ok(self) -> bool:
        return not (self.pending_writes or self.duplicates or self.orphans)

    def __str__(self) -> str:
        return (
            f"pending writes {self.pending_writes}, duplicates {self.duplicates[:5]}, "
            f"orphans {self.orphans[:5]}"
        )


def duplicate_endpoints(slices: Iterable[Mapping[str, Any]]) -> list[str]:
    """Addresses that appear more than once within one (address type, ports) group."""
    seen: Counter[tuple[str, str, str]] = Counter()
    for endpoint_slice in slices:
        ports = repr(
            sorted(
                (p.get("name") or "", p.get("protocol") or "", p.get("port") or 0)
                for p in endpoint_slice.get("ports") or []
            )
        )
        for endpoint in endpoint_slice.get("endpoints") or []:
            for address in endpoint.get("addresses") or []:
                seen[(endpoint_slice["addressType"], ports, address)] += 1
    return [f"{kind} {ports} {address}" for (kind, ports, address), n in seen.items() if n > 1]


def check(emu: Emulator, config: ReconcilerConfig | None = None) -> Report:
    """Compare every Service's slices with a fresh plan, and look for strays."""
    config = config or ReconcilerConfig(controller_name=MANAGED_BY)
    report = Report()
    nodes = {n["metadata"]["name"]: n for n in emu.store.list("nodes")}
    slices_by_service: dict[tuple[str, str], list[JSON]] = {}
    for endpoint_slice in our_slices(emu):
        key = (
            endpoint_slice["metadata"]["namespace"],
            labels_of(endpoint_slice).get(LABEL_SERVICE_NAME, ""),
        )
        slices_by_service.setdefault(key, []).append(endpoint_slice)
    managed: set[tuple[str, str]] = set()
    endpoints_wanted: set[tuple[str, str]] = set()
    ours_endpoints = our_endpoints(emu)
    for service in emu.store.list("services"):
        key = (service["metadata"]["namespace"], service["metadata"]["name"])
        existing = slices_by_service.get(key, [])
        if source(service) != "pods":
            managed.add(key)  # no writes when the source conflicts: its slices stay
            if mirrors(service):
                found = emu.store.get("endpoints", *key) or {
                    "metadata": {"namespace": key[0], "name": key[1]}
                }
                plan, _ = plan_mirroring(found, existing, config, adopt=False)
                if plan.write_count:
                    report.pending_writes["/".join(key)] = plan.write_count
            continue
        pods = selected_pods(emu, service)
        if pods is None:
            continue
        managed.add(key)
        plan = plan_service(service, pods, nodes, existing, config)
        if plan.write_count:
            report.pending_writes["/".join(key)] = plan.write_count
        report.duplicates.extend(f"{'/'.join(key)}: {d}" for d in duplicate_endpoints(existing))
        if annotations_of(service).get(ENDPOINTS) == "true":
            endpoints_wanted.add(key)
            current = emu.store.get("endpoints", *key)
            if current is not None and not is_ours(current):
                continue  # someone else's: never written
            wanted = plan_endpoints(
                service,
                pods,
                current,
                extra_labels={
                    SKIP_MIRROR: "true",
                    LABEL_MANAGED_BY: MANAGED_BY,
                    ENDPOINTS_MANAGED_BY: MANAGED_BY,
                },
            )
            if wanted.action != "none":
                report.pending_writes["/".join(key) + " (Endpoints)"] = 1
    report.managed = len(managed)
    for key, owned in slices_by_service.items():
        if key not in managed:
            report.orphans.extend(f"{key[0]}/{s['metadata']['name']}" for s in owned)
    report.orphans.extend(
        f"Endpoints {'/'.join(key)}" for key in ours_endpoints if key not in endpoints_wanted
    )
    return report


def foreign_writes(
    emu: Emulator,
    foreign: Mapping[tuple[str, str], str],
    resource: str = "endpointslices",
) -> list[str]:
    """Write requests that named a foreign object of ``resource`` (``{(namespace, name):
    resourceVersion}``), plus foreign objects whose stored version changed or that
    disappeared. (The tests' own mutations go through the store, not HTTP.)"""
    hits = [
        f"{r.verb} {r.namespace}/{r.name} -> {r.code}"
        for r in emu.requests
        if r.resource == resource
        and r.verb in WRITE_VERBS
        and ((r.namespace, r.name) in foreign or r.verb == "deletecollection")
    ]
    for (namespace, name), version in foreign.items():
        current = emu.store.get(resource, namespace, name)
        if current is None or current["metadata"]["resourceVersion"] != version:
            hits.append(f"{namespace}/{name} changed")
    return hits
