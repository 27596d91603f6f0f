"""Kopf and kubernetes-asyncio set-up: credentials, and Kopf as a pure watcher.

* :func:`load_client_configuration`: ``--kubeconfig``, else in-cluster, else the default
  kubeconfig; the same credentials go to Kopf through :func:`connection_info` (its ``on.login``).
* :func:`kopf_settings`: no Event posting, in-memory progress and diff-base storage (nothing is
  ever written onto watched objects), standalone (no peering), no CRD/namespace scanning, watch
  timeouts that recycle long-lived streams, and bounded per-object workers.
* :func:`run_kopf`: Kopf's root tasks for a registry, stopped through a flag.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import signal
import threading
from collections.abc import Callable, Collection, Iterator, Mapping
from typing import Any, cast

import kopf
from kubernetes_asyncio.client import Configuration

from endpointslice_operator.controller.api.client import DEFAULT_API_TIMEOUT

# Re-exported: the credentials live in cluster_config (no Kopf there, for the commands).
from endpointslice_operator.controller.api.cluster_config import (
    NoClusterError,
    find_cluster,
    load_client_configuration,
)

__all__ = [
    "NoClusterError",
    "connection_info",
    "find_cluster",
    "kopf_settings",
    "load_client_configuration",
    "run_kopf",
]

WATCH_SERVER_TIMEOUT = 300
"""Ask the API server to end each watch after this long (Kopf then re-lists/re-watches).

An ``int`` on purpose: Kopf sends ``str(server_timeout)`` as ``timeoutSeconds``, and
kube-apiserver parses it with ``strconv.ParseInt``: ``300.0`` is refused with 400 BadRequest,
which ended Kopf's watcher and the operator on the first real server it met."""
WATCH_CLIENT_TIMEOUT = WATCH_SERVER_TIMEOUT + 60.0
"""Give up on a watch stream the server has silently stopped serving."""
WATCH_CONNECT_TIMEOUT = 30.0
KOPF_WORKER_IDLE_TIMEOUT = 0.2
KOPF_WORKER_LIMIT = 5000


async def connection_info(configuration: Configuration) -> kopf.ConnectionInfo:
    """The kubernetes-asyncio configuration as Kopf credentials (refreshing the token)."""
    scheme: str | None = None
    token: str | None = None
    bearer = await cast(Any, configuration).get_api_key_with_prefix(
        "BearerToken", alias="authorization"
    )
    if bearer:
        scheme, _, token = str(bearer).partition(" ")
        if not token:
            scheme, token = "Bearer", scheme
    return kopf.ConnectionInfo(
        server=str(configuration.host),
        ca_path=configuration.ssl_ca_cert or None,
        insecure=not configuration.verify_ssl,
        username=configuration.username or None,
        password=configuration.password or None,
        scheme=scheme,
        token=token,
        certificate_path=configuration.cert_file or None,
        private_key_path=configuration.key_file or None,
        # The proxy resolved at start (api_client.resolve_env_proxy, or kubeconfig proxy-url).
        proxy_url=cast(Any, configuration).proxy or None,
    )


class _MemoryProgressStorage(kopf.ProgressStorage):
    """Handler progress kept in memory only: nothing is ever patched onto watched objects.

    (Only ``on.event`` handlers are registered, which Kopf never persists; this storage makes
    that guarantee independent of future handler changes.)
    """

    def __init__(self) -> None:
        super().__init__()
        self._records: dict[tuple[str, str], Any] = {}

    @staticmethod
    def _uid(body: Mapping[str, Any]) -> str:
        return str(body.get("metadata", {}).get("uid") or "")

    def fetch(self, *, key: Any, body: Any) -> Any:
        return self._records.get((self._uid(body), str(key)))

    def store(self, *, key: Any, record: Any, body: Any, patch: Any) -> None:
        self._records[(self._uid(body), str(key))] = copy.deepcopy(record)

    def purge(self, *, key: Any, body: Any, patch: Any) -> None:
        self._records.pop((self._uid(body), str(key)), None)

    def touch(self, *, body: Any, patch: Any, value: str | None) -> None:
        return None

    def clear(self, *, essence: Any) -> Any:
        return copy.deepcopy(essence)


class _MemoryDiffBaseStorage(kopf.DiffBaseStorage):
    """The last-handled essence kept in memory only (see :class:`_MemoryProgressStorage`).

    Kopf builds an object's essence (a deep copy of the body minus system fields) on every
    event, and diffs it with the stored one, whatever handlers are registered; only
    ``on.create/update/resume/delete/field`` handlers and daemons ever look at it. The operator
    registers only ``on.event`` handlers, so the essence is empty: that copy was a third of
    Kopf's cost per pod event. (Should a changing handler ever be registered, Kopf would see
    no changes: :func:`kopf_settings` is only for registries of ``on.event`` handlers.)
    """

    def __init__(self) -> None:
        super().__init__()
        self._essences: dict[str, Any] = {}

    def build(self, *, body: Any, extra_fields: Any = None) -> Any:
        return {}

    def fetch(self, *, body: Any) -> Any:
        return self._essences.get(str(body.get("metadata", {}).get("uid") or ""))

    def store(self, *, body: Any, patch: Any, essence: Any) -> None:
        self._essences[str(body.get("metadata", {}).get("uid") or "")] = essence


class _AllTasks(Collection["asyncio.Task[Any]"]):
    """Kopf's ``run_tasks(ignored=...)`` set: every task.

    On shutdown Kopf stops its root tasks (which stop their own sub-tasks), then treats every
    other task created since it started as its own "hung" task, waits 5 s for it and cancels
    it. In one process with other asyncio work (the demo, tests, two replicas side by side)
    those tasks belong to others: cancelling them would stop another replica's watches. So
    only the root-task shutdown is kept.
    """

    def __contains__(self, task: object) -> bool:
        return True

    def __iter__(self) -> Iterator[asyncio.Task[Any]]:
        return iter(())

    def __len__(self) -> int:
        return 0


def kopf_settings(api_timeout: float = DEFAULT_API_TIMEOUT) -> kopf.OperatorSettings:
    settings = kopf.OperatorSettings()
    # Kopf's own requests (not its watches, which have the watching timeouts): --api-timeout.
    settings.networking.request_timeout = api_timeout
    settings.networking.connect_timeout = api_timeout
    settings.posting.enabled = False
    settings.peering.standalone = True
    settings.peering.mandatory = False
    settings.scanning.disabled = True
    settings.persistence.progress_storage = _MemoryProgressStorage()
    settings.persistence.diffbase_storage = _MemoryDiffBaseStorage()
    settings.persistence.finalizer = "endpointslice-operator.io/unused"
    settings.watching.server_timeout = WATCH_SERVER_TIMEOUT
    settings.watching.client_timeout = WATCH_CLIENT_TIMEOUT
    settings.watching.connect_timeout = WATCH_CONNECT_TIMEOUT
    settings.watching.reconnect_backoff = 1.0
    # Kopf runs one worker task per object with events, kept for ``idle_timeout`` after its last
    # event. Our handlers only update in-memory indexes, so workers are cheap to restart: exit
    # soon and cap how many exist, so that listing 150k pods does not hold 150k tasks at once.
    settings.queueing.idle_timeout = KOPF_WORKER_IDLE_TIMEOUT
    settings.queueing.worker_limit = KOPF_WORKER_LIMIT
    # Kopf would SIGKILL the process if its tasks were cancelled without the stop flag; the
    # operator always stops Kopf through the flag, and must never kill an embedding process.
    settings.process.ultimate_exiting_timeout = None
    return settings


async def run_kopf(
    registry: kopf.OperatorRegistry,
    namespaces: list[str],
    stop: asyncio.Future[None],
    api_timeout: float = DEFAULT_API_TIMEOUT,
    on_signal: Callable[[], None] | None = None,
) -> None:
    """Run Kopf (cluster-wide, or in ``namespaces``) until ``stop`` is resolved.

    Kopf takes over SIGINT and SIGTERM for itself when it starts (each instance replaces the
    loop's handler of the one before). With ``on_signal``, the signals go back to it once Kopf
    has started: with a second Kopf instance (EndpointSelectors), SIGTERM would otherwise stop
    only that instance and leave the operator running until it is killed."""
    tasks = await kopf.spawn_tasks(
        registry=registry,
        settings=kopf_settings(api_timeout),
        standalone=True,
        clusterwide=not namespaces,
        namespaces=namespaces,
        stop_flag=stop,
    )
    if on_signal is not None and threading.current_thread() is threading.main_thread():
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGINT, signal.SIGTERM):
            with contextlib.suppress(NotImplementedError):
                loop.add_signal_handler(signum, on_signal)
    await kopf.run_tasks(tasks, ignored=_AllTasks())
