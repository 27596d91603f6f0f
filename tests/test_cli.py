from __future__ import annotations

import pytest

from endpointslice_operator import __version__
from endpointslice_operator.cli import main


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["version"]) == 0
    assert capsys.readouterr().out == f"endpointslice-operator {__version__}\n"


def test_help_lists_every_command(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--help"]) == 0
    out = capsys.readouterr().out
    for command in ("run", "emulator", "demo", "plan", "version"):
        assert f"  {command}" in out


def test_unknown_command_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["frobnicate"]) == 2
    assert "unknown command 'frobnicate'" in capsys.readouterr().err


def test_bare_command_prints_help_and_fails(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.startswith("usage: endpointslice-operator <command>")


def test_version_help_describes_the_command(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["version", "--help"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("usage: endpointslice-operator version")
    assert __version__ not in out


def test_version_refuses_arguments(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["version", "extra"]) == 2
    assert "unexpected argument 'extra'" in capsys.readouterr().err


def test_run_reports_every_invalid_setting(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", "--workers", "0", "--max-endpoints-per-slice", "2000", "--qps", "x"]) == 2
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 3
    assert all(line.startswith("endpointslice-operator run: invalid setting ") for line in lines)
    assert {line.split()[4] for line in lines} == {"workers", "max_endpoints_per_slice", "qps"}
