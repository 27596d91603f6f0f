"""The README stays true: its tables match the code, its links resolve (its commands:
test_readme_commands.py; the library example lives in docs/reconciler.md, a doctest)."""

from __future__ import annotations

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
    """Relative links in the README, the docs and the chart README point at existing files."""
    pages = [ROOT / "README.md", ROOT / "CHANGELOG.md", ROOT / "chart" / "README.md"]
    pages += sorted((ROOT / "docs").glob("*.md"))
    checked = 0
    for page in pages:
        for target in re.findall(r"\]\(([^)#:]+)(?:#[^)]*)?\)", page.read_text(encoding="utf-8")):
            assert (page.parent / target).exists(), f"{page.relative_to(ROOT)}: {target}"
            checked += 1
    assert checked > 40


def test_performance_tables_are_rendered_from_the_last_full_run() -> None:
    # One source of truth: docs/benchmarks/real-full.json, rendered by scripts.render_performance
    # into both the README and docs/performance.md.
    from scripts import render_performance

    assert render_performance.main(["--check"]) == 0
    for page in render_performance.PAGES:
        block = page.read_text(encoding="utf-8").split("<!-- figures:real-full -->")[1]
        assert "| `writes_burst_arrivals` |" in block.split("<!-- /figures -->")[0]
