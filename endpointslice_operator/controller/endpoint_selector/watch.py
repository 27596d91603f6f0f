"""Serving EndpointSelectors: discovery, the first listing, then Kopf's per-object handlers.

The CRD (``deploy/crds/endpointselectors.endpointslice-operator.io.yaml``) may be installed
after the operator starts, or never. :func:`serve_endpoint_selectors` therefore asks discovery
whether ``endpointslice-operator.io/v1alpha1`` serves ``endpointselectors`` and, while it does
not (or listing is forbidden), asks again with the DRA claim watch's backoff
(:func:`..watch.claim_watch.retry_delays`: 5 s doubling up to 5 minutes), so installing the CRD or
granting the RBAC later needs no restart (the discovery, listing and Kopf start are shared:
:func:`~endpointslice_operator.controller.watch.kopf_serving.serve_with_kopf`).

Once served, one list per watched scope fills the index (after which a sync may take a missing
EndpointSelector for a deleted one: ``index.synced``) and queues every EndpointSelector key,
then Kopf takes over with an ``on.event`` handler on a registry of its own (Kopf scans the
served resources once when it starts, so it is started only now): each event updates the
index, queues the key when the spec changed, and writes ``status`` (observedGeneration and the
``Ready`` condition) through Kopf's patch when it differs from what the object shows. The CRD
deleted while served: the index drops every EndpointSelector and queues their keys (their syncs
remove what the garbage collector left of their slices), then discovery starts again.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import kopf
from kubernetes_asyncio.client import ApiClient, Configuration

from endpointslice_operator.controller.cache.owner_kinds import ENDPOINT_SELECTOR
from endpointslice_operator.controller.endpoint_selector.index import (
    EndpointSelectorIndex,
    status_patch,
)
from endpointslice_operator.controller.watch.kopf_serving import serve_with_kopf, served
from endpointslice_operator.controller.watch.relist import Relisting
from endpointslice_operator.controller.watch.router import EventRouter
from endpointslice_operator.metrics.api_serving import ApiServingMetrics
from endpointslice_operator.reconciler.endpoint_selector import GROUP, PLURAL, VERSION

__all__ = ["discover", "register_endpoint_selector_handler", "serve_endpoint_selectors"]

log = logging.getLogger(__name__)


async def discover(api_client: ApiClient) -> bool:
    """Whether the API server serves ``endpointselectors`` in ``endpointslice-operator.io/
    v1alpha1``; other failures than 404 raise."""
    return await served(api_client, GROUP, VERSION, (PLURAL,))


def register_endpoint_selector_handler(
    registry: kopf.OperatorRegistry,
    index: EndpointSelectorIndex,
    router: EventRouter,
    relisting: Relisting | None = None,
) -> None:
    """The ``on.event`` handler of EndpointSelectors on ``registry``; every event is noted
    by ``relisting`` (objects a re-listing leaves out, see :mod:`.relist`)."""

    @kopf.on.event(GROUP, VERSION, PLURAL, id="endpointselector", registry=registry)
    async def on_endpoint_selector(event: Mapping[str, Any], patch: Any, **_: Any) -> None:
        obj = event.get("object")
        if not isinstance(obj, Mapping):
            return
        metadata = obj.get("metadata") if isinstance(obj.get("metadata"), Mapping) else {}
        assert isinstance(metadata, Mapping)
        namespace, name = str(metadata.get("namespace") or ""), str(metadata.get("name") or "")
        if not name:
            return
        try:
            event_type = event.get("type")
            if relisting is not None:
                relisting.note(
                    event_type if isinstance(event_type, str) else None, (namespace, name)
                )
            if event_type == "DELETED":
                if index.remove(namespace, name) is not None:
                    router.requeue([ENDPOINT_SELECTOR.key(namespace, name)])
                return
            previous, entry = index.upsert(obj)
            if previous is None or _changed(previous.body, entry.body):
                router.requeue([entry.key])
            status = status_patch(entry, obj.get("status"), index.unresolved.get(entry.key))
            if status is not None:
                patch.status.update(status)
        except Exception:  # never let one object stop the others
            log.exception("failed to handle an EndpointSelector event for %s/%s", namespace, name)


def _changed(old: Mapping[str, Any], new: Mapping[str, Any]) -> bool:
    """Whether what a sync reads changed (not merely the resourceVersion, as our own status
    patch coming back changes it)."""
    old_meta, new_meta = old["metadata"], new["metadata"]
    return old["spec"] != new["spec"] or any(
        old_meta.get(field) != new_meta.get(field)
        for field in ("uid", "generation", "labels", "ownerReferences", "deletionTimestamp")
    )


async def serve_endpoint_selectors(
    api_client: ApiClient,
    configuration: Configuration,
    index: EndpointSelectorIndex,
    router: EventRouter,
    all_keys: Callable[[], list[str]],
    *,
    relisting: Relisting | None = None,
    namespaces: Sequence[str] = (),
    on_signal: Callable[[], None] | None = None,
    api_serving: ApiServingMetrics | None = None,
) -> None:
    """Discover, list, then run Kopf for EndpointSelectors until cancelled, and again after
    the CRD is deleted and installed again: while it is not served, the index holds none and
    their keys are queued (a sync then takes them for deleted and removes their slices, which
    the garbage collector may have removed already); ``api_serving`` follows whether it is
    served. ``relisting``
    notes every event (see :func:`register_endpoint_selector_handler`). ``on_signal``:
    where SIGINT and SIGTERM go once this second Kopf instance has started (see
    :func:`~endpointslice_operator.controller.watch.kopf_wiring.run_kopf`)."""

    def listed(items: dict[str, list[dict[str, Any]]]) -> None:
        for item in items[PLURAL]:
            index.upsert(item)
        index.served = True
        index.synced = True
        log.info("serving EndpointSelectors (%d listed)", len(items[PLURAL]))
        router.requeue(all_keys())

    def unserved(_plurals: set[str]) -> None:
        keys = index.clear()
        if keys:
            router.requeue(keys)

    await serve_with_kopf(
        api_client,
        configuration,
        group=GROUP,
        version=VERSION,
        plurals=(PLURAL,),
        what="EndpointSelectors",
        missing_hint="install deploy/crds/endpointselectors.endpointslice-operator.io.yaml",
        forbidden_hint="the chart grants it with endpointSelectors.enabled: true",
        on_listed=listed,
        register=lambda registry: register_endpoint_selector_handler(
            registry, index, router, relisting
        ),
        namespaces=namespaces,
        on_signal=on_signal,
        relistings=() if relisting is None else (relisting,),
        on_unserved=unserved,
        api_serving=api_serving,
    )
