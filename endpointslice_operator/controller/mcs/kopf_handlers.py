"""This cluster's ServiceExports and ServiceImports through Kopf's per-object handlers.

:func:`serve_exports_and_imports` waits until ``multicluster.x-k8s.io/v1beta1`` serves both
kinds (discovery with a backoff, shared with EndpointSelectors:
:func:`~endpointslice_operator.controller.watch.kopf_serving.serve_with_kopf`), lists them once into
the :class:`~.cache.LocalCache` (the listing counts toward the cache's ``complete``), then runs
a Kopf instance whose ``on.event`` handlers feed every event to the cache, which queues the
import key. The peers stay on list-watches (one Kopf instance watches one cluster).

Kopf re-lists a kind after its watch expired (410 Gone) without reporting the objects deleted
meanwhile: every event is noted by the kind's :class:`~..relist.Relisting` (the check every
kind shares), whose re-listings begin with Kopf's listing events (its first listing, after the
one here, counts as one); what a re-listing left out is asked for and forgotten only when the
API server says it is gone (a failed or partial listing is never taken as a deletion).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import kopf
from kubernetes_asyncio.client import ApiClient, Configuration

from endpointslice_operator.controller.mcs.cache import Key, LocalCache
from endpointslice_operator.controller.watch.kopf_serving import serve_with_kopf
from endpointslice_operator.controller.watch.relist import Relisting
from endpointslice_operator.metrics.api_serving import ApiServingMetrics
from endpointslice_operator.reconciler.mcs import MCS_GROUP, MCS_VERSION

__all__ = ["GROUP", "KOPF_KINDS", "relistings_of", "serve_exports_and_imports"]

log = logging.getLogger(__name__)

GROUP, VERSION = MCS_GROUP, MCS_VERSION
KOPF_KINDS = ("serviceexports", "serviceimports")
"""The kinds of this cluster handled through Kopf (the cache's other kinds are list-watched)."""


def _key(obj: Mapping[str, Any]) -> Key:
    metadata = obj.get("metadata")
    metadata = metadata if isinstance(metadata, Mapping) else {}
    return (str(metadata.get("namespace") or ""), str(metadata.get("name") or ""))


def relistings_of(api_client: ApiClient, cache: LocalCache) -> dict[str, Relisting]:
    """The re-listing check of each of :data:`KOPF_KINDS` (see :mod:`..relist`): what a
    re-listing left out and the API server says is gone is handled as its DELETED event."""

    def held_by(kind: str) -> dict[Key, Mapping[str, Any]]:
        return cache.exports if kind == "serviceexports" else cache.imports

    def relisting(kind: str) -> Relisting:
        def uid_of(key: Key) -> str | None:
            obj = held_by(kind).get(key)
            if obj is None:
                return None
            metadata = obj.get("metadata")
            return str(metadata.get("uid") or "") if isinstance(metadata, Mapping) else ""

        def forget(key: Key) -> None:
            cache.handler(kind)("DELETED", {"metadata": {"namespace": key[0], "name": key[1]}})

        return Relisting(
            api_client,
            f"/apis/{GROUP}/{VERSION}",
            kind,
            held=lambda: list(held_by(kind)),
            uid_of=uid_of,
            forget=forget,
        )

    return {kind: relisting(kind) for kind in KOPF_KINDS}


def register_handlers(
    registry: kopf.OperatorRegistry, cache: LocalCache, relistings: Mapping[str, Relisting]
) -> None:
    """The ``on.event`` handlers of ServiceExports and ServiceImports on ``registry``."""

    def handler_for(kind: str) -> Callable[..., Any]:
        feed = cache.handler(kind)
        relisting = relistings[kind]

        async def on_event(event: Mapping[str, Any], **_: Any) -> None:
            obj = event.get("object")
            if not isinstance(obj, Mapping):
                return
            event_type = event.get("type")
            try:
                relisting.note(event_type if isinstance(event_type, str) else None, _key(obj))
                feed(event_type if isinstance(event_type, str) else None, obj)
            except Exception:  # never let one object stop the others
                log.exception("failed to handle a %s event for %s/%s", kind, *_key(obj))

        return on_event

    for kind in KOPF_KINDS:
        kopf.on.event(GROUP, VERSION, kind, id=f"mcs-{kind}", registry=registry)(handler_for(kind))


async def serve_exports_and_imports(
    api_client: ApiClient,
    configuration: Configuration,
    cache: LocalCache,
    *,
    namespaces: Sequence[str] = (),
    on_signal: Callable[[], None] | None = None,
    api_serving: ApiServingMetrics | None = None,
) -> None:
    """Discover, list once into ``cache``, then run Kopf's handlers until cancelled, and
    again after the CRDs are deleted and installed again: while they are not served,
    ``cache`` holds none of the kinds whose CRD went (an empty listing: what it held is pruned,
    and the imports concerned are queued; a kind still served keeps what it held);
    ``api_serving`` follows whether they are served."""
    relistings = relistings_of(api_client, cache)

    def listed(items: dict[str, list[dict[str, Any]]]) -> None:
        for kind in KOPF_KINDS:
            cache.listing(kind)(None)
            feed = cache.handler(kind)
            for item in items[kind]:
                feed(None, item)
            cache.listed_callback(kind)(None)
        log.info(
            "multi-cluster: %d ServiceExport(s), %d ServiceImport(s) listed; Kopf takes over",
            len(items["serviceexports"]),
            len(items["serviceimports"]),
        )

    def unserved(plurals: set[str]) -> None:
        for kind in sorted(plurals):
            cache.listing(kind)(None)
            cache.listed_callback(kind)(None)

    await serve_with_kopf(
        api_client,
        configuration,
        group=GROUP,
        version=VERSION,
        plurals=KOPF_KINDS,
        what="ServiceExports and ServiceImports",
        missing_hint="install deploy/crds/, or the chart's multicluster.installCRDs",
        forbidden_hint="the chart grants it with multicluster.enabled: true",
        on_listed=listed,
        register=lambda registry: register_handlers(registry, cache, relistings),
        namespaces=namespaces,
        on_signal=on_signal,
        relistings=list(relistings.values()),
        on_unserved=unserved,
        api_serving=api_serving,
    )
