"""Soak: the operator under continuous churn, its memory and its queue over time.

    python -m benchmarks.soak [--minutes 10] [--warmup-minutes 1] [--seed 1] [--fail-rate 0]

The API emulator and the churn (the chaos test's workload, :mod:`tests.reliability.churn`:
Services created, deleted, re-selected, re-ported and opted in and out, pods scaled and flipped,
node zones changed) run in this process; the operator runs as a real ``endpointslice-operator
run`` subprocess against it, so the resident set size measured (``/proc/<pid>/status``) is the
operator's alone, and the queue depth is read from its own ``/metrics``
(``workqueue_depth{name="endpoint_slice"}``). Prints RSS at start, after warm-up and at the end,
growth after warm-up (goal: under 5%), and the queue depth sampled over time. Not part of CI.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import signal
import socket
import statistics
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import aiohttp

from endpointslice_operator.testing import FaultConfig, run_emulator
from tests.reliability.churn import Churn

SAMPLE_SECONDS = 5.0
GROWTH_GOAL = 0.05


def rss_bytes(pid: int) -> int:
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise RuntimeError(f"no VmRSS for pid {pid}")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def queue_depth(session: aiohttp.ClientSession, url: str) -> float | None:
    try:
        async with session.get(url) as response:
            text = await response.text()
    except aiohttp.ClientError:
        return None
    for line in text.splitlines():
        if line.startswith('workqueue_depth{name="endpoint_slice"}'):
            return float(line.rsplit(" ", 1)[1])
    return None


@dataclass
class Samples:
    times: list[float] = field(default_factory=list)
    rss: list[int] = field(default_factory=list)
    depth: list[float] = field(default_factory=list)


def operator_command(memory_profile: Path | None) -> list[str]:
    """The operator's command line; under the memory probe when profiling."""
    if memory_profile is None:
        return [sys.executable, "-m", "endpointslice_operator"]
    return [sys.executable, "-m", "benchmarks.memprobe", str(memory_profile)]


async def soak(
    minutes: float,
    warmup: float,
    seed: int,
    fail_rate: float,
    log: Path,
    memory_profile: Path | None = None,
) -> int:
    faults = FaultConfig(fail_rate=fail_rate) if fail_rate else None
    async with run_emulator(seed=seed, faults=faults) as emu:
        churn = Churn(emu, seed)
        churn.populate(services=10, pods=120)
        port = free_port()
        process = await asyncio.create_subprocess_exec(
            *operator_command(memory_profile),
            "run",
            "--kubeconfig",
            str(emu.kubeconfig_path),
            "--no-leader-election",
            "--metrics-host",
            "127.0.0.1",
            "--metrics-port",
            str(port),
            "--log-level",
            "warning",
            stdout=asyncio.subprocess.DEVNULL,
            stderr=log.open("wb"),
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )
        samples = Samples()
        started = time.monotonic()
        metrics_url = f"http://127.0.0.1:{port}/metrics"
        mutations = asyncio.create_task(churn.run(minutes * 60, pause=(0.05, 0.4)))
        snapshots = 0
        try:
            async with aiohttp.ClientSession() as session:
                while not mutations.done():
                    await asyncio.sleep(SAMPLE_SECONDS)
                    if process.returncode is not None:
                        print(f"the operator exited with {process.returncode}", file=sys.stderr)
                        return 1
                    warm = time.monotonic() - started >= warmup * 60
                    if memory_profile is not None and snapshots == 0 and warm:
                        process.send_signal(signal.SIGUSR1)
                        snapshots = 1
                    depth = await queue_depth(session, metrics_url)
                    samples.times.append(time.monotonic() - started)
                    samples.rss.append(rss_bytes(process.pid))
                    samples.depth.append(depth if depth is not None else float("nan"))
            await mutations
            if memory_profile is not None and process.returncode is None:
                process.send_signal(signal.SIGUSR1)
                await asyncio.sleep(SAMPLE_SECONDS * 4)
                snapshots += 1
        finally:
            if process.returncode is None:
                process.send_signal(signal.SIGTERM)
                with contextlib.suppress(asyncio.TimeoutError):
                    await asyncio.wait_for(process.wait(), 30)
                if process.returncode is None:
                    process.kill()
                    await process.wait()
    report(samples, warmup * 60, sum(churn.counts.values()))
    if memory_profile is not None and snapshots == 2:
        report_memory(memory_profile)
    return 0


def report_memory(out_dir: Path, top: int = 25) -> None:
    """What grew between the warm-up snapshot and the last one, by allocation site."""
    import tracemalloc

    first = tracemalloc.Snapshot.load(str(out_dir / "snapshot-1.pickle"))
    last = tracemalloc.Snapshot.load(str(out_dir / "snapshot-2.pickle"))
    first_total = sum(stat.size for stat in first.statistics("filename"))
    last_total = sum(stat.size for stat in last.statistics("filename"))
    mib = 1024 * 1024
    print(f"traced after warm-up {first_total / mib:.1f} MiB, at end {last_total / mib:.1f} MiB")
    print(f"growth by allocation site (top {top}):")
    for stat in last.compare_to(first, "traceback")[:top]:
        # Tracebacks run oldest frame first: show the allocation site and its callers.
        innermost = reversed(stat.traceback[-5:])
        frames = " <- ".join(f"{Path(f.filename).name}:{f.lineno}" for f in innermost)
        print(f"  {stat.size_diff / 1024:+9.1f} KiB {stat.count_diff:+7d} objs  {frames}")
    print(f"object counts by type: {out_dir}/types-1.txt and types-2.txt")


def report(samples: Samples, warmup_seconds: float, mutations: int) -> None:
    mib = 1024 * 1024
    after_warmup = next(
        (i for i, t in enumerate(samples.times) if t >= warmup_seconds), len(samples.times) - 1
    )
    start, warm, end = samples.rss[0], samples.rss[after_warmup], samples.rss[-1]
    growth = (end - warm) / warm
    print(f"duration            {samples.times[-1] / 60:.1f} min, {mutations} mutations")
    print(f"RSS at start        {start / mib:.1f} MiB")
    print(f"RSS after warm-up   {warm / mib:.1f} MiB (t={samples.times[after_warmup]:.0f} s)")
    print(f"RSS at end          {end / mib:.1f} MiB")
    verdict = "within" if growth < GROWTH_GOAL else "ABOVE"
    print(f"growth after warm-up {growth:+.1%} ({verdict} the {GROWTH_GOAL:.0%} goal)")
    depths = [d for d in samples.depth if d == d]
    if depths:
        print(
            f"queue depth         mean {statistics.fmean(depths):.2f}, max {max(depths):.0f}, "
            f"p95 {sorted(depths)[int(0.95 * (len(depths) - 1))]:.0f}"
        )
    print("time_s  rss_mib  queue_depth")
    step = max(1, len(samples.times) // 20)
    for i in range(0, len(samples.times), step):
        print(f"{samples.times[i]:6.0f}  {samples.rss[i] / mib:7.1f}  {samples.depth[i]:11.0f}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.soak", description=__doc__)
    parser.add_argument("--minutes", type=float, default=10.0, help="churn duration")
    parser.add_argument(
        "--warmup-minutes", type=float, default=1.0, help="growth is measured after this"
    )
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--fail-rate", type=float, default=0.0, help="injected write failures")
    parser.add_argument(
        "--log", type=Path, default=Path("soak-operator.log"), help="the operator's stderr"
    )
    parser.add_argument(
        "--memory-profile",
        type=Path,
        default=None,
        metavar="DIR",
        help="run the operator under tracemalloc; snapshot after warm-up and at the end into DIR"
        " and print what grew (slows the operator down)",
    )
    args = parser.parse_args(argv)
    if Path("/proc/self/status").exists() is False:
        parser.error("needs /proc (Linux)")
    print(f"operator log: {args.log}")
    return asyncio.run(
        soak(
            args.minutes,
            args.warmup_minutes,
            args.seed,
            args.fail_rate,
            args.log,
            args.memory_profile,
        )
    )


if __name__ == "__main__":
    sys.exit(main())
