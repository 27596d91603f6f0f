"""What the operator asks the API server about its own caches: how many objects of a kind it
holds (:func:`count_objects`, the readiness counts), and whether its state went back behind the
resourceVersions already seen (:func:`probe_resets`, the reset probe behind the write fence)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from kubernetes_asyncio.client import ApiClient

from endpointslice_operator.controller.api.errors import ApiError, raise_for_status
from endpointslice_operator.controller.api.kinds import methods_of
from endpointslice_operator.controller.api.reset import (
    RESET_PROBE_INTERVAL,
    SUSPECT_PROBE_INTERVAL,
    WriteFence,
)

__all__ = ["PROBE_TIMEOUT", "count_objects", "probe_resets"]

log = logging.getLogger(__name__)

PROBE_TIMEOUT = 10.0
"""Seconds a resourceVersion probe may take (an unanswered one counts as failed)."""


async def count_objects(api_client: ApiClient, kind: str, namespaces: Sequence[str]) -> int:
    """How many objects of ``kind`` the API server holds in the watched scope now."""
    methods = methods_of(api_client, kind)
    calls: list[Awaitable[Any]]
    if methods.namespaced is not None and namespaces:
        calls = [methods.namespaced(ns, limit=1, _preload_content=False) for ns in namespaces]
    else:
        calls = [methods.everywhere(limit=1, _preload_content=False)]
    total = 0
    for call in calls:
        body = await raise_for_status(await call)
        items = body.get("items") or []
        remaining = (body.get("metadata") or {}).get("remainingItemCount") or 0
        total += len(items) + int(remaining)
    return total


async def probe_resets(
    api_client: ApiClient,
    fence: WriteFence,
    namespaces: Sequence[str],
    on_reset: Callable[[str], None],
) -> None:
    """Is the server's resourceVersion behind what we saw? Asked every
    ``RESET_PROBE_INTERVAL``, and at once when the fence suspects a reset (a watch or a
    write lost its connection, the server said it is behind a version seen): then every
    ``SUSPECT_PROBE_INTERVAL`` until the server answers, writes held meanwhile.

    Resumed watches can stay silent on a server whose state went back (see :mod:`..api.reset`),
    so only asking can tell. One ``limit=1`` list of EndpointSlices (the operator may list
    them in every scope it watches); a consistent read, so a lower version is a reset.
    """
    slices = methods_of(api_client, "endpointslices")
    assert slices.namespaced is not None
    watermark = fence.watermark
    while True:
        if fence.suspected:
            await asyncio.sleep(SUSPECT_PROBE_INTERVAL)
        else:
            await fence.wait_for_suspicion(RESET_PROBE_INTERVAL)
        seen = watermark.value
        try:
            one = {"limit": 1, "_preload_content": False, "_request_timeout": PROBE_TIMEOUT}
            if namespaces:
                call = slices.namespaced(namespaces[0], **one)
            else:
                call = slices.everywhere(**one)
            body = await raise_for_status(await call)
        except ApiError as exc:
            if exc.status in (401, 403):
                # Answered, but unreadable: the watches (which need the same permission)
                # report it; holding the writes on it would only stop the operator.
                log.debug("resourceVersion probe refused: %s", exc)
                fence.verified()
            else:
                log.debug("resourceVersion probe failed: %s", exc)
            continue
        except Exception as exc:  # the watches report their own failures
            log.debug("resourceVersion probe failed: %s", exc)
            continue
        current = (body.get("metadata") or {}).get("resourceVersion")
        if watermark.is_behind(current, seen):
            on_reset(f"the server is at resourceVersion {current}, below the {seen} already seen")
            return
        if fence.suspected:
            log.debug("the server is at resourceVersion %s: writes go again", current)
        fence.verified()
