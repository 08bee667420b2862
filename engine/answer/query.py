"""``query`` / ``ask`` / ``plan``: a goal compiled once per reasoner, its body ordered by the
current statistics (engine/plan/stats.py) and run over a read's view."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..compile.compiler import compile_goal
from ..core import ir
from ..core.results import Answers
from ..eval.demand import DemandContext
from ..plan.codegen import RunFn, compile_plan
from ..plan.demand import DemandPlans
from ..plan.join import RulePlan, plan_bound


@dataclass(frozen=True)
class Goal:
    """A compiled goal: its body, named variables, the rule it is run as and its plan in
    source order; ``ordered``: its plans by atom order (chosen from statistics)."""

    body: tuple[ir.Lit, ...]
    names: tuple[str, ...]
    rule: ir.Rule
    fn: RunFn
    ordered: dict[tuple[int, ...], RunFn] = field(default_factory=dict)


class Goals:
    """A reasoner's compiled goals, by their text."""

    def __init__(self, program: ir.Program) -> None:
        self.program = program
        self._goals: dict[str, Goal] = {}

    def __getitem__(self, text: str) -> Goal:
        g = self._goals.get(text)
        if g is None:
            body, names = compile_goal(self.program, text)
            head = ir.Atom("<goal>", tuple(ir.Var(n) for n in names))
            rule = ir.Rule(-1, "<goal>", head, body)
            g = Goal(body, tuple(names), rule, compile_plan(plan_bound(rule, set())))
            self._goals[text] = g
        return g

    def plan(self, g: Goal, plans: DemandPlans) -> RulePlan:
        """The goal's plan, its atoms in the order the current statistics choose."""
        order = plans.order(g.rule, frozenset())
        return (plan_bound(g.rule, set()) if order is None
                else plan_bound(g.rule, set(), self.program.virtual, order))

    def run_fn(self, g: Goal, plans: DemandPlans) -> RunFn:
        """The goal's plan ordered by the current statistics, compiled (once per order)."""
        order = plans.order(g.rule, frozenset())
        if order is None:
            return g.fn
        fn = g.ordered.get(order)
        if fn is None:
            fn = g.ordered[order] = compile_plan(
                plan_bound(g.rule, set(), self.program.virtual, order))
        return fn

    def answers(self, g: Goal, ctx: DemandContext, plans: DemandPlans,
                revision: int) -> Answers[dict[str, ir.Value]]:
        """Every binding of the goal's named variables over ``ctx``, sorted."""
        out: set[ir.Row] = set()
        self.run_fn(g, plans)(ctx.F, None, ctx.index, out.add, {})
        return Answers((dict(zip(g.names, row, strict=True))
                        for row in sorted(out, key=ir.row_key)), revision)
