"""Settings: flags over environment over defaults, validation messages, the documented table."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from endpointslice_operator.settings import (
    ENV_PREFIX,
    SETTINGS_TABLE,
    Settings,
    SettingsError,
    build_parser,
    load_settings,
    parse_duration,
    settings_table_markdown,
)

DOCS = Path(__file__).resolve().parents[1] / "docs" / "configuration.md"


def test_defaults() -> None:
    settings = load_settings([], {})
    assert settings.kubeconfig is None
    assert settings.managed_by == "endpointslice-operator.io"
    assert settings.annotation_prefix == "endpointslice-operator.io"
    assert settings.max_endpoints_per_slice == 100
    assert settings.batch_period == 10.0  # an upper bound, used only in bursts
    assert settings.workers == 5
    assert settings.qps == 10.0
    assert settings.burst == 100
    assert (settings.kube_api_qps, settings.kube_api_burst) == (20.0, 30)  # as KCM's
    assert settings.namespaces == ()
    assert settings.metrics_port == 8080
    assert settings.metrics_host == "0.0.0.0"
    assert settings.leader_election is True
    assert settings.lease_name == "endpointslice-operator"
    assert settings.lease_namespace is None
    assert settings.log_format == "text"
    assert settings.log_level == "info"
    assert settings.topology_hints is True
    assert settings.prefer_same_traffic_distribution is True
    assert settings.enabled_annotation == "endpointslice-operator.io/enabled"
    assert settings.selector_annotation == "endpointslice-operator.io/selector"


def test_environment_overrides_defaults_and_flags_override_environment(tmp_path: Path) -> None:
    kubeconfig = tmp_path / "config"
    kubeconfig.write_text("apiVersion: v1\n")
    env = {
        f"{ENV_PREFIX}WORKERS": "7",
        f"{ENV_PREFIX}QPS": "2.5",
        f"{ENV_PREFIX}NAMESPACES": "team-a, team-b",
        f"{ENV_PREFIX}LEADER_ELECTION": "false",
        f"{ENV_PREFIX}KUBECONFIG": str(kubeconfig),
        f"{ENV_PREFIX}ANNOTATION_PREFIX": "example.com",
        f"{ENV_PREFIX}LOG_LEVEL": "DEBUG",
        "UNRELATED": "x",
    }
    from_env = load_settings([], env)
    assert from_env.workers == 7
    assert from_env.qps == 2.5
    assert from_env.namespaces == ("team-a", "team-b")
    assert from_env.leader_election is False
    assert from_env.kubeconfig == kubeconfig
    assert from_env.enabled_annotation == "example.com/enabled"
    assert from_env.log_level == "debug"

    flags = ["--workers", "9", "--namespace", "ns1", "--namespace", "ns2,ns1", "--leader-election"]
    both = load_settings(flags, env)
    assert both.workers == 9
    assert both.qps == 2.5  # not given as a flag: from the environment
    assert both.namespaces == ("ns1", "ns2")  # flags replace the variable; duplicates dropped
    assert both.leader_election is True


def test_settings_reads_the_process_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(f"{ENV_PREFIX}NAMESPACES", "a,b")
    monkeypatch.setenv(f"{ENV_PREFIX}BATCH_PERIOD", "250ms")
    monkeypatch.setenv(f"{ENV_PREFIX}TOPOLOGY_HINTS", "off")
    settings = Settings()
    assert settings.namespaces == ("a", "b")
    assert settings.batch_period == 0.25
    assert settings.topology_hints is False
    # load_settings with an explicit mapping ignores the process environment entirely.
    assert load_settings([], {}).namespaces == ()
    # and defaults to it otherwise.
    assert load_settings([]).batch_period == 0.25


def test_settings_are_frozen() -> None:
    settings = Settings(workers=3)
    with pytest.raises(ValueError):
        settings.workers = 4  # type: ignore[misc]


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("0", 0.0),
        ("1.5", 1.5),
        ("1s", 1.0),
        ("500ms", 0.5),
        ("1m30s", 90.0),
        ("2h", 7200.0),
        ("250us", 0.00025),
        ("10ns", 1e-8),
        (".5s", 0.5),
        (3, 3.0),
    ],
)
def test_parse_duration(text: str | int, seconds: float) -> None:
    assert parse_duration(text) == pytest.approx(seconds)


@pytest.mark.parametrize("text", ["", "s", "1x", "1s 2s", "abc", "1ss", "ms1"])
def test_parse_duration_rejects_garbage(text: str) -> None:
    with pytest.raises(ValueError, match="must be a duration"):
        parse_duration(text)


@pytest.mark.parametrize(
    ("argv", "env", "message"),
    [
        (
            ["--max-endpoints-per-slice", "0"],
            {},
            "invalid setting max_endpoints_per_slice (--max-endpoints-per-slice / "
            "ENDPOINTSLICE_OPERATOR_MAX_ENDPOINTS_PER_SLICE): must be between 1 and 1000, got 0",
        ),
        (
            ["--max-endpoints-per-slice", "1001"],
            {},
            "must be between 1 and 1000, got 1001",
        ),
        (
            [],
            {"ENDPOINTSLICE_OPERATOR_WORKERS": "many"},
            "invalid setting workers (--workers / ENDPOINTSLICE_OPERATOR_WORKERS): "
            "must be a whole number, got 'many'",
        ),
        (["--workers", "51"], {}, "must be between 1 and 50, got 51"),
        (["--qps", "0"], {}, "invalid setting qps (--qps / ENDPOINTSLICE_OPERATOR_QPS)"),
        (["--burst", "0"], {}, "must be at least 1, got 0"),
        (["--batch-period=-1s"], {}, "batch_period (--batch-period / "),
        (["--batch-period", "soon"], {}, "must be a duration such as 1s or 500ms, got 'soon'"),
        (["--namespace", "Team_A"], {}, "each namespace must be a DNS label"),
        (["--metrics-port", "65536"], {}, "must be between 0 and 65535, got 65536"),
        (["--managed-by", "not a label"], {}, "managed_by (--managed-by / "),
        (["--managed-by", "x" * 64], {}, "must be a non-empty label value"),
        (["--annotation-prefix", "Example.com"], {}, "must be a DNS subdomain"),
        (["--lease-name", "bad_name"], {}, "lease_name (--lease-name / "),
        (["--lease-namespace", "a.b"], {}, "the namespace must be a DNS label"),
        (["--log-format", "xml"], {}, "must be one of 'text' or 'json', got 'xml'"),
        (["--log-level", "trace"], {}, "log_level (--log-level / "),
        (["--kubeconfig", "/nonexistent/kubeconfig"], {}, "no such file"),
        (
            ["--multicluster", "--mcs-peer", "/nonexistent/peer"],
            {},
            "invalid setting mcs_peers (--mcs-peer / ENDPOINTSLICE_OPERATOR_MCS_PEERS): "
            "no such file: '/nonexistent/peer'",
        ),
        (["--mcs-peer-timeout", "0s"], {}, "must be greater than 0, got '0s'"),
        (["--mcs-peer-timeout", "soon"], {}, "mcs_peer_timeout (--mcs-peer-timeout / "),
        (
            [],
            {"ENDPOINTSLICE_OPERATOR_MULTICLUSTER": "perhaps"},
            "invalid setting multicluster (--multicluster / --no-multicluster / "
            "ENDPOINTSLICE_OPERATOR_MULTICLUSTER): must be true or false, got 'perhaps'",
        ),
        (
            [],
            {"ENDPOINTSLICE_OPERATOR_LEADER_ELECTION": "maybe"},
            "invalid setting leader_election (--leader-election / --no-leader-election / "
            "ENDPOINTSLICE_OPERATOR_LEADER_ELECTION): must be true or false, got 'maybe'",
        ),
    ],
)
def test_invalid_values_give_one_clear_line(
    argv: list[str], env: dict[str, str], message: str
) -> None:
    with pytest.raises(SettingsError) as caught:
        load_settings(argv, env)
    text = str(caught.value)
    assert "\n" not in text
    assert text.startswith("invalid setting ")
    assert message in text


@pytest.mark.parametrize("argv", [["--bogus"], ["--workers"], ["--work", "3"], ["positional"]])
def test_flag_syntax_errors_are_one_line_settings_errors(argv: list[str]) -> None:
    with pytest.raises(SettingsError) as caught:
        load_settings(argv, {})
    text = str(caught.value)
    assert "\n" not in text
    assert not text.startswith("endpointslice-operator")  # the caller adds the program name
    assert "argument" in text


def test_help_exits_zero_and_mentions_every_flag_and_variable(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit) as caught:
        load_settings(["--help"], {})
    assert caught.value.code == 0
    out = " ".join(capsys.readouterr().out.split())
    for spec in SETTINGS_TABLE:
        assert spec.flag in out
        assert spec.env in out
    # metavars are short words (N, NAME, DURATION), never the field's name in capitals
    assert re.findall(r"--[a-z-]+ [A-Z_]{10,}", out) == []


def test_empty_optional_variables_count_as_unset() -> None:
    settings = load_settings(
        [], {f"{ENV_PREFIX}KUBECONFIG": "", f"{ENV_PREFIX}LEASE_NAMESPACE": " "}
    )
    assert settings.kubeconfig is None
    assert settings.lease_namespace is None


def test_resolved_lease_namespace_order(tmp_path: Path) -> None:
    sa_file = tmp_path / "namespace"
    missing = tmp_path / "missing"
    assert Settings(lease_namespace="ops").resolved_lease_namespace({"POD_NAMESPACE": "x"}) == "ops"
    settings = Settings()
    assert settings.resolved_lease_namespace({"POD_NAMESPACE": "from-env"}, sa_file) == "from-env"
    sa_file.write_text("from-file\n")
    assert settings.resolved_lease_namespace({}, sa_file) == "from-file"
    assert settings.resolved_lease_namespace({}, missing) == "default"


def test_every_field_has_one_table_row_and_one_flag() -> None:
    assert [spec.field for spec in SETTINGS_TABLE] == list(Settings.model_fields)
    parser = build_parser()
    dests = {action.dest for action in parser._actions} - {"help"}
    assert dests == set(Settings.model_fields)
    for spec in SETTINGS_TABLE:
        assert spec.env == f"ENDPOINTSLICE_OPERATOR_{spec.field.upper()}"
        field = Settings.model_fields[spec.field]
        default = field.default
        if default is None or default == ():
            assert spec.default.startswith("(")
        elif isinstance(default, bool):
            assert spec.default == str(default).lower()
        elif isinstance(default, float):
            assert float(spec.default) == default
        else:
            assert spec.default == str(default)


def _docs_rows() -> dict[str, dict[str, str]]:
    """The settings table of docs/configuration.md, keyed by environment variable."""
    lines = DOCS.read_text(encoding="utf-8").splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("| Flag |"))
    header = [cell.strip() for cell in lines[start].strip("|").split("|")]
    rows: dict[str, dict[str, str]] = {}
    for line in lines[start + 2 :]:
        if not line.startswith("|"):
            break
        cells = [cell.strip() for cell in re.split(r"(?<!\\)\|", line.strip().strip("|"))]
        row = dict(zip(header, cells, strict=True))
        rows[row["Environment variable"].strip("`")] = row
    return rows


def test_docs_table_matches_the_code() -> None:
    rows = _docs_rows()
    assert set(rows) == {spec.env for spec in SETTINGS_TABLE}
    expected = {
        line.split(" | ")[1].strip("`"): line for line in settings_table_markdown().splitlines()[2:]
    }
    for env, row in rows.items():
        flag, _, default, meaning = (cell.strip() for cell in expected[env].strip("|").split(" | "))
        assert row["Flag"] == flag
        assert row["Default"] == default
        assert row["Meaning"] == meaning


def test_multicluster_settings(tmp_path: Path) -> None:
    defaults = load_settings([], {})
    assert defaults.multicluster is False
    assert defaults.mcs_peers == ()
    assert defaults.mcs_peer_timeout == 300.0
    east, west = tmp_path / "east", tmp_path / "west"
    for path in (east, west):
        path.write_text("apiVersion: v1\nkind: Config\n", encoding="utf-8")
    from_env = load_settings(
        [],
        {
            f"{ENV_PREFIX}MULTICLUSTER": "true",
            f"{ENV_PREFIX}MCS_PEERS": f"{east}, {west},{east}",
            f"{ENV_PREFIX}MCS_PEER_TIMEOUT": "1m30s",
        },
    )
    assert from_env.multicluster is True
    assert from_env.mcs_peers == (east, west)
    assert from_env.mcs_peer_timeout == 90.0
    # Flags replace the variable; the flag repeats.
    from_flags = load_settings(
        ["--mcs-peer", str(west), "--mcs-peer-timeout", "45"],
        {f"{ENV_PREFIX}MULTICLUSTER": "true", f"{ENV_PREFIX}MCS_PEERS": str(east)},
    )
    assert from_flags.mcs_peers == (west,)
    assert from_flags.mcs_peer_timeout == 45.0
    # An empty variable (a chart without peers) means none.
    assert load_settings(["--multicluster"], {f"{ENV_PREFIX}MCS_PEERS": ""}).mcs_peers == ()


def test_peers_without_multicluster_are_refused(tmp_path: Path) -> None:
    peer = tmp_path / "peer"
    peer.write_text("apiVersion: v1\n", encoding="utf-8")
    with pytest.raises(SettingsError) as caught:
        load_settings(["--mcs-peer", str(peer)], {})
    assert str(caught.value) == (
        "invalid settings: --mcs-peer (ENDPOINTSLICE_OPERATOR_MCS_PEERS) is given but "
        "--multicluster (ENDPOINTSLICE_OPERATOR_MULTICLUSTER) is off"
    )
