"""Endpoint view figures: the cost of one slice change, and the memory of a large view.

* ``view_change_us``: one EndpointSlice change (one of its 100 endpoints flips readiness) applied
  to a view of one Service with 100,000 endpoints (1,000 slices), per change. Baseline: parsing
  that slice alone (``parse_slice``), the floor of any consumer that reads the slice, timed in
  the same run. ``view_change_us_small`` is the same change in a view of a 1,000-endpoint
  Service: equal within noise, since the work is proportional to the slice.
* ``view_gather_change_us``: the same change with ``gather=True`` (one record per service port,
  whose sorted address list is rebuilt: proportional to the service port, not the slice).
* ``view_memory_mb_100k``: what a view over 100,000 endpoints holds (tracemalloc, after the
  slices are applied), against the baseline of the same slices kept as decoded JSON.
"""

from __future__ import annotations

import gc
import json
import tracemalloc
from typing import Any

from endpointslice_operator.view import EndpointView, Gatherer
from endpointslice_operator.view.model import parse_slice

from ..figure import Figure, best_of_interleaved

NAMESPACE = "bench"
PER_SLICE = 100
CHANGES = 200


def _service(name: str) -> dict[str, Any]:
    return {
        "metadata": {
            "name": name,
            "namespace": NAMESPACE,
            "annotations": {"endpointslice-operator.io/view": "true"},
        },
        "spec": {"ports": [{"name": "http", "port": 80, "protocol": "TCP"}]},
    }


def _slice(service: str, index: int, version: str, not_ready: int = -1) -> dict[str, Any]:
    base = index * PER_SLICE
    return {
        "metadata": {
            "name": f"{service}-{index:05d}",
            "namespace": NAMESPACE,
            "resourceVersion": version,
            "labels": {
                "kubernetes.io/service-name": service,
                "endpointslice.kubernetes.io/managed-by": "endpointslice-controller.k8s.io",
            },
        },
        "addressType": "IPv4",
        "ports": [{"name": "http", "port": 8080, "protocol": "TCP"}],
        "endpoints": [
            {
                "addresses": [
                    f"10.{(base + i) >> 16 & 255}.{(base + i) >> 8 & 255}.{(base + i) & 255}"
                ],
                "conditions": {
                    "ready": i != not_ready,
                    "serving": True,
                    "terminating": False,
                },
                "nodeName": f"node-{(base + i) % 300}",
                "zone": f"zone-{(base + i) % 3}",
                "targetRef": {"kind": "Pod", "name": f"{service}-pod-{base + i}"},
            }
            for i in range(PER_SLICE)
        ],
    }


def _view(service: str, slices: int) -> EndpointView:
    view = EndpointView()
    view.apply_service(_service(service))
    for index in range(slices):
        view.apply_slice(_slice(service, index, "1"))
    assert len(view) == slices * PER_SLICE
    return view


def _changer(view: EndpointView, gatherer: Gatherer | None, service: str, index: int) -> Any:
    """``CHANGES`` real changes of one slice: endpoint 7 flips readiness each time."""
    flipped = _slice(service, index, "2", not_ready=7)
    restored = _slice(service, index, "3")

    def run() -> None:
        for _ in range(CHANGES // 2):
            for obj in (flipped, restored):
                changes = view.apply_slice(obj)
                assert len(changes) == 1
                if gatherer is not None:
                    gatherer.feed(changes)

    return run


def _memory(slices: int) -> tuple[float, float]:
    """MB held by a view of ``slices`` slices (each decoded from JSON, applied, dropped, as a
    consumer of a watch does), and by the same slices kept as decoded JSON (measured on a
    tenth of them, times ten: the slices are alike)."""
    texts = [json.dumps(_slice("mem", index, "1")) for index in range(slices)]
    sample = max(1, slices // 10)
    gc.collect()
    tracemalloc.start()
    try:
        start = tracemalloc.get_traced_memory()[0]
        decoded = [json.loads(text) for text in texts[:sample]]
        raw = (tracemalloc.get_traced_memory()[0] - start) * slices / sample
        del decoded
        gc.collect()
        start = tracemalloc.get_traced_memory()[0]
        view = EndpointView()
        view.apply_service(_service("mem"))
        for text in texts:
            view.apply_slice(json.loads(text))
        gc.collect()
        held = tracemalloc.get_traced_memory()[0] - start
        assert len(view) == slices * PER_SLICE
    finally:
        tracemalloc.stop()
    return held / 2**20, raw / 2**20


def collect(mode: str) -> list[Figure]:
    slices = 20 if mode == "tiny" else 1000  # 100,000 endpoints
    runs = {"tiny": 2, "quick": 3, "full": 15}.get(mode, 3)
    held, raw = _memory(slices)  # first, and with names of its own: nothing shared
    big = _view("web", slices)
    small = _view("small", 10)
    # The gather figure runs on the same view: each timed action ends with the slice as it
    # began, so the gatherer (fed by its own action only) stays in step with the view.
    gatherer = Gatherer()
    gatherer.feed(big.snapshot())
    one = _slice("web", slices // 2, "4", not_ready=7)

    def parse_only() -> None:
        for _ in range(CHANGES):
            parse_slice(one)

    best = best_of_interleaved(
        runs,
        {
            "parse": parse_only,
            "change": _changer(big, None, "web", slices // 2),
            "change_small": _changer(small, None, "small", 5),
            "gather": _changer(big, gatherer, "web", slices // 2),
        },
    )
    us = 1e6 / CHANGES
    parse = best["parse"] * us
    label = "100k" if mode != "tiny" else "2k"
    return [
        Figure("view_change_us", best["change"] * us, "us", parse),
        Figure("view_change_us_small", best["change_small"] * us, "us", parse),
        Figure("view_gather_change_us", best["gather"] * us, "us", parse),
        Figure(f"view_memory_mb_{label}", held, "MB", raw),
    ]
