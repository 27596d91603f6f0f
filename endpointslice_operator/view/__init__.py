"""The endpoint view: every (service, service port, address) of the selected Services, joined
from the Services and all their EndpointSlices as kube-proxy merges them, as a library for
imperative consumers (a proxy's admin API, a load balancer, DNS, a firewall) and as the
``endpointslice-operator endpoints`` command. See docs/view.md.

    async for change in watch_endpoints(api, services=["web"]):
        ...  # change.type: added | updated | removed | synced; change.key, change.endpoint
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from endpointslice_operator.view.merge import EndpointView, Gatherer, ServiceFilter
    from endpointslice_operator.view.model import (
        DEFAULT_ANNOTATION_PREFIX,
        POLICIES,
        Change,
        ChangeType,
        Endpoint,
        EndpointGroup,
        EndpointKey,
        Policy,
        ServicePortKey,
        view_annotation,
    )
    from endpointslice_operator.view.watch import (
        ViewError,
        list_endpoints,
        open_api_client,
        service_filter,
        snapshot,
        watch_endpoints,
    )

_MODULES = {
    **dict.fromkeys(("EndpointView", "Gatherer", "ServiceFilter"), "merge"),
    **dict.fromkeys(
        (
            "DEFAULT_ANNOTATION_PREFIX",
            "POLICIES",
            "Change",
            "ChangeType",
            "Endpoint",
            "EndpointGroup",
            "EndpointKey",
            "Policy",
            "ServicePortKey",
            "view_annotation",
        ),
        "model",
    ),
    **dict.fromkeys(
        (
            "ViewError",
            "list_endpoints",
            "open_api_client",
            "service_filter",
            "snapshot",
            "watch_endpoints",
        ),
        "watch",
    ),
}


def __getattr__(name: str) -> Any:
    """The names above, imported on first use: the model alone needs no API client, so that
    ``endpointslice-operator endpoints`` can parse its arguments before importing one."""
    module = _MODULES.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value


__all__ = [
    "DEFAULT_ANNOTATION_PREFIX",
    "POLICIES",
    "Change",
    "ChangeType",
    "Endpoint",
    "EndpointGroup",
    "EndpointKey",
    "EndpointView",
    "Gatherer",
    "Policy",
    "ServiceFilter",
    "ServicePortKey",
    "ViewError",
    "list_endpoints",
    "open_api_client",
    "service_filter",
    "snapshot",
    "view_annotation",
    "watch_endpoints",
]
