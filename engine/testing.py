"""Running the `test` blocks of rule files (``grantlog test``)."""

from __future__ import annotations

from dataclasses import dataclass, field

from grantlog.grammar.diagnostics import Span

from . import ir
from .reasoner import Reasoner


@dataclass
class Failure:
    span: Span
    message: str


@dataclass
class TestResult:
    name: str
    file: str
    span: Span
    failures: list[Failure] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        return not self.failures


def run_test(program: ir.Program, case: ir.TestCase) -> TestResult:
    """Evaluate the program with the test's facts added, then check each expectation."""
    r = Reasoner(program)
    by_rel: dict[str, list[ir.Row]] = {}
    for f in case.facts:
        by_rel.setdefault(f.rel, []).append(f.row)
    for rel, rows in by_rel.items():
        r.insert(rel, rows)
    result = TestResult(case.name, case.file, case.span)
    for e in case.expects:
        answers = r.query(e.text)
        if e.negated and answers:
            shown = ", ".join(_show(a) for a in answers[:3])
            result.failures.append(Failure(
                e.span, f"expected no answer for `{e.text}`, got {len(answers)}: {shown}"))
        elif not e.negated and not answers:
            result.failures.append(Failure(e.span, f"expected `{e.text}` to hold, it does not"))
    return result


def _show(answer: dict[str, ir.Value]) -> str:
    if not answer:
        return "true"
    return "{" + ", ".join(f"{k} = {ir.show_value(v)}" for k, v in answer.items()) + "}"


def run_tests(program: ir.Program, files: set[str] | None = None) -> list[TestResult]:
    """Run the tests declared in ``files`` (all of the program's tests when None)."""
    return [run_test(program, t) for t in program.tests if files is None or t.file in files]
