"""List-watches of one cluster into its cache; a peer's health and its Lease in this cluster.

Each peer gets a Lease in the operator's Lease namespace, named ``<lease name>-mcs-<cluster
id>``, renewed while the peer answers and its listings are in. The Lease, not the process's
memory, says how long a peer has been gone: an operator restarted while a peer is down still
keeps that peer's imported slices until its Lease expires (``--mcs-peer-timeout``), then lets
them go; a cluster id with imported slices and no Lease at all is gone.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path

from kubernetes_asyncio import config as k8s_config
from kubernetes_asyncio.client import ApiClient, Configuration

from endpointslice_operator.controller.api.client import OperatorApiClient, resolve_env_proxy
from endpointslice_operator.controller.api.direct_requests import DirectRequests, path_segment
from endpointslice_operator.controller.api.errors import ApiError, raise_for_status
from endpointslice_operator.controller.mcs.cache import ClusterCache
from endpointslice_operator.controller.watch.list_watch import ListWatcher
from endpointslice_operator.reconciler.mcs import ABOUT_API_VERSION, MCS_API_VERSION

__all__ = ["API_TIMEOUT", "LeaseBook", "Peer", "watch_cluster"]

log = logging.getLogger(__name__)

API_TIMEOUT = 30.0
"""Seconds any single request of the multi-cluster controller may take."""

GROUP_VERSIONS = {
    "serviceexports": MCS_API_VERSION,
    "serviceimports": MCS_API_VERSION,
    "clusterproperties": ABOUT_API_VERSION,
}
NAMESPACED = {"serviceexports", "serviceimports", "services", "endpointslices"}


async def watch_cluster(
    api_client: ApiClient,
    cache: ClusterCache,
    *,
    namespaces: Sequence[str] = (),
    server_timeout: float = 300.0,
    client_timeout: float = 360.0,
    skip: Sequence[str] = (),
) -> None:
    """List and watch every kind the cache holds but ``skip``, until cancelled."""
    watchers = [
        ListWatcher(
            api_client,
            kind,
            cache.handler(kind),
            namespaces=list(namespaces) if kind in NAMESPACED else [],
            server_timeout=server_timeout,
            client_timeout=client_timeout,
            group_version=GROUP_VERSIONS.get(kind, ""),
            on_listing=cache.listing(kind),
            on_listed=cache.listed_callback(kind),
        )
        for kind in cache.kinds
        if kind not in skip
    ]
    await asyncio.gather(*(w.run() for w in watchers))


def _parse_time(value: object) -> datetime | None:
    if not isinstance(value, str):
        return None
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None


class LeaseBook:
    """The per-peer Leases in this cluster: read, renewed, and how old each is."""

    def __init__(
        self,
        api_client: ApiClient,
        *,
        namespace: str,
        prefix: str,
        label: str,
        timeout: float,
    ) -> None:
        self._requests = DirectRequests(api_client)
        self.namespace = namespace
        self.prefix = prefix
        self.label = label
        self.timeout = timeout
        self.renewed: dict[str, datetime] = {}
        """Cluster id -> last renewal, as read from the Leases or written here."""

    def _collection(self) -> str:
        return f"/apis/coordination.k8s.io/v1/namespaces/{path_segment(self.namespace)}/leases"

    async def refresh(self) -> None:
        """Read every peer Lease (raises on failure: the caller keeps the last known)."""
        async with asyncio.timeout(API_TIMEOUT):
            response = await self._requests.request(
                "GET", f"{self._collection()}?labelSelector={self.label}%3Dtrue"
            )
            body = await raise_for_status(response)
        renewed: dict[str, datetime] = {}
        for lease in body.get("items") or ():
            spec = lease.get("spec") or {}
            cluster = spec.get("holderIdentity")
            moment = _parse_time(spec.get("renewTime"))
            if isinstance(cluster, str) and moment is not None:
                renewed[cluster] = moment
        self.renewed = renewed

    def expired(self, cluster: str, now: datetime | None = None) -> bool:
        """No Lease, or not renewed for ``timeout`` seconds."""
        moment = self.renewed.get(cluster)
        now = now or datetime.now(UTC)
        return moment is None or (now - moment).total_seconds() > self.timeout

    async def renew(self, cluster: str) -> None:
        now = datetime.now(UTC)
        name = f"{self.prefix}-mcs-{cluster}"
        path = f"{self._collection()}/{path_segment(name)}"
        spec = {
            "holderIdentity": cluster,
            "leaseDurationSeconds": max(1, int(self.timeout)),
            "renewTime": now.strftime("%Y-%m-%dT%H:%M:%S.%fZ"),
        }
        async with asyncio.timeout(API_TIMEOUT):
            response = await self._requests.request("GET", path)
            try:
                current = await raise_for_status(response)
            except ApiError as exc:
                if not exc.not_found:
                    raise
                body = {
                    "apiVersion": "coordination.k8s.io/v1",
                    "kind": "Lease",
                    "metadata": {
                        "name": name,
                        "namespace": self.namespace,
                        "labels": {self.label: "true"},
                    },
                    "spec": spec,
                }
                await raise_for_status(
                    await self._requests.request("POST", self._collection(), body)
                )
            else:
                current["spec"] = {**(current.get("spec") or {}), **spec}
                await raise_for_status(await self._requests.request("PUT", path, current))
        self.renewed[cluster] = now


async def load_peer_configuration(kubeconfig: Path) -> Configuration:
    if not await asyncio.to_thread(kubeconfig.is_file):
        # Said here, once per change by the caller; the library would also log a warning of
        # its own at every try.
        raise FileNotFoundError(f"no file {kubeconfig}")
    configuration = Configuration()
    await k8s_config.load_kube_config(
        config_file=str(kubeconfig), client_configuration=configuration
    )
    resolve_env_proxy(configuration)
    return configuration


class Peer:
    """One peer cluster: its read-only client, its cache, and whether it answers."""

    def __init__(self, kubeconfig: Path, cache: ClusterCache) -> None:
        self.kubeconfig = kubeconfig
        self.cache = cache
        self.reachable = False
        self.api_client: ApiClient | None = None
        self._unlisted_since: float | None = None

    @property
    def listed(self) -> bool:
        """Its cluster id is known and every listing is in."""
        return self.cache.complete and self.cache.cluster_id is not None

    def unlisted_too_long(self, now: float, timeout: float) -> bool:
        """Not :attr:`listed` for more than ``timeout`` seconds of this process (``now``: the
        loop's clock, first asked when the process starts to count). Such a peer has no Lease
        to tell how long it has been gone, so it counts as gone: it no longer holds back what
        the listed clusters stopped exporting."""
        if self.listed:
            self._unlisted_since = None
            return False
        if self._unlisted_since is None:
            self._unlisted_since = now
        return now - self._unlisted_since > timeout

    async def watch(self, *, retry_every: float = 10.0) -> None:
        """Watch the peer into its cache, until cancelled (every replica: warm caches). A
        kubeconfig that does not load, or whose client cannot be made (a CA file that holds
        no certificate), is told and tried again every ``retry_every`` seconds."""
        told = None
        while True:
            try:
                client = OperatorApiClient(await load_peer_configuration(self.kubeconfig))
                break
            except Exception as exc:
                if str(exc) != told:  # once per change, not at every retry
                    told = str(exc)
                    log.warning(
                        "peer %s: cannot load its kubeconfig (tried again every %g s): %s",
                        self.kubeconfig,
                        retry_every,
                        exc,
                    )
                await asyncio.sleep(retry_every)
        if told is not None:
            log.info("peer %s: its kubeconfig loads now", self.kubeconfig)
        async with client as api_client:
            self.api_client = api_client
            try:
                await watch_cluster(api_client, self.cache)
            finally:
                self.api_client = None

    async def probe(self, leases: LeaseBook, *, probe_every: float) -> None:
        """While leading: probe the peer and renew its Lease while it answers and its
        listings are in, until cancelled."""
        while self.api_client is None:  # its kubeconfig is not loaded yet
            self.reachable = False
            await asyncio.sleep(probe_every)
        await self._probe(self.api_client, leases, probe_every)

    async def run(self, leases: LeaseBook, *, probe_every: float) -> None:
        """:meth:`watch` and :meth:`probe` together, until cancelled."""
        watching = asyncio.create_task(self.watch(retry_every=probe_every))
        try:
            await self.probe(leases, probe_every=probe_every)
        finally:
            watching.cancel()
            await asyncio.gather(watching, return_exceptions=True)

    async def _probe(self, api_client: ApiClient, leases: LeaseBook, every: float) -> None:
        requests = DirectRequests(api_client)
        while True:
            try:
                async with asyncio.timeout(min(API_TIMEOUT, every * 2)):
                    await raise_for_status(
                        await requests.request(
                            "GET", f"/apis/{MCS_API_VERSION}/serviceexports?limit=1"
                        )
                    )
                if not self.reachable:
                    log.info("peer %s answers", self.kubeconfig)
                self.reachable = True
                cluster = self.cache.cluster_id
                if self.cache.complete and cluster is not None:
                    await leases.renew(cluster)
            except Exception as exc:
                if self.reachable:
                    log.warning("peer %s does not answer: %s", self.kubeconfig, exc)
                self.reachable = False
            await asyncio.sleep(every)
