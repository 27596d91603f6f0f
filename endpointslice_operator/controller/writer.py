"""EndpointSlice writes through kubernetes-asyncio: create, replace, delete.

Objects travel as plain JSON dicts both ways. Responses are read raw (``_preload_content=False``)
so the slice the server returns is the exact JSON the reconciler and the indexes work with, not a
round trip through the generated models. Request bodies go out as ``JsonBody`` (sent as they are
by ``OperatorApiClient``, copied by any other ``ApiClient``). Failures become :class:`ApiError`,
which keeps the HTTP status and the ``Status`` object's reason and causes.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, cast

from kubernetes_asyncio.client import ApiClient, DiscoveryV1Api

from endpointslice_operator.controller.api_client import JsonBody

__all__ = ["ApiError", "SliceWriter", "raise_for_status"]

NAMESPACE_TERMINATING_CAUSE = "NamespaceTerminating"


class ApiError(Exception):
    """A failed API call: HTTP status plus the decoded ``Status`` body when there is one."""

    def __init__(self, status: int, body: Mapping[str, Any] | None, text: str = "") -> None:
        self.status = status
        self.body: Mapping[str, Any] = body or {}
        self.reason: str = str(self.body.get("reason") or "")
        message = str(self.body.get("message") or text or f"HTTP {status}")
        super().__init__(message)

    @property
    def causes(self) -> list[Mapping[str, Any]]:
        details = self.body.get("details")
        causes = details.get("causes") if isinstance(details, Mapping) else None
        return [c for c in causes or () if isinstance(c, Mapping)]

    def has_cause(self, cause_type: str) -> bool:
        return any(
            c.get("type") == cause_type or c.get("reason") == cause_type for c in self.causes
        )

    @property
    def namespace_terminating(self) -> bool:
        """Upstream's ``HasStatusCause(err, NamespaceTerminatingCause)``."""
        return self.has_cause(NAMESPACE_TERMINATING_CAUSE)

    @property
    def not_found(self) -> bool:
        return self.status == 404

    @property
    def conflict(self) -> bool:
        return self.status == 409


async def raise_for_status(response: Any) -> dict[str, Any]:
    """Read the aiohttp response of a ``_preload_content=False`` call: JSON or ApiError."""
    try:
        raw = await response.read()
    finally:
        response.release()
    text = raw.decode("utf-8", errors="replace") if raw else ""
    try:
        decoded = json.loads(text) if text else {}
    except ValueError:
        decoded = {}
    body = decoded if isinstance(decoded, dict) else {}
    if not 200 <= response.status <= 299:
        raise ApiError(response.status, body, text[:500])
    return body


class SliceWriter:
    """The three EndpointSlice writes the reconciler's plan needs."""

    def __init__(self, api_client: ApiClient) -> None:
        self._api = DiscoveryV1Api(api_client)

    async def create(self, endpoint_slice: Mapping[str, Any]) -> dict[str, Any]:
        """POST a slice (normally with ``metadata.generateName``); returns the stored object."""
        namespace = endpoint_slice["metadata"]["namespace"]
        response = await self._api.create_namespaced_endpoint_slice(
            namespace, cast(Any, JsonBody(endpoint_slice)), _preload_content=False
        )
        return await raise_for_status(response)

    async def replace(self, endpoint_slice: Mapping[str, Any]) -> dict[str, Any]:
        """PUT a slice by name.

        With ``metadata.resourceVersion`` (updates computed from the cache) a stale cache is
        refused with 409 Conflict; without it (recycled slices) the replace is unconditional.
        """
        metadata = endpoint_slice["metadata"]
        response = await self._api.replace_namespaced_endpoint_slice(
            metadata["name"],
            metadata["namespace"],
            cast(Any, JsonBody(endpoint_slice)),
            _preload_content=False,
        )
        return await raise_for_status(response)

    async def delete(self, endpoint_slice: Mapping[str, Any]) -> bool:
        """DELETE a slice, only if it is still the object we saw (uid precondition).

        Returns False when it was already gone (404), which is not an error.
        """
        metadata = endpoint_slice["metadata"]
        body = JsonBody(apiVersion="v1", kind="DeleteOptions")
        if metadata.get("uid"):
            body["preconditions"] = {"uid": metadata["uid"]}
        response = await self._api.delete_namespaced_endpoint_slice(
            metadata["name"], metadata["namespace"], body=cast(Any, body), _preload_content=False
        )
        try:
            await raise_for_status(response)
        except ApiError as exc:
            if exc.not_found:
                return False
            raise
        return True
