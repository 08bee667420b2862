"""Which rules derive a row: the one search behind check's reasons, proofs and DRed.

A rule can derive ``rel(row)`` when its head matches the row (:func:`heads`: the head's
variables bound to the row's values) and its body has an instance with those values over the
current state. The reasons of a check (engine/answer/decide.py) ask for the first such rule,
proofs (engine/answer/explain/prover.py) for the rule instances themselves, incremental
maintenance (engine/eval/incremental.py) whether any exists. Each caller runs the body its own
way: ``check`` with the code generated for its plans (its hot path), the others with
:class:`Derivations`, which plans each (rule, bound head variables) once and solves it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any

from ..core import ir
from ..core.terms import unify
from ..plan.codegen import solve
from ..plan.join import RulePlan, plan_bound

Env = dict[str, ir.Value]
#: a read of the state: relation -> rows, and the index getter ``I(rel, cols)``
Rows = Mapping[str, Mapping[ir.Row, int]]
IndexFn = Callable[[str, tuple[int, ...]], Mapping[Any, Iterable[ir.Row]]]
#: a body's atom order for some bound variables (body positions; None: no preference)
Order = Callable[[ir.Rule, frozenset[str]], Sequence[int] | None]


def heads(rules: Iterable[ir.Rule], row: ir.Row) -> Iterator[tuple[ir.Rule, Env]]:
    """The rules (in the order given) whose head matches ``row``, each with its head
    variables bound to the row's values."""
    for rule in rules:
        env = unify(rule.head, row)
        if env is not None:
            yield rule, env


def deriving_rule(rules: Iterable[ir.Rule], row: ir.Row,
                  holds: Callable[[ir.Rule, Env], bool]) -> ir.Rule | None:
    """The first of ``rules`` whose head matches ``row`` and whose body ``holds`` with the
    head's values bound (None: none does)."""
    for rule, env in heads(rules, row):
        if holds(rule, env):
            return rule
    return None


class Derivations:
    """The rule instances deriving rows of one program, over any state (``F``, ``index``)."""

    def __init__(self, program: ir.Program, virtual: frozenset[str] = frozenset(),
                 order: Order | None = None) -> None:
        """``virtual``: relations answered on demand, which a plan reads after the stored
        ones with as many columns bound (engine/plan/join.py ``Policy``); ``order``: the atom
        order statistics choose for a body with some variables bound (None: bound columns
        decide), e.g. engine/plan/demand.py ``DemandPlans.order``."""
        self.virtual = virtual
        self.order = order
        self.rules: dict[str, list[ir.Rule]] = {}
        for r in program.rules:
            self.rules.setdefault(r.head.rel, []).append(r)
        #: body plans by (rule, the head variables bound)
        self.plans: dict[tuple[int, tuple[str, ...]], RulePlan] = {}

    def plan(self, rule: ir.Rule, bound: Iterable[str]) -> RulePlan:
        """``rule``'s body planned with ``bound`` variables known (made once)."""
        k = (rule.index, tuple(sorted(bound)))
        p = self.plans.get(k)
        if p is None:
            p = self.plans[k] = plan_bound(
                rule, set(k[1]), self.virtual,
                None if self.order is None else self.order(rule, frozenset(k[1])))
        return p

    def heads(self, rel: str, row: ir.Row) -> Iterator[tuple[ir.Rule, Env]]:
        """The rules of ``rel`` (in source order) whose head matches ``row``, with bindings."""
        return heads(self.rules.get(rel, ()), row)

    def instances(self, rule: ir.Rule, env: Env, F: Rows,
                  index: IndexFn) -> Iterator[Env]:
        """Every binding of ``rule``'s variables extending ``env`` under which its body holds."""
        return solve(self.plan(rule, env), F, None, index, env)

    def of(self, rel: str, row: ir.Row, F: Rows,
           index: IndexFn) -> Iterator[tuple[ir.Rule, Env]]:
        """Every rule instance deriving ``rel(row)``: rules in source order, then instances."""
        for rule, env in self.heads(rel, row):
            for inst in self.instances(rule, env, F, index):
                yield rule, inst

    def rule(self, rel: str, row: ir.Row, F: Rows, index: IndexFn) -> ir.Rule | None:
        """The first rule with an instance deriving ``rel(row)`` (None: no rule derives it)."""
        first = next(self.of(rel, row, F, index), None)
        return None if first is None else first[0]
