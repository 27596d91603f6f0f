"""The operator as it runs in production: ``endpointslice-operator run`` in its own process,
stopped by its PID (SIGTERM, then SIGKILL), with its log kept for the assertion messages."""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import shutil
import signal
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import aiohttp

from endpointslice_operator.testing.controlplane import free_port
from tests.realcluster.deadline import Deadline

STOP_SECONDS = 20.0
LEAK = re.compile(
    r"Unclosed client session|Unclosed connector|Task was destroyed but it is pending"
)
"""What asyncio and aiohttp log about a session or task left open at a stop."""


def command() -> list[str]:
    """The installed console script next to this interpreter, as a user runs it."""
    script = Path(sys.executable).parent / "endpointslice-operator"
    if script.is_file():
        return [str(script)]
    found = shutil.which("endpointslice-operator")
    return [found] if found else [sys.executable, "-m", "endpointslice_operator"]


class OperatorProcess:
    def __init__(
        self, kubeconfig: Path, log_path: Path, *args: str, leader_election: bool = False
    ) -> None:
        self.kubeconfig = kubeconfig
        self.log_path = log_path
        self.port = free_port()
        self.args = list(args)
        self.leader_election = leader_election
        self.process: asyncio.subprocess.Process | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def pid(self) -> int:
        assert self.process is not None
        return self.process.pid

    def log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    async def start(self) -> OperatorProcess:
        argv = [
            *command(),
            "run",
            "--kubeconfig",
            str(self.kubeconfig),
            "--metrics-host",
            "127.0.0.1",
            "--metrics-port",
            str(self.port),
            "--leader-election" if self.leader_election else "--no-leader-election",
            *self.args,
        ]
        with self.log_path.open("ab") as log:
            self.process = await asyncio.create_subprocess_exec(
                *argv,
                stdin=asyncio.subprocess.DEVNULL,
                stdout=log,
                stderr=log,
                env={**os.environ, "PYTHONUNBUFFERED": "1"},
            )
        return self

    async def get(self, path: str) -> tuple[int, str]:
        try:
            async with aiohttp.ClientSession() as session:
                async with session.get(self.url + path, timeout=aiohttp.ClientTimeout(5)) as r:
                    return r.status, await r.text()
        except aiohttp.ClientError:
            return 0, ""

    async def wait_ready(self, timeout: float = 60.0) -> None:
        deadline = Deadline(timeout)
        while not deadline.expired():
            assert self.process is not None
            if self.process.returncode is not None:
                raise AssertionError(f"the operator exited early:\n{self.log()[-3000:]}")
            status, _ = await self.get("/readyz")
            if status == 200:
                return
            await asyncio.sleep(0.2)
        raise AssertionError(
            f"the operator was not ready in {deadline.describe()}:\n{self.log()[-3000:]}"
        )

    async def metrics(self) -> dict[str, float]:
        """Every sample of ``/metrics`` as ``name{labels}`` -> value."""
        status, text = await self.get("/metrics")
        assert status == 200, f"/metrics answered {status}"
        samples: dict[str, float] = {}
        for line in text.splitlines():
            if line and not line.startswith("#"):
                key, _, value = line.rpartition(" ")
                samples[key] = float(value)
        return samples

    async def metric(self, pattern: str) -> float:
        """The sum of the samples whose ``name{labels}`` matches ``pattern`` (a regex)."""
        regex = re.compile(pattern)
        return sum(v for k, v in (await self.metrics()).items() if regex.fullmatch(k))

    async def stop(self, sig: int = signal.SIGTERM) -> int:
        """Signal the process by its PID and wait; SIGKILL if it does not stop in time."""
        if self.process is None:
            return 0
        if self.process.returncode is not None:
            return self.process.returncode
        self.process.send_signal(sig)
        try:
            return await asyncio.wait_for(self.process.wait(), STOP_SECONDS)
        except TimeoutError:
            self.process.kill()
            return await self.process.wait()

    async def kill(self) -> int:
        """As ``kill -9``: no Lease release, no clean shutdown."""
        return await self.stop(signal.SIGKILL)


@contextlib.asynccontextmanager
async def running(
    kubeconfig: Path, log_path: Path, *args: str, leader_election: bool = False, ready: bool = True
) -> AsyncIterator[OperatorProcess]:
    operator = OperatorProcess(kubeconfig, log_path, *args, leader_election=leader_election)
    await operator.start()
    try:
        if ready:
            await operator.wait_ready()
        yield operator
    finally:
        code = await operator.stop()
        assert code in (0, -signal.SIGKILL), f"exit {code}:\n{operator.log()[-3000:]}"
        if code == 0:
            # A clean stop closes what it opened (a peer's session, a task).
            leaks = [line for line in operator.log().splitlines() if LEAK.search(line)]
            assert not leaks, "\n".join(leaks)
