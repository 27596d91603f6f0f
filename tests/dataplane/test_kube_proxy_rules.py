"""Reading kube-proxy's rules in both modes, on dumps captured from kube-proxy v1.36 in the
data-plane topology. No root needed.

``iptables-save.txt`` (iptables mode): ``dataplane/web`` with two endpoints, ``dataplane/empty``
without any, ``dataplane/other`` labelled for another proxy.

``nft-ruleset.json`` (``nft -j list ruleset``, nftables mode, after the same node ran iptables
mode: the iptables-nft base tables it left are in the dump too): ``dataplane/web`` with two
endpoints, ``dataplane/sticky`` the same two with ``sessionAffinity: ClientIP`` (one chain per
endpoint), ``dataplane/empty`` without any, ``dataplane/other`` labelled for another proxy,
``dataplane/gone`` deleted after it was programmed (its chain flushed, not yet deleted).
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

from endpointslice_operator.testing.kube_proxy_rules import (
    ABSENT,
    REJECTED,
    dump_command,
    programmed,
    service_key,
)

HERE = Path(__file__).parent
DUMP = (HERE / "iptables-save.txt").read_text()
NFT_DUMP = (HERE / "nft-ruleset.json").read_text()
WEB_IPS = ("10.244.1.10", "10.244.1.11")


def test_the_endpoints_a_cluster_ip_is_sent_to() -> None:
    key = service_key("dataplane", "web", "http")
    assert key == "dataplane/web:http"
    assert programmed(DUMP, key) == WEB_IPS


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


# -- nftables mode ---------------------------------------------------------------------------------


def test_each_mode_is_read_from_its_own_dump() -> None:
    assert dump_command("iptables") == ["iptables-save"]
    assert dump_command("nftables") == ["nft", "-j", "list", "ruleset"]


def test_nftables_the_endpoints_a_cluster_ip_is_sent_to() -> None:
    assert programmed(NFT_DUMP, "dataplane/web:http", "nftables") == WEB_IPS
    # With session affinity kube-proxy jumps to a chain per endpoint, each with its own dnat.
    assert programmed(NFT_DUMP, "dataplane/sticky:http", "nftables") == WEB_IPS
    assert programmed(NFT_DUMP, "default/kubernetes:https", "nftables") == ("192.0.2.1",)


def test_nftables_a_service_without_endpoints_is_rejected() -> None:
    assert programmed(NFT_DUMP, "dataplane/empty:http", "nftables") == REJECTED


def test_nftables_a_service_kube_proxy_ignores_or_forgot_has_no_rules() -> None:
    assert programmed(NFT_DUMP, "dataplane/other:http", "nftables") == ABSENT
    assert programmed(NFT_DUMP, "dataplane/web:metrics", "nftables") == ABSENT
    assert programmed(NFT_DUMP, "dataplane/we:http", "nftables") == ABSENT  # no prefix match
    # Deleted: kube-proxy flushed its chain and keeps it for a while, unreferenced.
    assert '"name": "service-C3FS7F7P-dataplane/gone/tcp/http"' in NFT_DUMP
    assert programmed(NFT_DUMP, "dataplane/gone:http", "nftables") == ABSENT


def _without_endpoint(dump: dict[str, Any], ip: str) -> dict[str, Any]:
    """``dump`` with ``ip`` dropped from every dnat map of the web Service's chain."""
    edited = copy.deepcopy(dump)
    for obj in edited["nftables"]:
        rule = obj.get("rule")
        if rule is None or not rule["chain"].endswith("-dataplane/web/tcp/http"):
            continue
        for expr in rule["expr"]:
            if "dnat" in expr:
                data = expr["dnat"]["addr"]["map"]["data"]["set"]
                data[:] = [entry for entry in data if entry[1]["concat"][0] != ip]
    return edited


def test_nftables_an_endpoint_removed_from_the_service_chain_is_not_programmed() -> None:
    edited = json.dumps(_without_endpoint(json.loads(NFT_DUMP), "10.244.1.11"))
    assert programmed(edited, "dataplane/web:http", "nftables") == ("10.244.1.10",)


def test_nftables_only_kube_proxys_tables_count() -> None:
    dump = json.loads(NFT_DUMP)
    for obj in dump["nftables"]:
        for body in obj.values():
            if isinstance(body, dict) and body.get("table") == "kube-proxy":
                body["table"] = "someone-else"
    assert programmed(json.dumps(dump), "dataplane/web:http", "nftables") == ABSENT


def test_both_modes_read_the_same_state_alike() -> None:
    for key in ("dataplane/web:http", "dataplane/empty:http", "dataplane/other:http"):
        assert programmed(DUMP, key, "iptables") == programmed(NFT_DUMP, key, "nftables"), key
