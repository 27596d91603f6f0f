"""This cluster's ServiceExports and ServiceImports through Kopf's per-object handlers.

:func:`serve_exports_and_imports` waits until ``multicluster.x-k8s.io/v1beta1`` serves both
kinds (discovery with a backoff, shared with EndpointSelectors:
:func:`~endpointslice_operator.controller.kopf_serving.serve_with_kopf`), lists them once into
the :class:`~.cache.LocalCache` (the listing counts toward the cache's ``complete``), then runs
a Kopf instance whose ``on.event`` handlers feed every event to the cache, which queues the
import key. The peers stay on list-watches (one Kopf instance watches one cluster).

Kopf re-lists a kind after its watch expired (410 Gone) without reporting the objects deleted
meanwhile: a listing event (type None) after the first listing starts a re-listing here; once
no event came for :data:`RELIST_QUIET_PERIOD` seconds, each cached object it did not deliver
is asked for, and forgotten only when the API server answers 404 (a failed or partial listing
is never taken as a deletion).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import kopf
from kubernetes_asyncio.client import ApiClient, Configuration

from endpointslice_operator.controller.direct_requests import DirectRequests, path_segment
from endpointslice_operator.controller.kopf_serving import serve_with_kopf
from endpointslice_operator.controller.mcs.cache import Key, LocalCache
from endpointslice_operator.controller.mcs.clusters import API_TIMEOUT
from endpointslice_operator.controller.writer import ApiError, raise_for_status

__all__ = ["GROUP", "KOPF_KINDS", "RELIST_QUIET_PERIOD", "Relisting", "serve_exports_and_imports"]

log = logging.getLogger(__name__)

GROUP = "multicluster.x-k8s.io"
VERSION = "v1beta1"
KOPF_KINDS = ("serviceexports", "serviceimports")
"""The kinds of this cluster handled through Kopf (the cache's other kinds are list-watched)."""
RELIST_QUIET_PERIOD = 2.0
"""A re-listing counts as complete once no event of its kind has come for this long."""


def _key(obj: Mapping[str, Any]) -> Key:
    metadata = obj.get("metadata")
    metadata = metadata if isinstance(metadata, Mapping) else {}
    return (str(metadata.get("namespace") or ""), str(metadata.get("name") or ""))


class Relisting:
    """One kind's re-listings by Kopf, and the check of what they left out."""

    def __init__(
        self,
        kind: str,
        cache: LocalCache,
        exists: Callable[[str, Key], Any],
        quiet: float = RELIST_QUIET_PERIOD,
    ) -> None:
        self.kind = kind
        self.cache = cache
        self.exists = exists
        """``await exists(kind, key)``: False only when the API server says 404."""
        self.quiet = quiet
        self.seen: set[Key] | None = None
        self.last = 0.0
        self.task: asyncio.Task[None] | None = None
        self.checked = 0
        self.forgotten = 0

    def held(self) -> set[Key]:
        return set(self.cache.exports if self.kind == "serviceexports" else self.cache.imports)

    def note(self, event_type: str | None, key: Key) -> None:
        """An event: a listing one (type None) starts a re-listing; while one runs, every
        event's object counts as delivered."""
        loop = asyncio.get_running_loop()
        if event_type is None and self.seen is None:
            self.seen = set()
            self.task = asyncio.create_task(self._finish(), name=f"mcs-relist-{self.kind}")
        if self.seen is not None:
            self.seen.add(key)
            self.last = loop.time()

    async def _finish(self) -> None:
        loop = asyncio.get_running_loop()
        while (wait := self.last + self.quiet - loop.time()) > 0:
            await asyncio.sleep(wait)
        seen, self.seen = self.seen or set(), None
        missing = sorted(self.held() - seen)
        gone = 0
        for key in missing:
            self.checked += 1
            if await self.exists(self.kind, key):
                continue
            gone += 1
            self.cache.handler(self.kind)(
                "DELETED", {"metadata": {"namespace": key[0], "name": key[1]}}
            )
        self.forgotten += gone
        if missing:
            log.info(
                "re-list of %s: %d not listed, %d confirmed gone", self.kind, len(missing), gone
            )

    def cancel(self) -> None:
        if self.task is not None:
            self.task.cancel()


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
) -> None:
    """Discover, list once into ``cache``, then run Kopf's handlers until cancelled."""
    requests = DirectRequests(api_client)

    async def exists(kind: str, key: Key) -> bool:
        path = (
            f"/apis/{GROUP}/{VERSION}/namespaces/{path_segment(key[0])}/{kind}/"
            f"{path_segment(key[1])}"
        )
        try:
            async with asyncio.timeout(API_TIMEOUT):
                await raise_for_status(await requests.request("GET", path))
        except ApiError as exc:
            return not exc.not_found
        except Exception as exc:  # keep it: a later event or re-list will tell
            log.info("could not check %s %s/%s: %s", kind, *key, exc)
        return True

    relistings = {kind: Relisting(kind, cache, exists) for kind in KOPF_KINDS}

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

    try:
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
        )
    finally:
        for relisting in relistings.values():
            relisting.cancel()
