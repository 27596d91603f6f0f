"""The ResourceClaim watch behind the ``<prefix>/device-network`` source (see
:mod:`..cache.claims`).

Started by the first sync of a Service that uses a device network (never otherwise, so a
cluster without DRA, or an install without the RBAC for claims, sees no request for them).
It asks discovery which ``resource.k8s.io`` version is served, then lists and watches
ResourceClaims with :class:`~.list_watch.ListWatcher` into ``indexes.claims``. When the first
listing is in, or when claims cannot be read (no usable version served, listing forbidden),
every Service using a device network is queued again (their syncs wait for it, or report why
not, see ``ServiceSyncer``). Claims that cannot be read are checked again with a backoff
(:func:`retry_delays`), so a later upgrade, DRA install or RBAC grant needs no restart.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

import aiohttp
from kubernetes_asyncio.client import ApiClient

from endpointslice_operator.controller.api.errors import (
    ApiError,
    get_unless_missing,
    raise_for_status,
)
from endpointslice_operator.controller.api.reset import Watermark
from endpointslice_operator.controller.cache.claims import GROUP, PLURAL, VERSIONS, pick_version
from endpointslice_operator.controller.cache.indexes import Indexes
from endpointslice_operator.controller.watch.list_watch import ListWatcher
from endpointslice_operator.controller.watch.router import EventRouter

__all__ = ["RETRY_FIRST", "RETRY_MAX", "discover_claim_version", "retry_delays", "watch_claims"]

log = logging.getLogger(__name__)

RETRY_FIRST = 5.0
"""Seconds before the first re-check of claims that cannot be read (doubled at each)."""
RETRY_MAX = 300.0
"""The longest wait between two re-checks."""


def retry_delays(first: float = RETRY_FIRST, cap: float = RETRY_MAX) -> Iterator[float]:
    """5, 10, 20, 40 ... seconds, then ``cap`` for ever: the waits between re-checks."""
    delay = first
    while True:
        yield min(delay, cap)
        delay = min(delay * 2, cap)


async def discover_claim_version(api_client: ApiClient) -> str | None:
    """The served ``resource.k8s.io`` version to watch, None if the group or no usable
    version is served; other failures raise ``ApiError``."""
    document = await get_unless_missing(api_client, f"/apis/{GROUP}")
    return None if document is None else pick_version(document)


async def _readable(api_client: ApiClient, namespaces: Sequence[str]) -> tuple[str | None, str]:
    """``(version, "")`` when claims can be listed, else ``(None, why)``; ``why`` is empty
    for a failure to ask (the state known before stays)."""
    try:
        version = await discover_claim_version(api_client)
    except (ApiError, aiohttp.ClientError, OSError, TimeoutError) as exc:
        log.warning("discovery of %s failed, retrying: %s", GROUP, exc)
        return None, ""
    if version is None:
        return None, (
            f"the API server serves no {GROUP} version with device network data "
            f"({', '.join(VERSIONS)}), so the device-network source cannot work"
        )
    forbidden = await _forbidden(api_client, version, namespaces)
    if forbidden is not None:
        return None, (
            f"the operator may not list {GROUP} {PLURAL} (install the chart with "
            f"rbac.resourceClaims: true): {forbidden}"
        )
    return version, ""


async def watch_claims(
    api_client: ApiClient,
    indexes: Indexes,
    router: EventRouter,
    device_annotation: str,
    *,
    namespaces: Sequence[str] = (),
    server_timeout: float = 300.0,
    client_timeout: float = 360.0,
    watermark: Watermark | None = None,
    on_reset: Callable[[str], None] | None = None,
    on_suspect: Callable[[str], None] | None = None,
) -> None:
    """Discover, then list and watch ResourceClaims until cancelled.

    While no usable version is served, or listing is forbidden, or discovery fails, the check
    is repeated after :func:`retry_delays` (exponential from ``RETRY_FIRST``, capped at
    ``RETRY_MAX``): a cluster upgraded later, a CRD-based DRA installed later or RBAC granted
    by ``helm upgrade --set rbac.resourceClaims=true`` is picked up without a restart. The
    device-network Services are queued again only when the reason changes (their syncs report
    it once per Service, see ``ServiceSyncer``), and once the claims are listed."""
    claims = indexes.claims
    delays = retry_delays()
    while True:
        version, why = await _readable(api_client, namespaces)
        if version is not None:
            break
        if why and why != claims.unavailable:
            claims.unavailable = why
            log.warning("%s; checking again with a backoff of up to %.0f s", why, RETRY_MAX)
            router.requeue(_device_network_services(indexes, device_annotation))
        await asyncio.sleep(next(delays))
    if claims.unavailable is not None:
        log.info("%s %s can be listed now", GROUP, PLURAL)
        # The Services wait for the listing now (claims.synced), which queues them again.
        claims.unavailable = None
    claims.version = version
    log.info("watching %s/%s %s (a Service uses a device network)", GROUP, version, PLURAL)

    scopes = len(namespaces) or 1
    # Per namespace, the names of the claims the running listing of its scope delivered.
    seen: dict[str, set[str]] = {}

    def on_event(event_type: str | None, claim: Mapping[str, Any]) -> None:
        if event_type is None:  # a listing's object
            metadata = claim.get("metadata")
            if isinstance(metadata, Mapping):
                namespace = str(metadata.get("namespace") or "")
                seen.setdefault(namespace, set()).add(str(metadata.get("name") or ""))
        router.on_claim(event_type, claim)

    def listed(scope: str | None) -> None:
        # A re-listing (after a 410) shows no DELETED events: the claims of its scope it did
        # not show are gone. Each scope (namespace) is listed on its own, so each prunes its
        # own claims only.
        if scope is None:
            stale = [key for key in claims.claims if key[1] not in seen.get(key[0], ())]
            seen.clear()
        else:
            names = seen.pop(scope, set())
            stale = [key for key in claims.claims if key[0] == scope and key[1] not in names]
        for namespace, name in stale:
            router.on_claim("DELETED", {"metadata": {"namespace": namespace, "name": name}})
        # Synced once every scope has been listed: every device-network Service is queued
        # again (also those that only got told why claims could not be read).
        if claims.scope_listed(scope, scopes) is not None:
            router.requeue(_device_network_services(indexes, device_annotation))

    watcher = ListWatcher(
        api_client,
        PLURAL,
        on_event,
        namespaces=namespaces,
        server_timeout=server_timeout,
        client_timeout=client_timeout,
        watermark=watermark,
        on_reset=on_reset,
        on_suspect=on_suspect,
        group_version=f"{GROUP}/{version}",
        on_listed=listed,
    )
    await watcher.run()


async def _forbidden(api_client: ApiClient, version: str, namespaces: Sequence[str]) -> str | None:
    """The API server's message if listing claims is forbidden (RBAC), else None. Other
    failures are left to the watch, which retries them."""
    scope = f"/namespaces/{namespaces[0]}" if namespaces else ""
    try:
        response = await api_client.call_api(
            f"/apis/{GROUP}/{version}{scope}/{PLURAL}",
            "GET",
            query_params=[("limit", "1")],
            auth_settings=["BearerToken"],
            _preload_content=False,
        )
        await raise_for_status(response)
    except ApiError as exc:
        if exc.status == 403:
            return str(exc)
    except (aiohttp.ClientError, OSError, TimeoutError):
        pass
    return None


def _device_network_services(indexes: Indexes, device_annotation: str) -> list[str]:
    found = []
    for key in indexes.services.keys():  # noqa: SIM118 (not a dict)
        entry = indexes.services.get(key)
        if entry is None or not entry.decision.managed:
            continue
        annotations = entry.body["metadata"].get("annotations") or {}
        if device_annotation in annotations:
            found.append(key)
    return found
