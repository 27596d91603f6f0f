"""Mirroring: the desired endpoints of an Endpoints object, for the slice planner.

A port of the desired-state half of kube-controller-manager's
``pkg/controller/endpointslicemirroring`` (``reconcile``, ``desiredCalc``, ``addressToEndpoint``),
fed to the same :class:`~endpointslice_operator.reconciler.planner.Reconciler` with
``placeholder=False``. Packing is upstream's: one slice per (address type, port set) of at most
``--max-endpoints-per-subset`` (1000), extra slices merged into the first. Unlike upstream, the
``skip-mirror`` label is not copied onto the slices.

Order-dependent upstream, not ported: when two repacked subsets offer the same port list (a port
with an ``appProtocol`` in several subsets is packed per subset, see
:func:`~.core_endpoints.repack_subsets`) and the same address, ready in one and not ready in the
other, the endpoint takes the readiness of the subset ordered last: upstream's order is a hash
of each subset's Go debug dump, ours the subsets' content.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from .config import ReconcilerConfig
from .core_endpoints import LABEL_SKIP_MIRROR, repack_subsets
from .desired import IPV4, IPV6, DesiredEndpoints, EndpointGroup
from .endpoints import Endpoint, EndpointKey, EndpointState, existing_entry, new_endpoint
from .ipaddr import canonical_ip
from .labels import LABEL_MANAGED_BY, LABEL_SERVICE_NAME, LAST_CHANGE_TRIGGER_TIME, LabelsFunc
from .plan import Plan, PlanEvent
from .planner import Reconciler
from .ports import EndpointPort, PortKey, port_key, ports_from_dicts

__all__ = [
    "ANNOTATION_LAST_APPLIED",
    "ANNOTATION_LEADER",
    "DEFAULT_MAX_ENDPOINTS_PER_SUBSET",
    "MIRRORING_CONTROLLER_NAME",
    "MirroredEndpoints",
    "desired_from_endpoints",
    "mirrored_annotations",
    "mirroring_labels",
    "mirroring_owner",
    "plan_mirroring",
    "should_mirror",
]

MIRRORING_CONTROLLER_NAME = "endpointslicemirroring-controller.k8s.io"
"""kube-controller-manager's mirroring controller's managed-by value."""
DEFAULT_MAX_ENDPOINTS_PER_SUBSET = 1000
ANNOTATION_LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"
ANNOTATION_LEADER = "control-plane.alpha.kubernetes.io/leader"

INVALID_IP_ADDRESS = "InvalidIPAddress"
TOO_MANY_ADDRESSES_TO_MIRROR = "TooManyAddressesToMirror"

_NOT_COPIED_ANNOTATIONS = frozenset({LAST_CHANGE_TRIGGER_TIME, ANNOTATION_LAST_APPLIED})
_NOT_COPIED_LABELS = frozenset({LABEL_SKIP_MIRROR})


@dataclass(slots=True)
class MirroredEndpoints:
    """The desired endpoints of an Endpoints object, and what mirroring it left out.

    ``skipped`` counts the addresses not mirrored (invalid, or over the per-subset cap: the
    ``addresses_skipped_per_sync`` observation), ``invalid`` the invalid ones; ``events`` are
    the Warning Events upstream records on the Endpoints object.
    """

    desired: DesiredEndpoints
    skipped: int = 0
    invalid: int = 0
    events: list[PlanEvent] = field(default_factory=list)
    added: int = 0
    updated: int = 0
    removed: int = 0
    """Upstream's ``totalChanges`` over the existing slices (set by :func:`plan_mirroring`):
    the ``endpoints_{added,updated,removed}_per_sync`` observations."""


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _string_map(value: Any) -> dict[str, str]:
    if not isinstance(value, Mapping):
        return {}
    return {k: v for k, v in value.items() if isinstance(k, str) and isinstance(v, str)}


def _metadata(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    metadata = obj.get("metadata")
    return metadata if isinstance(metadata, Mapping) else {}


def should_mirror(endpoints: Mapping[str, Any], *, honour_skip_mirror: bool = False) -> bool:
    """Upstream's Endpoints filter: never leader-election records; with ``honour_skip_mirror``
    (kube-controller-manager's behaviour) not those labelled skip-mirror ``"true"`` either.
    Our mirroring passes ``False``: the label is addressed to kube-controller-manager."""
    metadata = _metadata(endpoints)
    if ANNOTATION_LEADER in _string_map(metadata.get("annotations")):
        return False
    if honour_skip_mirror:
        return _string_map(metadata.get("labels")).get(LABEL_SKIP_MIRROR) != "true"
    return True


def _ports(subset: Mapping[str, Any]) -> PortKey:
    """Upstream ``epPortsToEpsPorts``: name and protocol always set (``""`` if absent)."""
    raw = subset.get("ports")
    result: list[EndpointPort] = []
    for port in raw if isinstance(raw, list) else ():
        if not isinstance(port, Mapping):
            continue
        number = port.get("port")
        app = port.get("appProtocol")
        result.append(
            (
                _text(port.get("name")),
                number if isinstance(number, int) and not isinstance(number, bool) else 0,
                _text(port.get("protocol")),
                app if isinstance(app, str) else None,
            )
        )
    return port_key(result)


def _endpoint(address: Mapping[str, Any], ready: bool) -> tuple[str, Endpoint] | None:
    """Upstream ``addressToEndpoint``: (address type, endpoint), None for an invalid IP."""
    parsed = canonical_ip(_text(address.get("ip")))
    if parsed is None:
        return None
    ip, is_v6 = parsed
    hostname = _text(address.get("hostname")) or None
    node_name = address.get("nodeName")
    ref = address.get("targetRef")
    if isinstance(ref, Mapping):
        kind: str | None = _text(ref.get("kind"))
        ns, name, uid = _text(ref.get("namespace")), _text(ref.get("name")), _text(ref.get("uid"))
        api, path = _text(ref.get("apiVersion")), _text(ref.get("fieldPath"))
    else:
        kind, ns, name, uid, api, path = None, "", "", "", "", ""
    key: EndpointKey = ((ip,), hostname or "", ns, name)
    state: EndpointState = (
        node_name if isinstance(node_name, str) else None,
        None,
        ready,
        None,
        None,
        kind,
        ns,
        name,
        uid,
        api,
        path,
    )
    return (IPV6 if is_v6 else IPV4), new_endpoint(key, state, (ip,), hostname)


def desired_from_endpoints(
    endpoints: Mapping[str, Any],
    *,
    max_endpoints_per_subset: int = DEFAULT_MAX_ENDPOINTS_PER_SUBSET,
) -> MirroredEndpoints:
    """The desired endpoints mirrored from an Endpoints object (upstream ``reconcile``).

    The subsets are repacked first; of each, at most ``max_endpoints_per_subset`` addresses
    are mirrored, ready ones first. Each becomes an endpoint with only the ``ready`` condition
    (true for ``addresses``, false for ``notReadyAddresses``), its IP canonicalised, its
    address type taken from the IP, and hostname, nodeName and targetRef copied. Groups are
    keyed by (address type, the subset's ports); both address types are always supported, and
    a subset's port group exists for both even if it has no address of one type.
    """
    desired = DesiredEndpoints.empty((IPV4, IPV6))
    skipped = 0
    invalid = 0
    for subset in repack_subsets(_subsets(endpoints), app_protocol_per_subset=True):
        ports = _ports(subset)
        for address_type in (IPV4, IPV6):
            groups = desired.groups[address_type]
            if ports not in groups:
                groups[ports] = EndpointGroup(ports)
        total = 0
        added = 0
        for field_name, ready in (("addresses", True), ("notReadyAddresses", False)):
            addresses = subset.get(field_name)
            addresses = addresses if isinstance(addresses, list) else []
            total += len(addresses)
            for address in addresses:
                if added >= max_endpoints_per_subset:
                    break
                made = _endpoint(address, ready) if isinstance(address, Mapping) else None
                if made is None:
                    invalid += 1
                    shown = address.get("ip") if isinstance(address, Mapping) else address
                    desired.errors.append(
                        f"address {shown!r} is not a valid IP, it will not be mirrored to an"
                        " EndpointSlice"
                    )
                    continue
                address_type, endpoint = made
                desired.groups[address_type][ports].endpoints[endpoint.key] = endpoint
                added += 1
        skipped += total - added
    events: list[PlanEvent] = []
    if invalid:
        events.append(
            PlanEvent(
                "Warning",
                INVALID_IP_ADDRESS,
                f"Skipped {invalid} invalid IP addresses when mirroring to EndpointSlices",
            )
        )
    if skipped > invalid:
        events.append(
            PlanEvent(
                "Warning",
                TOO_MANY_ADDRESSES_TO_MIRROR,
                f"A max of {max_endpoints_per_subset} addresses can be mirrored to "
                f"EndpointSlices per Endpoints subset. {skipped} addresses were skipped",
            )
        )
    return MirroredEndpoints(desired, skipped, invalid, events)


def _subsets(endpoints: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    subsets = endpoints.get("subsets")
    if not isinstance(subsets, list):
        return []
    return [s for s in subsets if isinstance(s, Mapping)]


def mirroring_labels(endpoints: Mapping[str, Any]) -> LabelsFunc:
    """Upstream's slice labels for mirroring, as a labels callback for the planner.

    Desired: every label of the Endpoints (but the skip-mirror label, see the module notes),
    then the service-name label (the Endpoints' name) and managed-by. ``changed`` when a slice's
    labels, minus managed-by and service-name, differ from the Endpoints' labels.
    """
    metadata = _metadata(endpoints)
    copied = {
        k: v for k, v in _string_map(metadata.get("labels")).items() if k not in _NOT_COPIED_LABELS
    }
    name = _text(metadata.get("name"))

    def labels(
        current: Mapping[str, str] | None, controller_name: str
    ) -> tuple[dict[str, str], bool]:
        compare = {
            k: v
            for k, v in (current or {}).items()
            if k not in (LABEL_MANAGED_BY, LABEL_SERVICE_NAME)
        }
        desired = dict(copied)
        desired[LABEL_SERVICE_NAME] = name
        desired[LABEL_MANAGED_BY] = controller_name
        return desired, compare != copied

    return labels


def mirrored_annotations(endpoints: Mapping[str, Any]) -> dict[str, str]:
    """The annotations of mirrored slices: the Endpoints' own, but the trigger-time and
    ``kubectl.kubernetes.io/last-applied-configuration`` annotations."""
    annotations = _string_map(_metadata(endpoints).get("annotations"))
    return {k: v for k, v in annotations.items() if k not in _NOT_COPIED_ANNOTATIONS}


def mirroring_owner(endpoints: Mapping[str, Any]) -> dict[str, Any]:
    """The owner to plan for: the Endpoints object as ``v1`` ``Endpoints`` (list items come
    without apiVersion and kind), so that slices get a controller reference to it."""
    owner = dict(endpoints)
    owner["apiVersion"] = "v1"
    owner["kind"] = "Endpoints"
    return owner


def plan_mirroring(
    endpoints: Mapping[str, Any],
    existing_slices: Iterable[Mapping[str, Any]],
    config: ReconcilerConfig,
    *,
    max_endpoints_per_subset: int = DEFAULT_MAX_ENDPOINTS_PER_SUBSET,
    adopt: bool = True,
) -> tuple[Plan, MirroredEndpoints]:
    """Plan the mirrored slices of one Endpoints object.

    ``existing_slices`` are the slices labelled with the Endpoints' name and managed by
    ``config.controller_name``. The planner runs without placeholder and without topology
    hints, as upstream's mirroring does; the plan's ``events`` include the mirroring Warnings
    (to be recorded on the Endpoints object, as upstream does). With ``adopt`` (upstream's
    behaviour) every given slice is taken as the Endpoints' own; without it, slices not owned by
    the Endpoints object (a controller reference to its uid) are replaced.
    """
    mirrored = desired_from_endpoints(endpoints, max_endpoints_per_subset=max_endpoints_per_subset)
    # Upstream's mirroring writes no placeholder, computes no hints, and takes every slice with
    # its service-name and managed-by labels as its own (no ownerReference check).
    # Upstream packs a (address type, port set) into one slice of at most maxEndpointsPerSubset
    # endpoints, whatever --max-endpoints-per-slice says.
    mirror_config = config.model_copy(
        update={
            "placeholder": False,
            "topology_hints": False,
            "ownership_enforced": not adopt,
            "max_endpoints_per_slice": max_endpoints_per_subset,
        }
    )
    existing = list(existing_slices)
    if not adopt:  # keep a slice the Endpoints owns rather than one the planner replaces
        uid = _metadata(endpoints).get("uid")
        existing.sort(key=lambda raw: not _controlled_by(raw, uid))
    kept, extra = _one_slice_per_group(existing)
    plan = Reconciler(mirror_config).plan(
        mirroring_owner(endpoints),
        mirrored.desired,
        kept,
        labels=mirroring_labels(endpoints),
        annotations=mirrored_annotations(endpoints),
    )
    plan.deletes.extend(extra)
    plan.events[:0] = mirrored.events
    mirrored.added, mirrored.updated, mirrored.removed = _totals(mirrored.desired, existing)
    return plan, mirrored


def _controlled_by(raw: Mapping[str, Any], uid: Any) -> bool:
    refs = _metadata(raw).get("ownerReferences")
    return any(
        isinstance(ref, Mapping) and ref.get("controller") is True and ref.get("uid") == uid
        for ref in (refs if isinstance(refs, list) else ())
    )


def _one_slice_per_group(
    existing: list[Mapping[str, Any]],
) -> tuple[list[Mapping[str, Any]], list[Mapping[str, Any]]]:
    """(kept, extra): the first existing slice of each (address type, port set), and the
    others, which upstream's ``reconcileByPortMapping`` deletes."""
    seen: set[tuple[str, PortKey]] = set()
    kept: list[Mapping[str, Any]] = []
    extra: list[Mapping[str, Any]] = []
    for raw in existing:
        group = (str(raw.get("addressType")), ports_from_dicts(raw.get("ports")))
        if group in seen:
            extra.append(raw)
        else:
            seen.add(group)
            kept.append(raw)
    return kept, extra


def _totals(
    desired: DesiredEndpoints, existing: Iterable[Mapping[str, Any]]
) -> tuple[int, int, int]:
    """(added, updated, removed): desired endpoints missing from the existing slices, found
    with another state, and existing endpoints no longer desired."""
    matched: set[tuple[str, PortKey, EndpointKey]] = set()
    updated = removed = 0
    for raw in existing:
        address_type = raw.get("addressType")
        group = desired.groups.get(address_type, {}) if isinstance(address_type, str) else {}
        ports = ports_from_dicts(raw.get("ports"))
        wanted = group.get(ports)
        endpoints = raw.get("endpoints")
        for entry in endpoints if isinstance(endpoints, list) else ():
            if not isinstance(entry, Mapping):
                continue
            key, state = existing_entry(entry)
            found = wanted.endpoints.get(key) if wanted is not None else None
            if found is None:
                removed += 1
                continue
            matched.add((str(address_type), ports, key))
            if found.state != state:
                updated += 1
    total = sum(desired.endpoint_count(t) for t in desired.address_types)
    return total - len(matched), updated, removed
