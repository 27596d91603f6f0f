"""The endpoint counts of EndpointSelectors' status, written at most once per interval.

``status.endpoints`` and ``status.readyEndpoints`` change with the pods, not with the object:
a pod flapping readiness ten times a second changes them ten times a second, and a status
write per sync would add as many writes as the slices themselves. So each sync only records
the counts it published (``EndpointSelectorIndex.counts``), the index keeps the counts each
object's status shows (``EndpointSelectorIndex.shown``, from its watch events), and
:func:`keep_writing_counts` (on the leader, every :data:`STATUS_INTERVAL` seconds) writes, for
each object whose recorded counts differ from those shown, one merge patch of its ``status``
subresource with the two fields. However fast the pods churn, an EndpointSelector's status is
written at most once per interval; counts that come back to what the status shows, or a
restart with nothing changed, write nothing. A failed write is logged and tried again at the
next round. The patches go through :class:`~..writer.ObjectWriter` (:func:`status_writer`), with
the round's write fence as every other write of the operator: none is made from counts that
predate a reset of the API server.

Why not through Kopf's patch, as the ``Ready`` condition is (:mod:`.watch`):
Kopf's only periodic per-object handlers (timers, daemons) hold a finalizer on every object,
and a finalizer nobody removes (the operator uninstalled or stopped) blocks deleting the
EndpointSelectors, their namespaces and the CRD. This writer is one task, costs nothing while
nothing changes, and patches only the two fields Kopf never writes.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Mapping
from typing import Any

import aiohttp
from kubernetes_asyncio.client import ApiClient

from endpointslice_operator.controller.api.errors import ApiError
from endpointslice_operator.controller.api.reset import StateReset, WriteFence
from endpointslice_operator.controller.api.writer import ObjectWriter
from endpointslice_operator.controller.endpoint_selector.index import (
    CONDITION_READY,
    REASON_UNRESOLVED_PORT,
    EndpointSelectorIndex,
    counts_patch,
    status_patch,
)
from endpointslice_operator.reconciler.endpoint_selector import GROUP, PLURAL, VERSION

__all__ = ["STATUS_INTERVAL", "keep_writing_counts", "status_writer", "write_counts"]

log = logging.getLogger(__name__)

STATUS_INTERVAL = 5.0
"""Seconds between two rounds (and so at most one status write per EndpointSelector)."""


def status_writer(api_client: ApiClient, fence: WriteFence | None = None) -> ObjectWriter:
    """The writer of EndpointSelectors' status: the API client's timeout on every write, and
    with the round's ``fence`` no write from counts that predate a reset of the API server."""
    collection = f"/apis/{GROUP}/{VERSION}/namespaces/{{namespace}}/{PLURAL}"
    return ObjectWriter(api_client, collection, ("uid",), fence=fence)


def _shows_unresolved(status: Mapping[str, Any] | None) -> bool:
    conditions = (status or {}).get("conditions")
    return any(
        isinstance(c, Mapping)
        and c.get("type") == CONDITION_READY
        and c.get("reason") == REASON_UNRESOLVED_PORT
        for c in (conditions if isinstance(conditions, list) else ())
    )


async def write_counts(writer: ObjectWriter, index: EndpointSelectorIndex) -> int:
    """Patch the status of every EndpointSelector whose published counts differ from those
    its status shows; how many were written. A failure is logged, the others go on; a write
    the fence refuses (the API server was reset) ends the round."""
    written = 0
    for key, counts in list(index.counts.items()):
        entry = index.get(key)
        if entry is None:
            continue
        shown = index.shown.get(key)
        update = counts_patch(
            counts,
            None if shown is None else {"endpoints": shown.total, "readyEndpoints": shown.ready},
        )
        # Ready=False/UnresolvedPort follows the last sync (it depends on the pods, so no watch
        # event of the object may come to write it, or to take it back); the other reasons
        # are Kopf's to write.
        ready = (
            status_patch(entry, index.statuses.get(key), index.unresolved.get(key))
            if key in index.unresolved or _shows_unresolved(index.statuses.get(key))
            else None
        )
        if ready is not None:
            update = {**(update or {}), **ready}
        if update is None:
            continue
        try:
            await writer.merge_patch_status(entry.namespace, entry.name, {"status": update})
        except StateReset:
            return written
        except ApiError as exc:
            if not exc.not_found:  # gone: its DELETED event is on its way
                log.warning("could not write the status of EndpointSelector %s: %s", key, exc)
            continue
        except (aiohttp.ClientError, OSError, TimeoutError) as exc:
            log.warning("could not write the status of EndpointSelector %s: %s", key, exc)
            continue
        if index.counts.get(key) == counts:
            index.shown[key] = counts  # until the object's own event says so
        if ready is not None:
            index.statuses[key] = {**index.statuses.get(key, {}), **ready}
        written += 1
    return written


async def keep_writing_counts(
    writer: ObjectWriter,
    index: EndpointSelectorIndex,
    leading: Callable[[], bool],
    *,
    interval: float = STATUS_INTERVAL,
) -> None:
    """:func:`write_counts` every ``interval`` seconds while this replica leads (the leader's
    syncs know the counts), until cancelled."""
    while True:
        await asyncio.sleep(interval)
        if leading() and index.synced:
            await write_counts(writer, index)
