"""The example in docs/reconciler.md runs, and gives the output it shows."""

from __future__ import annotations

import doctest
from pathlib import Path

DOC = Path(__file__).resolve().parents[2] / "docs" / "reconciler.md"


def test_reconciler_doc_example_runs() -> None:
    parser = doctest.DocTestParser()
    test = parser.get_doctest(DOC.read_text(), {}, "reconciler.md", str(DOC), 0)
    assert len(test.examples) >= 10
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    runner.run(test)
    result = runner.summarize(verbose=False)
    assert result.failed == 0
