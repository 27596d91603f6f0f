"""The mutation tool (``scripts/mutate.py``, ``make mutate``): its mutants are single, valid
changes, its module table points at files that exist, its equivalent mutants exist."""

from __future__ import annotations

import ast
import difflib
from pathlib import Path

import pytest

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
    assert [(line, op) for line, _, op in sites.found] == [
        (6, "3->4"),
        (7, "Lt->LtE"),
        (7, "Return->None"),
    ]


def test_every_equivalent_mutant_is_one_the_tool_makes() -> None:
    keys = {m.key for module in mutate.MODULES for m in mutate.mutants(module)}
    assert set(mutate.EQUIVALENT) <= keys


def test_jobs_run_mutants_side_by_side_and_count_them_as_one_at_a_time_would() -> None:
    """Two package copies, mutants handed out in turn; equivalent mutants are not run."""
    module = "endpointslice_operator/view/merge.py"
    found = mutate.mutants(module)
    (equivalent,) = (
        m
        for m in found
        if m.key in mutate.EQUIVALENT and m.function == "_without" and m.operator == "Gt->GtE"
    )
    # The line after it, `return rest[0] if rest else None`: its `rest[1]` mutant raises
    # IndexError whenever one candidate is left, which test_merge.py always reaches.
    (crashing,) = (m for m in found if m.line == equivalent.line + 2 and m.operator == "0->1")
    lines = {equivalent.line, crashing.line}
    expected = [m for m in found if m.line in lines]
    assert len(expected) >= 3
    total, killed, skipped, survivors = mutate.run_module(module, lines, jobs=2)
    assert (total, skipped) == (len(expected), 1)
    assert killed + len(survivors) == len(expected) - 1
    assert killed >= 1 and crashing not in survivors
    # The split of the other mutant (`len(rest) > 2`) is left to the scores: this test is
    # about running side by side and counting.
    assert all(m.line in lines for m in survivors)


def test_jobs_must_be_at_least_one() -> None:
    with pytest.raises(SystemExit):
        mutate.main(["--jobs", "0", "endpointslice_operator/view/merge.py"])


def test_mutants_alike_on_one_line_have_keys_of_their_own() -> None:
    """``return _Heuristic(close=False, node_hints=False)``: two ``False->True`` mutants, one
    that changes behaviour and one that cannot; an EQUIVALENT entry must name only one."""
    module = "endpointslice_operator/reconciler/hints/trafficdist.py"
    alike = [
        m
        for m in mutate.mutants(module)
        if m.function == "_heuristic" and m.operator == "False->True" and "close=False" in m.text
    ]
    assert [m.occurrence for m in alike] == [1, 2]
    assert alike[1].key == f"{alike[0].key} #2"
    for module in mutate.MODULES:
        keys = [m.key for m in mutate.mutants(module)]
        assert len(keys) == len(set(keys)), module


def _mutated(source: str) -> dict[tuple[int, str], str]:
    """Every mutant of ``source``: ``(line, operator)`` -> the mutated source, each checked to
    compile and to differ from the original."""
    sites = mutate._Sites()
    sites.visit(ast.parse(source))
    original = ast.unparse(ast.parse(source))
    found: dict[tuple[int, str], str] = {}
    for index, (line, _, operator) in enumerate(sites.found):
        tree = mutate._Sites(index).visit(ast.parse(source))
        mutated = ast.unparse(ast.fix_missing_locations(tree))
        compile(mutated, "<mutant>", "exec")
        assert mutated != original, (line, operator)
        found.setdefault((line, operator), mutated)
    return found


def _of(found: dict[tuple[int, str], str], operator: str) -> dict[int, str]:
    return {line: source for (line, op), source in found.items() if op == operator}


def test_statement_deletion_makes_a_statement_of_a_function_pass_awaited_calls_included() -> None:
    found = _mutated(
        "TABLE = {}\n"
        "async def f(self, x):\n"
        "    await self._spend()\n"
        "    self.n += 1\n"
        "    y = x\n"
        "    logger.debug('%s', y)\n"
        "    return y\n"
    )
    deleted = _of(found, "Stmt->Pass")
    assert sorted(deleted) == [3, 4, 5]  # not the module's assignment, not the log line
    assert "await" not in deleted[3] and "    pass\n    self.n += 1" in deleted[3]
    assert "self.n += 1" not in deleted[4]
    assert "y = x" not in deleted[5]


def test_string_constants_and_dict_keys_are_changed_but_not_messages_or_types() -> None:
    found = _mutated(
        '"""doc"""\n'
        "__all__ = ['f']\n"
        "T = Literal['a', 'b']\n"
        "def f(x: 'int') -> str:\n"
        '    """doc"""\n'
        "    logger.info('x %s', x)\n"
        "    print('x')\n"
        "    log.warning('y')\n"
        "    if not x:\n"
        "        raise ValueError('no x')\n"
        "    y = cast('str', x)\n"
        "    return {'kind': x['name'] + f'-{y}'}\n"
    )
    assert {op for (_, op) in found} >= {"Key->XX", "Str->XX"}
    assert (
        _of(found, "Key->XX")
        == {
            12: found[12, "Key->XX"],
        }
        and "{'XXkindXX': x['name']" in found[12, "Key->XX"]
    )
    strings = _of(found, "Str->XX")
    assert list(strings) == [12]  # only x['name']: not the f-string, cast, Literal, ...
    assert "x['XXnameXX']" in strings[12]


def test_conditions_are_negated_in_if_elif_while_and_ternaries() -> None:
    found = _mutated(
        "if TYPE_CHECKING:\n"
        "    import os\n"
        "def f(x, y):\n"
        "    while x > 0:\n"
        "        x -= 1\n"
        "    if y:\n"
        "        return 1\n"
        "    elif x == y:\n"
        "        return 2\n"
        "    if not y:\n"
        "        return 3\n"
        "    return 4 if y else 5\n"
    )
    assert "while not x > 0:" in found[4, "While->WhileNot"]
    assert "if not y:\n        return 1" in found[6, "If->IfNot"]
    assert "elif not x == y:" in found[8, "If->IfNot"]
    assert "return 4 if not y else 5" in found[12, "IfExp->IfExpNot"]
    assert (10, "If->IfNot") not in found  # `not y`: dropping the not does the same
    assert (10, "Not->") in found
    assert 1 not in {line for line, _ in found}  # TYPE_CHECKING


def test_a_returned_value_becomes_none() -> None:
    found = _mutated(
        "def f(x):\n"
        "    if x:\n"
        "        return\n"
        "    if x == 1:\n"
        "        return None\n"
        "    return [x]\n"
    )
    assert _of(found, "Return->None") == {6: found[6, "Return->None"]}
    assert found[6, "Return->None"].endswith("return None")


def test_two_different_positional_arguments_are_swapped() -> None:
    found = _mutated(
        "def f(a, b, *rest):\n"
        "    g(a, b, c=1)\n"
        "    g(a, a)\n"
        "    g(a, *rest)\n"
        "    g(min(a, b), max(a, b), b)\n"
    )
    assert "g(b, a, c=1)" in found[2, "Swap0,1"]
    swapped = {(line, op) for (line, op) in found if op.startswith("Swap")}
    # same expressions, a starred one, min and max (symmetric) are left alone
    assert swapped == {(2, "Swap0,1"), (5, "Swap0,1"), (5, "Swap1,2")}
    assert "g(max(a, b), min(a, b), b)" in found[5, "Swap0,1"]


def test_keys_of_the_audit_operators_are_stable_and_unique() -> None:
    """--only and EQUIVALENT see the new operators like the old: keyed by module, function,
    operator and line text."""
    module = "endpointslice_operator/controller/mcs/imports.py"
    found = mutate.mutants(module)
    spends = [
        m for m in found if m.operator == "Stmt->Pass" and m.text == "await spend(self.budget)"
    ]
    assert spends and all(m.key.startswith(f"{module}:") for m in spends)
    assert len({m.key for m in found}) == len(found)


LABELS = "endpointslice_operator/reconciler/labels.py"
KEYS_TEST = "tests/reconciler/test_labels.py::test_the_keys_are_upstreams"
TRIGGER_TESTS = (
    "tests/reconciler/test_labels.py::"
    "test_trigger_times_are_rfc3339nano_in_utc_without_trailing_zeros"
)


def _line_of(module: str, text: str) -> int:
    (line,) = {m.line for m in mutate.mutants(module) if m.text == text}
    return line


def test_selection_runs_a_mutant_against_the_tests_that_ran_its_statement(
    tmp_path: Path,
) -> None:
    """One run under coverage (a fork of the fork server) tells which test ran which line."""
    copy_root = mutate._package_copy(tmp_path)
    server = mutate._Forks(copy_root, (KEYS_TEST, TRIGGER_TESTS))
    try:
        answer = server.run((KEYS_TEST, TRIGGER_TESTS), None, cover=copy_root / LABELS)
    finally:
        server.close()
    assert answer["passed"]
    coverage = mutate._Coverage.of(answer)
    assert coverage.tests[0] == KEYS_TEST and len(coverage.tests) == 5  # and 4 cases
    source = (ROOT / LABELS).read_text(encoding="utf-8")
    headers = mutate._headers(source)
    found = mutate.mutants(LABELS)

    def chosen(text: str) -> set[tuple[str, ...] | None]:
        return {mutate.selected_tests(m, headers, coverage) for m in found if m.text == text}

    fraction = 'text += "." + f"{moment.microsecond:06d}".rstrip("0")'
    (cases,) = chosen(fraction)
    assert cases is not None and len(cases) == 3  # the three with a fraction of a second
    assert all(case.startswith(f"{TRIGGER_TESTS}[") for case in cases)
    assert chosen("if moment.microsecond:") == {coverage.tests[1:]}  # the four cases
    assert chosen('return isinstance(cluster_ip, str) and cluster_ip not in ("", "None")') == {
        ()
    }  # no test of the two runs it
    # outside functions: every test (the module's state is every later test's)
    assert chosen('LABEL_HEADLESS = "service.kubernetes.io/headless"') == {None}


def test_a_mutant_on_a_line_no_test_runs_survives_without_a_run(
    capsys: pytest.CaptureFixture[str],
) -> None:
    line = _line_of(LABELS, "if not labels:")  # _user_labels, which the keys test never calls
    expected = [m for m in mutate.mutants(LABELS) if m.line == line]
    total, killed, equivalent, survivors = mutate.run_module(LABELS, {line}, tests=(KEYS_TEST,))
    assert (total, killed, equivalent) == (len(expected), 0, 0)
    assert survivors == expected
    out = capsys.readouterr().out
    assert out.count("(no test runs this line)") == len(expected)
    assert f"{len(expected)} on lines no test runs (survived, not run)" in out


def test_a_mutant_is_killed_by_the_one_test_that_covers_it() -> None:
    """The keys test runs first and passes on every mutant of the trigger time's fraction;
    the trigger-time test, the only one that runs that line, kills each of them."""
    line = _line_of(LABELS, 'text += "." + f"{moment.microsecond:06d}".rstrip("0")')
    found = [m for m in mutate.mutants(LABELS) if m.line == line]
    equivalent = [m for m in found if m.key in mutate.EQUIVALENT]
    assert len(equivalent) == 1  # rstrip("0") -> rstrip("XX0XX"): the same set of characters
    total, killed, skipped, survivors = mutate.run_module(
        LABELS, {line}, tests=(KEYS_TEST, TRIGGER_TESTS)
    )
    assert (total, skipped, survivors) == (len(found), 1, [])
    assert killed == len(found) - 1 >= 3
