"""Serving custom resources through Kopf once the API server serves them.

A CRD may be installed after the operator starts, or never, and Kopf resolves the resources it
watches once, when it starts (the operator's Kopf settings disable its scanning). So
:func:`serve_with_kopf` first asks discovery whether ``group/version`` serves every one of
``plurals``; while it does not (or listing is forbidden, or the API server cannot be reached),
it asks again with the DRA claim watch's backoff (:func:`.claim_watch.retry_delays`: 5 s
doubling up to 5 minutes), so that installing the CRD or granting the RBAC later needs no
restart. Once served, one list per kind and watched scope is handed to ``on_listed`` (a caller
may then take a missing object for a deleted one), and a Kopf instance of its own runs the
handlers ``register`` put on its registry, until cancelled. Objects deleted while Kopf's watch
had expired are found by the kinds' :class:`~.relist.Relisting`, which the handlers feed, and
whose count runs here while Kopf does.

Used by EndpointSelectors (:mod:`..endpoint_selector.watch`) and by the Multi-Cluster
Services' ServiceExports and ServiceImports of this cluster (:mod:`..mcs.kopf_handlers`).
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

from endpointslice_operator.controller.api.errors import (
    ApiError,
    get_unless_missing,
    raise_for_status,
)
from endpointslice_operator.controller.watch.claim_watch import retry_delays
from endpointslice_operator.controller.watch.kopf_wiring import connection_info, run_kopf
from endpointslice_operator.controller.watch.relist import Relisting

__all__ = ["KOPF_STOP_TIMEOUT", "list_objects", "serve_with_kopf", "served"]

log = logging.getLogger(__name__)

KOPF_STOP_TIMEOUT = 10.0
"""Seconds Kopf may take to stop once asked."""
LIST_TIMEOUT = 60
"""Seconds one page of the first listing may take."""


async def served(api_client: ApiClient, group: str, version: str, plurals: Sequence[str]) -> bool:
    """Whether ``group/version`` serves every one of ``plurals``; other failures than 404
    raise."""
    document = await get_unless_missing(api_client, f"/apis/{group}/{version}")
    if document is None:
        return False
    resources = document.get("resources")
    names = {
        r.get("name")
        for r in (resources if isinstance(resources, list) else ())
        if isinstance(r, Mapping)
    }
    return all(plural in names for plural in plurals)


async def list_objects(
    api_client: ApiClient, group: str, version: str, plural: str, scope: str | None
) -> list[dict[str, Any]]:
    """Every object of ``plural`` in ``scope`` (a namespace, None for all), page by page."""
    path = f"/apis/{group}/{version}"
    path += f"/namespaces/{scope}/{plural}" if scope else f"/{plural}"
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
            _request_timeout=LIST_TIMEOUT,
        )
        body = await raise_for_status(response)
        items.extend(i for i in body.get("items") or [] if isinstance(i, dict))
        token = str((body.get("metadata") or {}).get("continue") or "")
        if not token:
            return items


async def serve_with_kopf(
    api_client: ApiClient,
    configuration: Configuration,
    *,
    group: str,
    version: str,
    plurals: Sequence[str],
    what: str,
    missing_hint: str,
    forbidden_hint: str,
    on_listed: Callable[[dict[str, list[dict[str, Any]]]], None],
    register: Callable[[kopf.OperatorRegistry], None],
    namespaces: Sequence[str] = (),
    on_signal: Callable[[], None] | None = None,
    relistings: Sequence[Relisting] = (),
) -> None:
    """Discover (with a backoff), list once, then run Kopf with ``register``'s handlers until
    cancelled. ``what`` names the kinds in logs; ``missing_hint`` / ``forbidden_hint`` say how
    to fix a CRD not served / a listing refused. ``on_signal``: where SIGINT and SIGTERM go
    once this Kopf instance has started (see
    :func:`~endpointslice_operator.controller.watch.kopf_wiring.run_kopf`). ``relistings``: the
    kinds' re-listing checks (:mod:`.relist`), which the handlers feed every event (Kopf's own
    first listing counts as a re-listing: what was deleted since the listing here is checked);
    their count (:meth:`~.relist.Relisting.keep_counting`, for a re-listing that delivers
    nothing) runs while Kopf does, and both stop when Kopf stops."""
    delays = retry_delays()
    told = ""
    scopes: list[str | None] = list(namespaces) or [None]
    kinds = ", ".join(f"{plural}.{group}/{version}" for plural in plurals)
    while True:
        why = ""
        try:
            if await served(api_client, group, version, plurals):
                listed = {
                    plural: [
                        item
                        for scope in scopes
                        for item in await list_objects(api_client, group, version, plural, scope)
                    ]
                    for plural in plurals
                }
                break
            why = f"the API server does not serve {kinds} ({missing_hint})"
        except ApiError as exc:
            why = f"cannot list {kinds}: {exc}"
            if exc.status == 403:
                why += f" ({forbidden_hint})"
        except (aiohttp.ClientError, OSError, TimeoutError) as exc:
            why = f"discovery of {group} failed: {exc}"
        if why != told:
            told = why
            log.warning("%s not served: %s; checking again with a backoff", what, why)
        await asyncio.sleep(next(delays))
    on_listed(listed)

    registry = kopf.OperatorRegistry()

    @kopf.on.login(registry=registry)
    async def login(**_: Any) -> kopf.ConnectionInfo:
        return await connection_info(configuration)

    register(registry)
    stop: asyncio.Future[None] = asyncio.get_running_loop().create_future()
    task = asyncio.create_task(
        run_kopf(registry, list(namespaces), stop, on_signal=on_signal), name=f"kopf-{what}"
    )
    counting = [
        asyncio.create_task(relisting.keep_counting(namespaces), name=f"count-{relisting.plural}")
        for relisting in relistings
    ]
    try:
        await asyncio.shield(task)
    finally:
        if not stop.done():
            stop.set_result(None)
        with contextlib.suppress(asyncio.TimeoutError, asyncio.CancelledError):
            await asyncio.wait_for(asyncio.shield(task), KOPF_STOP_TIMEOUT)
        task.cancel()
        for relisting, counter in zip(relistings, counting, strict=True):
            counter.cancel()
            relisting.cancel()
        with contextlib.suppress(BaseException):
            await task
        await asyncio.gather(*counting, return_exceptions=True)
