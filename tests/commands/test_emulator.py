"""The ``endpointslice-operator emulator`` command: serves until SIGINT/SIGTERM, exits 0."""

from __future__ import annotations

import asyncio
import signal
import sys
from pathlib import Path

import aiohttp
import pytest
import yaml

from endpointslice_operator.commands.emulator import build_parser


def test_fault_flags_are_parsed() -> None:
    args = build_parser().parse_args(
        ["--port", "0", "--seed", "3", "--fail-rate", "0.2", "--conflict-rate", "0.1",
         "--latency", "0.5", "--fault-verbs", "update,patch", "--fault-resources", "*",
         "--watch-drop-seconds", "30", "--gone-rate", "0.05"]
    )  # fmt: skip
    assert args.fault_verbs == {"update", "patch"}
    assert args.fault_resources == {"*"}
    assert (args.fail_rate, args.conflict_rate, args.latency) == (0.2, 0.1, 0.5)
    assert (args.watch_drop_seconds, args.gone_rate, args.seed) == (30.0, 0.05, 3)
    with pytest.raises(SystemExit):
        build_parser().parse_args(["--fail-rate", "1.5"])
    assert build_parser().parse_args(["--nodes", "3", "--pod-start-delay", "0.5"]).nodes == 3
    for bad in (["--nodes", "-1"], ["--nodes", "two"], ["--pod-start-delay", "-1"]):
        with pytest.raises(SystemExit):
            build_parser().parse_args(bad)


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
async def test_serves_until_signalled(tmp_path: Path, sig: signal.Signals) -> None:
    kubeconfig = tmp_path / "kubeconfig"
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "endpointslice_operator", "emulator",
        "--kubeconfig", str(kubeconfig), "--port", "0",
        stdout=asyncio.subprocess.PIPE,
    )  # fmt: skip
    assert process.stdout is not None
    try:
        async with asyncio.timeout(30):
            banner = (await process.stdout.readline()).decode()
        assert "serving http://127.0.0.1:" in banner
        config = yaml.safe_load(kubeconfig.read_text())
        assert config["current-context"] == "emulator"
        server = config["clusters"][0]["cluster"]["server"]
        async with (
            aiohttp.ClientSession() as session,
            session.get(server + "/api/v1/namespaces") as response,
        ):
            body = await response.json()
        assert "default" in [ns["metadata"]["name"] for ns in body["items"]]
    finally:
        process.send_signal(sig)
        async with asyncio.timeout(30):
            code = await process.wait()
    assert code == 0
