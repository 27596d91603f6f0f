"""The mutation score table of docs/testing.md, and whether each row still scores the code.

Every row of the table (between the ``<!-- mutation-scores -->`` markers) ends with where its
score comes from, one of:

* ``<date> at <commit>, code <fingerprint>``: measured on that day at that commit, of the code
  whose :func:`fingerprint` is given: a claim that the score holds for the module as it is;
* ``stale since <commit>...``: the module changed after it was measured at that commit;
* ``not re-measured...``: a score of an older mutator, kept for the record.

:func:`check` (``tests/test_mutation_scores.py``, so ``make test``) fails for a row that
claims a score of code that is no longer there. The fingerprint hashes the module's syntax
tree without its imports and docstrings, so neither reformatting, comments, a docstring nor a
move to another package (which changes only imports) make a score stale; a moved module is
found by its fingerprint. ``python -m scripts.mutation_scores --mark-stale`` rewrites the rows
that fail into ``stale since <commit>`` (and the rows of moved modules to the new path).
"""

from __future__ import annotations

import argparse
import ast
import hashlib
import re
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = "endpointslice_operator"
DOC = ROOT / "docs" / "testing.md"
BEGIN, END = "<!-- mutation-scores -->", "<!-- /mutation-scores -->"

_MEASURED = re.compile(
    r"^(?P<date>\d{4}-\d{2}-\d{2}) at (?P<commit>[0-9a-f]{7,40}), code (?P<code>[0-9a-f]{12})$"
)
_NO_CLAIM = re.compile(r"^(stale since [0-9a-f]{7,40}|not re-measured)\b")
_ROW = re.compile(r"^\| `(?P<module>[^`]+\.py)` \|.*\| (?P<stamp>[^|]+?) \|$")


def fingerprint(source: str) -> str:
    """12 hex digits of a hash of ``source``'s syntax tree without imports and docstrings
    (line numbers, comments and layout are not in the tree either)."""
    tree = ast.parse(source)
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if not isinstance(body, list):
            continue
        kept = [stmt for stmt in body if not isinstance(stmt, ast.Import | ast.ImportFrom)]
        if (
            kept
            and isinstance(kept[0], ast.Expr)
            and isinstance(kept[0].value, ast.Constant)
            and isinstance(kept[0].value.value, str)
        ):
            kept = kept[1:]
        setattr(node, "body", kept or [ast.Pass()])  # noqa: B010  # any node with a body
    return hashlib.sha256(ast.dump(tree).encode()).hexdigest()[:12]


def module_fingerprint(module: str) -> str:
    """The fingerprint of ``module`` (a path relative to the package, as in the table)."""
    return fingerprint((ROOT / PACKAGE / module).read_text(encoding="utf-8"))


@dataclass(frozen=True)
class Row:
    line: int
    """Index of the row's line in the document."""
    module: str
    stamp: str


def rows(text: str) -> list[Row]:
    """The table's rows (module path relative to the package, and the last cell)."""
    lines = text.splitlines()
    begin, end = lines.index(BEGIN), lines.index(END)
    found: list[Row] = []
    for index in range(begin + 1, end):
        match = _ROW.match(lines[index])
        if match is not None:
            found.append(Row(index, match["module"], match["stamp"]))
    return found


def _moved_to(code: str) -> str | None:
    """The package module (relative path) whose fingerprint is ``code``, if any."""
    for path in sorted((ROOT / PACKAGE).rglob("*.py")):
        if fingerprint(path.read_text(encoding="utf-8")) == code:
            return path.relative_to(ROOT / PACKAGE).as_posix()
    return None


def check(text: str) -> list[tuple[Row, str]]:
    """``(row, what is wrong)`` for every row that claims a score it cannot: code changed
    since, a module gone (or moved, named by its old path), or no stamp at all."""
    problems: list[tuple[Row, str]] = []
    for row in rows(text):
        if _NO_CLAIM.match(row.stamp):
            continue
        measured = _MEASURED.match(row.stamp)
        if measured is None:
            problems.append((row, "no `<date> at <commit>, code <fingerprint>` nor `stale since`"))
            continue
        path = ROOT / PACKAGE / row.module
        if path.is_file() and module_fingerprint(row.module) == measured["code"]:
            continue
        moved = None if path.is_file() else _moved_to(measured["code"])
        if moved is not None:
            problems.append((row, f"moved to {moved} (the same code)"))
        else:
            problems.append((row, f"the code changed since {measured['commit']}"))
    return problems


def mark_stale(text: str) -> str:
    """``text`` with every row :func:`check` refuses rewritten: a moved module's path
    updated, a changed one's stamp made ``stale since <commit>``."""
    lines = text.splitlines()
    for row, problem in check(text):
        line = lines[row.line]
        measured = _MEASURED.match(row.stamp)
        if problem.startswith("moved to "):
            new = problem.removeprefix("moved to ").split(" ")[0]
            lines[row.line] = line.replace(f"`{row.module}`", f"`{new}`", 1)
        elif measured is not None:
            stale = f"stale since {measured['commit']} (measured {measured['date']})"
            lines[row.line] = line[: line.rindex(row.stamp)] + stale + " |"
    return "\n".join(lines) + ("\n" if text.endswith("\n") else "")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m scripts.mutation_scores", description=__doc__)
    parser.add_argument("modules", nargs="*", help="print the fingerprint of these modules")
    parser.add_argument(
        "--mark-stale", action="store_true", help="rewrite the rows that no longer hold"
    )
    args = parser.parse_args(argv)
    for module in args.modules:
        print(f"{module}: code {module_fingerprint(module)}")
    if args.modules:
        return 0
    text = DOC.read_text(encoding="utf-8")
    if args.mark_stale:
        DOC.write_text(mark_stale(text), encoding="utf-8")
        text = DOC.read_text(encoding="utf-8")
    problems = check(text)
    for row, problem in problems:
        print(f"docs/testing.md:{row.line + 1}: `{row.module}`: {problem}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
