"""``endpointslice-operator run``: settings, logging, then the operator until SIGTERM/SIGINT."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import sys
from collections.abc import Sequence

from kubernetes_asyncio.config import ConfigException

from endpointslice_operator import __version__
from endpointslice_operator.controller.api.client import OperatorApiClient, resolve_env_proxy
from endpointslice_operator.controller.api.cluster_config import load_client_configuration
from endpointslice_operator.controller.api.errors import ApiError, get_unless_missing
from endpointslice_operator.controller.operator import Operator
from endpointslice_operator.controller.runtime.health import ListenError
from endpointslice_operator.controller.watch.kopf_wiring import NoClusterError, find_cluster
from endpointslice_operator.logging_setup import configure_logging
from endpointslice_operator.settings import Settings, SettingsError, load_settings

__all__ = ["main"]

log = logging.getLogger(__name__)


async def check_namespaces(settings: Settings) -> None:
    """Warn once per namespace given with ``--namespace`` that does not exist. The operator
    still starts and watches it (a namespace created later is served as soon as it exists;
    installs that create their namespaces after the operator keep working). Where reading
    namespaces is not allowed, say once that they could not be checked."""
    if not settings.namespaces:
        return
    configuration = await load_client_configuration(settings)
    resolve_env_proxy(configuration)
    async with OperatorApiClient(configuration, api_timeout=settings.api_timeout) as api_client:
        for namespace in settings.namespaces:
            try:
                found = await get_unless_missing(api_client, f"/api/v1/namespaces/{namespace}")
            except ApiError as exc:
                if exc.status == 403:
                    log.info(
                        "cannot check that the namespaces given with --namespace exist: "
                        "reading namespaces is not allowed (%s)",
                        exc,
                    )
                else:
                    log.debug("cannot check that namespace %s exists: %s", namespace, exc)
                return
            if found is None:
                log.warning(
                    "namespace %s (--namespace) does not exist: nothing is served there until "
                    "it is created (the operator watches it all the same)",
                    namespace,
                )


async def _check_namespaces_quietly(settings: Settings) -> None:
    try:
        await check_namespaces(settings)
    except Exception as exc:  # the operator reports a cluster it cannot reach itself
        log.debug("cannot check the namespaces given with --namespace: %s", exc)


async def _run(settings: Settings) -> None:
    operator = Operator(settings, settle_heap=True)
    loop = asyncio.get_running_loop()
    # Kopf installs its own SIGINT/SIGTERM handlers once its watches start (they end the watches,
    # which ends the operator the same way); these cover the start-up before that.
    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, operator.stop)
    checking = asyncio.create_task(_check_namespaces_quietly(settings))
    try:
        await operator.run()
    finally:
        checking.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await checking


def main(argv: Sequence[str]) -> int:
    try:
        settings = load_settings(list(argv), os.environ)
    except SettingsError as exc:
        for line in str(exc).splitlines():
            sys.stderr.write(f"endpointslice-operator run: {line}\n")
        return 2
    try:
        source = find_cluster(settings)
    except NoClusterError as exc:
        sys.stderr.write(f"endpointslice-operator run: {exc}\n")
        return 1
    configure_logging(settings.log_format, settings.log_level)
    log.info(
        "starting, managing Services for %s",
        settings.managed_by,
        extra={"credentials": source, "version": __version__},
    )
    try:
        asyncio.run(_run(settings))
    except KeyboardInterrupt:
        pass
    except ListenError as exc:
        log.error("%s", exc)
        return 2
    except ConfigException as exc:
        log.error(
            "cannot configure the Kubernetes client (--kubeconfig, in-cluster, ~/.kube): %s", exc
        )
        return 1
    except Exception:
        log.exception("the operator failed")
        return 1
    log.info("stopped")
    return 0
