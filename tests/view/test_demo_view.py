"""The demo shows the endpoint view beside the slices after a pod turns not ready."""

from __future__ import annotations

import pytest

from endpointslice_operator.commands import demo


def test_the_demo_shows_the_view_of_the_ready_endpoints(capsys: pytest.CaptureFixture[str]) -> None:
    assert demo.main([]) == 0
    step = capsys.readouterr().out.split("=== ")[2]
    assert "no longer ready" in step
    view = step[step.index("The endpoint view") :].splitlines()
    assert view[0] == (
        "The endpoint view, all slices merged (endpointslice-operator endpoints -n demo "
        "--service web):"
    )
    assert view[1].split() == [
        "NAMESPACE",
        "SERVICE",
        "PORT",
        "ADDRESS",
        "READY",
        "SERVING",
        "TERM",
        "NODE",
    ]
    rows = [line.split() for line in view[2:] if line.strip()]
    # Four of the five pods are ready: the view lists those four, on the Service's port 80.
    assert len(rows) == 4
    assert all(row[:3] == ["demo", "web", "http:80/TCP"] and row[4] == "true" for row in rows)
    slice_addresses = {
        line.split()[0]
        for line in step.splitlines()
        if line.startswith("  10.") and " yes " in line
    }
    assert {row[3].rsplit(":", 1)[0] for row in rows} == slice_addresses
