"""What the operator logs at the default level: start-up, problems and a periodic summary,
nothing per event (issue: twenty label changes used to log 40 KB)."""

from __future__ import annotations

import asyncio
import io
import logging
from collections.abc import Iterator
from pathlib import Path

import pytest

from endpointslice_operator.controller.runtime.summary import SUMMARY_INTERVAL, Activity, describe
from endpointslice_operator.logging_setup import configure_logging
from endpointslice_operator.metrics import OperatorMetrics
from endpointslice_operator.testing import run_emulator
from tests.e2e.harness import (
    NS,
    addresses,
    cluster,
    eventually,
    pod,
    running_operator,
    service,
    settle,
)
from tests.e2e.proxy import CuttableProxy

pytestmark = pytest.mark.looptime


@pytest.fixture
def log_stream() -> Iterator[io.StringIO]:
    stream = io.StringIO()
    configure_logging("text", "info", stream=stream)
    try:
        yield stream
    finally:
        configure_logging("text", "warning", stream=io.StringIO())
        logging.getLogger().handlers.clear()


async def test_label_changes_log_nothing_and_activity_gets_one_summary_line(
    log_stream: io.StringIO,
) -> None:
    async with run_emulator() as emu:
        cluster(emu)
        service(emu, "web", selector={"app": "web"})
        pod(emu, "web-0", "10.1.0.1")
        async with running_operator(emu) as op:
            await eventually(lambda: addresses(emu, "web") == {"10.1.0.1"})
            await settle(op)
            start_up = log_stream.getvalue()
            for step in range(20):
                emu.store.patch(
                    "services", NS, "web", {"metadata": {"labels": {"step": str(step)}}}
                )
                emu.store.patch("pods", NS, "web-0", {"metadata": {"labels": {"step": str(step)}}})
                await asyncio.sleep(0.05)
            await settle(op)
            assert log_stream.getvalue() == start_up  # nothing per event
            await asyncio.sleep(SUMMARY_INTERVAL)
            summary = log_stream.getvalue()[len(start_up) :].splitlines()
            assert len(summary) == 1
            assert "endpointslice_operator.summary: in the last 5m" in summary[0]
            # the slice copies the Service's labels, as upstream's does: one update per change
            assert "EndpointSlices 1 created, 20 updated, 0 deleted" in summary[0]
            # an idle interval logs nothing
            await asyncio.sleep(SUMMARY_INTERVAL)
            assert len(log_stream.getvalue()[len(start_up) :].splitlines()) == 1
    assert len(start_up.encode()) < 2048, start_up
    assert "OperatorSettings" not in start_up


def test_describe_counts_what_changed_between_readings() -> None:
    metrics = OperatorMetrics()
    before = Activity.read(metrics)
    assert describe(before, Activity.read(metrics), 300, {}) is None
    metrics.record_sync("success")
    metrics.record_sync("error")
    metrics.record_change("update", 2)
    line = describe(before, Activity.read(metrics), 90, {"services": 3, "pods": 7})
    assert line == (
        "in the last 1m30s: 2 syncs (1 failed, 0 stale), EndpointSlices 0 created, 2 updated, "
        "0 deleted; cached 3 Services, 7 pods, 0 nodes, 0 EndpointSlices"
    )


OUTAGE = 120.0


async def test_an_api_outage_logs_one_line_per_cause_not_per_retry(
    log_stream: io.StringIO, tmp_path: Path
) -> None:
    """Issue 28, item 7: the API server unreachable for two minutes (the connections cut and
    refused, as a killed kube-apiserver): each retrying thing (three watches, Kopf's Node
    watch, the leader election) logs one WARNING line per cause, then one with a count a
    minute; no Kopf ERROR line; and the operator carries on when the server is back."""
    async with run_emulator() as emu:
        cluster(emu)
        emu.store.create_namespace("operators")
        service(emu, "web", selector={"app": "web"})
        pod(emu, "web-0", "10.1.0.1")
        proxy = CuttableProxy("127.0.0.1", emu.port)
        await proxy.start()
        try:
            kubeconfig = proxy.kubeconfig(Path(emu.kubeconfig_path), tmp_path / "kc.yaml")
            async with running_operator(
                emu, kubeconfig=kubeconfig, leader_election=True, lease_namespace="operators"
            ) as op:
                await eventually(lambda: addresses(emu, "web") == {"10.1.0.1"})
                await settle(op)
                before = len(log_stream.getvalue())
                await proxy.kill()
                await asyncio.sleep(OUTAGE)
                lines = log_stream.getvalue()[before:].splitlines()
                proxy.cut = False  # the server is back
                pod(emu, "web-1", "10.1.0.2")
                await eventually(
                    lambda: addresses(emu, "web") == {"10.1.0.1", "10.1.0.2"}, timeout=120
                )
        finally:
            await proxy.stop()
    print(f"\noutage: {len(lines)} log lines in {OUTAGE:.0f} s ({len(lines) / OUTAGE:.2f}/s)")
    print("\n".join(lines))
    assert not [line for line in lines if " ERROR " in line and "kopf" in line], lines
    # one line per cause for each retrying thing, then one a minute with a count
    assert len(lines) / OUTAGE < 0.3, lines
    for kind in ("pods", "services", "endpointslices"):
        about = [line for line in lines if f"{kind} watch in all namespaces" in line]
        assert 1 <= len(about) <= 2 + OUTAGE / 60, about
