"""``endpointslice-operator emulator``: serve the API emulator until SIGINT/SIGTERM."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import signal
import sys
from pathlib import Path

import yaml

from endpointslice_operator.testing.errors import ApiError
from endpointslice_operator.testing.faults import (
    DEFAULT_FAULT_RESOURCES,
    DEFAULT_FAULT_VERBS,
    FaultConfig,
)
from endpointslice_operator.testing.kubelet import DEFAULT_START_DELAY
from endpointslice_operator.testing.seed import load_manifests
from endpointslice_operator.testing.server import DEFAULT_BOOKMARK_INTERVAL, Emulator
from endpointslice_operator.testing.store import DEFAULT_HISTORY_SIZE


def _rate(text: str) -> float:
    value = float(text)
    if not 0.0 <= value <= 1.0:
        raise argparse.ArgumentTypeError(f"must be between 0 and 1, got {text}")
    return value


def _seconds(text: str) -> float:
    value = float(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must not be negative, got {text}")
    return value


def _count(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a whole number, got {text}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"must not be negative, got {text}")
    return value


def _csv(text: str) -> set[str]:
    return {part.strip() for part in text.split(",") if part.strip()}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="endpointslice-operator emulator",
        description="Serve a Kubernetes API emulator over plain HTTP on 127.0.0.1 and write a "
        "kubeconfig for it. Runs until interrupted (SIGINT/SIGTERM).",
    )
    parser.add_argument(
        "--port", metavar="PORT", type=int, default=0, help="TCP port (0: a free port)"
    )
    parser.add_argument(
        "--kubeconfig",
        metavar="FILE",
        type=Path,
        default=Path("emulator.kubeconfig"),
        help="where to write the kubeconfig (default: ./emulator.kubeconfig)",
    )
    parser.add_argument(
        "--seed", metavar="N", type=int, default=0, help="seed for names, uids and faults"
    )
    parser.add_argument(
        "--load",
        type=Path,
        action="append",
        default=[],
        metavar="FILE",
        help="create the objects of a YAML/JSON manifest first (repeatable; `kubectl get -o yaml` "
        "output works: server-set metadata is dropped, statuses are kept)",
    )
    cluster = parser.add_argument_group("simulated cluster")
    cluster.add_argument(
        "--nodes",
        metavar="N",
        type=_count,
        default=0,
        help="create N Ready Nodes in zones zone-a/b/c and act as their scheduler and kubelet: "
        "pods get a node, an IP and Running/Ready status (default: 0, pods keep the status "
        "they are given)",
    )
    cluster.add_argument(
        "--pod-start-delay",
        metavar="SECONDS",
        type=_seconds,
        default=DEFAULT_START_DELAY,
        help="with --nodes: seconds from a pod's scheduling to Running and Ready "
        "(default: %(default)s)",
    )
    faults = parser.add_argument_group("fault injection")
    faults.add_argument(
        "--fail-rate",
        metavar="RATE",
        type=_rate,
        default=0.0,
        help="share of targeted requests answered 500/503/429",
    )
    faults.add_argument(
        "--conflict-rate",
        metavar="RATE",
        type=_rate,
        default=0.0,
        help="share of targeted writes answered 409 Conflict",
    )
    faults.add_argument(
        "--latency",
        metavar="SECONDS",
        type=_seconds,
        default=0.0,
        help="seconds added to targeted requests",
    )
    faults.add_argument(
        "--fault-verbs",
        metavar="VERBS",
        type=_csv,
        default=",".join(sorted(DEFAULT_FAULT_VERBS)),
        help="comma-separated verbs targeted by faults ('*' for all; default: %(default)s)",
    )
    faults.add_argument(
        "--fault-resources",
        metavar="RESOURCES",
        type=_csv,
        default=",".join(sorted(DEFAULT_FAULT_RESOURCES)),
        help="comma-separated resources targeted by faults ('*' for all; default: %(default)s)",
    )
    faults.add_argument(
        "--watch-drop-seconds",
        metavar="SECONDS",
        type=_seconds,
        default=0.0,
        help="abort every watch stream after this many seconds (0: never)",
    )
    faults.add_argument(
        "--gone-rate",
        metavar="RATE",
        type=_rate,
        default=0.0,
        help="share of watch resumptions answered 410 Expired",
    )
    tuning = parser.add_argument_group("tuning")
    tuning.add_argument(
        "--history-size",
        metavar="EVENTS",
        type=int,
        default=DEFAULT_HISTORY_SIZE,
        help="watch events kept per resource for resumption",
    )
    tuning.add_argument(
        "--bookmark-interval",
        metavar="SECONDS",
        type=_seconds,
        default=DEFAULT_BOOKMARK_INTERVAL,
        help="seconds between watch bookmarks",
    )
    return parser


async def serve(args: argparse.Namespace, stop: asyncio.Event | None = None) -> int:
    faults = FaultConfig(
        fail_rate=args.fail_rate,
        conflict_rate=args.conflict_rate,
        latency=args.latency,
        fault_verbs=args.fault_verbs,
        fault_resources=args.fault_resources,
        watch_drop_seconds=args.watch_drop_seconds,
        gone_rate=args.gone_rate,
    )
    emulator = Emulator(
        faults=faults,
        seed=args.seed,
        port=args.port,
        kubeconfig_path=args.kubeconfig,
        history_size=args.history_size,
        bookmark_interval=args.bookmark_interval,
        nodes=args.nodes,
        pod_start_delay=args.pod_start_delay,
    )
    for manifest in args.load:
        try:
            created = load_manifests(emulator.store, manifest)
        except (OSError, yaml.YAMLError, ApiError) as error:
            sys.stderr.write(f"cannot load {manifest}: {error}\n")
            return 1
        sys.stdout.write(f"loaded {len(created)} objects from {manifest}\n")
    stop = stop or asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(sig, stop.set)
    try:
        await emulator.start()
    except OSError as error:
        reason = (os.strerror(error.errno) if error.errno else str(error)).lower()
        sys.stderr.write(
            f"endpointslice-operator emulator: cannot listen on 127.0.0.1:{args.port} "
            f"(--port): {reason}\n"
        )
        return 2
    sys.stdout.write(
        f"Kubernetes API emulator serving {emulator.url}; kubeconfig: {emulator.kubeconfig_path}\n"
    )
    sys.stdout.flush()
    try:
        await stop.wait()
    finally:
        await emulator.stop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            with contextlib.suppress(NotImplementedError, RuntimeError):
                loop.remove_signal_handler(sig)
    return 0


def main(argv: list[str]) -> int:
    args = build_parser().parse_args(argv)
    return asyncio.run(serve(args))
