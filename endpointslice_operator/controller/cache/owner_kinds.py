"""Owner adapters: the kinds of object whose EndpointSlices the operator publishes.

One planner, one queue, one writer (docs/architecture.md, "Owner kinds"). An owner kind names
its **queue key** (``namespace/name`` for a Service, ``<prefix>:namespace/name`` otherwise; a
namespace never holds ``:``), the **slice label** naming the owner on its slices (other kinds'
labels are checked first: a slice of an EndpointSelector owned by a Service carries both), and a
**syncer** (``sync(key)``, ``start_term()``, ``all_keys()``). :class:`OwnerSyncs` is the
queue's one handler, routing each key to its kind's syncer.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from endpointslice_operator.reconciler.endpoint_selector import LABEL_ENDPOINT_SELECTOR_NAME
from endpointslice_operator.reconciler.mcs import LABEL_MCS_SERVICE_NAME
from endpointslice_operator.reconciler.tracking.tracker import EndpointSliceTracker

__all__ = [
    "ENDPOINT_SELECTOR",
    "SERVICE",
    "SERVICE_IMPORT",
    "OwnerKind",
    "OwnerSyncer",
    "OwnerSyncs",
    "kind_of_key",
    "owner_key",
    "owner_of_slice",
    "register",
    "registered",
    "split_owner_key",
    "tracker_for_owners",
    "tracker_name",
]


@dataclass(frozen=True, slots=True)
class OwnerKind:
    """A kind of object owning slices: its Kubernetes kind, key prefix and slice label."""

    kind: str
    key_prefix: str
    """Empty for Services (keys ``namespace/name``), else the prefix before ``:``."""
    slice_label: str
    """The label naming the owner on its slices."""

    def key(self, namespace: str, name: str) -> str:
        if not self.key_prefix:
            return f"{namespace}/{name}"
        return f"{self.key_prefix}:{namespace}/{name}"


SERVICE = OwnerKind("Service", "", "kubernetes.io/service-name")

_KINDS: dict[str, OwnerKind] = {SERVICE.kind: SERVICE}
_BY_PREFIX: dict[str, OwnerKind] = {}


def register(kind: OwnerKind) -> OwnerKind:
    """Add an owner kind (done once, by its module, at import)."""
    if not kind.key_prefix or ":" in kind.key_prefix or "/" in kind.key_prefix:
        raise ValueError(f"owner kind {kind.kind}: key prefix must be a plain word")
    _KINDS[kind.kind] = kind
    _BY_PREFIX[kind.key_prefix] = kind
    return kind


ENDPOINT_SELECTOR = register(
    OwnerKind("EndpointSelector", "endpointselector", LABEL_ENDPOINT_SELECTOR_NAME)
)
"""EndpointSelector (KEP-6116's shape, our CRD): see :mod:`..endpoint_selector`."""

SERVICE_IMPORT = register(OwnerKind("ServiceImport", "serviceimport", LABEL_MCS_SERVICE_NAME))
"""ServiceImport (Multi-Cluster Services, ``--multicluster``): its imported slices carry
``multicluster.kubernetes.io/service-name`` (and the derived Service's name in
``kubernetes.io/service-name``, which this label takes precedence over); synced by
:class:`~endpointslice_operator.controller.mcs.imports.ImportSyncer`."""


def registered() -> tuple[OwnerKind, ...]:
    """Every owner kind, Service first."""
    return tuple(_KINDS.values())


def owner_key(kind: str, namespace: str, name: str) -> str:
    return _KINDS[kind].key(namespace, name)


def split_owner_key(key: str) -> tuple[OwnerKind, str, str]:
    """``(kind, namespace, name)`` of a queue key (a Service key has no prefix)."""
    prefix, colon, rest = key.partition(":")
    kind = SERVICE
    if colon and "/" not in prefix:
        found = _BY_PREFIX.get(prefix)
        if found is not None:
            kind, key = found, rest
    namespace, _, name = key.partition("/")
    return kind, namespace, name


def kind_of_key(key: str) -> OwnerKind:
    return split_owner_key(key)[0]


def tracker_name(key: str) -> tuple[str, str]:
    """The tracker's ``(namespace, name)`` for an owner key (see :func:`tracker_for_owners`)."""
    kind, namespace, name = split_owner_key(key)
    return namespace, f"{kind.key_prefix}:{name}" if kind.key_prefix else name


def owner_of_slice(namespace: str, labels: Mapping[str, Any]) -> str | None:
    """The key of the owner a slice's labels name (other kinds before Services), or None."""
    for kind in reversed(_KINDS.values()):
        value = labels.get(kind.slice_label)
        if isinstance(value, str) and value:
            return kind.key(namespace, value)
    return None


def tracker_for_owners() -> EndpointSliceTracker:
    """A tracker that files the slices of every registered kind under their owner."""
    return EndpointSliceTracker(
        owner_labels=[
            (kind.kind, kind.slice_label, f"{kind.key_prefix}:")
            for kind in reversed(_KINDS.values())
            if kind.key_prefix
        ]
    )


class OwnerSyncer(Protocol):
    """What an owner kind's syncer offers the queue and a new leader term."""

    async def sync(self, key: str) -> None: ...

    def start_term(self) -> None: ...

    def all_keys(self) -> Iterable[str]: ...


class OwnerSyncs:
    """The work queue's handler: each key goes to its owner kind's syncer.

    ``service`` syncs Service keys; ``others`` maps further kinds to their syncers. A key of a
    kind without a syncer (its slices were listed, but the kind is switched off or not served)
    is left alone: nothing is written for it.
    """

    def __init__(
        self,
        service: Callable[[str], Awaitable[None]],
        others: Mapping[str, OwnerSyncer] | None = None,
    ) -> None:
        self._service = service
        self.others: dict[str, OwnerSyncer] = dict(others or {})

    async def sync(self, key: str) -> None:
        kind = kind_of_key(key)
        if kind is SERVICE:
            await self._service(key)
            return
        syncer = self.others.get(kind.kind)
        if syncer is not None:
            await syncer.sync(key)

    def start_term(self) -> None:
        for syncer in self.others.values():
            syncer.start_term()

    def all_keys(self) -> list[str]:
        keys: list[str] = []
        for syncer in self.others.values():
            keys.extend(syncer.all_keys())
        return keys
