"""Every kind's writes: create, replace, delete (EndpointSlices, Endpoints, any namespaced kind).

Objects travel as plain JSON dicts both ways, sent and read by
:class:`~.direct_requests.DirectRequests` on the kubernetes-asyncio client's session and
credentials, without its generic request machinery or its generated models: the slice the
server returns is the exact JSON the reconciler and the indexes work with. Failures become
:class:`~.errors.ApiError`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import aiohttp
from kubernetes_asyncio.client import ApiClient

from endpointslice_operator.controller.api.direct_requests import (
    JSON,
    MERGE_PATCH,
    DirectRequests,
    path_segment,
)
from endpointslice_operator.controller.api.errors import ApiError, read_answer
from endpointslice_operator.controller.api.json_codec import load_bytes
from endpointslice_operator.controller.api.reset import WriteFence

__all__ = ["EndpointsWriter", "ObjectWriter", "SliceWriter"]


async def _written(response: Any) -> dict[str, Any]:
    """A write's answer (:mod:`.json_codec`), or ApiError."""
    return await read_answer(response, load_bytes)


class ObjectWriter:
    """Create, replace and delete of one namespaced kind, with plain JSON both ways.

    ``collection`` is the path of the kind's collection in a namespace, with ``{namespace}``
    in it. ``delete_preconditions`` are the metadata fields a delete carries as preconditions,
    so that it only ever removes the object the caller saw (never one re-created or taken over).
    With a ``fence`` (:class:`~.reset.WriteFence`), every write waits for it first, a broken
    connection makes it suspect a reset, and the answers of creates and replaces are checked
    against the resourceVersions already seen.
    """

    def __init__(
        self,
        api_client: ApiClient,
        collection: str,
        delete_preconditions: tuple[str, ...],
        *,
        fence: WriteFence | None = None,
    ) -> None:
        self._requests = DirectRequests(api_client)
        self._collection = collection
        self._preconditions = delete_preconditions
        self.fence = fence

    async def _send(
        self, method: str, path: str, body: Mapping[str, Any], content_type: str = JSON
    ) -> dict[str, Any]:
        fence = self.fence
        if fence is None:
            return await _written(
                await self._requests.request(method, path, body, content_type=content_type)
            )
        await fence.admit()
        seen = fence.watermark.value
        try:
            answer = await _written(
                await self._requests.request(method, path, body, content_type=content_type)
            )
        except (aiohttp.ClientError, OSError) as exc:
            fence.suspect(f"{method} {path} failed: {exc}")
            raise
        if method != "DELETE":
            fence.written(answer, seen, f"{method} {path}")
        return answer

    def _path(self, namespace: str, name: str = "") -> str:
        path = self._collection.format(namespace=path_segment(namespace))
        return f"{path}/{path_segment(name)}" if name else path

    async def create(self, obj: Mapping[str, Any]) -> dict[str, Any]:
        """POST (normally with ``metadata.generateName`` for slices); the stored object."""
        path = self._path(obj["metadata"]["namespace"])
        return await self._send("POST", path, obj)

    async def replace(self, obj: Mapping[str, Any]) -> dict[str, Any]:
        """PUT by name.

        With ``metadata.resourceVersion`` (updates computed from the cache) a stale cache is
        refused with 409 Conflict; without it (recycled slices) the replace is unconditional.
        """
        metadata = obj["metadata"]
        path = self._path(metadata["namespace"], metadata["name"])
        return await self._send("PUT", path, obj)

    async def replace_status(self, obj: Mapping[str, Any]) -> dict[str, Any]:
        """PUT of the ``status`` subresource by name (``metadata.resourceVersion``: a stale
        cache is refused with 409 Conflict)."""
        metadata = obj["metadata"]
        path = self._path(metadata["namespace"], metadata["name"]) + "/status"
        return await self._send("PUT", path, obj)

    async def merge_patch_status(
        self, namespace: str, name: str, patch: Mapping[str, Any]
    ) -> dict[str, Any]:
        """A JSON merge patch of the ``status`` subresource by name (only the fields it
        names change, whatever the object's resourceVersion)."""
        path = self._path(namespace, name) + "/status"
        return await self._send("PATCH", path, patch, MERGE_PATCH)

    async def delete(self, obj: Mapping[str, Any]) -> bool:
        """DELETE, only if it is still the object we saw (the preconditions).

        Returns False when it was already gone (404), which is not an error.
        """
        metadata = obj["metadata"]
        body: dict[str, Any] = {"apiVersion": "v1", "kind": "DeleteOptions"}
        preconditions = {k: metadata[k] for k in self._preconditions if metadata.get(k)}
        if preconditions:
            body["preconditions"] = preconditions
        path = self._path(metadata["namespace"], metadata["name"])
        try:
            await self._send("DELETE", path, body)
        except ApiError as exc:
            if exc.not_found:
                return False
            raise
        return True


class SliceWriter(ObjectWriter):
    """The three EndpointSlice writes the reconciler's plan needs (deletes: uid precondition)."""

    def __init__(self, api_client: ApiClient, *, fence: WriteFence | None = None) -> None:
        super().__init__(
            api_client,
            "/apis/discovery.k8s.io/v1/namespaces/{namespace}/endpointslices",
            ("uid",),
            fence=fence,
        )


class EndpointsWriter(ObjectWriter):
    """The three ``core/v1`` Endpoints writes the operator makes (deletes: uid and
    resourceVersion preconditions)."""

    def __init__(self, api_client: ApiClient, *, fence: WriteFence | None = None) -> None:
        super().__init__(
            api_client,
            "/api/v1/namespaces/{namespace}/endpoints",
            ("uid", "resourceVersion"),
            fence=fence,
        )
