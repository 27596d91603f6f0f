"""Where the cluster is and how to reach it, without Kopf: the credentials every command shares
(``--kubeconfig``, else in-cluster, else the default kubeconfig) and the namespace a command
defaults to, as kubectl does.

kubernetes-asyncio is imported when a configuration is loaded, not with this module, so that a
command can parse its arguments and report a usage error before paying for it.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from endpointslice_operator.settings import SERVICEACCOUNT_NAMESPACE_FILE, Settings

if TYPE_CHECKING:
    from kubernetes_asyncio.client import Configuration

__all__ = ["NoClusterError", "context_namespace", "find_cluster", "load_client_configuration"]


class NoClusterError(RuntimeError):
    """No ``--kubeconfig``, not in a Pod, and no default kubeconfig file: one clear line."""


def _kubeconfig_paths(settings: Settings, env: Mapping[str, str]) -> list[str]:
    if settings.kubeconfig is not None:
        return [str(settings.kubeconfig)]
    paths = [p for p in env.get("KUBECONFIG", "").split(os.pathsep) if p]
    return paths or [os.path.expanduser("~/.kube/config")]


def find_cluster(settings: Settings, environ: Mapping[str, str] | None = None) -> str:
    """Where the credentials will come from (``--kubeconfig PATH``, ``in-cluster`` or the default
    kubeconfig's path), or :class:`NoClusterError` naming every place that was looked at."""
    env = os.environ if environ is None else environ
    if settings.kubeconfig is not None:
        return str(settings.kubeconfig)
    if env.get("KUBERNETES_SERVICE_HOST"):
        return "in-cluster"
    paths = _kubeconfig_paths(settings, env)
    existing = [p for p in paths if os.path.isfile(p)]
    if existing:
        return os.pathsep.join(existing)
    raise NoClusterError(
        "no cluster configured: no --kubeconfig, not running in a Pod "
        f"($KUBERNETES_SERVICE_HOST unset) and no kubeconfig at {os.pathsep.join(paths)}; "
        "try 'endpointslice-operator demo' to see it work without a cluster"
    )


async def load_client_configuration(settings: Settings) -> Configuration:
    """``--kubeconfig`` if given, else the in-cluster service account, else the default
    kubeconfig (``$KUBECONFIG`` or ``~/.kube/config``)."""
    from kubernetes_asyncio import config as k8s_config
    from kubernetes_asyncio.client import Configuration

    configuration = Configuration()
    if settings.kubeconfig is not None:
        await k8s_config.load_kube_config(
            config_file=str(settings.kubeconfig), client_configuration=configuration
        )
    elif os.environ.get("KUBERNETES_SERVICE_HOST"):
        k8s_config.load_incluster_config(client_configuration=configuration)  # type: ignore[no-untyped-call]
    else:
        await k8s_config.load_kube_config(client_configuration=configuration)
    return configuration


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def context_namespace(
    settings: Settings,
    environ: Mapping[str, str] | None = None,
    namespace_file: Path = SERVICEACCOUNT_NAMESPACE_FILE,
) -> str:
    """The namespace kubectl would use without ``-n``: the current context's in the kubeconfig
    the credentials come from (the first file of ``$KUBECONFIG`` that sets
    ``current-context``, as kubectl merges them), in a Pod without a kubeconfig the service
    account's, else ``default``."""
    import yaml

    env = os.environ if environ is None else environ
    if settings.kubeconfig is None and env.get("KUBERNETES_SERVICE_HOST"):
        try:
            return namespace_file.read_text(encoding="utf-8").strip() or "default"
        except OSError:
            return "default"
    documents: list[Mapping[str, Any]] = []
    for path in _kubeconfig_paths(settings, env):
        try:
            with open(path, encoding="utf-8") as stream:
                documents.append(_mapping(yaml.safe_load(stream)))
        except (OSError, yaml.YAMLError):
            continue
    current = next((str(d["current-context"]) for d in documents if d.get("current-context")), "")
    for document in documents:
        for entry in document.get("contexts") or ():
            if _mapping(entry).get("name") == current:
                namespace = _mapping(_mapping(entry).get("context")).get("namespace")
                return str(namespace) if namespace else "default"
    return "default"
