"""``python -m benchmarks --real --only dataplane`` in a tiny size, on the layer's cluster: the
figures mean what they say."""

from __future__ import annotations

import pytest

from benchmarks.figures import dataplane
from endpointslice_operator.testing.dataplane_cluster import DataplaneCluster

pytestmark = pytest.mark.dataplane


def test_flip_to_rules_figures_time_both_controllers_on_every_flip(dc: DataplaneCluster) -> None:
    samples = dataplane.measure(dc, 3, name="bench")
    for controller in (dataplane.OURS, dataplane.KCM):
        assert [len(samples[controller][d]) for d in ("unready", "ready")] == [3, 3]
        assert all(0 < ms < 60_000 for d in samples[controller].values() for ms in d)
    figures = {f.name: f for f in dataplane.figures(samples)}
    assert set(figures) == {
        "dataplane_flip_to_rules_ms_p50",
        "dataplane_flip_to_rules_ms_p99",
        "dataplane_flip_to_rules_ms_p50_to_unready",
        "dataplane_flip_to_rules_ms_p50_to_ready",
    }
    p50, p99 = figures["dataplane_flip_to_rules_ms_p50"], figures["dataplane_flip_to_rules_ms_p99"]
    assert p50.baseline is not None and p99.baseline is not None
    assert p50.value <= p99.value and p50.baseline <= p99.baseline
    assert p99.value == max(samples["ours"]["unready"] + samples["ours"]["ready"])
    # The measuring Services and pods are gone again: nothing left for kube-proxy to program.
    assert not [name for name in dc.pod_ips if name.startswith("bench-")]
    dc.wait_rules({"dataplane/bench-eso:http": "absent", "dataplane/bench-kcm:http": "absent"})
