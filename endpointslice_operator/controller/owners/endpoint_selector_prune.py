"""EndpointSelectors deleted while Kopf was not watching: found and forgotten.

When Kopf's watch of EndpointSelectors expires (410 Gone: the API server compacted the
history it would resume from), Kopf lists them again and goes on watching; an object deleted
in between shows no ``DELETED`` event, and the listing simply leaves it out, which Kopf does
not tell its handlers. Such an object would stay in :class:`.EndpointSelectorIndex`, and the
operator would keep its slices (or create them again after the garbage collector removed
them, owned by an object that no longer exists).

:func:`prune_missed_deletions` compares the index with the API server, per watched scope:

1. note the indexed objects of the scope and their UIDs (every one existed at some point);
2. ask for the number of objects there now: one ``limit=1`` list, whose
   ``metadata.remainingItemCount`` gives the count (a few hundred bytes whatever the number);
3. only if the server holds fewer than were noted (so at least one of them is gone), list the
   scope and forget each noted object whose UID the listing does not show and that the index
   still holds under that UID: handled as its ``DELETED`` event would have been (the key is
   queued, and its sync deletes the slices).

A UID is never reused and the listing is read after the note, so an object is forgotten only
once the server no longer has it. A deletion hidden by a creation still on its way to the index
(equal counts) is found on the next round. :func:`keep_pruning` runs it every
:data:`PRUNE_INTERVAL` seconds once the first listing is in: one small request per scope per
minute while nothing is missed.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping, Sequence
from typing import Any

import aiohttp
from kubernetes_asyncio.client import ApiClient

from endpointslice_operator.controller.handlers import EventRouter
from endpointslice_operator.controller.owners.endpoint_selector import EndpointSelectorIndex
from endpointslice_operator.controller.writer import ApiError, raise_for_status
from endpointslice_operator.reconciler.endpoint_selector import GROUP, PLURAL, VERSION

__all__ = [
    "PRUNE_INTERVAL",
    "count_endpoint_selectors",
    "keep_pruning",
    "prune_missed_deletions",
]

log = logging.getLogger(__name__)

PRUNE_INTERVAL = 60.0
"""Seconds between two comparisons of the index with the API server."""
LIST_TIMEOUT = 60
PAGE_SIZE = 500


def _path(scope: str | None) -> str:
    base = f"/apis/{GROUP}/{VERSION}"
    return f"{base}/namespaces/{scope}/{PLURAL}" if scope else f"{base}/{PLURAL}"


async def _page(api_client: ApiClient, scope: str | None, limit: int, token: str) -> Any:
    query: list[tuple[str, str]] = [("limit", str(limit))]
    if token:
        query.append(("continue", token))
    response = await api_client.call_api(
        _path(scope),
        "GET",
        query_params=query,
        auth_settings=["BearerToken"],
        _preload_content=False,
        _request_timeout=LIST_TIMEOUT,
    )
    return await raise_for_status(response)


def _metadata(obj: Any) -> Mapping[str, Any]:
    metadata = obj.get("metadata") if isinstance(obj, Mapping) else None
    return metadata if isinstance(metadata, Mapping) else {}


async def count_endpoint_selectors(api_client: ApiClient, scope: str | None) -> int | None:
    """How many EndpointSelectors the scope holds now; None when the server does not say."""
    body = await _page(api_client, scope, 1, "")
    items = body.get("items") or []
    metadata = _metadata(body)
    if not metadata.get("continue"):
        return len(items)
    remaining = metadata.get("remainingItemCount")
    return len(items) + remaining if isinstance(remaining, int) else None


async def _uids(api_client: ApiClient, scope: str | None) -> set[str]:
    uids: set[str] = set()
    token = ""
    while True:
        body = await _page(api_client, scope, PAGE_SIZE, token)
        uids.update(str(_metadata(item).get("uid") or "") for item in body.get("items") or [])
        token = str(_metadata(body).get("continue") or "")
        if not token:
            return uids


async def prune_missed_deletions(
    api_client: ApiClient,
    index: EndpointSelectorIndex,
    router: EventRouter,
    namespaces: Sequence[str] = (),
) -> list[str]:
    """Forget the indexed EndpointSelectors the API server no longer has (see the module's
    doc); returns their keys. API errors are raised."""
    forgotten: list[str] = []
    scopes: list[str | None] = list(namespaces) or [None]
    for scope in scopes:
        noted: dict[str, str] = {}
        for key in index.keys():  # noqa: SIM118 (not a dict)
            entry = index.get(key)
            if entry is not None and (scope is None or entry.namespace == scope):
                noted[key] = entry.uid
        if not noted:
            continue
        count = await count_endpoint_selectors(api_client, scope)
        if count is not None and count >= len(noted):
            continue
        present = await _uids(api_client, scope)
        for key, uid in noted.items():
            entry = index.get(key)
            if uid in present or entry is None or entry.uid != uid:
                continue
            log.info(
                "EndpointSelector %s/%s is gone (deleted while the watch was not looking)",
                entry.namespace,
                entry.name,
            )
            index.remove(entry.namespace, entry.name)
            router.requeue([key])
            forgotten.append(key)
    return forgotten


async def keep_pruning(
    api_client: ApiClient,
    index: EndpointSelectorIndex,
    router: EventRouter,
    namespaces: Sequence[str] = (),
    *,
    interval: float = PRUNE_INTERVAL,
) -> None:
    """:func:`prune_missed_deletions` every ``interval`` seconds, once EndpointSelectors are
    served and listed, until cancelled; a failed round is logged and tried at the next."""
    while True:
        await asyncio.sleep(interval)
        if not index.synced:
            continue
        try:
            await prune_missed_deletions(api_client, index, router, namespaces)
        except (ApiError, aiohttp.ClientError, OSError, TimeoutError) as exc:
            log.info("could not compare EndpointSelectors with the API server: %s", exc)
