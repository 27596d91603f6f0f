"""``core/v1`` Endpoints writes: create, replace, delete.

As :mod:`.writer` does for EndpointSlices (the same :class:`~.writer.ObjectWriter`): plain JSON
both ways, failures as ``ApiError``. Deletes carry the uid and resourceVersion seen as
preconditions.
"""

from __future__ import annotations

from kubernetes_asyncio.client import ApiClient

from endpointslice_operator.controller.api.reset import WriteFence
from endpointslice_operator.controller.api.writer import ObjectWriter

__all__ = ["EndpointsWriter"]


class EndpointsWriter(ObjectWriter):
    """The three Endpoints writes the operator makes."""

    def __init__(self, api_client: ApiClient, *, fence: WriteFence | None = None) -> None:
        super().__init__(
            api_client,
            "/api/v1/namespaces/{namespace}/endpoints",
            ("uid", "resourceVersion"),
            fence=fence,
        )
