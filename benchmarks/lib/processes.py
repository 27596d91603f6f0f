"""Benchmark subprocesses: the emulator, the operator and the baseline controller.

Each runs as its own process so that its CPU and memory are its own (the operator's RSS is
read from ``/proc``, without the emulator's objects in it). Every context manager kills its
process in a ``finally`` block; every wait is bounded.

Set ``BENCH_PROFILE_DIR`` to run the operator and the emulator under pyinstrument; each writes
a text profile there when it exits.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import socket
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import aiohttp

from .cluster import Scenario

__all__ = [
    "UNLIMITED_WRITES",
    "EmulatorHandle",
    "OperatorHandle",
    "cpu_seconds",
    "emulator_process",
    "free_port",
    "get_json",
    "minimal_controller_process",
    "operator_process",
    "rss_bytes",
    "spawn",
]

START_TIMEOUT = 600.0
"""Longest wait for a process to come up (populating 100,000 pods takes a while)."""
STOP_TIMEOUT = 15.0
PROBE_INTERVAL = 0.02


def free_port() -> int:
    """A TCP port on 127.0.0.1 that was free a moment ago."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def rss_bytes(pid: int) -> int:
    """The resident set size of process ``pid`` (``VmRSS`` in ``/proc/<pid>/status``)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise RuntimeError(f"no VmRSS for process {pid}")


# The CPUCLOCK_SCHED clock type (include/linux/posix-timers.h): the whole process, every thread.
_CPUCLOCK_SCHED = 2


def cpu_seconds(pid: int) -> float:
    """User plus system CPU time process ``pid`` has used, to the nanosecond.

    Read from the process's CPU-time clock (Linux encodes another process's clock id as
    ``~pid << 3 | CPUCLOCK_SCHED``, what ``clock_getcpuclockid(3)`` returns): ``/proc/<pid>/stat``
    counts in scheduler ticks (10 ms), too coarse for the small runs, where a whole phase can
    take less than a tick. Falls back to ``/proc/<pid>/stat`` where the clock is not there.
    """
    try:
        return time.clock_gettime(((~pid) << 3) | _CPUCLOCK_SCHED)
    except OSError:
        stat = Path(f"/proc/{pid}/stat").read_text()
        # Fields after the parenthesised command name; utime and stime are the 14th and 15th.
        fields = stat[stat.rindex(")") + 2 :].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _python_command(module: str, args: Sequence[str], profile_name: str | None) -> list[str]:
    profile_dir = os.environ.get("BENCH_PROFILE_DIR")
    if profile_dir and profile_name:
        Path(profile_dir).mkdir(parents=True, exist_ok=True)
        output = Path(profile_dir) / f"{profile_name}-{os.getpid()}-{time.monotonic_ns()}.txt"
        return [
            sys.executable,
            "-m",
            "pyinstrument",
            "--renderer=text",
            "--show-all",
            f"--outfile={output}",
            "-m",
            module,
            *args,
        ]
    return [sys.executable, "-m", module, *args]


async def _stop(process: asyncio.subprocess.Process) -> None:
    if process.returncode is not None:
        return
    with contextlib.suppress(ProcessLookupError):
        process.terminate()
    try:
        await asyncio.wait_for(process.wait(), STOP_TIMEOUT)
    except TimeoutError:
        with contextlib.suppress(ProcessLookupError):
            process.kill()
        await process.wait()


def _tail(log: IO[bytes]) -> str:
    log.flush()
    log.seek(0)
    return log.read().decode(errors="replace")[-4000:]


@contextlib.asynccontextmanager
async def spawn(
    module: str, args: Sequence[str], *, profile_name: str | None = None
) -> AsyncIterator[tuple[asyncio.subprocess.Process, IO[bytes]]]:
    """Run ``python -m module args`` with stdin and stdout piped, stderr to a temporary file.

    The process is terminated (then killed) on exit, whatever happens.
    """
    with tempfile.TemporaryFile() as log:
        process = await asyncio.create_subprocess_exec(
            *_python_command(module, args, profile_name),
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=log,
        )
        try:
            yield process, log
        finally:
            await _stop(process)


async def _first_line(process: asyncio.subprocess.Process, log: IO[bytes], what: str) -> str:
    assert process.stdout is not None
    try:
        line = await asyncio.wait_for(process.stdout.readline(), START_TIMEOUT)
    except TimeoutError:
        raise RuntimeError(f"{what} did not start within {START_TIMEOUT} s") from None
    if not line:
        await process.wait()
        raise RuntimeError(f"{what} exited with {process.returncode}:\n{_tail(log)}")
    return line.decode()


@dataclass(frozen=True, slots=True)
class EmulatorHandle:
    pid: int
    url: str
    kubeconfig: Path
    control: str
    populate_s: float
    objects: int


@contextlib.asynccontextmanager
async def emulator_process(scenario: Scenario, workdir: Path) -> AsyncIterator[EmulatorHandle]:
    """The emulator populated with ``scenario``, in its own process."""
    kubeconfig = workdir / f"emulator-{time.monotonic_ns()}.kubeconfig"
    args = [*scenario.to_args(), f"--kubeconfig={kubeconfig}"]
    async with spawn("benchmarks.lib.emulator_process", args, profile_name="emulator") as (
        process,
        log,
    ):
        info = json.loads(await _first_line(process, log, "the emulator"))
        yield EmulatorHandle(
            pid=process.pid,
            url=info["url"],
            kubeconfig=Path(info["kubeconfig"]),
            control=info["control"],
            populate_s=info["populate_s"],
            objects=info["objects"],
        )


UNLIMITED_WRITES = ("--kube-api-qps=1000000", "--kube-api-burst=1000000")
"""Extra flags that lift the client-side write budget, for figures of the operator's own
processing cost (propagation, events per second); the budget itself is measured by the
``bursts`` area."""


@dataclass(frozen=True, slots=True)
class OperatorHandle:
    pid: int
    metrics_url: str
    startup_s: float
    """From spawning the process to the first ``200`` from ``/readyz``."""


async def _wait_ready(
    session: aiohttp.ClientSession, url: str, process: asyncio.subprocess.Process, log: IO[bytes]
) -> None:
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        if process.returncode is not None:
            raise RuntimeError(f"the operator exited with {process.returncode}:\n{_tail(log)}")
        with contextlib.suppress(aiohttp.ClientError):
            async with session.get(url) as response:
                if response.status == 200:
                    return
        await asyncio.sleep(PROBE_INTERVAL)
    raise RuntimeError(f"the operator was not ready within {START_TIMEOUT} s:\n{_tail(log)}")


@contextlib.asynccontextmanager
async def operator_process(
    kubeconfig: Path,
    *,
    batch_period: float = 0.0,
    extra: Sequence[str] = (),
    module: str = "endpointslice_operator",
) -> AsyncIterator[OperatorHandle]:
    """``endpointslice-operator run`` against ``kubeconfig``, without leader election, ready
    (``module``: another ``python -m`` entry point taking the same arguments, such as
    :mod:`benchmarks.lib.kcm_like`)."""
    port = free_port()
    args = [
        "run",
        f"--kubeconfig={kubeconfig}",
        "--no-leader-election",
        "--metrics-host=127.0.0.1",
        f"--metrics-port={port}",
        f"--batch-period={batch_period}s",
        "--log-level=warning",
        *extra,
    ]
    metrics_url = f"http://127.0.0.1:{port}"
    began = time.perf_counter()
    async with (
        spawn(module, args, profile_name="operator") as (process, log),
        aiohttp.ClientSession() as session,
    ):
        await _wait_ready(session, f"{metrics_url}/readyz", process, log)
        startup_s = time.perf_counter() - began
        yield OperatorHandle(pid=process.pid, metrics_url=metrics_url, startup_s=startup_s)


@contextlib.asynccontextmanager
async def minimal_controller_process(url: str, namespace: str) -> AsyncIterator[int]:
    """The baseline controller (:mod:`benchmarks.lib.minimal_controller`) with its slices
    created; yields its pid."""
    args = [f"--url={url}", f"--namespace={namespace}"]
    async with spawn("benchmarks.lib.minimal_controller", args) as (process, log):
        line = await _first_line(process, log, "the minimal controller")
        if line.strip() != "ready":
            raise RuntimeError(f"unexpected output from the minimal controller: {line!r}")
        yield process.pid


async def get_json(session: aiohttp.ClientSession, url: str) -> Any:
    async with session.get(url) as response:
        response.raise_for_status()
        return await response.json()
