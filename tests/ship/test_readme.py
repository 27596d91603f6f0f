"""The README stays true: its library example runs as shown, its tables match the code."""

from __future__ import annotations

import contextlib
import io
import re

from endpointslice_operator.settings import SETTINGS_TABLE
from scripts.render_manifests import ROOT
from tests.ship.exposition import exported_samples
from tests.ship.values import HELM_VALUES

README = (ROOT / "README.md").read_text(encoding="utf-8")


def _section(title: str) -> str:
    start = README.index(f"\n## {title}\n")
    end = README.find("\n## ", start + 1)
    return README[start : end if end != -1 else None]


def test_library_example_prints_what_the_readme_says() -> None:
    section = _section("The reconciler library")
    (code,) = re.findall(r"```python\n(.*?)```", section, re.S)
    expected = [line[2:] for line in code.splitlines() if re.match(r"# [A-Z]", line)]
    output = io.StringIO()
    with contextlib.redirect_stdout(output):
        exec(compile(code, "README.md", "exec"), {})
    assert output.getvalue().splitlines() == expected[:1]
    assert expected[0] == "IPv4 ['10.0.0.1', '10.0.0.2', '10.0.0.3']"


def test_configuration_table_matches_the_settings_and_the_chart() -> None:
    rows = [line for line in _section("Configuration").splitlines() if line.startswith("| `--")]
    assert len(rows) == len(SETTINGS_TABLE)
    for row, spec in zip(rows, SETTINGS_TABLE, strict=True):
        cells = [cell.strip() for cell in row.strip("|").split("|")]
        assert cells[0].startswith(f"`{spec.flag}`"), (cells[0], spec.flag)
        assert cells[1].startswith(f"`{spec.env}`"), (cells[1], spec.env)
        assert cells[2] == f"`{HELM_VALUES[spec.field]}`", (cells[2], spec.field)


def test_metrics_table_names_every_exported_family() -> None:
    section = _section("Metrics")
    families = {re.sub(r"_(bucket|sum|count)$", "", name) for name in exported_samples()}
    for family in families:
        assert f"`{family}`" in section, family


def test_linked_files_exist() -> None:
    targets = re.findall(r"\]\(((?:docs|deploy|chart|benchmarks)/[^)#]*)\)", README)
    assert "docs/architecture.md" in targets
    for target in targets:
        assert (ROOT / target).exists(), target
