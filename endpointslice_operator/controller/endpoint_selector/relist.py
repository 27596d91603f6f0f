"""EndpointSelectors deleted while Kopf was not watching: found and forgotten.

When Kopf's watch of EndpointSelectors expires (410 Gone: the API server compacted the
history it would resume from), Kopf lists them again and goes on watching; an object deleted
in between shows no ``DELETED`` event, and the listing simply leaves it out. Such an object
would stay in :class:`.EndpointSelectorIndex`, and the operator would keep its slices (or
create them again after the garbage collector removed them, owned by an object that no longer
exists).

:func:`endpoint_selector_relisting` is the kind's :class:`~endpointslice_operator.controller.
relist.Relisting`, the check every kind shares: Kopf's listing events start a re-listing (its
count, run while Kopf runs, one that delivers nothing), and what it left out is asked for and
forgotten (removed from the index, its key queued: its sync deletes the slices) only once the
API server says it is gone, under its UID.
"""

from __future__ import annotations

import logging

from kubernetes_asyncio.client import ApiClient

from endpointslice_operator.controller.cache.owner_kinds import ENDPOINT_SELECTOR
from endpointslice_operator.controller.endpoint_selector.index import EndpointSelectorIndex
from endpointslice_operator.controller.watch.relist import Key, Relisting
from endpointslice_operator.controller.watch.router import EventRouter
from endpointslice_operator.reconciler.endpoint_selector import GROUP, PLURAL, VERSION

__all__ = ["endpoint_selector_relisting"]

log = logging.getLogger(__name__)


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
