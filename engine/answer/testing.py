"""Running the `test` blocks of rule files (``grantlog test``)."""

from __future__ import annotations

from dataclasses import dataclass, field

from grantlog.grammar.diagnostics import Span

from ..core import ir
from ..plan.codegen import compile_plan
from ..plan.join import plan_bound
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


class _Fired(Exception):
    pass


def _stop(_row: ir.Row) -> None:
    raise _Fired


@dataclass
class Coverage:
    """Which rules fired (derived at least one row) in at least one test."""

    rules: dict[tuple[str, int, int], ir.Rule] = field(default_factory=dict)
    fired: set[tuple[str, int, int]] = field(default_factory=set)

    @staticmethod
    def key(rule: ir.Rule) -> tuple[str, int, int]:
        return (rule.span.file, rule.span.line, rule.span.col)

    def observe(self, program: ir.Program, r: Reasoner) -> None:
        ctx = r.view()
        for rule in program.rules:
            k = self.key(rule)
            self.rules.setdefault(k, rule)
            if k in self.fired:
                continue
            fn = compile_plan(plan_bound(rule, set()))
            try:
                fn(ctx.F, None, ctx.index, _stop, {})
            except _Fired:
                self.fired.add(k)

    def missed(self) -> list[ir.Rule]:
        return [self.rules[k] for k in sorted(self.rules) if k not in self.fired]

    def render(self) -> str:
        total = len(self.rules)
        pct = 100.0 * len(self.fired) / total if total else 100.0
        lines = [f"rule coverage: {len(self.fired)}/{total} rules fired in some test ({pct:.1f}%)"]
        for rule in self.missed():
            lines.append(f"  not exercised: {rule.span}: {rule.name}")
        return "\n".join(lines)

    def to_dict(self) -> dict[str, object]:
        return {
            "rules": len(self.rules),
            "fired": len(self.fired),
            "missed": [{"rule": r.name, "at": str(r.span)} for r in self.missed()],
        }


def given(program: ir.Program, case: ir.TestCase) -> Reasoner:
    """A reasoner over ``program`` with the test's given facts added (what its expectations
    are asked of: the explorer asks a failing one's why-not of it too)."""
    r = Reasoner(program)
    by_rel: dict[str, list[ir.Row]] = {}
    for f in case.facts:
        by_rel.setdefault(f.rel, []).append(f.row)
    for rel, rows in by_rel.items():
        r.insert(rel, rows)
    return r


def run_test(
    program: ir.Program, case: ir.TestCase, coverage: Coverage | None = None
) -> TestResult:
    """Evaluate the program with the test's facts added, then check each expectation."""
    r = given(program, case)
    result = TestResult(case.name, case.file, case.span)
    for e in case.expects:
        answers = r.query(e.text)
        if e.negated and answers:
            shown = ", ".join(_show(a) for a in answers[:3])
            result.failures.append(Failure(
                e.span, f"expected no answer for `{e.text}`, got {len(answers)}: {shown}"))
        elif not e.negated and not answers:
            result.failures.append(Failure(e.span, f"expected `{e.text}` to hold, it does not"))
    if coverage is not None:
        coverage.observe(program, r)
    return result


def _show(answer: dict[str, ir.Value]) -> str:
    if not answer:
        return "true"
    return "{" + ", ".join(f"{k} = {ir.show_value(v)}" for k, v in answer.items()) + "}"


def run_tests(
    program: ir.Program, files: set[str] | None = None, coverage: Coverage | None = None
) -> list[TestResult]:
    """Run the tests declared in ``files`` (all of the program's tests when None)."""
    return [run_test(program, t, coverage) for t in program.tests
            if files is None or t.file in files]
