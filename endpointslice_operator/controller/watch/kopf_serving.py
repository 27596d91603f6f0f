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
whose count runs here while Kopf does. While Kopf runs, discovery is asked again every
:data:`SERVED_RECHECK` seconds (and when Kopf fails, as it does on a 404): a CRD deleted stops
Kopf, the caller drops the objects that went with it, one warning says so (Kopf's own 404
tracebacks are left out), ``endpointslice_operator_api_served`` turns 0, and all of the above
starts again, so the CRD applied again is served again, in any order of events.

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
from endpointslice_operator.metrics.api_serving import ApiServingMetrics

__all__ = ["KOPF_STOP_TIMEOUT", "list_objects", "serve_with_kopf", "served"]

log = logging.getLogger(__name__)

KOPF_STOP_TIMEOUT = 10.0
"""Seconds Kopf may take to stop once asked."""
SERVED_RECHECK = 10.0
"""Seconds between two discovery checks while Kopf serves the kinds (to notice a CRD deleted)."""
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
    on_unserved: Callable[[set[str]], None] | None = None,
    api_serving: ApiServingMetrics | None = None,
    recheck: float = SERVED_RECHECK,
) -> None:
    """Discover (with a backoff), list once, then run Kopf with ``register``'s handlers until
    cancelled, and again each time the kinds come back after they stopped being served.

    ``what`` names the kinds in logs; ``missing_hint`` / ``forbidden_hint`` say how to fix a
    CRD not served / a listing refused. ``on_signal``: where SIGINT and SIGTERM go once a Kopf
    instance has started (see
    :func:`~endpointslice_operator.controller.watch.kopf_wiring.run_kopf`). ``relistings``: the
    kinds' re-listing checks (:mod:`.relist`), which the handlers feed every event (Kopf's own
    first listing counts as a re-listing: what was deleted since the listing here is checked);
    their count (:meth:`~.relist.Relisting.keep_counting`, for a re-listing that delivers
    nothing) runs while Kopf does, and both stop when Kopf stops.

    While Kopf runs, discovery is asked again every ``recheck`` seconds (and at once when Kopf
    fails, as it does on a 404 when the CRD is deleted): once the kinds are no longer served,
    Kopf is stopped, ``on_unserved`` is given those of ``plurals`` no longer served and drops
    what the caches held of them (their objects went with the CRD), one warning says so, and
    the discovery above starts again.
    ``api_serving`` (``endpointslice_operator_api_served``) follows whether they are served."""
    told = ""
    kinds = ", ".join(f"{plural}.{group}/{version}" for plural in plurals)
    missing = f"the API server does not serve {kinds} ({missing_hint})"
    if api_serving is not None:
        api_serving.set(group, plurals, False)
    while True:
        listed, told = await _discover_and_list(
            api_client,
            group=group,
            version=version,
            plurals=plurals,
            what=what,
            missing=missing,
            forbidden_hint=forbidden_hint,
            scopes=list(namespaces) or [None],
            told=told,
        )
        told = ""
        if api_serving is not None:
            api_serving.set(group, plurals, True)
        on_listed(listed)
        if not await _run_kopf_while_served(
            api_client,
            configuration,
            group=group,
            version=version,
            plurals=plurals,
            what=what,
            register=register,
            namespaces=namespaces,
            on_signal=on_signal,
            relistings=relistings,
            recheck=recheck,
        ):
            return
        if api_serving is not None:
            api_serving.set(group, plurals, False)
        if on_unserved is not None:
            on_unserved(await _unserved(api_client, group, version, plurals))
        told = missing
        log.warning(
            "%s no longer served: %s; dropped them from the caches, checking again with a backoff",
            what,
            missing,
        )


async def _discover_and_list(
    api_client: ApiClient,
    *,
    group: str,
    version: str,
    plurals: Sequence[str],
    what: str,
    missing: str,
    forbidden_hint: str,
    scopes: list[str | None],
    told: str,
) -> tuple[dict[str, list[dict[str, Any]]], str]:
    """Once ``plurals`` are served, every object of them in ``scopes``; each new reason they
    are not is logged once (``told``: the reason last logged, returned)."""
    delays = retry_delays()
    kinds = ", ".join(f"{plural}.{group}/{version}" for plural in plurals)
    while True:
        why = ""
        try:
            if await served(api_client, group, version, plurals):
                return {
                    plural: [
                        item
                        for scope in scopes
                        for item in await list_objects(api_client, group, version, plural, scope)
                    ]
                    for plural in plurals
                }, told
            why = missing
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


async def _still_served(
    api_client: ApiClient, group: str, version: str, plurals: Sequence[str], recheck: float
) -> None:
    """Return once discovery says ``plurals`` are no longer served (asked every ``recheck``
    seconds; a failure to ask is not an answer)."""
    while True:
        await asyncio.sleep(recheck)
        if not await _served_or_unknown(api_client, group, version, plurals):
            return


async def _unserved(
    api_client: ApiClient, group: str, version: str, plurals: Sequence[str]
) -> set[str]:
    """Those of ``plurals`` discovery does not show (every one when it cannot tell)."""
    return {
        plural
        for plural in plurals
        if not await _served_or_unknown(api_client, group, version, (plural,))
    } or set(plurals)


async def _served_or_unknown(
    api_client: ApiClient, group: str, version: str, plurals: Sequence[str]
) -> bool:
    """Whether ``plurals`` are served, True when discovery cannot tell."""
    try:
        return await served(api_client, group, version, plurals)
    except (ApiError, aiohttp.ClientError, OSError, TimeoutError):
        return True


async def _run_kopf_while_served(
    api_client: ApiClient,
    configuration: Configuration,
    *,
    group: str,
    version: str,
    plurals: Sequence[str],
    what: str,
    register: Callable[[kopf.OperatorRegistry], None],
    namespaces: Sequence[str],
    on_signal: Callable[[], None] | None,
    relistings: Sequence[Relisting],
    recheck: float,
) -> bool:
    """Run Kopf until cancelled (re-raised), until it stops of itself (False), or until the
    kinds are no longer served (True). Kopf failing while they are still served is logged and
    Kopf started again after ``recheck`` seconds."""
    watching = asyncio.create_task(
        _still_served(api_client, group, version, plurals, recheck), name=f"served-{what}"
    )
    try:
        while True:
            stop: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            task = asyncio.create_task(
                run_kopf(
                    _registry(configuration, register),
                    list(namespaces),
                    stop,
                    on_signal=on_signal,
                ),
                name=f"kopf-{what}",
            )
            counting = [
                asyncio.create_task(
                    relisting.keep_counting(namespaces), name=f"count-{relisting.plural}"
                )
                for relisting in relistings
            ]
            try:
                await asyncio.wait({task, watching}, return_when=asyncio.FIRST_COMPLETED)
                if watching.done():
                    return True
                failure = task.exception()
                if failure is None:
                    return False
            finally:
                await _stop_kopf(task, stop, relistings, counting)
            # Kopf fails on a 404 once the CRD is deleted (discovery may still show it for a
            # moment): back to discovery if that is why.
            await asyncio.sleep(recheck)
            if not await _served_or_unknown(api_client, group, version, plurals):
                return True
            if getattr(failure, "status", None) != 404:
                log.warning("Kopf stopped serving %s (%s); starting it again", what, failure)
    finally:
        watching.cancel()
        await asyncio.gather(watching, return_exceptions=True)


class _NotServedFilter(logging.Filter):
    """Drops Kopf's error records (with their tracebacks) of a watch answered 404: the kind is
    no longer served, which :func:`serve_with_kopf` notices and logs in one line."""

    def filter(self, record: logging.LogRecord) -> bool:
        failure = record.exc_info[1] if record.exc_info else None
        return getattr(failure, "status", None) != 404


for _name in ("kopf._core.reactor.orchestration", "kopf._core.reactor.running"):
    logging.getLogger(_name).addFilter(_NotServedFilter())


def _registry(
    configuration: Configuration, register: Callable[[kopf.OperatorRegistry], None]
) -> kopf.OperatorRegistry:
    """A Kopf registry with the login from ``configuration`` and ``register``'s handlers."""
    registry = kopf.OperatorRegistry()

    @kopf.on.login(registry=registry)
    async def login(**_: Any) -> kopf.ConnectionInfo:
        return await connection_info(configuration)

    register(registry)
    return registry


async def _stop_kopf(
    task: asyncio.Task[None],
    stop: asyncio.Future[None],
    relistings: Sequence[Relisting],
    counting: Sequence[asyncio.Task[None]],
) -> None:
    """Ask Kopf to stop, cancel it after :data:`KOPF_STOP_TIMEOUT`, stop the re-listings."""
    if not stop.done():
        stop.set_result(None)
    with contextlib.suppress(Exception, asyncio.CancelledError):  # its failure is read apart
        await asyncio.wait_for(asyncio.shield(task), KOPF_STOP_TIMEOUT)
    task.cancel()
    for relisting, counter in zip(relistings, counting, strict=True):
        counter.cancel()
        relisting.cancel()
    with contextlib.suppress(BaseException):
        await task
    await asyncio.gather(*counting, return_exceptions=True)
