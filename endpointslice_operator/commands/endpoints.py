"""``endpointslice-operator endpoints``: the endpoint view of Services, as a table or JSON lines.

Reads the cluster as ``run`` does (``--kubeconfig``, else in-cluster, else the default
kubeconfig) and shows every (service, port, address) of the chosen Services, merged from all
their EndpointSlices as kube-proxy merges them (docs/view.md). With ``--watch`` it keeps
running and prints one line per change, flushed at once, so that
``endpointslice-operator endpoints --watch -o json | consumer`` works.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from endpointslice_operator.commands.flags import (
    add_annotation_prefix,
    add_cluster_flags,
    settings_of,
)
from endpointslice_operator.view.model import (
    POLICIES,
    Change,
    Endpoint,
    EndpointGroup,
    EndpointKey,
    ServicePortKey,
    view_annotation,
)

if TYPE_CHECKING:
    from endpointslice_operator.settings import Settings

# The API client, Kopf-free credentials, settings and the watch machinery are imported once
# the arguments are parsed (see main): `--help` and usage errors answer at once, and a run
# pays only for what it uses.

__all__ = ["build_parser", "format_row", "main", "render_table"]

PROG = "endpointslice-operator endpoints"

TABLE_COLUMNS = ("NAMESPACE", "SERVICE", "PORT", "ADDRESS", "READY", "SERVING", "TERM", "NODE")
GATHER_COLUMNS = ("NAMESPACE", "SERVICE", "PORT", "ENDPOINTS")
IMPORT_COLUMNS = (*TABLE_COLUMNS, "CLUSTER")
"""With ``--service-import``: each endpoint's source cluster too."""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=PROG,
        description="Show the endpoints of Services, one per (service, port, address), merged "
        "from all their EndpointSlices (whoever manages them) as kube-proxy does. Without "
        "--service and --selector: the Services annotated "
        f'{view_annotation()}: "true". Namespaces as kubectl: the kubeconfig context\'s '
        "namespace (in a Pod, its own), -n NS, or -A for all.",
    )
    scope = parser.add_mutually_exclusive_group()
    scope.add_argument(
        "-n",
        "--namespace",
        metavar="NS",
        help="this namespace (default: the kubeconfig context's, else default)",
    )
    scope.add_argument("-A", "--all-namespaces", action="store_true", help="every namespace")
    parser.add_argument(
        "--service",
        metavar="NAME",
        action="append",
        help="this Service (repeatable): NAME in the namespace in use, or NAMESPACE/NAME",
    )
    parser.add_argument("--selector", metavar="SEL", help="Services with these labels (a, b=c)")
    parser.add_argument(
        "--endpoint-selector",
        metavar="NAME",
        action="append",
        help="instead of Services, this EndpointSelector and its slices (repeatable; NAME or "
        "NAMESPACE/NAME; the SERVICE column names it, PORT is its port number, 0 for a "
        "container port name)",
    )
    parser.add_argument(
        "--service-import",
        metavar="NAME",
        action="append",
        help="instead of Services, this ServiceImport (Multi-Cluster Services) and its imported "
        "slices (repeatable; NAME or NAMESPACE/NAME; the SERVICE column names it, CLUSTER (JSON: "
        "cluster) is the source cluster of each endpoint)",
    )
    parser.add_argument(
        "--managed-by", metavar="NAME", help="only the slices of this manager (default: all)"
    )
    parser.add_argument(
        "--policy",
        choices=POLICIES,
        default="ready",
        help="ready: what kube-proxy routes to (default); serving: also the serving and "
        "terminating endpoints of a port without ready ones, as kube-proxy falls back; all: "
        "every endpoint",
    )
    parser.add_argument(
        "--gather", action="store_true", help="one record per (service, port) with its addresses"
    )
    parser.add_argument(
        "--watch", action="store_true", help="keep running and print one line per change"
    )
    parser.add_argument(
        "-o", "--output", choices=("table", "json"), default="table", help="default: table"
    )
    add_cluster_flags(parser, managed_by=False)
    add_annotation_prefix(
        parser,
        "prefix of the <prefix>/view annotation (default: as run, endpointslice-operator.io)",
    )
    return parser


def _port(key: EndpointKey | ServicePortKey) -> str:
    name = f"{key.port_name}:" if key.port_name else ""
    return f"{name}{key.port}/{key.protocol}"


def _flag(value: bool) -> str:
    return "true" if value else "false"


def format_row(change: Change, *, cluster: bool = False) -> tuple[str, ...]:
    """The table cells of one change (without the change type); ``cluster``: with the source
    cluster of each endpoint (``--service-import``)."""
    key, value = change.key, change.endpoint
    if isinstance(key, EndpointKey) and isinstance(value, Endpoint):
        row = (
            key.namespace,
            key.service,
            _port(key),
            f"{key.address}:{value.target_port}",
            _flag(value.ready),
            _flag(value.serving),
            _flag(value.terminating),
            value.node or "-",
        )
        return (*row, value.cluster or "-") if cluster else row
    if isinstance(key, ServicePortKey) and isinstance(value, EndpointGroup):
        listed = ",".join(f"{e.address}:{e.target_port}" for e in value.endpoints)
        return (key.namespace, key.service, _port(key), listed or "-")
    return ()


def _table(rows: list[tuple[str, ...]]) -> str:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return "".join(
        "   ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip()
        + "\n"
        for row in rows
    )


def render_table(changes: list[Change], *, cluster: bool = False) -> str:
    """The view (its ``added`` changes) as the command's table; ``cluster``: with the source
    cluster of each endpoint (a view of ServiceImports)."""
    gathered = bool(changes) and isinstance(changes[0].key, ServicePortKey)
    cluster = cluster and not gathered
    rows = [format_row(change, cluster=cluster) for change in changes if change.type == "added"]
    if not rows:
        return "No endpoints.\n"
    header = GATHER_COLUMNS if gathered else IMPORT_COLUMNS if cluster else TABLE_COLUMNS
    return _table([header, *rows])


def view_hint(annotation_prefix: str) -> str:
    """The line printed when a view without --service or --selector is empty."""
    annotation = view_annotation(annotation_prefix)
    return (
        f"{PROG}: without --service or --selector, only Services annotated "
        f'{annotation}: "true" are shown: kubectl annotate service NAME {annotation}=true, '
        "or pass --service NAME or --selector LABELS"
    )


def _emit(line: str) -> None:
    sys.stdout.write(line)
    sys.stdout.flush()


def resolve_scope(
    args: argparse.Namespace, settings: Settings
) -> tuple[str | None, list[str] | None]:
    """(namespace to watch, None for all; the Services, or with ``--endpoint-selector`` the
    EndpointSelectors, with ``--service-import`` the ServiceImports, each as
    ``namespace/name``), as kubectl resolves them: ``-A`` every
    namespace, ``-n`` that one, else the kubeconfig context's. A bare NAME is in the namespace
    in use (with ``-A``, in any); a ``NAMESPACE/NAME`` elsewhere widens the watch to every
    namespace (the view still shows only the objects named)."""
    from endpointslice_operator.controller.api.cluster_config import context_namespace

    named = list(args.endpoint_selector or args.service_import or args.service or [])
    if args.all_namespaces:
        return None, named or None
    namespace = args.namespace or context_namespace(settings)
    if not named:
        return namespace, None
    owners = [name if "/" in name else f"{namespace}/{name}" for name in named]
    if any(name.partition("/")[0] != namespace for name in owners):
        return None, owners
    return namespace, owners


async def _run(
    args: argparse.Namespace,
    annotation_prefix: str,
    namespace: str | None,
    named: list[str] | None,
) -> int:
    from endpointslice_operator.view.watch import open_api_client, watch_endpoints

    async with await open_api_client(args.kubeconfig, args.annotation_prefix) as api:
        stream = watch_endpoints(
            api,
            namespace=namespace,
            services=None if args.endpoint_selector or args.service_import else named,
            selector=args.selector,
            endpoint_selectors=named if args.endpoint_selector else None,
            service_imports=named if args.service_import else None,
            managed_by=args.managed_by,
            policy=args.policy,
            gather=args.gather,
            annotation_prefix=annotation_prefix,
        )
        cluster = bool(args.service_import) and not args.gather
        header = GATHER_COLUMNS if args.gather else IMPORT_COLUMNS if cluster else TABLE_COLUMNS
        rows: list[tuple[str, ...]] = []
        synced = False
        try:
            async for change in stream:
                if args.output == "json":
                    if args.watch or change.type != "synced":
                        _emit(json.dumps(change.to_json(), separators=(",", ":")) + "\n")
                elif not synced and change.type == "added":
                    rows.append(format_row(change, cluster=cluster))
                elif change.type != "synced":
                    cells = format_row(change, cluster=cluster)
                    _emit("   ".join((change.type.upper(), *cells)) + "\n")
                if change.type == "synced":
                    synced = True
                    if args.output == "table":
                        if args.watch:
                            rows = [("TYPE", *header)] + [("ADDED", *row) for row in rows]
                        else:
                            rows = [header, *rows]
                        _emit(_table(rows) if len(rows) > 1 else "No endpoints.\n")
                        if len(rows) == 1 and not named and args.selector is None:
                            sys.stderr.write(view_hint(annotation_prefix) + "\n")
                    if not args.watch:
                        break
        finally:
            await stream.aclose()
        if not args.watch and named and not (args.endpoint_selector or args.service_import):
            missing = await _missing_services(api, named)
            for key in missing:
                sys.stderr.write(f"{PROG}: Service {key} does not exist\n")
            if missing:
                return 1
    return 0


async def _missing_services(api: Any, named: list[str]) -> list[str]:
    """Of the Services named (``namespace/name``), those the API server does not have."""
    from kubernetes_asyncio.client import CoreV1Api
    from kubernetes_asyncio.client.exceptions import ApiException

    core = CoreV1Api(api)
    missing = []
    for key in named:
        namespace, _, name = key.partition("/")
        if not name:
            continue  # a bare name with -A: in any namespace
        try:
            await core.read_namespaced_service(name, namespace)
        except ApiException as exc:
            if exc.status == 404:  # anything else (a 403): not known to be missing
                missing.append(key)
    return missing


def main(argv: Sequence[str]) -> int:
    args = build_parser().parse_args(list(argv))
    # Watch retries ("... failed, retrying") are the only log lines: one line each, on stderr.
    logging.basicConfig(level=logging.WARNING, format=f"{PROG}: %(message)s")
    from endpointslice_operator.controller.api.cluster_config import NoClusterError, find_cluster
    from endpointslice_operator.controller.cache.selectors import SelectorError, parse_selector
    from endpointslice_operator.settings import SettingsError

    try:
        if args.endpoint_selector and (args.service or args.selector):
            raise SelectorError("--endpoint-selector cannot be combined with --service/--selector")
        if args.service_import and (args.service or args.selector or args.endpoint_selector):
            raise SelectorError(
                "--service-import cannot be combined with --service/--selector/--endpoint-selector"
            )
        if args.selector is not None:
            parse_selector(args.selector)
        settings = settings_of(args, ("kubeconfig", "annotation_prefix"))
        find_cluster(settings)
    except (SettingsError, SelectorError, NoClusterError) as exc:
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        sys.stderr.write(f"{PROG}: {first}\n")
        return 1 if isinstance(exc, NoClusterError) else 2
    namespace, named = resolve_scope(args, settings)
    import asyncio

    from kubernetes_asyncio.config import ConfigException

    from endpointslice_operator.view.watch import ViewError

    try:
        return asyncio.run(_run(args, settings.annotation_prefix, namespace, named))
    except ViewError as exc:
        sys.stderr.write(f"{PROG}: {exc}\n")
        return 1
    except (OSError, ConfigException) as exc:
        if isinstance(exc, BrokenPipeError):
            # The consumer went away (``| head``): not an error of ours.
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
            return 0
        sys.stderr.write(f"{PROG}: cannot reach the cluster: {exc}\n")
        return 1
    except KeyboardInterrupt:
        return 130
