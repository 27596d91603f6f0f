"""Serving EndpointSelectors: discovery, the first listing, then Kopf's per-object handlers.

The CRD (``deploy/crds/endpointselectors.endpointslice-operator.io.yaml``) may be installed
after the operator starts, or never. :func:`serve_endpoint_selectors` therefore asks discovery
whether ``endpointslice-operator.io/v1alpha1`` serves ``endpointselectors`` and, while it does
not (or listing is forbidden), asks again with the DRA claim watch's backoff
(:func:`.claim_watch.retry_delays`: 5 s doubling up to 5 minutes), so installing the CRD or
granting the RBAC later needs no restart.

Once served, one list per watched scope fills the index (after which a sync may take a missing
EndpointSelector for a deleted one: ``index.synced``) and queues every EndpointSelector key,
then Kopf takes over with an ``on.event`` handler on a registry of its own (Kopf scans the
served resources once when it starts, so it is started only now): each event updates the
index, queues the key when the spec changed, and writes ``status`` (observedGeneration and the
``Ready`` condition) through Kopf's patch when it differs from what the object shows.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import aiohttp
import kopf
from kubernetes_asyncio.client import ApiClient, Configuration

from endpointslice_operator.controller.claim_watch import retry_delays
from endpointslice_operator.controller.handlers import EventRouter
from endpointslice_operator.controller.kopf_wiring import connection_info, run_kopf
from endpointslice_operator.controller.owners import ENDPOINT_SELECTOR
from endpointslice_operator.controller.owners.endpoint_selector import (
    EndpointSelectorIndex,
    status_patch,
)
from endpointslice_operator.controller.writer import ApiError, raise_for_status
from endpointslice_operator.reconciler.endpoint_selector import GROUP, PLURAL, VERSION

__all__ = ["discover", "register_endpoint_selector_handler", "serve_endpoint_selectors"]

log = logging.getLogger(__name__)

KOPF_STOP_TIMEOUT = 10.0


async def discover(api_client: ApiClient) -> bool:
    """Whether the API server serves ``endpointselectors`` in ``endpointslice-operator.io/
    v1alpha1``; other failures than 404 raise."""
    response = await api_client.call_api(
        f"/apis/{GROUP}/{VERSION}", "GET", auth_settings=["BearerToken"], _preload_content=False
    )
    try:
        document = await raise_for_status(response)
    except ApiError as exc:
        if exc.not_found:
            return False
        raise
    resources = document.get("resources")
    return any(
        isinstance(r, Mapping) and r.get("name") == PLURAL
        for r in (resources if isinstance(resources, list) else ())
    )


async def _list(api_client: ApiClient, scope: str | None) -> list[dict[str, Any]]:
    path = f"/apis/{GROUP}/{VERSION}"
    path += f"/namespaces/{scope}/{PLURAL}" if scope else f"/{PLURAL}"
    items: list[dict[str, Any]] = []
    token = ""
    while True:
        query = [("limit", "500")] + ([("continue", token)] if token else [])
        response = await api_client.call_api(
            path,
            "GET",
            query_params=query,
            auth_settings=["BearerToken"],
            _preload_content=False,
            _request_timeout=60,
        )
        body = await raise_for_status(response)
        items.extend(i for i in body.get("items") or [] if isinstance(i, dict))
        token = str((body.get("metadata") or {}).get("continue") or "")
        if not token:
            return items


def register_endpoint_selector_handler(
    registry: kopf.OperatorRegistry, index: EndpointSelectorIndex, router: EventRouter
) -> None:
    """The ``on.event`` handler of EndpointSelectors on ``registry``."""

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
            if event.get("type") == "DELETED":
                if index.remove(namespace, name) is not None:
                    router.requeue([ENDPOINT_SELECTOR.key(namespace, name)])
                return
            previous, entry = index.upsert(obj)
            if previous is None or _changed(previous.body, entry.body):
                router.requeue([entry.key])
            status = status_patch(entry, obj.get("status"))
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
    namespaces: Sequence[str] = (),
    on_signal: Callable[[], None] | None = None,
) -> None:
    """Discover, list, then run Kopf for EndpointSelectors until cancelled. ``on_signal``:
    where SIGINT and SIGTERM go once this second Kopf instance has started (see
    :func:`~endpointslice_operator.controller.kopf_wiring.run_kopf`)."""
    delays = retry_delays()
    told = ""
    scopes: list[str | None] = list(namespaces) or [None]
    while True:
        why = ""
        try:
            if await discover(api_client):
                listed = [item for scope in scopes for item in await _list(api_client, scope)]
                break
            why = (
                f"the API server does not serve {PLURAL}.{GROUP}/{VERSION} (install "
                "deploy/crds/endpointselectors.endpointslice-operator.io.yaml)"
            )
        except ApiError as exc:
            why = f"cannot list {PLURAL}.{GROUP}: {exc}"
            if exc.status == 403:
                why += " (the chart grants it with endpointSelectors.enabled: true)"
        except (aiohttp.ClientError, OSError, TimeoutError) as exc:
            why = f"discovery of {GROUP} failed: {exc}"
        if why != told:
            told = why
            log.warning("EndpointSelectors not served: %s; checking again with a backoff", why)
        await asyncio.sleep(next(delays))
    for item in listed:
        index.upsert(item)
    index.served = True
    index.synced = True
    log.info("serving EndpointSelectors (%d listed)", len(listed))
    router.requeue(all_keys())

    registry = kopf.OperatorRegistry()

    @kopf.on.login(registry=registry)
    async def login(**_: Any) -> kopf.ConnectionInfo:
        return await connection_info(configuration)

    register_endpoint_selector_handler(registry, index, router)
    stop: asyncio.Future[None] = asyncio.get_running_loop().create_future()
    task = asyncio.create_task(
        run_kopf(registry, list(namespaces), stop, on_signal=on_signal), name="kopf-selectors"
    )
    try:
        await asyncio.shield(task)
    finally:
        if not stop.done():
            stop.set_result(None)
        with contextlib.suppress(asyncio.TimeoutError, asyncio.CancelledError):
            await asyncio.wait_for(asyncio.shield(task), KOPF_STOP_TIMEOUT)
        task.cancel()
        with contextlib.suppress(BaseException):
            await task
