"""``endpointslice-operator cleanup``: delete the EndpointSlices (and Endpoints) the operator wrote.

Only objects labelled ``endpointslice.kubernetes.io/managed-by: <--managed-by>`` are chosen,
each delete with a uid precondition: slices first, then Endpoints. Imported MCS slices,
derived Services, ServiceImports and the per-peer Leases only with ``--multicluster`` (else the
kept count is reported). A Lease held by a live holder means the operator still runs: a warning
names it and the deletion goes ahead; otherwise the Lease is deleted too. ``--wait-for-operator``
first waits for its release (the chart's post-delete hook). See docs/operations.md.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from kubernetes_asyncio import client
from kubernetes_asyncio.client.exceptions import ApiException
from kubernetes_asyncio.config import ConfigException

from endpointslice_operator.commands.flags import (
    add_cluster_flags,
    settings_of,
)
from endpointslice_operator.controller.api.client import OperatorApiClient, resolve_env_proxy
from endpointslice_operator.controller.api.cluster_config import (
    NoClusterError,
    find_cluster,
    load_client_configuration,
)
from endpointslice_operator.controller.api.kinds import methods_of
from endpointslice_operator.reconciler.labels import LABEL_MANAGED_BY
from endpointslice_operator.reconciler.mcs import LABEL_SOURCE_CLUSTER, MCS_GROUP, MCS_VERSION
from endpointslice_operator.settings import Settings, SettingsError

__all__ = [
    "cleanup",
    "cleanup_endpoints",
    "cleanup_imports",
    "cleanup_lease",
    "cleanup_peer_leases",
    "count_imported",
    "main",
]

PROG = "endpointslice-operator cleanup"
PAGE_SIZE = 500
#: The leader election's retry period (2 s, with jitter): a running standby re-reads the Lease
#: within it.
LEASE_RETRY_SECONDS = 3.0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=PROG,
        description="Delete the EndpointSlices managed by the operator (label "
        f"{LABEL_MANAGED_BY}=<managed-by>), for example after uninstalling it. Slices managed "
        "by anyone else are never touched.",
    )
    add_cluster_flags(parser)
    parser.add_argument(
        "--namespace",
        metavar="NAME",
        action="append",
        help="only this namespace (repeatable; default: all namespaces)",
    )
    parser.add_argument(
        "--lease-name",
        metavar="NAME",
        help="the operator's leader-election Lease, to warn while it is held (default: as run)",
    )
    parser.add_argument(
        "--lease-namespace",
        metavar="NAME",
        help="its namespace (default: $ENDPOINTSLICE_OPERATOR_LEASE_NAMESPACE, else every "
        "namespace is searched for a Lease of that name)",
    )
    parser.add_argument(
        "--dry-run", action="store_true", help="list what would be deleted, delete nothing"
    )
    parser.add_argument(
        "--wait-for-operator",
        metavar="SECONDS",
        type=float,
        default=0.0,
        help="first wait up to this long for the operator to stop (its Lease released or "
        "expired), as the chart's uninstall hook does while the operator's pods terminate "
        "(default 0: warn and go ahead)",
    )
    parser.add_argument(
        "--multicluster",
        action="store_true",
        help="also delete the Multi-Cluster Services import side of ours: imported "
        "EndpointSlices (label multicluster.kubernetes.io/source-cluster), derived Services and "
        "ServiceImports, and the per-peer Leases (default: kept)",
    )
    return parser


def _settings(args: argparse.Namespace) -> Settings:
    names = ("kubeconfig", "managed_by", "lease_name", "lease_namespace")
    return settings_of(args, names, repeated=("namespace",))


async def _leases(api: client.CoordinationV1Api, settings: Settings) -> list[Any]:
    """The Leases named ``--lease-name`` (in ``--lease-namespace``, else in any namespace)."""
    if settings.lease_namespace:
        try:
            return [
                await api.read_namespaced_lease(
                    settings.lease_name, settings.lease_namespace, _request_timeout=10
                )
            ]
        except ApiException as exc:
            if exc.status == 404:
                return []
            raise
    page = await api.list_lease_for_all_namespaces(
        field_selector=f"metadata.name={settings.lease_name}", _request_timeout=10
    )
    return list(page.items)


def _live_holder(lease: Any, now: datetime) -> str | None:
    """``held by <holder> (renewed N s ago)`` when a holder renewed it within its duration."""
    spec = lease.spec
    renewed = spec.renew_time if spec is not None else None
    if spec is None or not spec.holder_identity or renewed is None:
        return None
    if renewed.tzinfo is None:
        renewed = renewed.replace(tzinfo=UTC)
    age = (now - renewed).total_seconds()
    if age <= (spec.lease_duration_seconds or 15):
        return f"held by {spec.holder_identity} (renewed {age:.0f} s ago)"
    return None


async def live_lease_holders(settings: Settings, now: datetime | None = None) -> list[str]:
    """``<namespace>/<name> held by <holder>`` for each Lease named ``--lease-name`` (in
    ``--lease-namespace``, else in any namespace) whose holder renewed it within its duration:
    an operator that still runs. Nothing when the Lease cannot be read (it is only a warning)."""
    now = now or datetime.now(UTC)
    configuration = await load_client_configuration(settings)
    async with client.ApiClient(configuration) as api_client:
        try:
            leases = await _leases(client.CoordinationV1Api(api_client), settings)
        except (TimeoutError, ApiException, OSError):
            return []
    held: list[str] = []
    for lease in leases:
        live = _live_holder(lease, now)
        if live is not None:
            held.append(f"{lease.metadata.namespace}/{lease.metadata.name} {live}")
    return held


async def cleanup_lease(settings: Settings, *, dry_run: bool = False) -> list[str]:
    """Delete (or list) the operator's leader-election Lease once no live holder has it
    (released on shutdown, or expired); ``<namespace>/<name>`` of each. A Lease still held is
    left (the operator runs). Nothing when Leases cannot be read or deleted here (RBAC)."""
    now = datetime.now(UTC)
    configuration = await load_client_configuration(settings)
    gone: list[str] = []
    async with client.ApiClient(configuration) as api_client:
        api = client.CoordinationV1Api(api_client)
        try:
            for lease in await _leases(api, settings):
                if _live_holder(lease, now) is not None:
                    continue
                name, namespace = lease.metadata.name, lease.metadata.namespace
                if not dry_run:
                    body = client.V1DeleteOptions(
                        preconditions=client.V1Preconditions(uid=lease.metadata.uid)
                    )
                    await api.delete_namespaced_lease(name, namespace, body=body)
                gone.append(f"{namespace}/{name}")
        except ApiException as exc:
            if exc.status not in (403, 404, 409):
                raise
        except (TimeoutError, OSError):
            pass
    return gone


async def cleanup_peer_leases(
    settings: Settings, *, dry_run: bool = False
) -> tuple[list[str], str | None]:
    """``--multicluster``: delete (or list) the per-peer Leases of ours: named ``<--lease-name>-
    mcs-<cluster id>``, labelled ``<annotation prefix>/mcs-peer=true``, in ``--lease-namespace``
    (else in any namespace), but where a live holder has the leader-election Lease (the
    operator runs there and would renew them). ``<namespace>/<name>`` of each, and why none
    could be (a refusal of the API server), if so."""
    now = datetime.now(UTC)
    configuration = await load_client_configuration(settings)
    label = f"{settings.annotation_prefix}/mcs-peer=true"
    prefix = f"{settings.lease_name}-mcs-"
    gone: list[str] = []
    async with client.ApiClient(configuration) as api_client:
        api = client.CoordinationV1Api(api_client)
        try:
            running = {
                lease.metadata.namespace
                for lease in await _leases(api, settings)
                if _live_holder(lease, now) is not None
            }
            if settings.lease_namespace:
                page = await api.list_namespaced_lease(
                    settings.lease_namespace, label_selector=label, _request_timeout=10
                )
            else:
                page = await api.list_lease_for_all_namespaces(
                    label_selector=label, _request_timeout=10
                )
            for lease in page.items:
                name, namespace = lease.metadata.name, lease.metadata.namespace
                if not name.startswith(prefix) or namespace in running:
                    continue
                if not dry_run:
                    body = client.V1DeleteOptions(
                        preconditions=client.V1Preconditions(uid=lease.metadata.uid)
                    )
                    try:
                        await api.delete_namespaced_lease(name, namespace, body=body)
                    except ApiException as exc:
                        if exc.status not in (404, 409):  # gone, or another one meanwhile
                            raise
                        continue
                gone.append(f"{namespace}/{name}")
        except ApiException as exc:
            if exc.status != 403:
                raise
            where = settings.lease_namespace or "any namespace"
            return gone, (
                f"the per-peer Leases were left: forbidden (403) to list or delete Leases in "
                f"{where} ({exc.reason}); grant list and delete on coordination.k8s.io leases "
                "there, or delete the Leases labelled "
                f"{label} named {prefix}<cluster id> by hand"
            )
    return gone, None


@dataclass(frozen=True)
class _Kind:
    """One kind the command deletes: its name in the output and its API calls."""

    name: str
    list_all: Callable[..., Awaitable[Any]]
    list_namespaced: Callable[..., Awaitable[Any]]
    delete: Callable[..., Awaitable[Any]]


async def _list(kind: _Kind, namespace: str | None, selector: str) -> list[Any]:
    found: list[Any] = []
    token: str | None = None
    while True:
        kwargs: dict[str, Any] = {"label_selector": selector, "limit": PAGE_SIZE}
        if token:
            kwargs["_continue"] = token
        if namespace is None:
            page = await kind.list_all(**kwargs)
        else:
            page = await kind.list_namespaced(namespace, **kwargs)
        found.extend(page.items)
        token = page.metadata._continue
        if not token:
            return found


async def _delete_labelled(
    settings: Settings,
    dry_run: bool,
    kind_of: Callable[[client.ApiClient], _Kind],
    *,
    also: str = "",
    keep: Callable[[Any], bool] = lambda _item: False,
) -> int:
    """Delete (or list) the objects of one kind labelled managed-by ours (and matching the
    further label selector ``also``), except those ``keep`` keeps; how many."""
    configuration = await load_client_configuration(settings)
    selector = f"{LABEL_MANAGED_BY}={settings.managed_by}" + (f",{also}" if also else "")
    count = 0
    resolve_env_proxy(configuration)
    async with OperatorApiClient(configuration, api_timeout=settings.api_timeout) as api_client:
        kind = kind_of(api_client)
        for namespace in settings.namespaces or (None,):
            for item in await _list(kind, namespace, selector):
                if keep(item):
                    continue
                meta = item.metadata
                where = f"{meta.namespace}/{meta.name}"
                if dry_run:
                    sys.stdout.write(f"would delete {kind.name} {where}\n")
                    count += 1
                    continue
                options = client.V1DeleteOptions(preconditions=client.V1Preconditions(uid=meta.uid))
                try:
                    await kind.delete(meta.name, meta.namespace, body=options)
                except ApiException as exc:
                    if exc.status in (404, 409):  # gone already, or replaced meanwhile
                        continue
                    raise
                sys.stdout.write(f"deleted {kind.name} {where}\n")
                count += 1
    return count


def _builtin(kind: str, name: str) -> Callable[[client.ApiClient], _Kind]:
    def kind_of(api_client: client.ApiClient) -> _Kind:
        methods = methods_of(api_client, kind)
        assert methods.namespaced is not None and methods.delete is not None
        return _Kind(name, methods.everywhere, methods.namespaced, methods.delete)

    return kind_of


_slices = _builtin("endpointslices", "endpointslice")
_endpoints = _builtin("endpoints", "endpoints")
_services = _builtin("services", "service")


def _service_imports(api_client: client.ApiClient) -> _Kind:
    api = client.CustomObjectsApi(api_client)

    async def list_all(**kwargs: Any) -> Any:
        return _Page(await api.list_cluster_custom_object(*_MCS, **kwargs))

    async def list_namespaced(namespace: str, **kwargs: Any) -> Any:
        return _Page(
            await api.list_namespaced_custom_object(*_MCS[:2], namespace, _MCS[2], **kwargs)
        )

    async def delete(name: str, namespace: str, body: Any) -> Any:
        return await api.delete_namespaced_custom_object(
            *_MCS[:2], namespace, _MCS[2], name, body=body
        )

    return _Kind("serviceimport", list_all, list_namespaced, delete)


_MCS = (MCS_GROUP, MCS_VERSION, "serviceimports")


class _Meta:
    def __init__(self, metadata: Any) -> None:
        self.namespace = metadata.get("namespace")
        self.name = metadata.get("name")
        self.uid = metadata.get("uid")
        self._continue = metadata.get("continue")


class _Item:
    def __init__(self, body: Any) -> None:
        self.metadata = _Meta(body.get("metadata") or {})


class _Page:
    """A custom-object listing (plain JSON) shaped as the typed listings :func:`_list` reads."""

    def __init__(self, body: Any) -> None:
        self.items = [_Item(item) for item in body.get("items") or ()]
        self.metadata = _Meta(body.get("metadata") or {})


def _not_derived(service: Any) -> bool:
    """Keep a Service of ours unless a ServiceImport owns it (a derived Service)."""
    refs = service.metadata.owner_references or ()
    return not any(ref.kind == "ServiceImport" and ref.controller for ref in refs)


async def cleanup(settings: Settings, *, dry_run: bool = False) -> int:
    """Delete (or with ``dry_run`` only list) our slices, imported ones excepted; how many."""
    return await _delete_labelled(settings, dry_run, _slices, also=f"!{LABEL_SOURCE_CLUSTER}")


async def count_imported(settings: Settings) -> int:
    """How many imported slices of ours (Multi-Cluster Services) there are."""
    configuration = await load_client_configuration(settings)
    resolve_env_proxy(configuration)
    selector = f"{LABEL_MANAGED_BY}={settings.managed_by},{LABEL_SOURCE_CLUSTER}"
    async with OperatorApiClient(configuration, api_timeout=settings.api_timeout) as api_client:
        kind = _slices(api_client)
        return sum(
            [
                len(await _list(kind, namespace, selector))
                for namespace in settings.namespaces or (None,)
            ]
        )


async def cleanup_imports(settings: Settings, *, dry_run: bool = False) -> int:
    """``--multicluster``: delete (or list) the import side of ours: imported slices, derived
    Services, ServiceImports (none when the API server does not serve them); how many."""
    count = await _delete_labelled(settings, dry_run, _slices, also=LABEL_SOURCE_CLUSTER)
    count += await _delete_labelled(settings, dry_run, _services, keep=_not_derived)
    try:
        count += await _delete_labelled(settings, dry_run, _service_imports)
    except ApiException as exc:
        if exc.status != 404:  # 404: ServiceImports are not served here
            raise
    return count


async def cleanup_endpoints(settings: Settings, *, dry_run: bool = False) -> int:
    """Delete (or list) the core/v1 Endpoints objects labelled managed-by ours; how many."""
    return await _delete_labelled(settings, dry_run, _endpoints)


def _wait_for_operator(settings: Settings, seconds: float) -> list[str]:
    """The live holders of the operator's Lease, after waiting up to ``seconds`` for none."""
    deadline = time.monotonic() + seconds
    while True:
        held = asyncio.run(live_lease_holders(settings))
        if not held or time.monotonic() >= deadline:
            return held
        time.sleep(1.0)


def main(argv: Sequence[str]) -> int:
    args = build_parser().parse_args(list(argv))
    try:
        settings = _settings(args)
        find_cluster(settings)
    except (SettingsError, NoClusterError) as exc:
        for line in str(exc).splitlines():
            sys.stderr.write(f"{PROG}: {line}\n")
        return 2 if isinstance(exc, SettingsError) else 1
    try:
        for held in _wait_for_operator(settings, args.wait_for_operator):
            sys.stderr.write(
                f"{PROG}: warning: the operator is still running (Lease {held}): it will "
                "write the slices again; stop it first (helm uninstall, or kubectl delete -f "
                "deploy/)\n"
            )
        count = asyncio.run(cleanup(settings, dry_run=args.dry_run))
        endpoints = asyncio.run(cleanup_endpoints(settings, dry_run=args.dry_run))
        leases = asyncio.run(cleanup_lease(settings, dry_run=args.dry_run))
        if args.wait_for_operator > 0 and leases and not args.dry_run:
            # A standby that had not stopped yet would create the Lease again: once more after
            # its retry period.
            time.sleep(LEASE_RETRY_SECONDS)
            leases += asyncio.run(cleanup_lease(settings))
        peers: list[str] = []
        if args.multicluster:
            imports = asyncio.run(cleanup_imports(settings, dry_run=args.dry_run))
            peers, refused = asyncio.run(cleanup_peer_leases(settings, dry_run=args.dry_run))
            if refused:
                sys.stderr.write(f"{PROG}: warning: {refused}\n")
            kept = 0
        else:
            imports, kept = 0, asyncio.run(count_imported(settings))
    except ApiException as exc:
        sys.stderr.write(f"{PROG}: the API server refused: {exc.status} {exc.reason}\n")
        return 1
    except (ConfigException, OSError) as exc:
        sys.stderr.write(f"{PROG}: cannot reach the cluster: {exc}\n")
        return 1
    verb = "would delete" if args.dry_run else "deleted"
    for lease in leases:
        sys.stdout.write(f"{verb} the leader-election Lease {lease} (no live holder)\n")
    for lease in peers:
        sys.stdout.write(f"{verb} the per-peer Lease {lease} (Multi-Cluster Services)\n")
    if endpoints:
        sys.stdout.write(
            f"{verb} {endpoints} Endpoints object(s) managed by {settings.managed_by}\n"
        )
    if imports:
        sys.stdout.write(
            f"{verb} {imports} object(s) of the Multi-Cluster Services import side managed by "
            f"{settings.managed_by}\n"
        )
    if kept:
        sys.stdout.write(
            f"kept {kept} imported EndpointSlice(s) (Multi-Cluster Services; --multicluster "
            "deletes them with their ServiceImports and derived Services)\n"
        )
    sys.stdout.write(f"{verb} {count} EndpointSlice(s) managed by {settings.managed_by}\n")
    return 0
