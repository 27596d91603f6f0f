"""An in-process operator replica that can be killed abruptly, as ``kill -9`` would.

The replica talks to the emulator through a TCP proxy. :meth:`Replica.kill` first cuts the
proxy (every connection drops at once and new ones are refused), then cancels the operator's
task without asking it to stop. From the API server's point of view that is a dead process:
requests in flight may or may not have been applied, nothing is released (the Lease stays
held until it expires), and whatever clean-up code the cancellation still runs inside the
process can no longer reach the server.
"""

from __future__ import annotations

import asyncio
import contextlib
from pathlib import Path
from typing import Any

from endpointslice_operator.controller.operator import Operator
from endpointslice_operator.testing import Emulator
from tests.e2e.harness import settings
from tests.e2e.proxy import CuttableProxy


class Replica:
    def __init__(self, emu: Emulator, workdir: Path, name: str, **overrides: Any) -> None:
        self.emu = emu
        self.workdir = workdir
        self.name = name
        self.overrides = overrides
        self.proxy: CuttableProxy | None = None
        self.operator: Operator | None = None
        self.task: asyncio.Task[None] | None = None
        self.killed = False

    async def start(self) -> Operator:
        self.proxy = CuttableProxy("127.0.0.1", self.emu.port)
        await self.proxy.start()
        kubeconfig = self.proxy.kubeconfig(
            Path(self.emu.kubeconfig_path), self.workdir / f"{self.name}.kubeconfig"
        )
        self.operator = Operator(
            settings(self.emu, kubeconfig=kubeconfig, **self.overrides),
            identity=self.name,
            serve_health=False,
        )
        self.task = asyncio.create_task(self.operator.run(), name=f"replica-{self.name}")
        return self.operator

    async def wait_leading(self, timeout: float = 120.0) -> None:
        assert self.operator is not None and self.task is not None
        waiter = asyncio.ensure_future(self.operator.wait_leading())
        done, _ = await asyncio.wait(
            {waiter, self.task}, timeout=timeout, return_when=asyncio.FIRST_COMPLETED
        )
        if waiter not in done:
            waiter.cancel()
            if self.task in done:
                self.task.result()
            raise AssertionError(f"replica {self.name} did not start leading")

    async def kill(self) -> None:
        """Cut every connection, then cancel the task; does not wait for it to unwind."""
        assert self.proxy is not None and self.task is not None
        self.killed = True
        await self.proxy.kill()
        self.task.cancel()

    async def stop(self) -> None:
        """Graceful stop; for a killed replica, wait for its task to finish unwinding."""
        try:
            if self.task is not None:
                if self.killed:
                    with contextlib.suppress(asyncio.CancelledError, Exception):
                        await asyncio.wait_for(self.task, 60)
                else:
                    assert self.operator is not None
                    self.operator.stop()
                    await asyncio.wait_for(self.task, 60)
        finally:
            if self.proxy is not None:
                await self.proxy.stop()
