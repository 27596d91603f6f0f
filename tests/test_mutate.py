"""The mutation tool (``scripts/mutate.py``, ``make mutate``): its mutants are single, valid
changes, its module table points at files that exist, its equivalent mutants exist."""

from __future__ import annotations

import ast
import difflib
from pathlib import Path

from scripts import mutate

ROOT = Path(__file__).resolve().parent.parent


def test_every_module_and_its_tests_exist() -> None:
    for module, tests in mutate.MODULES.items():
        assert (ROOT / module).is_file(), module
        assert tests and all((ROOT / t).exists() for t in tests), (module, tests)


def test_each_mutant_is_one_valid_change() -> None:
    module = "endpointslice_operator/view/merge.py"
    original = ast.unparse(ast.parse((ROOT / module).read_text(encoding="utf-8")))
    found = mutate.mutants(module)
    assert len(found) > 50
    operators = {m.operator.split("->")[0] for m in found}
    assert {"Gt", "Or", "And", "Not", "Eq", "Is"} <= operators
    for mutant in found[:: max(1, len(found) // 15)]:
        source = mutate.mutated_source(mutant)
        compile(source, module, "exec")
        changed = [
            line
            for line in difflib.unified_diff(original.splitlines(), source.splitlines(), n=0)
            if line.startswith(("+", "-")) and not line.startswith(("+++", "---"))
        ]
        assert len(changed) == 2, (mutant, changed)  # one line out, one line in


def test_docstrings_annotations_asserts_and_log_calls_are_not_mutated() -> None:
    tree = ast.parse(
        '"""doc 1"""\n'
        "def f(x: int = 1) -> bool:\n"
        '    """doc 2"""\n'
        "    assert x > 0\n"
        "    log.info('x %s', x == 2)\n"
        "    y: int = 3\n"
        "    return x < y\n"
    )
    sites = mutate._Sites()
    sites.visit(tree)
    assert [(line, op) for line, _, op in sites.found] == [(6, "3->4"), (7, "Lt->LtE")]


def test_every_equivalent_mutant_is_one_the_tool_makes() -> None:
    keys = {m.key for module in mutate.MODULES for m in mutate.mutants(module)}
    assert set(mutate.EQUIVALENT) <= keys


def test_each_mutant_has_its_own_key(tmp_path: Path) -> None:
    # Two sites with the same operator and line text in one function (two ``False`` in one
    # call, a second ``continue``): an EQUIVALENT entry must name only one of them.
    for module in mutate.MODULES:
        keys = [m.key for m in mutate.mutants(module)]
        assert len(keys) == len(set(keys)), module
    path = tmp_path / "m.py"
    path.write_text(
        "def f(a, b):\n"
        "    for x in a:\n"
        "        if x:\n"
        "            continue\n"
        "        if b:\n"
        "            continue\n",
        encoding="utf-8",
    )
    found = mutate.mutants(str(path))  # an absolute path: ROOT / path is path
    keys = [m.key for m in found if m.operator == "Continue->Break"]
    assert keys[0].endswith(":continue") and keys[1].endswith(":continue #2")
