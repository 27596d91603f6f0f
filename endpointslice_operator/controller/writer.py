"""EndpointSlice writes through kubernetes-asyncio: create, replace, delete.

Objects travel as plain JSON dicts both ways. Responses are read raw (``_preload_content=False``)
so the slice the server returns is the exact JSON the reconciler and the indexes work with, not a
round trip through the generated models. Request bodies go out as ``JsonBody`` (sent as they are
by ``OperatorApiClient``, copied by any other ``ApiClient``). Failures become :class:`ApiError`,
which keeps the HTTP status and the ``Status`` object's reason and causes.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, cast

from kubernetes_asyncio.client import ApiClient, DiscoveryV1Api

from endpointslice_operator.controller.api_client import JsonBody

__all__ = ["ApiError", "ObjectWriter", "SliceWriter", "raise_for_status"]

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


class ObjectWriter:
    """Create, replace and delete of one namespaced kind, with plain JSON both ways.

    ``delete_preconditions`` are the metadata fields a delete carries as preconditions, so that
    it only ever removes the object the caller saw (never one re-created or taken over).
    """

    def __init__(
        self,
        create: Callable[..., Awaitable[Any]],
        replace: Callable[..., Awaitable[Any]],
        delete: Callable[..., Awaitable[Any]],
        delete_preconditions: tuple[str, ...],
    ) -> None:
        self._create = create
        self._replace = replace
        self._delete = delete
        self._preconditions = delete_preconditions

    async def create(self, obj: Mapping[str, Any]) -> dict[str, Any]:
        """POST (normally with ``metadata.generateName`` for slices); the stored object."""
        namespace = obj["metadata"]["namespace"]
        response = await self._create(namespace, cast(Any, JsonBody(obj)), _preload_content=False)
        return await raise_for_status(response)

    async def replace(self, obj: Mapping[str, Any]) -> dict[str, Any]:
        """PUT by name.

        With ``metadata.resourceVersion`` (updates computed from the cache) a stale cache is
        refused with 409 Conflict; without it (recycled slices) the replace is unconditional.
        """
        metadata = obj["metadata"]
        response = await self._replace(
            metadata["name"],
            metadata["namespace"],
            cast(Any, JsonBody(obj)),
            _preload_content=False,
        )
        return await raise_for_status(response)

    async def delete(self, obj: Mapping[str, Any]) -> bool:
        """DELETE, only if it is still the object we saw (the preconditions).

        Returns False when it was already gone (404), which is not an error.
        """
        metadata = obj["metadata"]
        body = JsonBody(apiVersion="v1", kind="DeleteOptions")
        preconditions = {k: metadata[k] for k in self._preconditions if metadata.get(k)}
        if preconditions:
            body["preconditions"] = preconditions
        response = await self._delete(
            metadata["name"], metadata["namespace"], body=cast(Any, body), _preload_content=False
        )
        try:
            await raise_for_status(response)
        except ApiError as exc:
            if exc.not_found:
                return False
            raise
        return True


class SliceWriter(ObjectWriter):
    """The three EndpointSlice writes the reconciler's plan needs (deletes: uid precondition)."""

    def __init__(self, api_client: ApiClient) -> None:
        api = DiscoveryV1Api(api_client)
        super().__init__(
            api.create_namespaced_endpoint_slice,
            api.replace_namespaced_endpoint_slice,
            api.delete_namespaced_endpoint_slice,
            ("uid",),
        )
