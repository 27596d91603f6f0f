"""``core/v1`` Endpoints writes through kubernetes-asyncio: create, replace, delete.

As :mod:`.writer` does for EndpointSlices (the same :class:`~.writer.ObjectWriter`): plain JSON
both ways, failures as ``ApiError``. Deletes carry the uid and resourceVersion seen as
preconditions.
"""

from __future__ import annotations

from kubernetes_asyncio.client import ApiClient, CoreV1Api

from endpointslice_operator.controller.writer import ObjectWriter

__all__ = ["EndpointsWriter"]


class EndpointsWriter(ObjectWriter):
    """The three Endpoints writes the operator makes."""

    def __init__(self, api_client: ApiClient) -> None:
        api = CoreV1Api(api_client)
        super().__init__(
            api.create_namespaced_endpoints,
            api.replace_namespaced_endpoints,
            api.delete_namespaced_endpoints,
            ("uid", "resourceVersion"),
        )
