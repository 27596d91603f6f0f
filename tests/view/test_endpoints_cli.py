"""``endpointslice-operator endpoints`` as a subprocess against the emulator."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path

from endpointslice_operator.testing import Emulator, run_emulator
from tests.view.objects import NS, endpoint, endpoint_slice
from tests.view.test_watch import populate


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ENDPOINTSLICE_OPERATOR_")}
    env.pop("KUBERNETES_SERVICE_HOST", None)
    env["KUBECONFIG"] = "/nonexistent"
    return env


async def run_cli(*args: str) -> tuple[int, str, str]:
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "endpointslice_operator",
        "endpoints",
        *args,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=_env(),
    )
    out, err = await asyncio.wait_for(process.communicate(), timeout=60)
    assert process.returncode is not None
    return process.returncode, out.decode(), err.decode()


async def test_a_table_by_default() -> None:
    async with run_emulator() as emu:
        populate(emu)
        code, out, err = await run_cli("--kubeconfig", str(emu.kubeconfig_path), "-A")
        assert (code, err) == (0, "")
        rows = [line.split() for line in out.splitlines()]
        assert rows[0] == [
            "NAMESPACE",
            "SERVICE",
            "PORT",
            "ADDRESS",
            "READY",
            "SERVING",
            "TERM",
            "NODE",
        ]
        assert rows[1:] == [
            [NS, "web", "grpc:90/TCP", "10.0.0.2:9090", "true", "true", "false", "node-a"],
            [NS, "web", "grpc:90/TCP", "10.0.0.3:9090", "true", "true", "false", "node-a"],
            [NS, "web", "http:80/TCP", "10.0.0.1:8080", "true", "true", "false", "node-a"],
            [NS, "web", "http:80/TCP", "10.0.0.2:8080", "true", "true", "false", "node-a"],
            [NS, "web", "http:80/TCP", "10.0.0.3:8080", "true", "true", "false", "node-a"],
        ]
        code, out, _ = await run_cli(
            "--kubeconfig", str(emu.kubeconfig_path), "-n", NS, "--service", "hidden", "--gather"
        )
        assert code == 0
        assert [line.split() for line in out.splitlines()] == [
            ["NAMESPACE", "SERVICE", "PORT", "ENDPOINTS"],
            [NS, "hidden", "http:80/TCP", "10.0.9.1:8080"],
        ]
        code, out, _ = await run_cli(
            "--kubeconfig", str(emu.kubeconfig_path), "--selector", "app=none"
        )
        assert (code, out) == (0, "No endpoints.\n")
        # a Service that does not exist is an error, not an empty view
        code, out, err = await run_cli(
            "--kubeconfig", str(emu.kubeconfig_path), "-n", NS, "--service", "nonexistent"
        )
        assert (code, err) == (
            1,
            f"endpointslice-operator endpoints: Service {NS}/nonexistent does not exist\n",
        )


async def _line(stream: asyncio.StreamReader) -> dict[str, object]:
    line = await asyncio.wait_for(stream.readline(), timeout=30)
    assert line.endswith(b"\n"), line
    parsed: dict[str, object] = json.loads(line)
    return parsed


async def test_watch_json_is_one_flushed_line_per_change() -> None:
    async with run_emulator() as emu:
        populate(emu)
        process = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "endpointslice_operator",
            "endpoints",
            "--kubeconfig",
            str(emu.kubeconfig_path),
            "--service",
            f"{NS}/hidden",
            "--watch",
            "-o",
            "json",
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env=_env(),
        )
        assert process.stdout is not None
        try:
            first = await _line(process.stdout)
            assert first == {
                "type": "added",
                "key": {
                    "namespace": NS,
                    "service": "hidden",
                    "port_name": "http",
                    "port": 80,
                    "protocol": "TCP",
                    "address": "10.0.9.1",
                },
                "endpoint": {
                    "address": "10.0.9.1",
                    "target_port": 8080,
                    "ready": True,
                    "serving": True,
                    "terminating": False,
                    "node": "node-a",
                    "zone": None,
                    "hints": [],
                    "pod": None,
                    "slice": "hidden-1",
                },
            }
            assert await _line(process.stdout) == {"type": "synced"}
            # Each change arrives while the command keeps running (the pipe stays open).
            emu.store.create(endpoint_slice("hidden-2", "hidden", [endpoint("10.0.9.2")]))
            added = await _line(process.stdout)
            assert added["type"] == "added"
            assert added["key"]["address"] == "10.0.9.2"  # type: ignore[index]
            emu.store.delete("endpointslices", NS, "hidden-1")
            removed = await _line(process.stdout)
            assert removed["type"] == "removed"
            assert removed["key"]["address"] == "10.0.9.1"  # type: ignore[index]
        finally:
            process.terminate()
            await process.wait()


async def test_errors_are_one_line(tmp_path: Path) -> None:
    code, out, err = await run_cli("--selector", "a in (")
    assert code == 2 and out == ""
    assert err.startswith("endpointslice-operator endpoints: ") and err.count("\n") == 1
    code, out, err = await run_cli()
    assert code == 1 and err.startswith("endpointslice-operator endpoints: no cluster configured")
    kubeconfig = tmp_path / "kubeconfig"
    emu: Emulator
    async with run_emulator() as emu:
        kubeconfig.write_text(Path(emu.kubeconfig_path).read_text())
    code, out, err = await run_cli("--kubeconfig", str(kubeconfig))
    assert code == 1 and out == ""
    assert err.startswith("endpointslice-operator endpoints: cannot list ") and err.count("\n") == 1


async def test_watch_table_prints_the_view_then_a_line_per_change() -> None:
    async with run_emulator() as emu:
        populate(emu)
        process = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "endpointslice_operator", "endpoints",
            "--kubeconfig", str(emu.kubeconfig_path), "-n", NS, "--service", "hidden", "--watch",
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, env=_env(),
        )  # fmt: skip
        assert process.stdout is not None

        async def line() -> list[str]:
            assert process.stdout is not None
            raw: bytes = await asyncio.wait_for(process.stdout.readline(), timeout=30)
            return raw.decode().split()

        try:
            assert await line() == ["TYPE", "NAMESPACE", "SERVICE", "PORT", "ADDRESS", "READY",
                                    "SERVING", "TERM", "NODE"]  # fmt: skip
            assert (await line())[:5] == ["ADDED", NS, "hidden", "http:80/TCP", "10.0.9.1:8080"]
            emu.store.patch(
                "endpointslices", NS, "hidden-1", {"endpoints": [endpoint("10.0.9.1", node="n2")]}
            )
            updated = await line()
            assert updated[0] == "UPDATED" and updated[-1] == "n2"
        finally:
            process.terminate()
            await process.wait()


def _two_webs(emu: Emulator) -> None:
    """A Service ``web`` (and its slice) in ``default`` and in ``team-b``."""
    for n, namespace in enumerate(("default", "team-b")):
        if namespace != "default":
            emu.store.create_namespace(namespace)
        emu.store.create(
            {
                "apiVersion": "v1",
                "kind": "Service",
                "metadata": {"name": "web", "namespace": namespace},
                "spec": {"selector": {"app": "web"}, "ports": [{"name": "http", "port": 80}]},
            }
        )
        emu.store.create(
            endpoint_slice("web-x", "web", [endpoint(f"10.{n}.0.1")], namespace=namespace)
        )


def _with_context_namespace(emu: Emulator, tmp_path: Path, namespace: str) -> str:
    """The emulator's kubeconfig with ``namespace`` on its current context."""
    import yaml

    config = yaml.safe_load(Path(emu.kubeconfig_path).read_text())
    for context in config["contexts"]:
        context["context"]["namespace"] = namespace
    path = tmp_path / "kubeconfig"
    path.write_text(yaml.safe_dump(config))
    return str(path)


async def test_an_empty_view_without_arguments_says_how_to_put_a_service_in_it() -> None:
    """Without --service or --selector only Services annotated <prefix>/view are shown: an
    empty table then says so in one line on stderr, with the command that opts one in."""
    async with run_emulator() as emu:
        emu.store.create_namespace(NS)
        emu.store.create(
            {
                "apiVersion": "v1",
                "kind": "Service",
                "metadata": {"name": "plain", "namespace": NS},
                "spec": {"ports": [{"name": "http", "port": 80}]},
            }
        )
        hint = (
            "endpointslice-operator endpoints: without --service or --selector, only Services "
            'annotated endpointslice-operator.io/view: "true" are shown: kubectl annotate '
            "service NAME endpointslice-operator.io/view=true, or pass --service NAME or "
            "--selector LABELS\n"
        )
        kubeconfig = str(emu.kubeconfig_path)
        assert await run_cli("--kubeconfig", kubeconfig, "-n", NS) == (0, "No endpoints.\n", hint)
        prefixed = await run_cli("--kubeconfig", kubeconfig, "--annotation-prefix", "x.io")
        assert prefixed[2] == hint.replace("endpointslice-operator.io/view", "x.io/view")
        # Named, the empty view is the answer: no hint.
        assert await run_cli("--kubeconfig", kubeconfig, "-n", NS, "--service", "plain") == (
            0,
            "No endpoints.\n",
            "",
        )


def _rows(out: str) -> list[tuple[str, str]]:
    return [(row.split()[0], row.split()[3]) for row in out.splitlines()[1:]]


async def test_namespaces_follow_kubectl_and_two_webs_never_mix(tmp_path: Path) -> None:
    """Without -n, the kubeconfig context's namespace (else default); -n that one; -A every
    one; NAME in the namespace in use, NAMESPACE/NAME anywhere. Before, `--service web`
    searched every namespace and showed both Services named web as one."""
    async with run_emulator() as emu:
        _two_webs(emu)
        plain = str(emu.kubeconfig_path)
        team_b = _with_context_namespace(emu, tmp_path, "team-b")
        cases = [
            ((plain, "--service", "web"), [("default", "10.0.0.1:8080")]),
            ((team_b, "--service", "web"), [("team-b", "10.1.0.1:8080")]),
            ((team_b, "-n", "default", "--service", "web"), [("default", "10.0.0.1:8080")]),
            ((plain, "--service", "team-b/web"), [("team-b", "10.1.0.1:8080")]),
            ((plain, "-A", "--service", "web"),
             [("default", "10.0.0.1:8080"), ("team-b", "10.1.0.1:8080")]),
        ]  # fmt: skip
        for (kubeconfig, *args), expected in cases:
            code, out, err = await run_cli("--kubeconfig", kubeconfig, *args)
            assert (code, err) == (0, ""), args
            assert _rows(out) == expected, (args, out)
        code, _, err = await run_cli("--kubeconfig", plain, "-A", "-n", "default")
        assert code == 2 and "not allowed with argument" in err


async def test_named_services_list_only_their_namespace_and_their_own_objects() -> None:
    """The API server is asked for the namespace in use only, and there for the named Service
    and its slices (field and label selectors: ``_server_selectors``)."""
    async with run_emulator() as emu:
        _two_webs(emu)
        for i in range(5):
            emu.store.create(
                endpoint_slice(f"other-{i}", f"o{i}", [endpoint(f"10.9.0.{i + 1}")],
                               namespace="default")
            )  # fmt: skip
        code, out, _ = await run_cli("--kubeconfig", str(emu.kubeconfig_path), "--service", "web")
        assert code == 0 and _rows(out) == [("default", "10.0.0.1:8080")]
        lists = [r for r in emu.requests if r.verb == "list"]
        assert {(r.resource, r.namespace) for r in lists} == {
            ("services", "default"),
            ("endpointslices", "default"),
        }


def test_server_selectors_ask_for_what_the_view_shows() -> None:
    from endpointslice_operator.view.watch import _server_selectors

    assert _server_selectors(["default/web"], None) == {
        "endpointslices": {"label_selector": "kubernetes.io/service-name in (web)"},
        "services": {"field_selector": "metadata.name=web"},
    }
    assert _server_selectors(["a/web", "b/api"], "tier=front") == {
        "endpointslices": {"label_selector": "kubernetes.io/service-name in (api,web)"},
        "services": {"label_selector": "tier=front"},
    }
    assert _server_selectors(None, None) == {}
    assert _server_selectors(["Not A Name"], None) == {}


def test_the_models_label_names_are_the_reconcilers() -> None:
    from endpointslice_operator.reconciler import labels
    from endpointslice_operator.view import model

    assert (model.LABEL_SERVICE_NAME, model.LABEL_MANAGED_BY) == (
        labels.LABEL_SERVICE_NAME,
        labels.LABEL_MANAGED_BY,
    )
