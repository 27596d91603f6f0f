"""Reading manifests for ``plan`` and its ``--mcs-cluster`` form: YAML or JSON files,
directories and standard input (multi-document, ``kind: List`` and typed lists flattened) into
:class:`Manifests`, the API server's defaults for Services, and :class:`ServiceResult`, what
planning one owner produced (rendered by :mod:`.plan`).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, TextIO

import yaml

from endpointslice_operator.controller.cache.claims import VERSIONS as CLAIM_VERSIONS
from endpointslice_operator.controller.cache.claims import slim_claim
from endpointslice_operator.reconciler import Plan
from endpointslice_operator.reconciler.endpoint_selector import (
    API_VERSION as SELECTOR_API_VERSION,
)
from endpointslice_operator.reconciler.endpoint_selector import KIND as SELECTOR_KIND

__all__ = [
    "ALLOCATED",
    "FAMILIES",
    "MANIFEST_SUFFIXES",
    "InputError",
    "Manifests",
    "Operation",
    "ServiceResult",
    "apply_service_defaults",
    "default_service",
    "iter_objects",
    "load_manifests",
]

MANIFEST_SUFFIXES = (".yaml", ".yml", ".json")

Operation = Literal["create", "update", "delete", "status"]
"""``status``: a write of the ``status`` subresource (imports: ServiceImports, ServiceExports)."""


class InputError(Exception):
    """A manifest that cannot be read or understood; the message names the file."""


# libyaml's parser when PyYAML was built with it (about ten times faster on big dumps).
_SafeLoader: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class _Loader(_SafeLoader):  # type: ignore[valid-type,misc]
    """YAML 1.1 safe loading, except that timestamps stay strings as the API returns them."""


_Loader.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}


@dataclass
class Manifests:
    """The objects the plan needs, keyed like the API keys them (later documents win)."""

    services: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)
    pods: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)
    nodes: dict[str, dict[str, Any]] = field(default_factory=dict)
    slices: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)
    claims: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)
    """DRA ResourceClaims (for Services with the device-network annotation)."""
    endpoints: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)
    """core/v1 Endpoints objects (mirroring sources, and the Endpoints the operator writes)."""
    endpoint_selectors: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)
    """EndpointSelectors (endpointslice-operator.io/v1alpha1, docs/endpointselector.md)."""


def _expand(paths: Sequence[str], *, recursive: bool) -> Iterator[str]:
    for raw in paths:
        if raw == "-":
            yield raw
            continue
        path = Path(raw)
        if not path.is_dir():
            yield raw
            continue
        pattern = "**/*" if recursive else "*"
        found = sorted(
            p for p in path.glob(pattern) if p.is_file() and p.suffix in MANIFEST_SUFFIXES
        )
        if not found:
            raise InputError(
                f"{raw}: no manifests in this directory (looked for {', '.join(MANIFEST_SUFFIXES)}"
                f"{'' if recursive else '; use -R for subdirectories'})"
            )
        yield from (str(p) for p in found)


def _documents(source: str, text: str) -> Iterator[tuple[str, object]]:
    if text.lstrip().startswith("{"):
        # JSON (what ``kubectl get -o json`` prints) parses far faster as JSON than as YAML;
        # anything else that starts with a brace is left to the YAML parser.
        try:
            document = json.loads(text)
        except ValueError:
            pass
        else:
            yield f"{source}: document 1", document
            return
    try:
        for index, document in enumerate(yaml.load_all(text, Loader=_Loader), start=1):
            yield f"{source}: document {index}", document
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise InputError(f"{source}: not valid YAML or JSON{where}: {problem}") from None


def _objects(where: str, document: object) -> Iterator[tuple[str, Mapping[str, Any]]]:
    """The Kubernetes objects of one document, with lists (``kind: List``, ``PodList``...)
    flattened."""
    if document is None:
        return
    if not isinstance(document, Mapping):
        raise InputError(
            f"{where}: expected a Kubernetes object, found a {type(document).__name__}"
        )
    kind = document.get("kind")
    if not isinstance(kind, str) or not kind:
        raise InputError(f"{where}: the object has no kind")
    if kind.endswith("List") and "items" in document:
        items = document["items"]
        if items is None:
            return
        if not isinstance(items, list):
            raise InputError(f"{where}: {kind}.items is not a list")
        item_kind = kind.removesuffix("List")
        for index, item in enumerate(items):
            if isinstance(item, Mapping) and "kind" not in item and item_kind:
                # A typed list (as the API returns it): its items' kind and apiVersion.
                item = {"kind": item_kind, **item}
                if "apiVersion" in document and "apiVersion" not in item:
                    item = {"apiVersion": document["apiVersion"], **item}
            yield from _objects(f"{where}, item {index}", item)
        return
    yield where, document


_NAMESPACED = {"Service", "Pod", "EndpointSlice", "ResourceClaim", "Endpoints", SELECTOR_KIND}
_CLAIM_API_VERSIONS = {f"resource.k8s.io/{version}" for version in CLAIM_VERSIONS}


def _identity(where: str, obj: Mapping[str, Any], default_namespace: str) -> tuple[str, str]:
    kind = obj["kind"]
    metadata = obj.get("metadata")
    if not isinstance(metadata, Mapping):
        raise InputError(f"{where}: the {kind} has no metadata")
    name = metadata.get("name")
    if not isinstance(name, str) or not name:
        raise InputError(f"{where}: the {kind} has no metadata.name")
    if kind not in _NAMESPACED:
        return "", name
    namespace = metadata.get("namespace") or default_namespace
    if not isinstance(namespace, str):
        raise InputError(f"{where}: the {kind} {name} has an invalid metadata.namespace")
    return namespace, name


def _with_namespace(obj: Mapping[str, Any], namespace: str) -> dict[str, Any]:
    metadata = dict(obj["metadata"])
    metadata["namespace"] = namespace
    return {**obj, "metadata": metadata}


def load_manifests(
    paths: Sequence[str],
    *,
    recursive: bool = False,
    default_namespace: str = "default",
    stdin: TextIO | None = None,
) -> Manifests:
    """Read the Services, Pods, Nodes and EndpointSlices from files, directories or ``-``.

    Other kinds are ignored. Namespaced objects without a namespace get ``default_namespace``,
    as ``kubectl`` would give them. Raises :class:`InputError` for anything unreadable.
    """
    manifests = Manifests()
    for where, obj in iter_objects(paths, recursive=recursive, stdin=stdin):
        _add(manifests, where, obj, default_namespace)
    return manifests


def iter_objects(
    paths: Sequence[str], *, recursive: bool = False, stdin: TextIO | None = None
) -> Iterator[tuple[str, Mapping[str, Any]]]:
    """Every Kubernetes object of the files, directories or ``-`` (lists flattened), with
    where it was read; raises :class:`InputError` for anything unreadable."""
    if list(paths).count("-") > 1:
        raise InputError("-: standard input can only be read once")
    for source in _expand(paths, recursive=recursive):
        if source == "-":
            label = "<stdin>"
            try:
                text = (stdin or sys.stdin).read()
            except (OSError, UnicodeDecodeError) as exc:
                raise InputError(f"{label}: cannot read standard input: {exc}") from None
        else:
            try:
                text = Path(source).read_text(encoding="utf-8")
            except UnicodeDecodeError:
                raise InputError(f"{source}: not a text file (expected UTF-8 YAML or JSON)")
            except OSError as exc:
                raise InputError(f"{source}: {exc.strerror or exc}") from None
            label = source
        for where, document in _documents(label, text):
            yield from _objects(where, document)


def _add(manifests: Manifests, where: str, obj: Mapping[str, Any], default_ns: str) -> None:
    kind = obj["kind"]
    api_version = obj.get("apiVersion")
    if kind in ("Service", "Pod", "Node", "Endpoints") and api_version not in (None, "v1"):
        return
    if kind == "EndpointSlice" and api_version not in (None, "discovery.k8s.io/v1"):
        return
    if kind == "ResourceClaim" and api_version not in _CLAIM_API_VERSIONS:
        return
    if kind == SELECTOR_KIND:
        if api_version == SELECTOR_API_VERSION:
            namespace, name = _identity(where, obj, default_ns)
            manifests.endpoint_selectors[(namespace, name)] = _with_namespace(obj, namespace)
        return
    if kind not in ("Service", "Pod", "Node", "EndpointSlice", "ResourceClaim", "Endpoints"):
        return
    namespace, name = _identity(where, obj, default_ns)
    if kind == "Node":
        manifests.nodes[name] = dict(obj)
        return
    namespaced = _with_namespace(obj, namespace)
    if kind == "Service":
        manifests.services[(namespace, name)] = namespaced
    elif kind == "ResourceClaim":
        manifests.claims[(namespace, name)] = slim_claim(namespaced)
    elif kind == "Pod":
        manifests.pods[(namespace, name)] = namespaced
    elif kind == "Endpoints":
        manifests.endpoints[(namespace, name)] = namespaced
    else:
        manifests.slices[(namespace, name)] = namespaced


# --- API server defaults -------------------------------------------------------------------

ALLOCATED = "<allocated>"
"""The cluster IP the plan assumes for a Service that names none (the API server would
allocate one): any value but ``None`` marks the Service as not headless."""
FAMILIES = ("IPv4", "IPv6")


def default_service(service: Mapping[str, Any], family: str) -> tuple[dict[str, Any], list[str]]:
    """The Service as the API server would store it, for the fields that change the plan, and
    what was assumed (empty when the Service says it all).

    ``spec.type`` ClusterIP; for a ClusterIP, NodePort or LoadBalancer Service without
    ``spec.clusterIP``, an allocated cluster IP (so not headless); without ``spec.ipFamilies``
    (and not a headless Service without a selector, which the API server makes dual-stack):
    ``ipFamilyPolicy`` SingleStack and ``ipFamilies`` of the cluster's family, ``family``.
    """
    spec = dict(service.get("spec") or {})
    assumed: list[str] = []
    if not spec.get("type"):
        spec["type"] = "ClusterIP"  # not reported: it changes no slice by itself
    if spec["type"] == "ExternalName":
        return {**service, "spec": spec}, assumed
    if not spec.get("clusterIP"):
        spec["clusterIP"] = ALLOCATED
        assumed.append("a cluster IP allocated (not headless)")
    headless = spec["clusterIP"] == "None"
    if not spec.get("ipFamilies") and not (headless and not spec.get("selector")):
        policy = spec.get("ipFamilyPolicy") or "SingleStack"
        if policy == "SingleStack":
            families = [family]
        else:
            families = [family, *(f for f in FAMILIES if f != family)]
        spec["ipFamilyPolicy"] = policy
        spec["ipFamilies"] = families
        assumed.append(
            f"ipFamilyPolicy {policy}, ipFamilies [{', '.join(families)}] (--ip-family {family})"
        )
    if not assumed:
        return dict(service), []
    return {**service, "spec": spec}, assumed


def apply_service_defaults(manifests: Manifests, family: str) -> dict[str, list[str]]:
    """Default every Service of ``manifests`` in place; ``ns/name`` -> what was assumed."""
    notes: dict[str, list[str]] = {}
    for key, service in list(manifests.services.items()):
        defaulted, assumed = default_service(service, family)
        manifests.services[key] = defaulted
        if assumed:
            notes[f"{key[0]}/{key[1]}"] = assumed
    return notes


@dataclass
class ServiceResult:
    """What planning one Service produced."""

    key: str
    writes: list[tuple[Operation, Mapping[str, Any]]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    skipped: str | None = None
    plan: Plan | None = None
    previous: dict[int, Mapping[str, Any]] = field(default_factory=dict)
    """The object a write replaces or deletes, by the write's index (imports; the diff of
    other writes finds it among the input's slices and Endpoints)."""
