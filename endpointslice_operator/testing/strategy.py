"""Per-kind registry strategy: what kube-apiserver's ``PrepareForCreate``/``PrepareForUpdate``,
defaulting, validation and graceful-deletion rules do to an object before it is stored.

The store calls these functions on every write; they hold no state (the cluster IP allocator is
passed in).
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

from endpointslice_operator.testing import defaults, validation
from endpointslice_operator.testing.errors import ApiError, Cause, invalid
from endpointslice_operator.testing.resources import UNSERVED_BY_DEFAULT, ResourceInfo

JSON = dict[str, Any]

ENDPOINT_SLICES = "endpointslices.discovery.k8s.io"
# Metadata the server owns: carried over from the stored object on every update.
SERVER_MANAGED_META = (
    "uid",
    "creationTimestamp",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "generation",
)
_VOLATILE_META = ("resourceVersion", "managedFields")
DEFAULT_TERMINATION_GRACE_SECONDS = 30


def metadata(obj: JSON) -> JSON:
    """``obj["metadata"]``, created when missing or not an object."""
    meta = obj.get("metadata")
    if not isinstance(meta, dict):
        meta = obj["metadata"] = {}
    return meta


def content(obj: JSON) -> JSON:
    """What ``generation`` tracks: everything outside metadata and status."""
    return {k: v for k, v in obj.items() if k not in ("metadata", "status", "apiVersion", "kind")}


def same_object(a: JSON, b: JSON) -> bool:
    """True when a write changes nothing (so kube-apiserver would not bump the version)."""
    if content(a) != content(b) or a.get("status") != b.get("status"):
        return False
    meta_a = {k: v for k, v in (a.get("metadata") or {}).items() if k not in _VOLATILE_META}
    meta_b = {k: v for k, v in (b.get("metadata") or {}).items() if k not in _VOLATILE_META}
    return meta_a == meta_b


def has_finalizers(info: ResourceInfo, obj: JSON) -> bool:
    """Finalizers that hold a deletion: metadata ones, and a namespace's spec.finalizers."""
    if obj["metadata"].get("finalizers"):
        return True
    return info.key == "namespaces" and bool((obj.get("spec") or {}).get("finalizers"))


def name_mismatch(given: Any, url_name: str) -> ApiError:
    return ApiError(
        400, f"the name of the object ({given}) does not match the name on the URL ({url_name})"
    )


def check_identity(info: ResourceInfo, obj: JSON) -> None:
    """The body's apiVersion and kind must be the URL's (both may be omitted)."""
    api_version, kind = obj.get("apiVersion"), obj.get("kind")
    if api_version is None and kind is None:
        obj["apiVersion"], obj["kind"] = info.api_version, info.kind
        return
    if api_version != info.api_version:
        raise ApiError(
            400,
            f"the API version in the data ({api_version}) does not match the expected API "
            f"version ({info.api_version})",
        )
    if kind != info.kind:
        raise ApiError(
            400, f"the kind in the data ({kind}) does not match the expected kind ({info.kind})"
        )


def terminating_namespace(info: ResourceInfo, namespace: str, name: str = "") -> ApiError:
    """The 403 for creates in a namespace being deleted (the NamespaceLifecycle admission)."""
    details: JSON = {"name": name, "kind": info.plural}
    if info.group:
        details["group"] = info.group
    subject = f'{info.plural} "{name}"' if name else info.plural
    return ApiError(
        403,
        f"{subject} is forbidden: unable to create new content in namespace {namespace} "
        "because it is being terminated",
        reason="Forbidden",
        details=details,
        causes=[
            Cause(
                "NamespaceTerminating",
                f"namespace {namespace} is being terminated",
                "metadata.namespace",
            )
        ],
    )


def apply_defaults(
    info: ResourceInfo, obj: JSON, old: JSON | None, allocator: defaults.ClusterIPAllocator
) -> None:
    if info.key == "services":
        defaults.default_service(obj, old, allocator)
    elif info.key == "pods":
        defaults.default_pod(obj, old)
    elif info.key == "namespaces":
        defaults.default_namespace(obj, old)
    elif info.key == ENDPOINT_SLICES:
        defaults.default_endpoint_slice(obj, old)
    elif info.key == "endpoints":
        defaults.default_endpoints(obj)
    elif info.key == "leases.coordination.k8s.io":
        defaults.default_lease(obj, old)
    elif info.key in ("deployments.apps", "replicasets.apps"):
        defaults.default_workload(info.kind, obj)


def validate(info: ResourceInfo, obj: JSON, old: JSON | None) -> None:
    """Object metadata rules plus the kind's own; a 422 with every cause found."""
    meta = obj["metadata"]
    causes = validation.validate_object_meta(
        meta,
        namespaced=info.namespaced,
        name_rule=info.name_rule,
        old_meta=None if old is None else old["metadata"],
    )
    kind_validator = validation.KIND_VALIDATORS.get((info.group, info.plural))
    if kind_validator is not None:
        causes.extend(kind_validator(obj, old))
    if causes:
        name = meta.get("name") or meta.get("generateName", "")
        raise invalid(info.kind, info.group, name, causes)


#: The status a create starts from (the registry's PrepareForCreate).
INITIAL_STATUS: dict[str, JSON] = {
    "pods": {"phase": "Pending"},
    "services": {"loadBalancer": {}},
}


def prepare_for_create(info: ResourceInfo, obj: JSON, *, keep_status: bool) -> None:
    """Drop what clients may not set on create; a fresh object has generation 1."""
    meta = metadata(obj)
    for key in ("uid", "deletionTimestamp", "deletionGracePeriodSeconds", "selfLink"):
        meta.pop(key, None)
    meta["generation"] = 1
    if info.reset_status_on_create and not keep_status:
        if info.group in UNSERVED_BY_DEFAULT:  # a custom resource's status is dropped, not reset
            obj.pop("status", None)
        else:
            obj["status"] = INITIAL_STATUS.get(info.key, {})


def prepare_for_update(
    info: ResourceInfo,
    obj: JSON,
    old: JSON,
    *,
    subresource: str | None,
    privileged: bool,
    copy_of_old: Callable[[], JSON] | None = None,
) -> JSON:
    """The object to store for a PUT of ``obj`` over ``old`` (both full objects).

    The ``status`` subresource changes only the status; the main resource keeps the stored
    status (unless ``privileged``, for direct store writes); only ``finalize`` changes a
    namespace's spec.finalizers. Server-managed metadata always comes from ``old``, and
    ``generation`` moves when anything outside metadata and status changed. ``copy_of_old``
    gives a fresh copy of ``old`` (the store decodes its stored JSON again, several times
    faster than a deep copy); by default ``old`` is deep-copied.
    """
    fresh_old = copy_of_old if copy_of_old is not None else (lambda: copy.deepcopy(old))
    if subresource == "status":
        new = fresh_old()
        if "status" in obj:
            new["status"] = obj["status"]
        else:
            new.pop("status", None)
    elif subresource == "finalize" and info.key == "namespaces":
        new = fresh_old()
        new.setdefault("spec", {})["finalizers"] = (obj.get("spec") or {}).get("finalizers") or []
    elif subresource is not None:
        raise ApiError(404, f"the server could not find the requested resource ({subresource})")
    else:
        new = obj
        if info.key == "namespaces" and "finalizers" in (old.get("spec") or {}):
            new.setdefault("spec", {})["finalizers"] = copy.deepcopy(old["spec"]["finalizers"])
        if info.has_status and not privileged:
            if "status" in old:
                new["status"] = copy.deepcopy(old["status"])
            else:
                new.pop("status", None)
    new_meta = metadata(new)
    old_meta = old["metadata"]
    for key in SERVER_MANAGED_META:
        if key in old_meta:
            new_meta[key] = old_meta[key]
        else:
            new_meta.pop(key, None)
    new_meta["resourceVersion"] = old_meta["resourceVersion"]
    return new


def bump_generation(info: ResourceInfo, new: JSON, old: JSON) -> None:
    """+1 when the content changed; EndpointSlices also count label changes (their registry
    strategy compares labels too, so that consumers notice relabelled slices)."""
    new_meta, old_meta = new["metadata"], old["metadata"]
    if content(new) != content(old) or (
        info.key == ENDPOINT_SLICES and new_meta.get("labels") != old_meta.get("labels")
    ):
        new_meta["generation"] = int(old_meta.get("generation", 0)) + 1


def grace_period(info: ResourceInfo, obj: JSON, requested: int | None) -> int:
    """Seconds a deletion waits. Only scheduled, non-terminal Pods are deleted gracefully
    (a kubelet must stop them); everything else goes at once."""
    if info.key != "pods":
        return 0
    spec = obj.get("spec") or {}
    phase = (obj.get("status") or {}).get("phase")
    if not spec.get("nodeName") or phase in ("Succeeded", "Failed"):
        return 0
    if requested is not None:
        return max(0, int(requested))
    return int(spec.get("terminationGracePeriodSeconds", DEFAULT_TERMINATION_GRACE_SECONDS))
