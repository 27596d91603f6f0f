"""Every command in the README is run by a test as written, or listed with the reason it cannot
be (tests/readme_commands.py); a new command without either fails here."""

from __future__ import annotations

import ast

from tests.readme_commands import NOT_RUN, ROOT, RUN_BY, all_commands, readme


def test_every_command_is_run_or_explained() -> None:
    commands = all_commands(readme())
    assert len(commands) > 20
    unclaimed = [c for c in commands if c not in RUN_BY and c not in NOT_RUN]
    assert unclaimed == [], "README commands no test runs (add them to tests/readme_commands.py)"
    assert not set(RUN_BY) & set(NOT_RUN)


def test_the_registry_has_no_stale_entries() -> None:
    commands = set(all_commands(readme()))
    assert [c for c in (*RUN_BY, *NOT_RUN) if c not in commands] == []


def test_the_named_tests_exist() -> None:
    for target in set(RUN_BY.values()):
        path, _, name = target.partition("::")
        tree = ast.parse((ROOT / path).read_text(encoding="utf-8"))
        defined = {
            node.name
            for node in tree.body
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
        }
        assert name in defined, target
