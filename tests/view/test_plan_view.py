"""``endpointslice-operator plan -o view``: the endpoint view once the planned writes are
applied, merged with the slices of other managers in the input."""

from __future__ import annotations

from pathlib import Path

import pytest

from endpointslice_operator.commands.plan import main
from tests.commands.test_plan import as_existing, node, pod, service, write, writes
from tests.view.objects import KCM, endpoint, endpoint_slice


def rows(out: str) -> list[list[str]]:
    return [line.split()[:5] for line in out.splitlines()[1:]]


def test_plan_view_merges_the_planned_slices_with_everyone_elses(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    kcm = endpoint_slice(
        "web-kcm",
        "web",
        [endpoint("10.0.0.2", ready=False), endpoint("10.0.0.9")],
        namespace="shop",
        managed_by=KCM,
    )
    manifests = write(
        tmp_path / "app.yaml",
        service(),
        node(),
        pod("web-1", "10.0.0.1"),
        pod("web-2", "10.0.0.2"),
        pod("web-3", "10.0.0.3", ready=False),
        kcm,
    )
    assert main(["-f", str(manifests), "-o", "view"]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[0].split() == [
        "NAMESPACE", "SERVICE", "PORT", "ADDRESS", "READY", "SERVING", "TERM", "NODE",
    ]  # fmt: skip
    # The slice the plan creates (10.0.0.1, 10.0.0.2 ready) merged with KCM's (10.0.0.2 not
    # ready: the ready copy wins; 10.0.0.9 only there); web-3 is not ready.
    assert rows(out) == [
        ["shop", "web", "http:80/TCP", "10.0.0.1:8080", "true"],
        ["shop", "web", "http:80/TCP", "10.0.0.2:8080", "true"],
        ["shop", "web", "http:80/TCP", "10.0.0.9:8080", "true"],
    ]

    # Once our slice exists and web-1 goes, the plan updates it: the view follows the update.
    assert main(["-f", str(manifests)]) == 0
    ((_, created),) = writes(capsys.readouterr().out)
    write(
        tmp_path / "app.yaml",
        service(),
        node(),
        pod("web-2", "10.0.0.2"),
        kcm,
        as_existing(created),
    )
    assert main(["-f", str(manifests), "-o", "view"]) == 0
    assert rows(capsys.readouterr().out) == [
        ["shop", "web", "http:80/TCP", "10.0.0.2:8080", "true"],
        ["shop", "web", "http:80/TCP", "10.0.0.9:8080", "true"],
    ]


def test_plan_view_of_a_service_without_endpoints(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    manifests = write(
        tmp_path / "app.yaml", service(), node(), pod("web-1", "10.0.0.1", ready=False)
    )
    assert main(["-f", str(manifests), "-o", "view"]) == 0
    assert capsys.readouterr().out == "No endpoints.\n"
