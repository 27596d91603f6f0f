"""``endpointslice-operator migrate``: move Services from kube-controller-manager to the operator.

For each Service (``-n NAMESPACE SERVICE ...``), in the order that keeps every request flowing
(docs/operations.md): opt in while ``spec.selector`` is still there; wait until our slices cover
every endpoint of kube-controller-manager's (else stop at ``--timeout``); move the selector into
``<prefix>/selector`` with one merge patch carrying the resourceVersion read; delete
kube-controller-manager's Endpoints object (first, or its mirroring controller writes its slice
again) and slices, each with a uid precondition, deleting again until none came back for
``SETTLE_POLLS`` polls. Its Endpoints object is one labelled ``endpoints.kubernetes.io/managed-by:
endpoint-controller`` (v1.33+), or on older servers one whose only field manager is
``kube-controller-manager``; any other is kept and reported. Exit status: 0 done, 1 a Service
could not be migrated (the others go on), 2 bad usage.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from kubernetes_asyncio import client
from kubernetes_asyncio import config as k8s_config
from kubernetes_asyncio.client.exceptions import ApiException
from kubernetes_asyncio.config import ConfigException

from endpointslice_operator.commands.flags import (
    add_annotation_prefix,
    add_cluster_flags,
    settings_of,
)
from endpointslice_operator.controller.api.client import OperatorApiClient, resolve_env_proxy
from endpointslice_operator.controller.api.cluster_config import (
    NoClusterError,
    find_cluster,
    load_client_configuration,
)
from endpointslice_operator.controller.cache.optin import ENDPOINT_CONTROLLER_NAME_LABEL
from endpointslice_operator.controller.sync.kcm_leftovers import KCM_ENDPOINTS_CONTROLLER
from endpointslice_operator.reconciler.core_endpoints import LABEL_ENDPOINTS_MANAGED_BY
from endpointslice_operator.reconciler.labels import (
    LABEL_MANAGED_BY,
    LABEL_SERVICE_NAME,
    UPSTREAM_CONTROLLER_NAME,
)
from endpointslice_operator.reconciler.mirroring import MIRRORING_CONTROLLER_NAME
from endpointslice_operator.settings import Settings, SettingsError

__all__ = ["MigrateError", "Migration", "build_parser", "is_kcm_endpoints", "main"]

PROG = "endpointslice-operator migrate"
KCM_FIELD_MANAGER = "kube-controller-manager"
KCM_MANAGERS = (UPSTREAM_CONTROLLER_NAME, MIRRORING_CONTROLLER_NAME)
MERGE_PATCH = "application/merge-patch+json"
POLL = 0.5
"""Seconds between two looks at the slices."""
SETTLE_POLLS = 6
"""Consecutive polls (``POLL`` apart) without any of kube-controller-manager's objects before
a Service counts as done."""


class MigrateError(Exception):
    """A Service that cannot be migrated (the message says why and what state it is left in)."""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=PROG,
        description="Move Services from kube-controller-manager to the operator without a "
        "failed request: opt in, wait for our slices, move spec.selector into the selector "
        "annotation, then delete kube-controller-manager's Endpoints object and slices for "
        "them (only its own; nothing else is touched).",
    )
    parser.add_argument("services", metavar="SERVICE", nargs="+", help="Service name(s)")
    parser.add_argument(
        "-n",
        "--namespace",
        help="the Services' namespace (default: the kubeconfig context's, as kubectl; else "
        "the pod's own in a cluster; else default)",
    )
    add_cluster_flags(parser)
    add_annotation_prefix(
        parser,
        "the operator's annotation prefix (default: $ENDPOINTSLICE_OPERATOR_ANNOTATION_PREFIX, "
        "else endpointslice-operator.io)",
    )
    parser.add_argument(
        "--timeout",
        type=float,
        default=120.0,
        metavar="SECONDS",
        help="how long to wait for the operator's slices, and for kube-controller-manager's "
        "objects to stay gone, per Service (default: 120)",
    )
    parser.add_argument(
        "--dry-run", action="store_true", help="print what would be done, change nothing"
    )
    return parser


def _settings(args: argparse.Namespace) -> Settings:
    return settings_of(args, ("kubeconfig", "managed_by", "annotation_prefix"))


SERVICE_ACCOUNT_NAMESPACE = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"


def default_namespace(where: str) -> str:
    """The namespace kubectl would use: the current context's of the kubeconfig ``where``
    (``find_cluster``'s answer), the pod's own for ``in-cluster``, else ``default``."""
    try:
        if where == "in-cluster":
            with open(SERVICE_ACCOUNT_NAMESPACE, encoding="utf-8") as file:
                return file.read().strip() or "default"
        _, current = k8s_config.list_kube_config_contexts(config_file=where)
    except (OSError, ConfigException):
        return "default"
    context = (current or {}).get("context") or {}
    return str(context.get("namespace") or "default")


def is_kcm_endpoints(metadata: Mapping[str, Any]) -> bool:
    """Whether an Endpoints object (its metadata, as JSON) is kube-controller-manager's: its
    ``endpoints.kubernetes.io/managed-by`` label says ``endpoint-controller``; without that
    label (servers before v1.33), every field manager is kube-controller-manager."""
    labels = metadata.get("labels") or {}
    label = labels.get(LABEL_ENDPOINTS_MANAGED_BY)
    if label is not None:
        return bool(label == KCM_ENDPOINTS_CONTROLLER)
    managers = {entry.get("manager") for entry in metadata.get("managedFields") or ()}
    return managers == {KCM_FIELD_MANAGER}


def selector_text(selector: Mapping[str, str]) -> str:
    """``spec.selector`` in the selector annotation's syntax (kubectl's ``-l``)."""
    return ",".join(f"{key}={value}" for key, value in sorted(selector.items()))


def _ready(endpoint: Mapping[str, Any]) -> bool:
    return (endpoint.get("conditions") or {}).get("ready") is not False


def _covers(ours: list[dict[str, Any]], theirs: list[dict[str, Any]]) -> bool:
    """Whether our slices route every request kube-controller-manager's would: each of their
    addresses is in ours (ready in ours when ready in theirs), with the same ports."""

    def view(slices: list[dict[str, Any]]) -> tuple[dict[str, bool], set[tuple[Any, ...]]]:
        addresses: dict[str, bool] = {}
        ports: set[tuple[Any, ...]] = set()
        for endpoint_slice in slices:
            for port in endpoint_slice.get("ports") or ():
                ports.add((port.get("name"), port.get("port"), port.get("protocol")))
            for endpoint in endpoint_slice.get("endpoints") or ():
                for address in endpoint.get("addresses") or ():
                    addresses[address] = addresses.get(address, False) or _ready(endpoint)
        return addresses, ports

    if not ours:
        return False
    our_addresses, our_ports = view(ours)
    their_addresses, their_ports = view(theirs)
    if their_addresses and our_ports != their_ports:
        return False
    return all(
        address in our_addresses and (our_addresses[address] or not ready)
        for address, ready in their_addresses.items()
    )


@dataclass
class Migration:
    """Migrates the Services of one namespace through one API client."""

    api: client.ApiClient
    settings: Settings
    namespace: str
    timeout: float
    dry_run: bool = False
    _kept: set[str] = field(default_factory=set)
    """Endpoints objects already reported as kept (not kube-controller-manager's)."""

    def say(self, line: str) -> None:
        sys.stdout.write(line + "\n")
        sys.stdout.flush()

    async def _call(self, method: str, path: str, body: Any = None, **query: str) -> Any:
        params = list(query.items())
        headers = {"Accept": "application/json"}
        if body is not None:
            headers["Content-Type"] = MERGE_PATCH if method == "PATCH" else "application/json"
        response = await self.api.call_api(
            path,
            method,
            query_params=params,
            header_params=headers,
            body=body,
            auth_settings=["BearerToken"],
            response_types_map={200: "object", 201: "object", 202: "object"},
            _return_http_data_only=True,
        )
        return response

    async def _get(self, path: str, **query: str) -> Any:
        return await self._call("GET", path, **query)

    def _verb(self, verb: str, done: str = "") -> str:
        """``would <verb>`` for a dry run, else the past tense."""
        return f"would {verb}" if self.dry_run else (done or f"{verb}d")

    def _where(self, name: str) -> str:
        return f"{self.namespace}/{name}"

    async def _slices(self, name: str, managers: Sequence[str]) -> list[dict[str, Any]]:
        selector = f"{LABEL_SERVICE_NAME}={name},{LABEL_MANAGED_BY} in ({','.join(managers)})"
        body = await self._get(
            f"/apis/discovery.k8s.io/v1/namespaces/{self.namespace}/endpointslices",
            labelSelector=selector,
        )
        return list(body.get("items") or ())

    async def _endpoints(self, name: str) -> dict[str, Any] | None:
        try:
            found: dict[str, Any] = await self._get(
                f"/api/v1/namespaces/{self.namespace}/endpoints/{name}"
            )
        except ApiException as exc:
            if exc.status == 404:
                return None
            raise
        return found

    async def _delete(self, path: str, uid: str) -> bool:
        """Delete with a uid precondition; False when gone already or replaced meanwhile."""
        body = {"preconditions": {"uid": uid}}
        try:
            await self._call("DELETE", path, body)
        except ApiException as exc:
            if exc.status in (404, 409):
                return False
            raise
        return True

    async def migrate(self, name: str) -> None:
        path = f"/api/v1/namespaces/{self.namespace}/services/{name}"
        try:
            service: dict[str, Any] = await self._get(path)
        except ApiException as exc:
            if exc.status == 404:
                raise MigrateError(f"Service {self._where(name)} not found") from None
            raise
        spec = service.get("spec") or {}
        metadata = service.get("metadata") or {}
        annotations = metadata.get("annotations") or {}
        labels = metadata.get("labels") or {}
        enabled = self.settings.enabled_annotation
        selector_annotation = self.settings.selector_annotation
        if spec.get("type") == "ExternalName":
            raise MigrateError(f"Service {self._where(name)} is of type ExternalName: no endpoints")
        selector = spec.get("selector") or {}
        if not selector and selector_annotation not in annotations:
            raise MigrateError(
                f"Service {self._where(name)} has neither spec.selector nor the annotation "
                f"{selector_annotation}: nothing selects its pods"
            )
        opted_in = (
            annotations.get(enabled) == "true"
            or labels.get(ENDPOINT_CONTROLLER_NAME_LABEL) == self.settings.managed_by
        )
        if not opted_in:
            self.say(f"{self._verb('annotate')} service {self._where(name)} {enabled}=true")
            if not self.dry_run:
                service = await self._call(
                    "PATCH", path, {"metadata": {"annotations": {enabled: "true"}}}
                )
        if self.dry_run:
            self.say(f"would wait until the EndpointSlices of {self.settings.managed_by} cover")
            self.say(f"  kube-controller-manager's for service {self._where(name)}")
        else:
            await self._wait_for_ours(name, has_selector=bool(selector))
        if selector:
            text = selector_text(selector)
            self.say(
                f"{self._verb('move', 'moved')} spec.selector of service {self._where(name)} into "
                f"{selector_annotation}={text}"
            )
            if not self.dry_run:
                version = (service.get("metadata") or {}).get("resourceVersion")
                patch = {
                    "metadata": {
                        "resourceVersion": version,
                        "annotations": {selector_annotation: text},
                    },
                    "spec": {"selector": None},
                }
                try:
                    await self._call("PATCH", path, patch)
                except ApiException as exc:
                    if exc.status != 409:
                        raise
                    raise MigrateError(
                        f"Service {self._where(name)} changed while migrating (its spec.selector "
                        "was left as it was, it is opted in); run the command again"
                    ) from None
        await self._remove_leftovers(name)

    async def _wait_for_ours(self, name: str, *, has_selector: bool) -> None:
        started = time.monotonic()
        while True:
            ours = await self._slices(name, (self.settings.managed_by,))
            theirs = await self._slices(name, KCM_MANAGERS) if has_selector else []
            if _covers(ours, theirs) or (ours and not has_selector):
                self.say(
                    f"EndpointSlices of {self.settings.managed_by} cover service "
                    f"{self._where(name)} ({time.monotonic() - started:.1f} s)"
                )
                return
            if time.monotonic() - started > self.timeout:
                raise MigrateError(
                    f"the operator did not publish EndpointSlices covering service "
                    f"{self._where(name)} within {self.timeout:.0f} s (is it running, watching "
                    f"namespace {self.namespace}, with --managed-by {self.settings.managed_by}?)"
                    "; the Service is opted in and kube-controller-manager still publishes it"
                )
            await asyncio.sleep(POLL)

    async def _remove_once(self, name: str) -> int:
        """Delete (or list) kube-controller-manager's objects of one Service; how many. The
        mirrored slices of an Endpoints object that is not kube-controller-manager's are kept
        (they would come back from it)."""
        count = 0
        managers: tuple[str, ...] = KCM_MANAGERS
        endpoints = await self._endpoints(name)
        if endpoints is not None:
            metadata = endpoints.get("metadata") or {}
            labels = metadata.get("labels") or {}
            if self.settings.managed_by in (
                labels.get(LABEL_MANAGED_BY),
                labels.get(LABEL_ENDPOINTS_MANAGED_BY),
            ):
                pass  # ours (<prefix>/endpoints: "true"), never mirrored (skip-mirror)
            elif is_kcm_endpoints(metadata):
                if self.dry_run or await self._delete(
                    f"/api/v1/namespaces/{self.namespace}/endpoints/{name}", metadata["uid"]
                ):
                    where = self._where(name)
                    self.say(
                        f"{self._verb('delete')} endpoints {where} (kube-controller-manager's)"
                    )
                    count += 1
            else:
                managers = (UPSTREAM_CONTROLLER_NAME,)
                if name not in self._kept:
                    self._kept.add(name)
                    written_by = sorted(
                        {str(e.get("manager")) for e in metadata.get("managedFields") or ()}
                    )
                    sys.stderr.write(
                        f"{PROG}: kept endpoints {self._where(name)}: not "
                        f"kube-controller-manager's (written by "
                        f"{', '.join(written_by) or 'unknown'})\n"
                    )
        for endpoint_slice in await self._slices(name, managers):
            meta = endpoint_slice["metadata"]
            manager = meta["labels"][LABEL_MANAGED_BY]
            if self.dry_run or await self._delete(
                f"/apis/discovery.k8s.io/v1/namespaces/{self.namespace}/endpointslices/"
                f"{meta['name']}",
                meta["uid"],
            ):
                where = self._where(meta["name"])
                self.say(f"{self._verb('delete')} endpointslice {where} (managed by {manager})")
                count += 1
        return count

    async def _remove_leftovers(self, name: str) -> None:
        if self.dry_run:
            if not await self._remove_once(name):
                self.say(f"nothing of kube-controller-manager's to delete for {self._where(name)}")
            return
        started = time.monotonic()
        clean = 0
        while clean < SETTLE_POLLS:
            clean = 0 if await self._remove_once(name) else clean + 1
            if time.monotonic() - started > self.timeout:
                raise MigrateError(
                    f"EndpointSlices of kube-controller-manager's controllers for service "
                    f"{self._where(name)} kept coming back for {self.timeout:.0f} s"
                )
            await asyncio.sleep(POLL)
        if name in self._kept and await self._slices(name, (MIRRORING_CONTROLLER_NAME,)):
            raise MigrateError(
                f"kube-controller-manager's mirroring controller publishes EndpointSlices for "
                f"service {self._where(name)} from the Endpoints object {self._where(name)}, "
                f"which is not kube-controller-manager's and was kept; kube-proxy merges them "
                f"with ours: delete that Endpoints object if it is not wanted, or label it "
                f"endpointslice.kubernetes.io/skip-mirror=true"
            )
        self.say(
            f"only EndpointSlices of {self.settings.managed_by} remain for {self._where(name)}"
        )


async def migrate_all(
    settings: Settings, namespace: str, names: Sequence[str], timeout: float, dry_run: bool
) -> int:
    configuration = await load_client_configuration(settings)
    resolve_env_proxy(configuration)
    failed = 0
    async with OperatorApiClient(configuration, api_timeout=settings.api_timeout) as api_client:
        migration = Migration(api_client, settings, namespace, timeout, dry_run)
        for name in names:
            try:
                await migration.migrate(name)
            except MigrateError as exc:
                sys.stderr.write(f"{PROG}: {exc}\n")
                failed += 1
            except ApiException as exc:
                sys.stderr.write(
                    f"{PROG}: service {namespace}/{name}: the API server refused: "
                    f"{exc.status} {exc.reason}\n"
                )
                failed += 1
    return 1 if failed else 0


def main(argv: Sequence[str]) -> int:
    args = build_parser().parse_args(list(argv))
    try:
        settings = _settings(args)
        where = find_cluster(settings)
    except (SettingsError, NoClusterError) as exc:
        for line in str(exc).splitlines():
            sys.stderr.write(f"{PROG}: {line}\n")
        return 2 if isinstance(exc, SettingsError) else 1
    namespace = args.namespace or default_namespace(where)
    try:
        return asyncio.run(
            migrate_all(settings, namespace, args.services, args.timeout, args.dry_run)
        )
    except ApiException as exc:
        sys.stderr.write(f"{PROG}: the API server refused: {exc.status} {exc.reason}\n")
        return 1
    except (ConfigException, OSError) as exc:
        sys.stderr.write(f"{PROG}: cannot reach the cluster: {exc}\n")
        return 1
