"""``core/v1`` Endpoints writes through kubernetes-asyncio: create, replace, delete.

As :mod:`.writer` does for EndpointSlices: plain JSON both ways, failures as ``ApiError``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, cast

from kubernetes_asyncio.client import ApiClient, CoreV1Api

from endpointslice_operator.controller.api_client import JsonBody
from endpointslice_operator.controller.writer import ApiError, raise_for_status

__all__ = ["EndpointsWriter"]


class EndpointsWriter:
    """The three Endpoints writes the operator makes."""

    def __init__(self, api_client: ApiClient) -> None:
        self._api = CoreV1Api(api_client)

    async def create(self, endpoints: Mapping[str, Any]) -> dict[str, Any]:
        namespace = endpoints["metadata"]["namespace"]
        response = await self._api.create_namespaced_endpoints(
            namespace, cast(Any, JsonBody(endpoints)), _preload_content=False
        )
        return await raise_for_status(response)

    async def replace(self, endpoints: Mapping[str, Any]) -> dict[str, Any]:
        """PUT by name, with the resourceVersion it was computed from (409 if stale)."""
        metadata = endpoints["metadata"]
        response = await self._api.replace_namespaced_endpoints(
            metadata["name"],
            metadata["namespace"],
            cast(Any, JsonBody(endpoints)),
            _preload_content=False,
        )
        return await raise_for_status(response)

    async def delete(self, endpoints: Mapping[str, Any]) -> bool:
        """DELETE, only the object we saw (uid and resourceVersion preconditions: never one
        someone else re-created or took over meanwhile). False when already gone."""
        metadata = endpoints["metadata"]
        body = JsonBody(apiVersion="v1", kind="DeleteOptions")
        preconditions = {k: metadata[k] for k in ("uid", "resourceVersion") if metadata.get(k)}
        if preconditions:
            body["preconditions"] = preconditions
        response = await self._api.delete_namespaced_endpoints(
            metadata["name"], metadata["namespace"], body=cast(Any, body), _preload_content=False
        )
        try:
            await raise_for_status(response)
        except ApiError as exc:
            if exc.not_found:
                return False
            raise
        return True
