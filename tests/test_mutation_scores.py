"""The mutation score table of docs/testing.md is never older than the code it scores: a row
that claims a score (``<date> at <commit>, code <fingerprint>``) must name the module's code as
it is (``scripts/mutation_scores.py``)."""

from __future__ import annotations

from scripts import mutation_scores
from scripts.mutation_scores import BEGIN, END, check, fingerprint, mark_stale, rows


def test_every_score_row_claims_only_a_score_of_the_code_as_it_is() -> None:
    text = mutation_scores.DOC.read_text(encoding="utf-8")
    assert len(rows(text)) >= 30
    problems = [f"{row.module}: {problem}" for row, problem in check(text)]
    assert problems == [], (
        "re-measure these modules (python -m scripts.mutate MODULE) or mark their rows "
        "stale (python -m scripts.mutation_scores --mark-stale)"
    )


def test_the_fingerprint_ignores_imports_docstrings_comments_and_layout_not_code() -> None:
    code = '"""A module."""\nimport os\n\n\ndef f(x):\n    """Doc."""\n    return x + 1\n'
    same = (
        "from __future__ import annotations\n"
        "from .elsewhere import os  # moved\n"
        "def f(x):\n"
        "    return (x +\n"
        "            1)\n"
    )
    assert fingerprint(code) == fingerprint(same)
    assert fingerprint(code) != fingerprint(code.replace("x + 1", "x - 1"))
    assert fingerprint(code) != fingerprint(code.replace("def f(x)", "def f(x, y=0)"))
    assert len(fingerprint(code)) == 12


def _doc(*stamps: tuple[str, str]) -> str:
    lines = [BEGIN, "| Module | Mutants | Equivalent | Killed | Survived | Score | Measured |"]
    lines.append("|---|---:|---:|---:|---:|---:|---|")
    lines += [f"| `{module}` | 10 | 0 | 10 | 0 | 100% | {stamp} |" for module, stamp in stamps]
    return "\n".join(["# Doc", *lines, END, ""])


def test_a_row_fails_when_its_code_changed_and_passes_once_marked_stale() -> None:
    queue = "controller/work/queue.py"
    fresh = mutation_scores.module_fingerprint(queue)
    text = _doc(
        (queue, f"2026-11-28 at 1234abc, code {fresh}"),
        ("reconciler/planner.py", "2026-11-28 at 1234abc, code 000000000000"),
        ("reconciler/labels.py", "stale since 1234abc (measured 2026-11-01)"),
        ("reconciler/ports.py", "not re-measured under the stronger mutator"),
        ("reconciler/gone.py", f"2026-11-28 at 1234abc, code {fresh}"),
        ("reconciler/tracker.py", "100%"),
    )
    problems = {row.module: problem for row, problem in check(text)}
    assert problems == {
        "reconciler/planner.py": "the code changed since 1234abc",
        "reconciler/gone.py": f"moved to {queue} (the same code)",
        "reconciler/tracker.py": "no `<date> at <commit>, code <fingerprint>` nor `stale since`",
    }
    marked = mark_stale(text)
    assert "| `reconciler/planner.py` | 10 | 0 | 10 | 0 | 100% | stale since 1234abc" in marked
    assert f"| `{queue}` | 10 | 0 | 10 | 0 | 100% | 2026-11-28 at 1234abc" in marked  # twice
    assert "reconciler/gone.py" not in marked
    assert {row.module for row, _ in check(marked)} == {"reconciler/tracker.py"}
