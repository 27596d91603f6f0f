"""The kind -> API method table, once: which kubernetes-asyncio methods list, and delete, each
built-in kind the operator and its commands read (the list-watches, the readiness counts,
``cleanup``)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from kubernetes_asyncio.client import ApiClient, CoreV1Api, DiscoveryV1Api

__all__ = ["CLUSTER_SCOPED", "KINDS", "KindMethods", "methods_of"]

KINDS: dict[str, tuple[Callable[[ApiClient], Any], str]] = {
    "pods": (CoreV1Api, "pod"),
    "services": (CoreV1Api, "service"),
    "endpoints": (CoreV1Api, "endpoints"),
    "endpointslices": (DiscoveryV1Api, "endpoint_slice"),
    "nodes": (CoreV1Api, "node"),
    "namespaces": (CoreV1Api, "namespace"),
}
"""Plural -> (API class, the singular in its method names)."""
CLUSTER_SCOPED = frozenset({"nodes", "namespaces"})


@dataclass(frozen=True, slots=True)
class KindMethods:
    everywhere: Callable[..., Awaitable[Any]]
    """List in every namespace (a cluster-scoped kind: the list)."""
    namespaced: Callable[..., Awaitable[Any]] | None
    """List in one namespace (None: cluster-scoped)."""
    delete: Callable[..., Awaitable[Any]] | None
    """Delete one by name and namespace (None: cluster-scoped)."""


def methods_of(api_client: ApiClient, kind: str) -> KindMethods:
    """The methods of ``kind`` (a key of :data:`KINDS`) on ``api_client``."""
    api_class, singular = KINDS[kind]
    api = api_class(api_client)
    if kind in CLUSTER_SCOPED:
        return KindMethods(getattr(api, f"list_{singular}"), None, None)
    return KindMethods(
        getattr(api, f"list_{singular}_for_all_namespaces"),
        getattr(api, f"list_namespaced_{singular}"),
        getattr(api, f"delete_namespaced_{singular}"),
    )
