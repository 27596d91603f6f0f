"""What a failed API call is: :class:`ApiError` (the HTTP status, the ``Status`` object's
reason and causes), and reading an answer into a JSON object or one (:func:`raise_for_status`,
:func:`get_unless_missing`). Readers (watches, discovery, re-lists) and writers import it alike;
no reader imports the writer.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

__all__ = [
    "NAMESPACE_TERMINATING_CAUSE",
    "ApiError",
    "get_unless_missing",
    "raise_for_status",
    "read_answer",
]

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
    """Read an unread aiohttp response (of a ``_preload_content=False`` call): the decoded JSON
    object, or ApiError."""
    return await read_answer(response, json.loads)


async def get_unless_missing(api_client: Any, path: str) -> dict[str, Any] | None:
    """GET ``path`` (a discovery document, an object): its JSON object, or None on 404; other
    failures raise ApiError."""
    response = await api_client.call_api(
        path, "GET", auth_settings=["BearerToken"], _preload_content=False
    )
    try:
        return await raise_for_status(response)
    except ApiError as exc:
        if exc.not_found:
            return None
        raise


async def read_answer(response: Any, loads: Callable[[bytes], Any]) -> dict[str, Any]:
    """Read and release an aiohttp response: the object ``loads`` decodes, or ApiError."""
    try:
        raw = await response.read()
    finally:
        response.release()
    try:
        decoded = loads(raw) if raw else {}
    except ValueError:
        decoded = {}
    body = decoded if isinstance(decoded, dict) else {}
    if not 200 <= response.status <= 299:
        raise ApiError(response.status, body, raw[:500].decode("utf-8", errors="replace"))
    return body
