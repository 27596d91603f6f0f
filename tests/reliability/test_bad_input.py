"""The bad-input corpus (see :mod:`.corpus`): each case's documented behaviour, and for every
case: a control Service keeps syncing, the operator keeps running, no unhandled exception."""

from __future__ import annotations

import logging
import subprocess
import sys

import pytest

from endpointslice_operator.testing import run_emulator
from tests.e2e.harness import (
    NS,
    addresses,
    cluster,
    events,
    eventually,
    pod,
    running_operator,
    service,
    settle,
    slices,
)
from tests.reliability.corpus import BAD, CASES, NO_SLICES, SLICES, UNCHANGED, Case
from tests.reliability.test_chaos import unhandled

pytestmark = pytest.mark.looptime(resolution=1 / 1024)


def test_the_corpus_is_large_enough() -> None:
    assert len(CASES) >= 40
    assert len({c.id for c in CASES}) == len(CASES)


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
async def test_bad_input(case: Case, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO)
    async with run_emulator() as emu:
        cluster(emu)
        service(emu, "control", selector={"app": "control"})
        pod(emu, "control-0", "10.8.0.1", labels={"app": "control"})
        async with running_operator(emu) as op:
            await eventually(lambda: addresses(emu, "control") == {"10.8.0.1"})
            await case.inject(emu, op)
            if (reason := case.event) is not None:
                await eventually(lambda: events(emu, reason, namespace=case.namespace))
                assert all(
                    e["type"] == "Warning" and e["involvedObject"]["name"] == BAD
                    for e in events(emu, reason, namespace=case.namespace)
                )
            if case.outcome == SLICES:
                await eventually(
                    lambda: (
                        {
                            a
                            for s in slices(emu, BAD, namespace=case.namespace)
                            for ep in s.get("endpoints") or []
                            for a in ep["addresses"]
                        }
                        == case.addresses
                        and slices(emu, BAD, namespace=case.namespace)
                    )
                )
            # The control Service keeps syncing after the bad input.
            pod(emu, "control-1", "10.8.0.2", labels={"app": "control"})
            await eventually(lambda: addresses(emu, "control") == {"10.8.0.1", "10.8.0.2"})
            if case.event is None:
                await settle(op)
            if case.outcome in (NO_SLICES, UNCHANGED):
                assert slices(emu, BAD, namespace=case.namespace) == []
            if case.event is None:
                assert not [
                    e
                    for e in emu.store.list("events", case.namespace)
                    if e.get("type") == "Warning"
                    and e.get("reason") != "TopologyAwareHintsDisabled"
                ]
            assert op.ready and not op._stop.is_set()
        if case.log is not None:
            assert any(case.log in r.getMessage() for r in caplog.records), case.log
        assert unhandled(caplog.records) == []
        assert all(slices(emu, "control", namespace=NS))


@pytest.mark.parametrize(
    ("flag", "value", "setting"),
    [
        ("--max-endpoints-per-slice", "0", "max_endpoints_per_slice"),
        ("--max-endpoints-per-slice", "1001", "max_endpoints_per_slice"),
        ("--workers", "0", "workers"),
        ("--qps", "-1", "qps"),
        ("--batch-period", "soon", "batch_period"),
        ("--managed-by", "Not A Label!", "managed_by"),
    ],
)
def test_settings_out_of_range_exit_2_with_one_line(flag: str, value: str, setting: str) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "endpointslice_operator", "run", flag, value],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert setting in lines[0] and flag in lines[0]
    assert result.stdout == ""
