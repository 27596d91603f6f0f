"""``python -m benchmarks --real --only mcs`` in a tiny size: the figures mean what they say."""

from __future__ import annotations

import pytest

from benchmarks.figures import mcs

pytestmark = pytest.mark.realcluster


def test_mcs_figures(cluster: object) -> None:
    del cluster  # the area starts two control planes of its own; this only gates on the assets
    figures = {f.name: f for f in mcs.collect("tiny")}
    assert set(figures) == {
        "mcs_propagation_p50_ms",
        "mcs_propagation_p99_ms",
        "mcs_restart_resync_s",
        "mcs_restart_writes",
        "mcs_exported_services",
    }
    for name in ("mcs_propagation_p50_ms", "mcs_propagation_p99_ms"):
        figure = figures[name]
        assert figure.value > 0 and figure.baseline is not None and figure.baseline > 0
    p50, p99 = figures["mcs_propagation_p50_ms"], figures["mcs_propagation_p99_ms"]
    assert p50.value <= p99.value
    resync = figures["mcs_restart_resync_s"]
    assert resync.baseline is not None and 0 < resync.baseline <= resync.value
    writes = figures["mcs_restart_writes"]
    # The cold import wrote; the restart with nothing changed did not.
    assert writes.baseline is not None and writes.baseline > 0
    assert writes.value == 0
    assert figures["mcs_exported_services"].value == 5
