"""EndpointSelectors deleted while Kopf was not watching: found and forgotten.

When Kopf's watch of EndpointSelectors expires (410 Gone: the API server compacted the
history it would resume from), Kopf lists them again and goes on watching; an object deleted
in between shows no ``DELETED`` event, and the listing simply leaves it out. Such an object
would stay in :class:`.EndpointSelectorIndex`, and the operator would keep its slices (or
create them again after the garbage collector removed them, owned by an object that no longer
exists).

:func:`endpoint_selector_relisting` is the kind's :class:`~endpointslice_operator.controller.
relist.Relisting`, the check every kind shares: Kopf's listing events start a re-listing, and
what it left out is asked for and forgotten (removed from the index, its key queued: its sync
deletes the slices) only once the API server says it is gone, under its UID.

A listing that delivers nothing starts nothing, though: when every EndpointSelector of the
watched scope was deleted while the watch was down, Kopf's handlers see no event at all (Kopf
does not tell them that a listing ended). :func:`keep_counting` is the safety net for that
case, and for anything else an event stream may lose: every :data:`PRUNE_INTERVAL` seconds it
asks each scope how many EndpointSelectors it holds (one ``limit=1`` list, whose
``metadata.remainingItemCount`` gives the count: a few hundred bytes whatever the number), and
when the server holds fewer than the index (so at least one is gone) it starts a re-listing
with nothing delivered (:meth:`~.relist.Relisting.begin`): every indexed EndpointSelector is
then asked for. A deletion hidden by a creation still on its way to the index (equal counts)
is found on the next round.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping, Sequence
from typing import Any

import aiohttp
from kubernetes_asyncio.client import ApiClient

from endpointslice_operator.controller.handlers import EventRouter
from endpointslice_operator.controller.owners import ENDPOINT_SELECTOR
from endpointslice_operator.controller.owners.endpoint_selector import EndpointSelectorIndex
from endpointslice_operator.controller.relist import Key, Relisting
from endpointslice_operator.controller.writer import ApiError, raise_for_status
from endpointslice_operator.reconciler.endpoint_selector import GROUP, PLURAL, VERSION

__all__ = [
    "PRUNE_INTERVAL",
    "count_endpoint_selectors",
    "endpoint_selector_relisting",
    "keep_counting",
]

log = logging.getLogger(__name__)

PRUNE_INTERVAL = 60.0
"""Seconds between two comparisons of the index's size with the API server's count."""
LIST_TIMEOUT = 60


def endpoint_selector_relisting(
    api_client: ApiClient, index: EndpointSelectorIndex, router: EventRouter
) -> Relisting:
    """The re-listing check of EndpointSelectors: what a re-listing left out and the API
    server says is gone is removed from ``index`` and its key queued."""

    def held() -> list[Key]:
        return [
            (entry.namespace, entry.name)
            for key in index.keys()  # noqa: SIM118 (not a dict)
            if (entry := index.get(key)) is not None
        ]

    def uid_of(key: Key) -> str | None:
        entry = index.get(ENDPOINT_SELECTOR.key(*key))
        return None if entry is None else entry.uid

    def forget(key: Key) -> None:
        log.info("EndpointSelector %s/%s is gone (deleted while the watch was not looking)", *key)
        index.remove(*key)
        router.requeue([ENDPOINT_SELECTOR.key(*key)])

    return Relisting(
        api_client,
        f"/apis/{GROUP}/{VERSION}",
        PLURAL,
        held=held,
        uid_of=uid_of,
        forget=forget,
    )


def _metadata(obj: Any) -> Mapping[str, Any]:
    metadata = obj.get("metadata") if isinstance(obj, Mapping) else None
    return metadata if isinstance(metadata, Mapping) else {}


async def count_endpoint_selectors(api_client: ApiClient, scope: str | None) -> int | None:
    """How many EndpointSelectors the scope holds now; None when the server does not say."""
    base = f"/apis/{GROUP}/{VERSION}"
    response = await api_client.call_api(
        f"{base}/namespaces/{scope}/{PLURAL}" if scope else f"{base}/{PLURAL}",
        "GET",
        query_params=[("limit", "1")],
        auth_settings=["BearerToken"],
        _preload_content=False,
        _request_timeout=LIST_TIMEOUT,
    )
    body = await raise_for_status(response)
    items = body.get("items") or []
    metadata = _metadata(body)
    if not metadata.get("continue"):
        return len(items)
    remaining = metadata.get("remainingItemCount")
    return len(items) + remaining if isinstance(remaining, int) else None


async def missing_any(
    api_client: ApiClient, index: EndpointSelectorIndex, namespaces: Sequence[str] = ()
) -> bool:
    """Whether some watched scope holds fewer EndpointSelectors than the index has there (so
    at least one indexed object is gone). API errors are raised."""
    scopes: list[str | None] = list(namespaces) or [None]
    for scope in scopes:
        held = sum(
            1
            for key in index.keys()  # noqa: SIM118 (not a dict)
            if (entry := index.get(key)) is not None and (scope is None or entry.namespace == scope)
        )
        if not held:
            continue
        count = await count_endpoint_selectors(api_client, scope)
        if count is not None and count < held:
            return True
    return False


async def keep_counting(
    api_client: ApiClient,
    index: EndpointSelectorIndex,
    relisting: Relisting,
    namespaces: Sequence[str] = (),
    *,
    interval: float = PRUNE_INTERVAL,
) -> None:
    """Every ``interval`` seconds, once EndpointSelectors are served and listed, compare the
    index's size with the API server's count (see the module's doc) until cancelled; a failed
    round is logged and tried at the next."""
    while True:
        await asyncio.sleep(interval)
        if not index.synced:
            continue
        try:
            if await missing_any(api_client, index, namespaces):
                log.info("fewer EndpointSelectors on the API server than indexed: checking each")
                relisting.begin()
        except (ApiError, aiohttp.ClientError, OSError, TimeoutError) as exc:
            log.info("could not count EndpointSelectors on the API server: %s", exc)
