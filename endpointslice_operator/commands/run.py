"""``endpointslice-operator run``: settings, logging, then the operator until SIGTERM/SIGINT."""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import sys
from collections.abc import Sequence

from kubernetes_asyncio.config import ConfigException

from endpointslice_operator import __version__
from endpointslice_operator.controller.operator import Operator
from endpointslice_operator.controller.runtime.health import ListenError
from endpointslice_operator.controller.watch.kopf_wiring import NoClusterError, find_cluster
from endpointslice_operator.logging_setup import configure_logging
from endpointslice_operator.settings import Settings, SettingsError, load_settings

__all__ = ["main"]

log = logging.getLogger(__name__)


async def _run(settings: Settings) -> None:
    operator = Operator(settings, settle_heap=True)
    loop = asyncio.get_running_loop()
    # Kopf installs its own SIGINT/SIGTERM handlers once its watches start (they end the watches,
    # which ends the operator the same way); these cover the start-up before that.
    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, operator.stop)
    await operator.run()


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
