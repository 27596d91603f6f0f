"""Leftover slices of ours: labelled managed-by the operator, but their Service does not exist
(and nothing owns them), or they carry no ``kubernetes.io/service-name`` label. Once the caches
are in, the leader deletes them (uid preconditions), logs each and counts it in
``endpointslice_operator_leftover_slices_deleted_total``; never anyone else's, never one a
Service owns (the garbage collector's), never one of a Service that exists."""

from __future__ import annotations

import logging

import pytest

from endpointslice_operator.testing import Emulator, run_emulator
from tests.e2e.harness import (
    NS,
    addresses,
    cluster,
    eventually,
    foreign_slice,
    pod,
    running_operator,
    service,
    settle,
)

pytestmark = pytest.mark.looptime

OURS = "endpointslice-operator.io"
KCM = "endpointslice-controller.k8s.io"
METRIC = "endpointslice_operator_leftover_slices_deleted_total"


def unlabelled(emu: Emulator, name: str, managed_by: str = OURS) -> None:
    emu.store.create(
        {
            "apiVersion": "discovery.k8s.io/v1",
            "kind": "EndpointSlice",
            "metadata": {
                "name": name,
                "namespace": NS,
                "labels": {"endpointslice.kubernetes.io/managed-by": managed_by},
            },
            "addressType": "IPv4",
            "endpoints": [{"addresses": ["10.9.9.8"], "conditions": {"ready": True}}],
        }
    )


def names(emu: Emulator) -> set[str]:
    return {s["metadata"]["name"] for s in emu.store.list("endpointslices", NS)}


async def test_leftovers_of_ours_are_deleted_and_nothing_else(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="endpointslice_operator")
    async with run_emulator() as emu:
        cluster(emu)
        service(emu, "web", selector={"app": "web"})
        pod(emu, "web-0", "10.1.0.1")
        foreign_slice(emu, "gone-ours", "gone", OURS)
        foreign_slice(emu, "gone-kcm", "gone", KCM)
        foreign_slice(emu, "gone-other", "gone", "someone-else.example")
        unlabelled(emu, "nameless-ours")
        unlabelled(emu, "nameless-other", managed_by="someone-else.example")
        async with running_operator(emu) as op:
            await eventually(
                lambda: "gone-ours" not in names(emu) and "nameless-ours" not in names(emu)
            )
            await eventually(lambda: addresses(emu, "web") == {"10.1.0.1"})
            await settle(op)
            assert {"gone-kcm", "gone-other", "nameless-other"} <= names(emu)
            assert op.metrics.sample_value(METRIC, {"reason": "service_missing"}) == 1
            assert op.metrics.sample_value(METRIC, {"reason": "no_service_name"}) == 1
            # one that appears later, while leading
            unlabelled(emu, "nameless-later")
            await eventually(lambda: "nameless-later" not in names(emu))
            foreign_slice(emu, "gone-later", "gone", OURS)
            await eventually(lambda: "gone-later" not in names(emu))
            await settle(op)
            assert op.metrics.sample_value(METRIC, {"reason": "no_service_name"}) == 2
            assert op.metrics.sample_value(METRIC, {"reason": "service_missing"}) == 2
            # the slices of a Service that exists are its own, never leftovers
            assert addresses(emu, "web") == {"10.1.0.1"}
    logged = [r.getMessage() for r in caplog.records if "leftover" in r.getMessage()]
    assert any(f"{NS}/gone-ours" in m and "does not exist" in m for m in logged), logged
    assert any(f"{NS}/nameless-ours" in m and "service-name" in m for m in logged), logged


async def test_a_slice_a_service_owns_is_left_to_the_garbage_collector() -> None:
    async with run_emulator() as emu:
        cluster(emu)
        emu.store.create(
            {
                "apiVersion": "discovery.k8s.io/v1",
                "kind": "EndpointSlice",
                "metadata": {
                    "name": "owned-ours",
                    "namespace": NS,
                    "labels": {
                        "kubernetes.io/service-name": "gone",
                        "endpointslice.kubernetes.io/managed-by": OURS,
                    },
                    "ownerReferences": [
                        {"apiVersion": "v1", "kind": "Service", "name": "gone", "uid": "u-1"}
                    ],
                },
                "addressType": "IPv4",
                "endpoints": [{"addresses": ["10.9.9.7"], "conditions": {"ready": True}}],
            }
        )
        async with running_operator(emu) as op:
            await settle(op, 2.0)
            assert not op.metrics.sample_value(METRIC, {"reason": "service_missing"})
