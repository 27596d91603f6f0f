"""The incremental join of Services and EndpointSlices into per (service, port, address) records.

:class:`EndpointView` keeps each slice's contribution and, per (namespace, service, port name,
protocol) group, the candidates per address; the record shown is the best one (ready, then
serving, then the first slice name) joined with the Service's port. A slice change recomputes
only the (group, address) pairs it touched; a Service change only its groups; with
``policy="serving"`` a group whose ready count crosses zero is recomputed whole (kube-proxy's
fallback). Unlike kube-proxy, one record per (port, address), the ready duplicate wins
deterministically, and headless Services are shown (docs/view.md).
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from endpointslice_operator.controller.cache.selectors import Selector
from endpointslice_operator.reconciler.labels import LABEL_SERVICE_NAME
from endpointslice_operator.view.model import (
    LABEL_ENDPOINT_SELECTOR_NAME,
    LABEL_MCS_SERVICE_NAME,
    Change,
    Endpoint,
    EndpointGroup,
    EndpointKey,
    ParsedService,
    ParsedSlice,
    Policy,
    ServicePortKey,
    address_sort_key,
    parse_endpoint_selector,
    parse_service,
    parse_slice,
    view_annotation,
)

__all__ = ["EndpointView", "Gatherer", "ServiceFilter"]

GroupKey = tuple[str, str, str, str]
"""(namespace, service, port name, protocol)."""
Candidates = Endpoint | list[Endpoint]
"""One slice's endpoint for an address (the usual case), or several slices' endpoints."""


@dataclass(frozen=True)
class ServiceFilter:
    """Which Services are in the view.

    ``services`` are names (any namespace in scope) or ``namespace/name``; ``selector`` matches
    the Service's labels. With neither, the Services annotated ``<prefix>/view: "true"``.
    """

    namespace: str | None = None
    services: frozenset[str] | None = None
    selector: Selector | None = None
    annotation: str = view_annotation()

    def may_select(self, namespace: str, service: str) -> bool:
        """False when no version of this Service can ever be selected (its slices need not
        be kept)."""
        if self.namespace is not None and namespace != self.namespace:
            return False
        if self.services is None:
            return True
        return service in self.services or f"{namespace}/{service}" in self.services

    def selects(self, service: ParsedService) -> bool:
        if not self.may_select(service.namespace, service.name):
            return False
        if self.selector is not None and not self.selector.matches(
            {str(k): str(v) for k, v in service.labels.items()}
        ):
            return False
        if self.services is None and self.selector is None:
            return service.annotations.get(self.annotation) == "true"
        return True


class _Group:
    __slots__ = ("candidates", "ready")

    def __init__(self) -> None:
        self.candidates: dict[str, Candidates] = {}
        self.ready = 0
        """Addresses whose winning candidate is ready."""


def _rank(endpoint: Endpoint) -> tuple[bool, bool, str]:
    return (not endpoint.ready, not endpoint.serving, endpoint.slice)


def _winner(candidates: Candidates | None) -> Endpoint | None:
    if candidates is None or isinstance(candidates, Endpoint):
        return candidates
    return min(candidates, key=_rank)


def _with(candidates: Candidates | None, endpoint: Endpoint) -> Candidates:
    if candidates is None:
        return endpoint
    if isinstance(candidates, Endpoint):
        return [candidates, endpoint]
    candidates.append(endpoint)
    return candidates


def _without(candidates: Candidates | None, slice_name: str) -> Candidates | None:
    if candidates is None or isinstance(candidates, Endpoint):
        return None if candidates is None or candidates.slice == slice_name else candidates
    rest = [endpoint for endpoint in candidates if endpoint.slice != slice_name]
    if len(rest) > 1:
        return rest
    return rest[0] if rest else None


def _contributions(parsed: ParsedSlice | None) -> dict[tuple[str, str, str, str], Endpoint]:
    """(service, port name, protocol, address) -> the slice's endpoint; a duplicate address
    within the slice is one endpoint too (ready wins)."""
    found: dict[tuple[str, str, str, str], Endpoint] = {}
    if parsed is None:
        return found
    for port_name, protocol, endpoints in parsed.ports:
        for endpoint in endpoints:
            key = (parsed.service, port_name, protocol, endpoint.address)
            other = found.get(key)
            if other is None or _rank(endpoint) < _rank(other):
                found[key] = endpoint
    return found


class _Service:
    __slots__ = ("ports", "selected")

    def __init__(self, ports: dict[tuple[str, str], int], selected: bool) -> None:
        self.ports = ports
        self.selected = selected

    def visible_ports(self) -> dict[tuple[str, str], int]:
        return self.ports if self.selected else {}


class EndpointView:
    """The current view, updated by object events; each update returns the changes it made.

    Feed it with :meth:`apply_service` / :meth:`delete_service` and :meth:`apply_slice` /
    :meth:`delete_slice` (any order); :meth:`snapshot` is the whole view as ``added`` changes.
    """

    def __init__(
        self,
        *,
        policy: Policy = "ready",
        service_filter: ServiceFilter | None = None,
        managed_by: str | None = None,
        endpoint_selectors: bool = False,
        service_imports: bool = False,
    ) -> None:
        """``endpoint_selectors``: the owners fed to :meth:`apply_service` are EndpointSelectors
        and the slices are theirs (by ``endpointslice-operator.io/endpoint-selector-name``).
        ``service_imports``: the owners are ServiceImports (Multi-Cluster Services; their
        ``spec.ports`` read as a Service's) and the slices their imported ones (by
        ``multicluster.kubernetes.io/service-name``), each endpoint with its source cluster."""
        if endpoint_selectors and service_imports:
            raise ValueError("endpoint_selectors and service_imports exclude each other")
        if policy not in ("ready", "serving", "all"):
            raise ValueError(f"policy must be ready, serving or all, not {policy!r}")
        self.policy: Policy = policy
        self.filter = service_filter if service_filter is not None else ServiceFilter()
        self.managed_by = managed_by
        self._parse_owner = parse_endpoint_selector if endpoint_selectors else parse_service
        self._owner_label = (
            LABEL_ENDPOINT_SELECTOR_NAME
            if endpoint_selectors
            else LABEL_MCS_SERVICE_NAME
            if service_imports
            else LABEL_SERVICE_NAME
        )
        self._services: dict[tuple[str, str], _Service] = {}
        self._slices: dict[tuple[str, str], ParsedSlice] = {}
        self._groups: dict[GroupKey, _Group] = {}
        self._groups_of: dict[tuple[str, str], set[GroupKey]] = {}
        self.current: dict[EndpointKey, Endpoint] = {}
        """The view: what the changes returned so far add up to."""

    # -- inventory, for re-listing ------------------------------------------------------------

    def service_names(self) -> Iterator[tuple[str, str]]:
        return iter(list(self._services))

    def slice_names(self) -> Iterator[tuple[str, str]]:
        return iter(list(self._slices))

    def __len__(self) -> int:
        return len(self.current)

    def snapshot(self) -> list[Change]:
        return [Change("added", key, self.current[key]) for key in sorted(self.current)]

    # -- Services --------------------------------------------------------------------------------

    def apply_service(self, obj: Mapping[str, Any]) -> list[Change]:
        parsed = self._parse_owner(obj)
        if parsed is None:
            return []
        key = (parsed.namespace, parsed.name)
        if not self.filter.may_select(*key):
            return self.delete_service(*key)
        return self._set_service(key, _Service(parsed.ports, self.filter.selects(parsed)))

    def delete_service(self, namespace: str, name: str) -> list[Change]:
        return self._set_service((namespace, name), None)

    def _set_service(self, key: tuple[str, str], new: _Service | None) -> list[Change]:
        old = self._services.pop(key, None)
        if new is not None:
            self._services[key] = new
        old_ports = old.visible_ports() if old is not None else {}
        new_ports = new.visible_ports() if new is not None else {}
        changes: list[Change] = []
        if old_ports == new_ports:
            return changes
        for group_key in sorted(self._groups_of.get(key, ())):
            namespace, service, port_name, protocol = group_key
            before = old_ports.get((port_name, protocol))
            after = new_ports.get((port_name, protocol))
            if before == after:
                continue
            group = self._groups[group_key]
            for address in sorted(group.candidates):
                if before is not None:
                    old_key = EndpointKey(namespace, service, port_name, before, protocol, address)
                    gone = self.current.pop(old_key, None)
                    if gone is not None:
                        changes.append(Change("removed", old_key, gone))
                if after is not None:
                    shown = self._shown(group, address)
                    if shown is not None:
                        new_key = EndpointKey(
                            namespace, service, port_name, after, protocol, address
                        )
                        self.current[new_key] = shown
                        changes.append(Change("added", new_key, shown))
        return changes

    # -- EndpointSlices --------------------------------------------------------------------------

    def apply_slice(self, obj: Mapping[str, Any]) -> list[Change]:
        parsed = parse_slice(obj, self.managed_by, self._owner_label)
        metadata = obj.get("metadata")
        if parsed is None or not self.filter.may_select(parsed.namespace, parsed.service):
            if isinstance(metadata, Mapping):
                # Ignored now (label removed, another manager, out of scope): gone from the view.
                return self.delete_slice(str(metadata.get("namespace")), str(metadata.get("name")))
            return []
        key = (parsed.namespace, parsed.name)
        old = self._slices.get(key)
        if old is not None and old.version and old.version == parsed.version:
            return []  # listed again, unchanged
        self._slices[key] = parsed
        return self._replace(parsed.namespace, parsed.name, old, parsed)

    def delete_slice(self, namespace: str, name: str) -> list[Change]:
        old = self._slices.pop((namespace, name), None)
        if old is None:
            return []
        return self._replace(namespace, name, old, None)

    def _replace(
        self, namespace: str, name: str, old: ParsedSlice | None, new: ParsedSlice | None
    ) -> list[Change]:
        before = _contributions(old)
        after = _contributions(new)
        touched: dict[GroupKey, set[str]] = {}
        ready_before: dict[GroupKey, int] = {}
        for key in before.keys() | after.keys():
            was, now = before.get(key), after.get(key)
            if was == now:
                continue
            service, port_name, protocol, address = key
            group_key = (namespace, service, port_name, protocol)
            group = self._groups.get(group_key)
            if group is None:
                group = self._groups[group_key] = _Group()
                self._groups_of.setdefault((namespace, service), set()).add(group_key)
            ready_before.setdefault(group_key, group.ready)
            candidates = group.candidates.get(address)
            old_winner = _winner(candidates)
            if was is not None:
                candidates = _without(candidates, name)
            if now is not None:
                candidates = _with(candidates, now)
            if candidates is None:
                group.candidates.pop(address, None)
            else:
                group.candidates[address] = candidates
            new_winner = _winner(candidates)
            if old_winner != new_winner:
                group.ready += (new_winner is not None and new_winner.ready) - (
                    old_winner is not None and old_winner.ready
                )
                touched.setdefault(group_key, set()).add(address)
        changes: list[Change] = []
        for group_key in sorted(touched):
            group = self._groups[group_key]
            addresses: Iterable[str] = touched[group_key]
            if self.policy == "serving" and (ready_before[group_key] == 0) != (group.ready == 0):
                # kube-proxy's fallback to serving-and-terminating endpoints switched.
                addresses = set(addresses) | group.candidates.keys()
            self._show(group_key, group, sorted(addresses), changes)
            if not group.candidates:
                del self._groups[group_key]
                names = self._groups_of[group_key[:2]]
                names.discard(group_key)
                if not names:
                    del self._groups_of[group_key[:2]]
        return changes

    # -- what is shown ---------------------------------------------------------------------------

    def _shown(self, group: _Group, address: str) -> Endpoint | None:
        winner = _winner(group.candidates.get(address))
        if winner is None:
            return None
        if winner.ready or self.policy == "all":
            return winner
        if self.policy == "serving" and group.ready == 0:
            return winner if winner.serving and winner.terminating else None
        return None

    def _show(
        self, group_key: GroupKey, group: _Group, addresses: Iterable[str], changes: list[Change]
    ) -> None:
        namespace, service_name, port_name, protocol = group_key
        service = self._services.get((namespace, service_name))
        port = service.visible_ports().get((port_name, protocol)) if service else None
        if port is None:
            return  # no such service port: nothing of this group is shown
        for address in addresses:
            key = EndpointKey(namespace, service_name, port_name, port, protocol, address)
            old = self.current.get(key)
            new = self._shown(group, address)
            if old == new:
                continue
            if new is None:
                del self.current[key]
                changes.append(Change("removed", key, old))
            else:
                self.current[key] = new
                changes.append(Change("added" if old is None else "updated", key, new))


class _PortEndpoints:
    """The endpoints of one service port, kept in address order (parallel lists)."""

    __slots__ = ("addresses", "endpoints", "order")

    def __init__(self) -> None:
        self.order: list[tuple[int, int, str]] = []
        self.addresses: list[str] = []
        self.endpoints: list[Endpoint] = []

    def set(self, endpoint: Endpoint) -> None:
        sort_key = address_sort_key(endpoint.address)
        index = bisect.bisect_left(self.order, sort_key)
        if index < len(self.order) and self.order[index] == sort_key:
            self.endpoints[index] = endpoint
            return
        self.order.insert(index, sort_key)
        self.addresses.insert(index, endpoint.address)
        self.endpoints.insert(index, endpoint)

    def discard(self, address: str) -> None:
        sort_key = address_sort_key(address)
        index = bisect.bisect_left(self.order, sort_key)
        if index < len(self.order) and self.order[index] == sort_key:
            del self.order[index], self.addresses[index], self.endpoints[index]

    def rebuild(self, changes: list[Change]) -> None:
        """Apply many changes at once: one sort instead of a list insertion each."""
        current = dict(zip(self.addresses, self.endpoints, strict=True))
        for change in changes:
            assert isinstance(change.key, EndpointKey)
            if change.type == "removed":
                current.pop(change.key.address, None)
            elif isinstance(change.endpoint, Endpoint):
                current[change.key.address] = change.endpoint
        ordered = sorted((address_sort_key(a), a, e) for a, e in current.items())
        self.order = [sort_key for sort_key, _, _ in ordered]
        self.addresses = [address for _, address, _ in ordered]
        self.endpoints = [endpoint for _, _, endpoint in ordered]

    def group(self) -> EndpointGroup:
        return EndpointGroup(tuple(self.addresses), tuple(self.endpoints))


class Gatherer:
    """Turns per-address changes into per service port records (``gather=True``): one
    :class:`~.model.EndpointGroup` per (service, port) with its endpoints sorted by address.

    The endpoints of each service port are kept sorted (a bisection per changed address); the
    record of a changed port is a copy of its lists, so a change costs the size of that service
    port (two tuple copies), not a sort."""

    def __init__(self) -> None:
        self._ports: dict[ServicePortKey, _PortEndpoints] = {}
        self._shown: dict[ServicePortKey, EndpointGroup] = {}

    def feed(self, changes: Iterable[Change]) -> list[Change]:
        touched: dict[ServicePortKey, list[Change]] = {}
        for change in changes:
            if isinstance(change.key, EndpointKey):
                touched.setdefault(ServicePortKey(*change.key[:5]), []).append(change)
        for port_key, port_changes in touched.items():
            endpoints = self._ports.get(port_key)
            if endpoints is None:
                endpoints = self._ports[port_key] = _PortEndpoints()
            if len(port_changes) > 32 and len(port_changes) * 4 > len(endpoints.addresses):
                endpoints.rebuild(port_changes)
                continue
            for change in port_changes:
                assert isinstance(change.key, EndpointKey)
                if change.type == "removed":
                    endpoints.discard(change.key.address)
                elif isinstance(change.endpoint, Endpoint):
                    endpoints.set(change.endpoint)
        out: list[Change] = []
        for port_key in touched:
            endpoints = self._ports[port_key]
            old = self._shown.get(port_key)
            if not endpoints.addresses:
                del self._ports[port_key]
                if old is not None:
                    del self._shown[port_key]
                    out.append(Change("removed", port_key, old))
                continue
            new = endpoints.group()
            if new != old:
                self._shown[port_key] = new
                out.append(Change("added" if old is None else "updated", port_key, new))
        return out

    def snapshot(self) -> list[Change]:
        return [Change("added", key, self._shown[key]) for key in sorted(self._shown)]
