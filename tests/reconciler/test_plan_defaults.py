"""``reconciler/plan.py``: a plan that planned nothing (upstream's labels of its metrics)."""

from __future__ import annotations

from endpointslice_operator.reconciler.plan import Plan


def test_an_empty_plan_reports_hints_disabled_and_no_traffic_distribution() -> None:
    """The metrics labels of a plan nobody filled in: upstream's ``Disabled`` topology label
    and an empty traffic-distribution label."""
    plan = Plan(service_key="ns/web")
    assert plan.topology_label == "Disabled"
    assert plan.traffic_distribution_label == ""
    assert (plan.write_count, plan.changed_slices, plan.is_empty) == (0, 0, True)
