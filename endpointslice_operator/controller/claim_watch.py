"""The ResourceClaim watch behind the ``<prefix>/device-network`` source (see :mod:`.claims`).

Started by the first sync of a Service that uses a device network (never otherwise, so a
cluster without DRA, or an install without the RBAC for claims, sees no request for them).
It asks discovery which ``resource.k8s.io`` version is served, then lists and watches
ResourceClaims with :class:`~.list_watch.ListWatcher` into ``indexes.claims``. When the first
listing is in, or when no usable version is served, every Service using a device network is
queued again (their syncs wait for it, see ``ServiceSyncer``).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import aiohttp
from kubernetes_asyncio.client import ApiClient

from endpointslice_operator.controller.claims import GROUP, PLURAL, VERSIONS, pick_version
from endpointslice_operator.controller.handlers import EventRouter
from endpointslice_operator.controller.indexes import Indexes
from endpointslice_operator.controller.list_watch import ListWatcher
from endpointslice_operator.controller.reset import Watermark
from endpointslice_operator.controller.writer import ApiError, raise_for_status

__all__ = ["discover_claim_version", "watch_claims"]

log = logging.getLogger(__name__)

DISCOVERY_RETRY = 5.0


async def discover_claim_version(api_client: ApiClient) -> str | None:
    """The served ``resource.k8s.io`` version to watch, None if the group or no usable
    version is served; other failures raise ``ApiError``."""
    response = await api_client.call_api(
        f"/apis/{GROUP}", "GET", auth_settings=["BearerToken"], _preload_content=False
    )
    try:
        document = await raise_for_status(response)
    except ApiError as exc:
        if exc.not_found:
            return None
        raise
    return pick_version(document)


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
) -> None:
    """Discover, then list and watch ResourceClaims until cancelled."""
    claims = indexes.claims
    while True:
        try:
            version = await discover_claim_version(api_client)
            break
        except (ApiError, aiohttp.ClientError, OSError, TimeoutError) as exc:
            log.warning("discovery of %s failed, retrying: %s", GROUP, exc)
            await asyncio.sleep(DISCOVERY_RETRY)
    if version is None:
        claims.unavailable = (
            f"the API server serves no {GROUP} version with device network data "
            f"({', '.join(VERSIONS)}), so the device-network source cannot work"
        )
        log.warning("%s", claims.unavailable)
        router.requeue(_device_network_services(indexes, device_annotation))
        return
    claims.version = version
    forbidden = await _forbidden(api_client, version, namespaces)
    if forbidden is not None:
        claims.unavailable = (
            f"the operator may not list {GROUP} {PLURAL} (install the chart with "
            f"rbac.resourceClaims: true): {forbidden}"
        )
        log.warning("%s", claims.unavailable)
        router.requeue(_device_network_services(indexes, device_annotation))
        return
    log.info("watching %s/%s %s (a Service uses a device network)", GROUP, version, PLURAL)

    seen: set[tuple[str, str]] = set()

    def on_event(event_type: str | None, claim: Mapping[str, Any]) -> None:
        if event_type is None:  # a listing's object
            metadata = claim.get("metadata")
            if isinstance(metadata, Mapping):
                seen.add((str(metadata.get("namespace") or ""), str(metadata.get("name") or "")))
        router.on_claim(event_type, claim)

    def listed() -> None:
        if len(namespaces) <= 1:
            # A re-listing (after a 410) shows no DELETED events: claims it did not show are
            # gone. (With several namespaces the listings interleave; a deleted claim then
            # stays until its pods are gone, which only costs memory.)
            for namespace, name in [key for key in claims.claims if key not in seen]:
                router.on_claim("DELETED", {"metadata": {"namespace": namespace, "name": name}})
        seen.clear()
        # Synced once every scope (namespace) has been listed.
        if not claims.synced and watcher.listings >= max(1, len(namespaces)):
            claims.synced = True
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
