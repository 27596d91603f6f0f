"""Every Pod the chart runs (the operator, and the optional cleanup hook Job) is locked down
whatever the values (Pod Security Standard "restricted")."""

from __future__ import annotations

from typing import Any

from tests.ship.values import container, of_kind


def pod_specs(objects: list[dict[str, Any]]) -> list[dict[str, Any]]:
    workloads = of_kind(objects, "Deployment") + of_kind(objects, "Job")
    return [w["spec"]["template"]["spec"] for w in workloads]


def test_pod_security_context(objects: list[dict[str, Any]]) -> None:
    for spec in pod_specs(objects):
        pod = spec["securityContext"]
        assert pod["runAsNonRoot"] is True
        assert pod["runAsUser"] == 65532
        assert pod["seccompProfile"] == {"type": "RuntimeDefault"}
        assert "hostNetwork" not in spec and "hostPID" not in spec and "hostIPC" not in spec


def test_container_security_context(objects: list[dict[str, Any]]) -> None:
    for spec in pod_specs(objects):
        (main,) = spec["containers"]
        context = main["securityContext"]
        assert context["runAsNonRoot"] is True
        assert context["runAsUser"] == 65532
        assert context["readOnlyRootFilesystem"] is True
        assert context["allowPrivilegeEscalation"] is False
        assert context["privileged"] is False
        assert context["capabilities"] == {"drop": ["ALL"]}
        assert context["seccompProfile"] == {"type": "RuntimeDefault"}


def test_only_tmp_is_writable(objects: list[dict[str, Any]]) -> None:
    for spec in pod_specs(objects):
        tmp = next(v for v in spec["volumes"] if v["name"] == "tmp")
        assert tmp == {"name": "tmp", "emptyDir": {"sizeLimit": "64Mi"}}
        assert {"name": "tmp", "mountPath": "/tmp"} in spec["containers"][0]["volumeMounts"]
        assert not any("hostPath" in volume for volume in spec["volumes"])


def test_service_account_token_is_mounted_only_into_the_operator_pod(
    objects: list[dict[str, Any]],
) -> None:
    for account in of_kind(objects, "ServiceAccount"):
        assert account["automountServiceAccountToken"] is False
    for spec in pod_specs(objects):
        assert spec["automountServiceAccountToken"] is True


def test_image_pull_policy_and_resources(objects: list[dict[str, Any]]) -> None:
    main = container(objects)
    assert main["imagePullPolicy"] == "IfNotPresent"
    assert main["resources"]["requests"]["cpu"]
    assert main["resources"]["limits"]["memory"]
