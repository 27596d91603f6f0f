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
