"""``endpointslice-operator plan``: the EndpointSlice writes the operator would make, offline.

Reads Services, Pods, Nodes and EndpointSlices from YAML or JSON manifests (multi-document
files, ``kind: List`` and typed lists such as ``PodList`` included), plans every Service (or
the ones named with ``--service``) exactly as the operator's sync does, and prints the result
(with the core/v1 Endpoints objects it would write, shown as ``endpoints <namespace>/<name>``,
and slices mirrored from Endpoints manifests for ``<prefix>/source: endpoints``):

* ``-o yaml`` (default): one document per write, each preceded by a comment line
  ``# create|update|delete <namespace>/<name or generateName>``;
* ``-o diff``: a unified diff, per write, from the existing slice to the one written;
* ``-o summary``: one line per Service with its counts;
* ``-o view``: the endpoint view once the writes are applied (every slice of each Service,
  whoever manages it, merged as kube-proxy merges them: see docs/view.md).

Notes for a Service (pods skipped for a missing node, topology events, a Service that is not
opted in, the address source of a Service on a secondary network and the pods it leaves out)
go to standard error, so standard output stays a clean document stream. ResourceClaims in the
input feed the ``<prefix>/device-network`` source; pods' network-status annotations the
``<prefix>/network`` one.

EndpointSelectors (``endpointslice-operator.io/v1alpha1``) in the input are planned too, every
one unless ``--service`` or ``--endpoint-selector`` names what to plan; their keys read
``endpointselector:<namespace>/<name>``.

With ``--mcs-cluster ID=PATH`` (repeatable) the plan is of this cluster's Multi-Cluster
Services imports instead (:mod:`endpointslice_operator.commands.plan_mcs`); their keys read
``serviceimport:<namespace>/<name>``.

Exit status: 0 on success (with or without writes), 2 for bad usage or unreadable input, with
one error line on standard error.
"""

from __future__ import annotations

import argparse
import difflib
import sys
from collections.abc import Collection, Iterable, Mapping, Sequence
from typing import Any, Literal

import yaml
from pydantic import ValidationError

from endpointslice_operator.commands.manifests import (
    FAMILIES,
    InputError,
    Manifests,
    ServiceResult,
    apply_service_defaults,
    load_manifests,
)
from endpointslice_operator.controller.cache.indexes import PodIndex
from endpointslice_operator.controller.cache.optin import (
    ENDPOINT_CONTROLLER_NAME_LABEL as _CONTROLLER_NAME_LABEL,
)
from endpointslice_operator.controller.cache.optin import evaluate, is_opted_in
from endpointslice_operator.controller.cache.owner_kinds import ENDPOINT_SELECTOR
from endpointslice_operator.controller.endpoint_selector.index import (
    validate as validate_endpoint_selector,
)
from endpointslice_operator.controller.sync.decision import (
    REASON_OPT_IN_IGNORED,
    SOURCE_ENDPOINTS,
    Route,
    decide,
)
from endpointslice_operator.controller.sync.networks import (
    SOURCE_NETWORK,
    NetworkAnnotations,
    source_for,
)
from endpointslice_operator.reconciler import (
    ReconcilerConfig,
    plan_endpoints,
    plan_mirroring,
    plan_service,
)
from endpointslice_operator.reconciler.core_endpoints import our_endpoints_labels
from endpointslice_operator.reconciler.endpoint_selector import (
    LABEL_ENDPOINT_SELECTOR_NAME,
    plan_endpoint_selector,
)
from endpointslice_operator.reconciler.labels import LABEL_MANAGED_BY, LABEL_SERVICE_NAME
from endpointslice_operator.reconciler.records import pod_record
from endpointslice_operator.reconciler.sources import claim_statuses_of, network_status_of
from endpointslice_operator.reconciler.tracking.trigger_time import TriggerTimeTracker, parse_time

__all__ = ["main"]

DEFAULT_CONTROLLER_NAME = "endpointslice-operator.io"
DEFAULT_ANNOTATION_PREFIX = "endpointslice-operator.io"

# Fields the API server sets; left out of diffs so that they show what a write changes.
_SERVER_FIELDS = ("uid", "resourceVersion", "generation", "creationTimestamp", "managedFields")

Output = Literal["yaml", "diff", "summary", "view"]


# --- Planning ------------------------------------------------------------------------------


def _labels(obj: Mapping[str, Any]) -> Mapping[str, str]:
    labels = (obj.get("metadata") or {}).get("labels")
    return labels if isinstance(labels, Mapping) else {}


def _as_opted_in(service: Mapping[str, Any], enabled_annotation: str) -> dict[str, Any]:
    """The Service as if it carried the opt-in annotation (and named no other controller)."""
    metadata = dict(service.get("metadata") or {})
    annotations = dict(metadata.get("annotations") or {})
    annotations[enabled_annotation] = "true"
    metadata["annotations"] = annotations
    labels = dict(metadata.get("labels") or {})
    labels.pop(_CONTROLLER_NAME_LABEL, None)
    metadata["labels"] = labels
    return {**service, "metadata": metadata}


def _not_opted_in_note(
    service: Mapping[str, Any], enabled_annotation: str, near_miss: str | None
) -> str:
    other = _labels(service).get(_CONTROLLER_NAME_LABEL)
    if other is not None:
        why = f"its {_CONTROLLER_NAME_LABEL} label names {other!r}"
    elif near_miss is not None:
        why = "the near miss above"
    else:
        why = f'it has no {enabled_annotation}: "true" annotation'
    return f"not opted in ({why}); planned as if it were"


def _ours_by_service(
    manifests: Manifests, controller_name: str
) -> dict[tuple[str, str], list[dict[str, Any]]]:
    """The existing slices the operator would list, per Service, as its index files them:
    managed by ``controller_name``, labelled with a Service name, not being deleted."""
    ours: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for (namespace, _), endpoint_slice in manifests.slices.items():
        labels = _labels(endpoint_slice)
        service_name = labels.get(LABEL_SERVICE_NAME)
        if (
            isinstance(service_name, str)
            and labels.get(LABEL_MANAGED_BY) == controller_name
            and endpoint_slice["metadata"].get("deletionTimestamp") is None
        ):
            ours.setdefault((namespace, service_name), []).append(endpoint_slice)
    return ours


def plan_endpoint_selectors(
    manifests: Manifests,
    selectors: Iterable[tuple[str, str]],
    config: ReconcilerConfig,
    *,
    kep6116_labels: bool = True,
) -> list[ServiceResult]:
    """Plan each EndpointSelector as the operator's first sync of it would (an invalid spec:
    skipped, with the reasons its status condition would give)."""
    nodes = list(manifests.nodes.values())
    pod_index = _pod_index(manifests)
    results = []
    for namespace, name in selectors:
        body = manifests.endpoint_selectors[(namespace, name)]
        result = ServiceResult(ENDPOINT_SELECTOR.key(namespace, name))
        results.append(result)
        existing = [
            s
            for (slice_namespace, _), s in manifests.slices.items()
            if slice_namespace == namespace
            and _labels(s).get(LABEL_ENDPOINT_SELECTOR_NAME) == name
            and _labels(s).get(LABEL_MANAGED_BY) == config.controller_name
            and s["metadata"].get("deletionTimestamp") is None
        ]
        selector, problems = validate_endpoint_selector(body)
        if selector is None:
            result.skipped = problems[0][0]
            result.notes.extend(f"not publishing EndpointSlices: {m}" for _, m in problems)
            continue
        pods = pod_index.select(namespace, selector)
        trigger_time = TriggerTimeTracker().compute_trigger_time(
            namespace,
            name,
            parse_time((body.get("metadata") or {}).get("creationTimestamp")),
            {pod.name: parse_time(pod.ready_transition) for pod in pods},
        )
        plan = plan_endpoint_selector(
            body,
            pods,
            nodes,
            existing,
            config,
            trigger_time=trigger_time,
            kep6116_labels=kep6116_labels,
        )
        result.plan = plan
        result.writes = [
            *(("create", s) for s in plan.creates),
            *(("update", s) for s in plan.updates),
            *(("delete", s) for s in plan.deletes),
        ]
        result.notes.extend(f"error: {error}" for error in plan.errors)
    return results


def _pod_index(manifests: Manifests) -> PodIndex:
    """The pods in the operator's own index, so selection and pod projection are its own."""
    index = PodIndex()
    for (namespace, name), pod in manifests.pods.items():
        index.put(pod_record(pod))
        index.put_extras(namespace, name, network_status_of(pod), claim_statuses_of(pod))
    return index


def plan_manifests(
    manifests: Manifests,
    services: Iterable[tuple[str, str]],
    config: ReconcilerConfig,
    *,
    annotation_prefix: str,
    opted_in_only: bool,
    write_endpoints: bool = False,
    max_endpoints_per_subset: int = 1000,
) -> list[ServiceResult]:
    """Plan each Service as the operator's first sync of it would: its slices, from its pods or
    (``<prefix>/source: endpoints``) mirrored from its Endpoints object, and its core/v1
    Endpoints object when it asks for one (``<prefix>/endpoints`` or ``write_endpoints``)."""
    enabled_annotation = f"{annotation_prefix}/enabled"
    selector_annotation = f"{annotation_prefix}/selector"
    networks = NetworkAnnotations(
        f"{annotation_prefix}/network", f"{annotation_prefix}/device-network"
    )
    source_annotation = f"{annotation_prefix}/source"
    endpoints_annotation = f"{annotation_prefix}/endpoints"
    nodes = list(manifests.nodes.values())
    ours_by_service = _ours_by_service(manifests, config.controller_name)
    pod_index = _pod_index(manifests)
    results = []
    for namespace, name in services:
        service = manifests.services[(namespace, name)]
        result = ServiceResult(f"{namespace}/{name}")
        results.append(result)
        existing = ours_by_service.get((namespace, name), [])
        opted_in = is_opted_in(
            service, enabled_annotation=enabled_annotation, managed_by=config.controller_name
        )
        candidate = (
            service if opted_in or opted_in_only else _as_opted_in(service, enabled_annotation)
        )
        decision = evaluate(
            candidate,
            enabled_annotation=enabled_annotation,
            selector_annotation=selector_annotation,
            managed_by=config.controller_name,
        )
        verdict = decide(
            candidate, decision, source_annotation=source_annotation, networks=networks
        )
        if not opted_in:
            # The operator's own reading of the Service: a near miss of the opt-in is reported
            # with the sentence of its OptInIgnored Warning Event.
            as_is = decide(
                service,
                evaluate(
                    service,
                    enabled_annotation=enabled_annotation,
                    selector_annotation=selector_annotation,
                    managed_by=config.controller_name,
                ),
                source_annotation=source_annotation,
                networks=networks,
            )
            if as_is.near_miss is not None:
                result.notes.append(f"event Warning {REASON_OPT_IN_IGNORED}: {as_is.near_miss}")
            if not opted_in_only:
                result.notes.append(
                    _not_opted_in_note(service, enabled_annotation, as_is.near_miss)
                )
        elif verdict.near_miss is not None:
            result.notes.append(f"event Warning {REASON_OPT_IN_IGNORED}: {verdict.near_miss}")
        if verdict.route is Route.MIRROR:
            _plan_mirroring(
                result,
                candidate,
                manifests,
                existing,
                config,
                source=verdict.source,
                selector_annotation=selector_annotation,
                max_endpoints_per_subset=max_endpoints_per_subset,
            )
            continue
        if verdict.route in (Route.INVALID_SELECTOR, Route.INVALID_NETWORK):
            result.skipped = verdict.route.value
            result.notes.append(f"not publishing EndpointSlices: {verdict.error}")
            continue
        existing_endpoints = manifests.endpoints.get((namespace, name))
        ours_endpoints = (
            existing_endpoints is not None
            and _labels(existing_endpoints).get(LABEL_MANAGED_BY) == config.controller_name
        )
        if verdict.route is Route.UNMANAGED:
            # The operator deletes the slices it made for a Service that no longer qualifies.
            result.skipped = decision.status.value
            result.writes = [("delete", endpoint_slice) for endpoint_slice in existing]
            if ours_endpoints and existing_endpoints is not None:
                result.writes.append(("delete", existing_endpoints))
            continue
        choice = verdict.network
        address_source = None
        if choice is not None:
            address_source = source_for(
                choice, pod_index.network_statuses, pod_index.claim_statuses, manifests.claims
            )
            result.notes.append(
                f"addresses from the Multus network {choice.network} (pod network-status)"
                if choice.kind == SOURCE_NETWORK
                else f"addresses from the devices of pod claim {choice.claim}"
                + (f", request {choice.request}" if choice.request else "")
                + " (ResourceClaim status.devices[].networkData)"
            )
        selector = decision.selector
        assert selector is not None
        pods = pod_index.select(namespace, selector)
        trigger_time = TriggerTimeTracker().compute_trigger_time(
            namespace,
            name,
            parse_time((service.get("metadata") or {}).get("creationTimestamp")),
            {pod.name: parse_time(pod.ready_transition) for pod in pods},
        )
        try:
            plan = plan_service(
                service,
                pods,
                nodes,
                existing,
                config,
                trigger_time=trigger_time,
                source=address_source,
            )
        except (TypeError, ValueError, KeyError, AttributeError) as exc:
            raise InputError(
                f"Service {result.key}: cannot plan it from these manifests: {exc}"
            ) from None
        result.plan = plan
        result.writes = [
            *(("create", s) for s in plan.creates),
            *(("update", s) for s in plan.updates),
            *(("delete", s) for s in plan.deletes),
        ]
        result.notes.extend(f"error: {error}" for error in plan.errors)
        result.notes.extend(f"left out: {pod} ({reason})" for pod, reason in plan.left_out)
        result.notes.extend(
            f"event {event.type} {event.reason}: {event.message}" for event in plan.events
        )
        annotations = (candidate.get("metadata") or {}).get("annotations") or {}
        wants_endpoints = write_endpoints or annotations.get(endpoints_annotation) == "true"
        if existing_endpoints is not None and not ours_endpoints:
            if wants_endpoints:
                result.notes.append(
                    f"event Warning ConflictingEndpoints: an Endpoints object {result.key} not "
                    "written by the operator exists; not writing Endpoints"
                )
        elif wants_endpoints:
            endpoints_plan = plan_endpoints(
                service,
                pods,
                existing_endpoints,
                trigger_time=trigger_time,
                extra_labels=our_endpoints_labels(config.controller_name),
            )
            if endpoints_plan.endpoints is not None and endpoints_plan.action != "none":
                result.writes.append((endpoints_plan.action, endpoints_plan.endpoints))
        elif existing_endpoints is not None:
            result.writes.append(("delete", existing_endpoints))
    return results


def _plan_mirroring(
    result: ServiceResult,
    service: Mapping[str, Any],
    manifests: Manifests,
    existing: list[dict[str, Any]],
    config: ReconcilerConfig,
    *,
    source: str,
    selector_annotation: str,
    max_endpoints_per_subset: int,
) -> None:
    """``<prefix>/source: endpoints``: the slices mirrored from the Service's Endpoints."""
    if source != SOURCE_ENDPOINTS:
        result.skipped = "invalid source"
        result.notes.append(f"event Warning InvalidSource: source {source!r}; no writes")
        return
    metadata = service.get("metadata") or {}
    spec = service.get("spec") or {}
    if spec.get("selector") or selector_annotation in (metadata.get("annotations") or {}):
        result.skipped = "conflicting source"
        result.notes.append(
            "event Warning ConflictingSource: source endpoints needs a Service without "
            f"spec.selector and without {selector_annotation}; no writes"
        )
        return
    namespace, name = str(metadata.get("namespace") or ""), str(metadata.get("name") or "")
    endpoints = manifests.endpoints.get((namespace, name))
    if endpoints is None:
        result.notes.append("no Endpoints object in the input: nothing to mirror")
        endpoints = {"metadata": {"namespace": namespace, "name": name}}
    plan, _ = plan_mirroring(
        endpoints,
        existing,
        config,
        max_endpoints_per_subset=max_endpoints_per_subset,
        adopt=False,
    )
    result.plan = plan
    result.writes = [
        *(("create", s) for s in plan.creates),
        *(("update", s) for s in plan.updates),
        *(("delete", s) for s in plan.deletes),
    ]
    result.notes.append(f"mirrored from Endpoints {namespace}/{name}")
    result.notes.extend(
        f"event {event.type} {event.reason}: {event.message}" for event in plan.events
    )


# --- Output --------------------------------------------------------------------------------


def _is_endpoints(obj: Mapping[str, Any]) -> bool:
    return obj.get("kind") == "Endpoints"


def _slice_ref(endpoint_slice: Mapping[str, Any]) -> str:
    """``namespace/name`` of a slice; ``<kind> namespace/name`` for another object
    (``endpoints``, ``service``, ``serviceimport``, ``serviceexport``)."""
    metadata = endpoint_slice.get("metadata") or {}
    name = metadata.get("name") or metadata.get("generateName") or ""
    kind = str(endpoint_slice.get("kind") or "EndpointSlice")
    prefix = "" if kind == "EndpointSlice" else f"{kind.lower()} "
    return f"{prefix}{metadata.get('namespace', '')}/{name}"


def _deletion(endpoint_slice: Mapping[str, Any]) -> dict[str, Any]:
    metadata = endpoint_slice.get("metadata") or {}
    endpoints = _is_endpoints(endpoint_slice)
    return {
        "apiVersion": endpoint_slice.get("apiVersion")
        or ("v1" if endpoints else "discovery.k8s.io/v1"),
        "kind": endpoint_slice.get("kind") or "EndpointSlice",
        "metadata": {"name": metadata.get("name"), "namespace": metadata.get("namespace")},
    }


def _dump(document: Mapping[str, Any], *, sort_keys: bool = False) -> str:
    return yaml.safe_dump(dict(document), sort_keys=sort_keys, default_flow_style=False)


def _without_server_fields(endpoint_slice: Mapping[str, Any]) -> dict[str, Any]:
    metadata = {
        key: value
        for key, value in (endpoint_slice.get("metadata") or {}).items()
        if key not in _SERVER_FIELDS
    }
    return {**endpoint_slice, "metadata": metadata}


def render_yaml(results: Sequence[ServiceResult]) -> str:
    documents = []
    for result in results:
        for operation, endpoint_slice in result.writes:
            body = _deletion(endpoint_slice) if operation == "delete" else endpoint_slice
            documents.append(f"# {operation} {_slice_ref(endpoint_slice)}\n{_dump(body)}")
    return "---\n".join(documents)


def render_diff(results: Sequence[ServiceResult], manifests: Manifests) -> str:
    chunks = []
    for result in results:
        for index, (operation, endpoint_slice) in enumerate(result.writes):
            metadata = endpoint_slice.get("metadata") or {}
            ref = _slice_ref(endpoint_slice).replace(" ", ":")
            if operation == "status":
                ref += "/status"
            before: Mapping[str, Any] | None = result.previous.get(index)
            if before is None and operation != "create":
                key = (str(metadata.get("namespace") or ""), str(metadata.get("name") or ""))
                known = manifests.endpoints if _is_endpoints(endpoint_slice) else manifests.slices
                before = known.get(key)
            after = None if operation == "delete" else endpoint_slice
            old = _dump(_without_server_fields(before), sort_keys=True) if before else ""
            new = _dump(_without_server_fields(after), sort_keys=True) if after else ""
            chunks.append(
                "".join(
                    difflib.unified_diff(
                        old.splitlines(keepends=True),
                        new.splitlines(keepends=True),
                        fromfile=f"a/{ref}" if before else "/dev/null",
                        tofile=f"b/{ref}" if after else "/dev/null",
                    )
                )
            )
    return "".join(chunks)


def render_view(
    results: Sequence[ServiceResult], manifests: Manifests, *, service_imports: bool = False
) -> str:
    """The ready endpoints of the planned Services once the writes are applied: the input's
    slices (every manager's), with the writes applied, merged by the endpoint view.

    ``service_imports``: the results are imports; ``manifests.services`` holds the existing
    ServiceImports and ``manifests.slices`` the imported slices (each endpoint is shown with
    its source cluster)."""
    from endpointslice_operator.commands.endpoints import render_table
    from endpointslice_operator.view import EndpointView, ServiceFilter

    slices = dict(manifests.slices)
    owners = dict(manifests.services)
    for result in results:
        for index, (operation, endpoint_slice) in enumerate(result.writes):
            metadata = endpoint_slice.get("metadata") or {}
            namespace = str(metadata.get("namespace") or "")
            kind = endpoint_slice.get("kind") or "EndpointSlice"
            if kind != "EndpointSlice" and not _is_endpoints(endpoint_slice):
                if kind == "ServiceImport" and service_imports:
                    key = (namespace, str(metadata.get("name") or ""))
                    if operation == "delete":
                        owners.pop(key, None)
                    else:
                        owners[key] = dict(endpoint_slice)
                continue
            if operation == "delete":
                slices.pop((namespace, str(metadata.get("name") or "")), None)
                continue
            name = str(metadata.get("name") or "")
            if not name:  # a create: named by the API server, so a placeholder here
                name = f"{metadata.get('generateName') or ''}<new-{index}>"
                endpoint_slice = {**endpoint_slice, "metadata": {**metadata, "name": name}}
            slices[(namespace, name)] = dict(endpoint_slice)
    names = frozenset(r.key.split(":", 1)[1] if service_imports else r.key for r in results)
    view = EndpointView(
        service_filter=ServiceFilter(services=names), service_imports=service_imports
    )
    for service in owners.values():
        view.apply_service(service)
    for endpoint_slice in slices.values():
        # Without resourceVersions: a later update of a slice replaces it whatever it holds.
        metadata = {**(endpoint_slice.get("metadata") or {}), "resourceVersion": ""}
        view.apply_slice({**endpoint_slice, "metadata": metadata})
    return render_table(view.snapshot(), cluster=service_imports)


def render_summary(results: Sequence[ServiceResult]) -> str:
    width = max((len(result.key) for result in results), default=0)
    lines = []
    for result in results:
        counts = dict.fromkeys(("create", "update", "delete"), 0)
        endpoints_write = None
        others: dict[str, list[str]] = {}
        for operation, obj in result.writes:
            kind = obj.get("kind") or "EndpointSlice"
            if _is_endpoints(obj):
                endpoints_write = operation
            elif kind == "EndpointSlice":
                counts[operation] += 1
            else:
                others.setdefault(str(kind).lower(), []).append(operation)
        line = f"{result.key:<{width}}  " + " ".join(f"{op}={n}" for op, n in counts.items())
        line += "".join(f" {kind}={'+'.join(ops)}" for kind, ops in sorted(others.items()))
        if endpoints_write is not None:
            line += f" endpoints_object={endpoints_write}"
        if result.plan is not None:
            endpoints = sum(m.desired_endpoints for m in result.plan.metrics.values())
            slices = sum(m.actual_slices for m in result.plan.metrics.values())
            line += f" endpoints={endpoints} slices={slices}"
            if result.plan.errors:
                line += f" errors={len(result.plan.errors)}"
            if result.plan.left_out:
                line += f" left_out={len(result.plan.left_out)}"
        elif result.skipped is not None or not others:
            line += f" skipped={result.skipped}"
        lines.append(line + "\n")
    return "".join(lines)


# --- Command line --------------------------------------------------------------------------


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="endpointslice-operator plan",
        description=(
            "Print the EndpointSlice writes the operator would make for the Services in the "
            "given manifests (Services, Pods, Nodes and existing EndpointSlices), without a "
            "cluster."
        ),
    )
    parser.add_argument(
        "-f",
        "--filename",
        action="append",
        required=True,
        metavar="FILE",
        help="a YAML/JSON manifest, a directory of them, or - for standard input (repeatable)",
    )
    parser.add_argument(
        "-R", "--recursive", action="store_true", help="also read subdirectories of directories"
    )
    parser.add_argument(
        "-o",
        "--output",
        choices=("yaml", "diff", "summary", "view"),
        default="yaml",
        help="yaml: the writes as documents (default); diff: unified diffs; summary: counts; "
        "view: the ready endpoints once the writes are applied (docs/view.md)",
    )
    parser.add_argument(
        "--service",
        action="append",
        default=[],
        metavar="NS/NAME",
        help="plan only this Service (repeatable; NAME alone means the default namespace)",
    )
    parser.add_argument(
        "--endpoint-selector",
        action="append",
        default=[],
        metavar="NS/NAME",
        help="plan only this EndpointSelector (repeatable; with neither this nor --service, "
        "every Service and EndpointSelector of the input is planned)",
    )
    parser.add_argument(
        "--kep6116-labels",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="label the slices of EndpointSelectors kubernetes.io/endpoint-selector-name too "
        "(as the operator's --kep6116-labels; default: %(default)s)",
    )
    parser.add_argument(
        "-n",
        "--namespace",
        default="default",
        help="namespace of objects that do not name one (default: %(default)s)",
    )
    parser.add_argument(
        "--managed-by",
        dest="controller_name",
        metavar="NAME",
        default=DEFAULT_CONTROLLER_NAME,
        help="managed-by value of the operator's slices, as the other commands' --managed-by "
        "(default: %(default)s)",
    )
    # The flag's earlier name, kept working.
    parser.add_argument(
        "--controller-name",
        dest="controller_name",
        default=argparse.SUPPRESS,
        help=argparse.SUPPRESS,
    )
    parser.add_argument(
        "--max-endpoints-per-slice",
        type=int,
        default=100,
        metavar="N",
        help="endpoints per slice, 1..1000 (default: %(default)s)",
    )
    parser.add_argument(
        "--topology-hints",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="honour service.kubernetes.io/topology-mode: Auto (default: on)",
    )
    parser.add_argument(
        "--prefer-same-traffic-distribution",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="accept trafficDistribution PreferSameZone and PreferSameNode (default: on)",
    )
    parser.add_argument(
        "--annotation-prefix",
        default=DEFAULT_ANNOTATION_PREFIX,
        help="prefix of the opt-in, selector and network annotations (default: %(default)s)",
    )
    parser.add_argument(
        "--write-endpoints",
        action="store_true",
        help="also plan the core/v1 Endpoints of every managed Service (as the operator's "
        "--write-endpoints; without it, only of Services annotated <prefix>/endpoints)",
    )
    parser.add_argument(
        "--max-endpoints-per-subset",
        type=int,
        default=1000,
        metavar="N",
        help="mirroring: addresses mirrored per Endpoints subset (default: %(default)s)",
    )
    parser.add_argument(
        "--ip-family",
        choices=FAMILIES,
        default="IPv4",
        help="the cluster's IP family, for Services that name none: the API server defaults "
        "them to SingleStack of it (default: %(default)s)",
    )
    parser.add_argument(
        "--opted-in-only",
        action="store_true",
        help="treat Services without the opt-in as the operator does (no slices; ours deleted)",
    )
    parser.add_argument(
        "--mcs-cluster",
        action="append",
        default=[],
        metavar="ID=PATH",
        help="Multi-Cluster Services: a cluster of the clusterset, its id and a manifest or "
        "directory of its ServiceExports, Services and EndpointSlices (repeatable); the plan "
        "is then of this cluster's imports (docs/plan-command.md)",
    )
    parser.add_argument(
        "--cluster-id",
        metavar="ID",
        help="with --mcs-cluster: this cluster's id (default: the value of the "
        "cluster.clusterset.k8s.io ClusterProperty in the -f input)",
    )
    return parser


def _requested_keys(
    requested: Sequence[str],
    known: Collection[tuple[str, str]],
    default_namespace: str,
    option: str,
    kind: str,
) -> list[tuple[str, str]]:
    """The (namespace, name) keys named by ``option`` (every one in the input if none is)."""
    if not requested:
        return list(known)
    keys = []
    for text in requested:
        namespace, _, name = text.rpartition("/")
        key = (namespace or default_namespace, name)
        if not name or key not in known:
            raise InputError(f"{option} {text}: no such {kind} in the input")
        if key not in keys:
            keys.append(key)
    return keys


def _service_keys(
    requested: Sequence[str], manifests: Manifests, default_namespace: str
) -> list[tuple[str, str]]:
    return _requested_keys(requested, manifests.services, default_namespace, "--service", "Service")


def _selector_keys(
    requested: Sequence[str], manifests: Manifests, default_namespace: str
) -> list[tuple[str, str]]:
    return _requested_keys(
        requested,
        manifests.endpoint_selectors,
        default_namespace,
        "--endpoint-selector",
        "EndpointSelector",
    )


_FLAGS = {"controller_name": "--managed-by"}
"""ReconcilerConfig fields whose flag is not named after them."""


def _config_error(exc: ValidationError) -> str:
    first = exc.errors()[0]
    field = str(first["loc"][0]) if first["loc"] else ""
    option = _FLAGS.get(field, "--" + field.replace("_", "-")) if field else "configuration"
    return f"{option}: {first['msg']}"


def main(argv: list[str]) -> int:
    """Run ``endpointslice-operator plan``; returns the exit status."""
    parser = _parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # --help, or a usage error already printed by argparse
        return exc.code if isinstance(exc.code, int) else 2
    try:
        config = ReconcilerConfig(
            controller_name=args.controller_name,
            max_endpoints_per_slice=args.max_endpoints_per_slice,
            topology_hints=args.topology_hints,
            prefer_same_traffic_distribution=args.prefer_same_traffic_distribution,
        )
    except ValidationError as exc:
        sys.stderr.write(f"plan: {_config_error(exc)}\n")
        return 2
    if args.mcs_cluster or args.cluster_id is not None:
        return _main_imports(args, config)
    try:
        manifests = load_manifests(
            args.filename, recursive=args.recursive, default_namespace=args.namespace
        )
        named = bool(args.service or args.endpoint_selector)
        keys = (
            _service_keys(args.service, manifests, args.namespace)
            if (args.service or not named)
            else []
        )
        selector_keys = _selector_keys(args.endpoint_selector, manifests, args.namespace)
        for key, assumed in apply_service_defaults(manifests, args.ip_family).items():
            if tuple(key.split("/", 1)) in keys:
                sys.stderr.write(
                    f"plan: {key}: defaulted as the API server would: {'; '.join(assumed)}\n"
                )
        results = plan_manifests(
            manifests,
            keys,
            config,
            annotation_prefix=args.annotation_prefix,
            opted_in_only=args.opted_in_only,
            write_endpoints=args.write_endpoints,
            max_endpoints_per_subset=args.max_endpoints_per_subset,
        )
        if args.endpoint_selector or not named:
            results += plan_endpoint_selectors(
                manifests, selector_keys, config, kep6116_labels=args.kep6116_labels
            )
    except InputError as exc:
        sys.stderr.write(f"plan: {exc}\n")
        return 2

    if not results:
        sys.stderr.write("plan: no Services or EndpointSelectors in the input\n")
    for result in results:
        if result.plan is not None and not result.writes:
            result.notes.append("up to date, no writes")
        for note in result.notes:
            sys.stderr.write(f"plan: {result.key}: {note}\n")
    _write_output(args.output, results, manifests)
    return 0


def _main_imports(args: argparse.Namespace, config: ReconcilerConfig) -> int:
    """``plan --mcs-cluster ID=PATH ...``: this cluster's Multi-Cluster Services imports."""
    from endpointslice_operator.commands.plan_mcs import (
        load_clusters,
        parse_mcs_cluster,
        plan_imports,
    )

    try:
        if not args.mcs_cluster:
            raise InputError("--cluster-id: only with --mcs-cluster")
        if args.endpoint_selector:
            raise InputError("--endpoint-selector: not with --mcs-cluster")
        peers = [parse_mcs_cluster(text) for text in args.mcs_cluster]
        local, caches = load_clusters(
            args.filename,
            peers,
            config,
            cluster_id=args.cluster_id,
            recursive=args.recursive,
            default_namespace=args.namespace,
            ip_family=args.ip_family,
        )
        known = set(local.keys()) | set(local.exports)
        for cache in caches:
            known |= set(cache.exports)
        keys = (
            _requested_keys(args.service, known, args.namespace, "--service", "exported Service")
            if args.service
            else None
        )
        results = plan_imports(local, caches, config, keys)
    except InputError as exc:
        sys.stderr.write(f"plan: {exc}\n")
        return 2
    if local.cluster_id is None:
        sys.stderr.write(
            "plan: this cluster has no id (--cluster-id or a cluster.clusterset.k8s.io "
            "ClusterProperty): its own exports do not count\n"
        )
    if not results:
        sys.stderr.write("plan: no ServiceExports or imports in the input\n")
    for result in results:
        if not result.writes:
            result.notes.append("up to date, no writes")
        for note in result.notes:
            sys.stderr.write(f"plan: {result.key}: {note}\n")
    manifests = Manifests()
    # The view's owners: the ServiceImports.
    manifests.services.update((key, dict(body)) for key, body in local.imports.items())
    for by_name in local.imported.values():
        for endpoint_slice in by_name.values():
            metadata = endpoint_slice.get("metadata") or {}
            manifests.slices[(str(metadata.get("namespace")), str(metadata.get("name")))] = dict(
                endpoint_slice
            )
    _write_output(args.output, results, manifests, service_imports=True)
    return 0


def _write_output(
    output: Output,
    results: Sequence[ServiceResult],
    manifests: Manifests,
    *,
    service_imports: bool = False,
) -> None:
    if output == "summary":
        sys.stdout.write(render_summary(results))
    elif output == "diff":
        sys.stdout.write(render_diff(results, manifests))
    elif output == "view":
        sys.stdout.write(render_view(results, manifests, service_imports=service_imports))
    else:
        sys.stdout.write(render_yaml(results))
