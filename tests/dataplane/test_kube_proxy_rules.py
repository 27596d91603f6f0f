"""Reading kube-proxy's rules, on ``iptables-save`` output captured from kube-proxy v1.36 in the
data-plane topology (``iptables-save.txt``: ``dataplane/web`` with two endpoints,
``dataplane/empty`` without any, ``dataplane/other`` labelled for another proxy). No root needed."""

from __future__ import annotations

from pathlib import Path

from endpointslice_operator.testing.kube_proxy_rules import (
    ABSENT,
    REJECTED,
    programmed,
    service_key,
)

DUMP = (Path(__file__).parent / "iptables-save.txt").read_text()


def test_the_endpoints_a_cluster_ip_is_sent_to() -> None:
    key = service_key("dataplane", "web", "http")
    assert key == "dataplane/web:http"
    assert programmed(DUMP, key) == ("10.244.1.10", "10.244.1.11")


def test_a_service_without_endpoints_is_rejected() -> None:
    assert programmed(DUMP, "dataplane/empty:http") == REJECTED


def test_a_service_kube_proxy_ignores_has_no_rules() -> None:
    assert programmed(DUMP, "dataplane/other:http") == ABSENT
    assert programmed(DUMP, "dataplane/web:metrics") == ABSENT
    assert programmed(DUMP, "dataplane/we:http") == ABSENT  # no prefix match


def test_an_endpoint_removed_from_the_service_chain_is_not_programmed() -> None:
    lines = [ln for ln in DUMP.splitlines() if "-> 10.244.1.11:8080" not in ln]
    assert programmed("\n".join(lines) + "\n", "dataplane/web:http") == ("10.244.1.10",)


def test_the_api_servers_own_service() -> None:
    assert programmed(DUMP, "default/kubernetes:https") == ("192.0.2.1",)
