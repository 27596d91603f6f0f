"""The ``--node`` area's pure parts: its percentiles, what it reads from a pod and a slice, its
goals (a ratio to kube-controller-manager and a ceiling, both), and that only ``--node`` runs
it (CI's ``--quick`` and ``--real`` never start the node)."""

from __future__ import annotations

from benchmarks.__main__ import AREAS, NODE_AREAS, REAL_AREAS
from benchmarks.figure import Figure
from benchmarks.figures.node import endpoint_addresses, percentile, ready_status
from benchmarks.goals import verdict


def test_percentiles_by_nearest_rank() -> None:
    values = [float(v) for v in range(1, 11)]
    assert percentile(values, 0.5) == 5.0  # rank round(4.5) = 4, as the other areas
    assert percentile(values, 0.99) == 10.0
    assert percentile(list(reversed(values)), 0.0) == 1.0
    assert percentile([3.0], 0.99) == 3.0


def test_the_ready_condition_as_the_kubelet_reports_it() -> None:
    pod = {"status": {"conditions": [{"type": "PodScheduled", "status": "True"},
                                     {"type": "Ready", "status": "False"}]}}  # fmt: skip
    assert ready_status(pod) == "False"
    assert ready_status({"status": {}}) is None
    assert ready_status({}) is None


def test_a_slice_lists_every_address_ready_or_not() -> None:
    endpoint_slice = {
        "endpoints": [
            {"addresses": ["10.0.0.1"], "conditions": {"ready": False}},
            {"addresses": ["10.0.0.2"]},
        ]
    }
    assert endpoint_addresses(endpoint_slice) == {"10.0.0.1", "10.0.0.2"}
    assert endpoint_addresses({"endpoints": None}) == set()


def _verdict(figure: Figure) -> str:
    return verdict(figure, {figure.name: figure}, "quick")


def test_node_goals_are_ratios_to_kube_controller_manager_and_ceilings() -> None:
    assert _verdict(Figure("probe_to_rules_ms_p50", 90, "ms", 100)).endswith(": met")
    assert _verdict(Figure("probe_to_rules_ms_p99", 110, "ms", 100)).endswith(": NOT met")
    assert _verdict(Figure("probe_to_rules_ms_p99", 110, "ms")).endswith(": not judged")
    p50 = "service_create_to_endpoint_s_p50"
    assert _verdict(Figure(p50, 0.5, "s", 0.6)).endswith(": met")
    # Faster than kube-controller-manager but over the second: not met.
    assert _verdict(Figure(p50, 1.5, "s", 3.0)).endswith(": NOT met")
    assert _verdict(Figure(p50, 0.7, "s", 0.6)).endswith(": NOT met")
    assert _verdict(Figure(p50, 0.7, "s")).endswith(": not judged")
    assert _verdict(Figure(p50, 1.7, "s")).endswith(": NOT met")
    p99 = "service_create_to_endpoint_s_p99"
    assert _verdict(Figure(p99, 1.9, "s", 2.0)).endswith(": met")
    assert _verdict(Figure(p99, 2.1, "s", 3.0)).endswith(": NOT met")


def test_only_node_runs_the_node_area() -> None:
    assert NODE_AREAS == ["node"]
    assert "node" not in AREAS and "node" not in REAL_AREAS
