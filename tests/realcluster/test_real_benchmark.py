"""``python -m benchmarks --real`` in a tiny size: the figures mean what they say."""

from __future__ import annotations

import pytest

from benchmarks.figures import real

pytestmark = pytest.mark.realcluster


def test_real_figures_count_both_controllers_on_the_same_changes(cluster: object) -> None:
    del cluster  # the area starts a control plane of its own; this only gates on the assets
    figures = {f.name: f for f in real.collect("tiny")}
    assert set(figures) >= {
        "real_writes_arrivals",
        "real_writes_flips",
        "real_writes_deletions",
        "real_writes_ratio_vs_kcm",
        "real_flip_p50_ms",
        "real_flip_p99_ms",
    }
    # Paced flips cost each controller exactly one write per flip.
    flips = figures["real_writes_flips"]
    assert (flips.value, flips.baseline) == (4, 4)
    total = figures["real_writes_ratio_vs_kcm"]
    assert total.value > 0 and total.baseline is not None and total.baseline > 0
    assert total.value == sum(
        figures[f"real_writes_{phase}"].value for phase in ("arrivals", "flips", "deletions")
    )
    assert 0 < figures["real_flip_p50_ms"].value <= figures["real_flip_p99_ms"].value
    # The bursts: both controllers wrote in every phase, and converged (the phase only ends
    # once both publish exactly the expected endpoints).
    for phase in ("arrivals", "flips", "deletions"):
        writes = figures[f"writes_burst_{phase}"]
        assert writes.value > 0 and writes.baseline is not None and writes.baseline > 0
        # Each phase's last change needs a write of each controller after it.
        converge = figures[f"converge_burst_{phase}_s"]
        assert converge.value > 0 and converge.baseline is not None and converge.baseline > 0
    # The overall figures beside the real kube-controller-manager: the worst phase's ratios.
    phases = ("arrivals", "flips", "deletions")
    worst_writes = max(
        figures[f"writes_burst_{p}"].value / figures[f"writes_burst_{p}"].baseline  # type: ignore[operator]
        for p in phases
    )
    assert figures["writes_burst_ratio_vs_kcm"].value == pytest.approx(worst_writes)
    worst_converge = max(
        figures[f"converge_burst_{p}_s"].value / figures[f"converge_burst_{p}_s"].baseline  # type: ignore[operator]
        for p in phases
    )
    assert figures["converge_burst_ratio_vs_kcm"].value == pytest.approx(worst_converge)
    assert not any(name.endswith("_vs_kcm_policy") for name in figures)
