"""Join order on Spark: the engine's plan steps (engine/plan/join.py), ordered for DataFrame joins.

The in-memory engine orders a body greedily by bound columns, counting constants, because a
constant is an index lookup there. On Spark every step is a join of the rows so far with a
relation, so the costly mistake is a join that shares no variable with what is bound (a cross
join multiplying the rows). This planner builds the same steps (``Scan``, ``Filter``, ``Assign``,
``NegCheck``) in a Spark-minded order:

1. the delta atom of a semi-naive variant, then the *seed* atoms (the magic atoms of a
   demand-rewritten program, engine/plan/magic.py: the bindings asked for, usually few rows);
2. then, repeatedly, the atom sharing most bound variables with the rows so far, not counting
   variables that hold few distinct values (:func:`low_columns`: a privilege name copied from
   constants joins every grant of that privilege to every binding); an atom that shares none
   only when no other is left, and then the one with most constants; ties: more shared
   variables, more bound or constant columns, then source order;
3. comparisons and negations as soon as their variables are bound.

For a rule with no delta and no seed this is the engine's order except that connected atoms
come first; plans stay printable with ``RulePlan.describe``.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any

from grantlog.engine.core import ir
from grantlog.engine.core.terms import is_anon
from grantlog.engine.plan.join import Filter, NegCheck, Policy, RulePlan, Scan, plan_rule


def low_columns(program: ir.Program, inputs: Collection[str] = ()) -> dict[str, frozenset[int]]:
    """Columns that can only hold a few distinct values: those every rule fills with a
    constant, or with a variable read from such a column; columns of relations given only as
    facts in the rule files. A join on such a column alone multiplies rows (``grant(R, P, A)``
    joined on the privilege ``P`` pairs every grant of it with every binding); the planner
    prefers joins on other variables. The greatest fixpoint: assume every derived column low,
    drop what a rule contradicts."""
    derived = program.derived
    facts_only = {f.rel for f in program.facts} - derived - set(inputs)
    low: dict[str, set[int]] = {}
    for rel, r in program.relations.items():
        if rel in derived or rel in facts_only:
            low[rel] = set(range(r.arity))
        else:
            low[rel] = set()
    for rel in derived & set(inputs):
        low[rel] = set()
    changed = True
    while changed:
        changed = False
        for rule in program.rules:
            head = rule.head.rel
            if not low[head]:
                continue
            lowvars: set[str] = set()
            for lit in rule.body:
                if isinstance(lit, ir.Atom):
                    lowvars |= {t.name for c, t in enumerate(lit.args)
                                if isinstance(t, ir.Var) and c in low[lit.rel]}
                elif isinstance(lit, ir.Cmp) and lit.op == "=":
                    for x, y in ((lit.left, lit.right), (lit.right, lit.left)):
                        if isinstance(x, ir.Var) and isinstance(y, ir.Const):
                            lowvars.add(x.name)
            for c, t in enumerate(rule.head.args):
                if c in low[head] and isinstance(t, ir.Var) and t.name not in lowvars:
                    low[head].discard(c)
                    changed = True
    return {rel: frozenset(cols) for rel, cols in low.items()}


class Connected(Policy):
    """Spark's join order (see the module doc): the seed atoms first, in source order; then
    the atom sharing most bound variables that hold many distinct values, then most shared
    variables, most bound or constant columns, source order."""

    def __init__(self, seeds: Collection[str] = (),
                 low: Mapping[str, frozenset[int]] | None = None) -> None:
        super().__init__()
        self.seeds = seeds
        self.low = low or {}
        self.lowvars: set[str] = set()  # bound variables that hold few distinct values

    def score(self, pos: int, atom: ir.Atom, bound: set[str]) -> Any:
        if atom.rel in self.seeds:
            return (1, -pos)
        shared = {t.name for t in atom.args
                  if isinstance(t, ir.Var) and not is_anon(t) and t.name in bound}
        return (0, len(shared - self.lowvars), len(shared),
                sum(1 for t in atom.args if isinstance(t, ir.Const) or t.name in shared),
                -pos)

    def taking(self, pos: int, atom: ir.Atom, bound: set[str]) -> None:
        cols = self.low.get(atom.rel, frozenset())
        fresh = {t.name for t in atom.args if isinstance(t, ir.Var) and t.name not in bound}
        high = {t.name for c, t in enumerate(atom.args)
                if isinstance(t, ir.Var) and c not in cols}
        self.lowvars.update(fresh - high)


def plans(
    rule: ir.Rule, recursive: frozenset[str] = frozenset(), seeds: Collection[str] = (),
    low: Mapping[str, frozenset[int]] | None = None,
) -> list[RulePlan]:
    """One plan for a rule outside recursion; one delta variant per recursive body atom."""
    return plan_rule(rule, recursive, lambda: Connected(seeds, low))


def needed(plan: RulePlan) -> list[set[str]]:
    """Per step of ``plan``, the variables read at or after it (by a later step's key,
    comparison or assignment, or by the head): what a join must keep from that step on."""
    steps = plan.steps
    need: list[set[str]] = [set() for _ in steps]
    later = {t.name for t in plan.head.args if isinstance(t, ir.Var)}
    for i in range(len(steps) - 1, -1, -1):
        need[i] = set(later)
        s = steps[i]
        terms: tuple[ir.Term, ...] = s.key_terms if isinstance(s, Scan | NegCheck) else \
            (s.left, s.right) if isinstance(s, Filter) else (s.value,)
        later |= {t.name for t in terms if isinstance(t, ir.Var)}
    return need
