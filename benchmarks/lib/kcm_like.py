"""The emulator benchmarks' baseline writer: the operator with kube-controller-manager's write
policy (``Operator(write_policy="kcm")``: a Service's writes are planned first and then each
waits for the client-side limiter; pod changes wait a fixed batch period).

``python -m benchmarks.lib.kcm_like run <the operator's flags>`` runs it like
``endpointslice-operator run``; the same reconciler, so only the write policy differs.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys

from endpointslice_operator.controller.operator import Operator
from endpointslice_operator.logging_setup import configure_logging
from endpointslice_operator.settings import load_settings


async def _run(argv: list[str]) -> None:
    settings = load_settings(argv, os.environ)
    configure_logging(settings.log_format, settings.log_level)
    operator = Operator(settings, write_policy="kcm")
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, operator.stop)
    await operator.run()


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if args[:1] == ["run"]:
        args = args[1:]
    asyncio.run(_run(args))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
