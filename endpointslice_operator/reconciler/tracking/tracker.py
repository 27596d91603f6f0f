"""Which EndpointSlice generations this controller has written, to spot a stale cache.

A port of upstream's ``EndpointSliceTracker``: generations returned by creates and updates, and
deletes expected. :meth:`EndpointSliceTracker.should_sync` tells our echo from someone else's
change; :meth:`EndpointSliceTracker.stale_slices` finds slices older than our writes, so the sync
is retried (:class:`StaleInformerCache`) rather than undoing them. Only namespace, service-name
label, uid and generation are read; no reference is kept.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from types import MappingProxyType
from typing import Any, Final

__all__ = [
    "DELETION_EXPECTED",
    "LABEL_SERVICE_NAME",
    "STALE_INFORMER_CACHE_MESSAGE",
    "EndpointSliceTracker",
    "StaleInformerCache",
]

LABEL_SERVICE_NAME: Final = "kubernetes.io/service-name"
# Stored instead of a generation for a slice the controller has deleted.
DELETION_EXPECTED: Final = -1
STALE_INFORMER_CACHE_MESSAGE: Final = "EndpointSlice informer cache is out of date"


class StaleInformerCache(Exception):
    """The listed slices are older than the ones this controller wrote: retry the sync later.

    Counted as ``syncs{result="stale"}``; no event is recorded.
    """

    def __init__(self, message: str = STALE_INFORMER_CACHE_MESSAGE) -> None:
        super().__init__(message)


_ServiceKey = tuple[str, str]


def _metadata(endpoint_slice: Mapping[str, Any]) -> Mapping[str, Any]:
    return endpoint_slice.get("metadata") or {}


def _service_key(
    endpoint_slice: Mapping[str, Any], owner_labels: Sequence[tuple[str, str, str]] = ()
) -> _ServiceKey:
    metadata = _metadata(endpoint_slice)
    labels = metadata.get("labels") or {}
    for _, label, prefix in owner_labels:
        value = labels.get(label)
        if value:
            return (metadata.get("namespace") or "", prefix + value)
    return (metadata.get("namespace") or "", labels.get(LABEL_SERVICE_NAME) or "")


def _uid(endpoint_slice: Mapping[str, Any]) -> str:
    return str(_metadata(endpoint_slice).get("uid") or "")


def _generation(endpoint_slice: Mapping[str, Any]) -> int:
    generation = _metadata(endpoint_slice).get("generation")
    return generation if isinstance(generation, int) else 0


class EndpointSliceTracker:
    """Expected generation per slice uid, grouped by Service (``namespace``, ``name``).

    Every operation is O(1) except :meth:`stale_slices`, which is linear in the slices of one
    Service. Not thread-safe: the operator uses it from a single asyncio loop.
    """

    def __init__(self, owner_labels: Sequence[tuple[str, str, str]] = ()) -> None:
        self._generations: dict[_ServiceKey, dict[str, int]] = {}
        self.owner_labels = tuple(owner_labels)
        """Owners other than Services, as ``(kind, slice label, name prefix)``: a slice carrying
        that label is filed under ``(namespace, prefix + value)``, checked before the
        service-name label, and an owner of that ``kind`` (in :meth:`stale_slices`) under
        ``(namespace, prefix + name)``. Empty: Services only, as upstream."""

    def _key(self, endpoint_slice: Mapping[str, Any]) -> _ServiceKey:
        return _service_key(endpoint_slice, self.owner_labels)

    def update(self, endpoint_slice: Mapping[str, Any]) -> None:
        """Record the generation of a slice this controller has just created or updated."""
        key = self._key(endpoint_slice)
        self._generations.setdefault(key, {})[_uid(endpoint_slice)] = _generation(endpoint_slice)

    def expect_deletion(self, endpoint_slice: Mapping[str, Any]) -> None:
        """Record that this controller has deleted the slice."""
        key = self._key(endpoint_slice)
        self._generations.setdefault(key, {})[_uid(endpoint_slice)] = DELETION_EXPECTED

    def has(self, endpoint_slice: Mapping[str, Any]) -> bool:
        """Whether the slice's uid is tracked (under the Service its label names)."""
        generations = self._generations.get(self._key(endpoint_slice))
        return generations is not None and _uid(endpoint_slice) in generations

    def should_sync(self, endpoint_slice: Mapping[str, Any]) -> bool:
        """Whether a slice event needs a sync: the slice is untracked, or newer than the
        generation this controller wrote (someone else changed it)."""
        generations = self._generations.get(self._key(endpoint_slice))
        if generations is None:
            return True
        tracked = generations.get(_uid(endpoint_slice))
        return tracked is None or _generation(endpoint_slice) > tracked

    def handle_deletion(self, endpoint_slice: Mapping[str, Any]) -> bool:
        """Forget a deleted slice; True if the deletion was expected (or the slice unknown).

        False means someone else deleted a slice this controller still wanted: resync.
        """
        generations = self._generations.get(self._key(endpoint_slice))
        if generations is None:
            return True
        tracked = generations.pop(_uid(endpoint_slice), None)
        return tracked is None or tracked == DELETION_EXPECTED

    def stale_slices(
        self, service: Mapping[str, Any], endpoint_slices: Iterable[Mapping[str, Any]]
    ) -> bool:
        """Whether the listed slices of a Service lag behind this controller's own writes.

        True if a listed slice is expected to be deleted or is older than the generation
        written, or if a slice written (and not deleted) is missing from the list.
        """
        metadata = _metadata(service)
        prefix = next((p for kind, _, p in self.owner_labels if kind == service.get("kind")), "")
        generations = self._generations.get(
            (metadata.get("namespace") or "", prefix + (metadata.get("name") or ""))
        )
        if generations is None:
            return False
        listed: set[str] = set()
        for endpoint_slice in endpoint_slices:
            uid = _uid(endpoint_slice)
            listed.add(uid)
            tracked = generations.get(uid)
            if tracked is not None and (
                tracked == DELETION_EXPECTED or tracked > _generation(endpoint_slice)
            ):
                return True
        return any(
            generation != DELETION_EXPECTED and uid not in listed
            for uid, generation in generations.items()
        )

    def delete_service(self, namespace: str, name: str) -> None:
        """Forget every slice of a Service (it has been deleted)."""
        self._generations.pop((namespace, name), None)

    def generations(self, namespace: str, name: str) -> Mapping[str, int] | None:
        """A read-only view of the tracked generation per slice uid of a Service, or None.

        :data:`DELETION_EXPECTED` marks slices expected to disappear.
        """
        generations = self._generations.get((namespace, name))
        return None if generations is None else MappingProxyType(generations)

    def __len__(self) -> int:
        """The number of Services tracked."""
        return len(self._generations)
