"""The resources the emulator serves, and the discovery documents that describe them."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from functools import cached_property
from typing import Any, Literal

from endpointslice_operator.testing.errors import ApiError

JSON = dict[str, Any]

ALL_VERBS = ("create", "delete", "deletecollection", "get", "list", "patch", "update", "watch")
SUBRESOURCE_VERBS = ("get", "patch", "update")

NameRule = Literal["subdomain", "label", "dns1035", "any"]
#: The ``scale`` subresource speaks autoscaling/v1 Scale, whatever its parent's kind.
SCALE_KIND = {"group": "autoscaling", "version": "v1", "kind": "Scale"}


@dataclass(frozen=True)
class ResourceInfo:
    """One served resource type and the registry strategy bits that matter for it."""

    group: str
    version: str
    plural: str
    singular: str
    kind: str
    namespaced: bool
    short_names: tuple[str, ...] = ()
    categories: tuple[str, ...] = ()
    subresources: tuple[str, ...] = ()
    # Which name rule ValidateObjectMeta applies (NameIsDNSSubdomain, NameIsDNSLabel, 1035).
    name_rule: NameRule = "subdomain"
    # PUT on a missing object creates it (kube-apiserver's AllowCreateOnUpdate).
    allow_create_on_update: bool = False
    # PUT without metadata.resourceVersion is allowed (AllowUnconditionalUpdate); Leases: no.
    unconditional_update: bool = True
    # POST drops a client-supplied status (the registry's PrepareForCreate resets it).
    reset_status_on_create: bool = False
    # Another resource whose objects this one shows in its own shape (events.k8s.io Events are
    # core Events); empty when the resource stores its own objects.
    storage: str = ""

    # Worked out once per instance (cached_property writes the instance's __dict__, which a
    # frozen dataclass allows): the store asks for them several times on every write.
    @cached_property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @cached_property
    def key(self) -> str:
        """``plural`` for the core group, ``plural.group`` otherwise (kubectl's spelling)."""
        return f"{self.plural}.{self.group}" if self.group else self.plural

    @property
    def list_kind(self) -> str:
        return f"{self.kind}List"

    @property
    def has_status(self) -> bool:
        return "status" in self.subresources

    def discovery_entries(self) -> list[JSON]:
        entry: JSON = {
            "name": self.plural,
            "singularName": self.singular,
            "namespaced": self.namespaced,
            "kind": self.kind,
            "verbs": list(ALL_VERBS),
        }
        if self.short_names:
            entry["shortNames"] = list(self.short_names)
        if self.categories:
            entry["categories"] = list(self.categories)
        subresources = [
            {
                "name": f"{self.plural}/{sub}",
                "singularName": "",
                "namespaced": self.namespaced,
                "kind": self.kind,
                "verbs": list(SUBRESOURCE_VERBS) if sub in ("status", "scale") else ["update"],
                **(SCALE_KIND if sub == "scale" else {}),
            }
            for sub in self.subresources
        ]
        return [entry, *subresources]


RESOURCES: tuple[ResourceInfo, ...] = (
    ResourceInfo(
        "", "v1", "namespaces", "namespace", "Namespace", False, ("ns",),
        subresources=("status", "finalize"), name_rule="label",
    ),
    ResourceInfo("", "v1", "nodes", "node", "Node", False, ("no",), subresources=("status",)),
    ResourceInfo(
        "", "v1", "pods", "pod", "Pod", True, ("po",), ("all",),
        subresources=("status",), reset_status_on_create=True,
    ),
    ResourceInfo(
        "", "v1", "services", "service", "Service", True, ("svc",), ("all",),
        subresources=("status",), name_rule="label", reset_status_on_create=True,
    ),
    ResourceInfo(
        "", "v1", "endpoints", "endpoints", "Endpoints", True, ("ep",),
        allow_create_on_update=True,
    ),
    ResourceInfo(
        "", "v1", "events", "event", "Event", True, ("ev",), allow_create_on_update=True,
        name_rule="any",  # core Events: any name or prefix (web., Web_X); events.k8s.io checks
    ),
    ResourceInfo(
        "discovery.k8s.io", "v1", "endpointslices", "endpointslice", "EndpointSlice", True
    ),
    ResourceInfo(
        "events.k8s.io", "v1", "events", "event", "Event", True, ("ev",),
        allow_create_on_update=True, storage="events",
    ),
    ResourceInfo(
        "coordination.k8s.io", "v1", "leases", "lease", "Lease", True,
        allow_create_on_update=True,
        unconditional_update=False,
    ),
    ResourceInfo(
        "apps", "v1", "deployments", "deployment", "Deployment", True, ("deploy",), ("all",),
        subresources=("status", "scale"), reset_status_on_create=True,
    ),
    ResourceInfo(
        "apps", "v1", "replicasets", "replicaset", "ReplicaSet", True, ("rs",), ("all",),
        subresources=("status", "scale"), reset_status_on_create=True,
    ),
    # Custom resources (CRDs) are unserved until a test "installs" them (UNSERVED_BY_DEFAULT).
    # Each has a status subresource, so a create drops the status it was given (as the API
    # server does for a custom resource with one).
    # endpointslice-operator.io's EndpointSelector:
    ResourceInfo(
        "endpointslice-operator.io", "v1alpha1", "endpointselectors", "endpointselector",
        "EndpointSelector", True, ("esel",), subresources=("status",), reset_status_on_create=True,
    ),
    # Multi-Cluster Services (deploy/crds/, the storage version): unserved until a test installs
    # the CRDs.
    ResourceInfo(
        "multicluster.x-k8s.io", "v1beta1", "serviceexports", "serviceexport", "ServiceExport",
        True, ("svcex", "svcexport"), subresources=("status",), reset_status_on_create=True,
    ),
    ResourceInfo(
        "multicluster.x-k8s.io", "v1beta1", "serviceimports", "serviceimport", "ServiceImport",
        True, ("svcim", "svcimport"), subresources=("status",), reset_status_on_create=True,
    ),
    # about.k8s.io's ClusterProperty (deploy/crds/, the cluster id of Multi-Cluster Services).
    ResourceInfo(
        "about.k8s.io", "v1beta1", "clusterproperties", "clusterproperty", "ClusterProperty",
        False, categories=("multicluster",), subresources=("status",), reset_status_on_create=True,
    ),
    ResourceInfo(
        "resource.k8s.io", "v1", "resourceclaims", "resourceclaim", "ResourceClaim", True,
        subresources=("status",), reset_status_on_create=True,
    ),
)  # fmt: skip


UNSERVED_BY_DEFAULT = ("endpointslice-operator.io", "multicluster.x-k8s.io", "about.k8s.io")
"""Groups of custom resources: served only once installed, as a CRD is (a test discards the
group from ``registry.unserved``)."""


class ResourceRegistry:
    """Look-ups of :class:`ResourceInfo` by URL parts, by kind, or by a user's spelling."""

    def __init__(self, resources: Iterable[ResourceInfo] = RESOURCES) -> None:
        self.resources = tuple(resources)
        self.unserved: set[str] = set(UNSERVED_BY_DEFAULT)
        """API groups the server does not serve (yet), changeable while it runs: as a cluster
        before the upgrade that brings a group, or before a CRD-based API is installed. Over
        HTTP such a group is unknown (discovery leaves it out, its URLs answer 404 in plain
        text, as kube-apiserver's mux); ``Store`` still holds its objects."""
        self._by_url = {(r.group, r.version, r.plural): r for r in self.resources}
        self._by_gvk = {(r.api_version, r.kind): r for r in self.resources}
        self._by_name: dict[str, ResourceInfo] = {}
        # Reverse order so that the core group wins for ambiguous names ("events", "Event").
        for r in reversed(self.resources):
            for name in (r.key, r.plural, r.singular, r.kind, r.kind.lower(), *r.short_names):
                self._by_name[name] = r

    def by_url(self, group: str, version: str, plural: str) -> ResourceInfo:
        try:
            return self._by_url[(group, version, plural)]
        except KeyError:
            gv = f"{group}/{version}" if group else version
            raise ApiError(404, f"the server could not find the requested resource ({gv} {plural})")

    def for_object(self, obj: JSON) -> ResourceInfo:
        """The resource an object body belongs to, from its ``apiVersion`` and ``kind``."""
        api_version, kind = obj.get("apiVersion"), obj.get("kind")
        if not isinstance(api_version, str) or not isinstance(kind, str):
            raise ApiError(400, "Object 'Kind' or 'apiVersion' is missing")
        try:
            return self._by_gvk[(api_version, kind)]
        except KeyError:
            raise ApiError(400, f'no kind "{kind}" is registered for version "{api_version}"')

    def lookup(self, name: str) -> ResourceInfo:
        """Resolve ``pods``, ``Pod``, ``po``, ``endpointslices.discovery.k8s.io``, ``v1/Pod``,
        ``discovery.k8s.io/v1/EndpointSlice`` or ``discovery.k8s.io/v1/endpointslices``."""
        found = self._by_name.get(name)
        if found is None and "/" in name:
            api_version, _, last = name.rpartition("/")
            group, _, version = api_version.rpartition("/")
            found = self._by_gvk.get((api_version, last)) or self._by_url.get(
                (group, version, last)
            )
        if found is None:
            raise KeyError(f"unknown resource {name!r}")
        return found

    def groups(self) -> dict[str, list[str]]:
        """Named API groups served and their versions, in registration order."""
        result: dict[str, list[str]] = {}
        for r in self.resources:
            if (
                r.group
                and r.group not in self.unserved
                and r.version not in result.setdefault(r.group, [])
            ):
                result[r.group].append(r.version)
        return result

    def in_group_version(self, group: str, version: str) -> list[ResourceInfo]:
        return [r for r in self.resources if r.group == group and r.version == version]


def api_versions(server_address: str) -> JSON:
    return {
        "kind": "APIVersions",
        "versions": ["v1"],
        "serverAddressByClientCIDRs": [
            {"clientCIDR": "0.0.0.0/0", "serverAddress": server_address}
        ],
    }


def api_group_list(registry: ResourceRegistry) -> JSON:
    groups = []
    for group, versions in registry.groups().items():
        listed = [{"groupVersion": f"{group}/{v}", "version": v} for v in versions]
        groups.append({"name": group, "versions": listed, "preferredVersion": listed[0]})
    return {"kind": "APIGroupList", "apiVersion": "v1", "groups": groups}


def api_group(registry: ResourceRegistry, group: str) -> JSON:
    versions = registry.groups().get(group)
    if not versions:
        raise ApiError(404, "the server could not find the requested resource")
    listed = [{"groupVersion": f"{group}/{v}", "version": v} for v in versions]
    return {
        "kind": "APIGroup",
        "apiVersion": "v1",
        "name": group,
        "versions": listed,
        "preferredVersion": listed[0],
    }


def api_resource_list(registry: ResourceRegistry, group: str, version: str) -> JSON:
    served = registry.in_group_version(group, version)
    if not served:
        raise ApiError(404, "the server could not find the requested resource")
    resources = [entry for r in served for entry in r.discovery_entries()]
    return {
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": served[0].api_version,
        "resources": resources,
    }


VERSION_INFO: JSON = {
    "major": "1",
    "minor": "36",
    "gitVersion": "v1.36.2-emulator",
    "gitCommit": "0000000000000000000000000000000000000000",
    "gitTreeState": "clean",
    "buildDate": "2026-01-01T00:00:00Z",
    "goVersion": "go1.25",
    "compiler": "gc",
    "platform": "linux/amd64",
}
