"""Check: is ``decision(subject, operation, resource)`` true, and which rules decided it.

A decision carries cheap reasons (Cedar's "determining policies"): the rule that derived the
row first, then the rules that derived its premises in the first body instance found — read
from the rule indexes demand evaluation records per row, not from a proof search (``explain``
builds the minimal-height proof tree). :class:`Decider` holds what this needs per reasoner:
the deciding rules' premise functions (compiled once per plans: checks are the hot path) and
the decisions of the current revision, shared (they are immutable).

For front ends that must never raise (the OPA adapters, a decision service):
:func:`decide_or_deny` fails closed, and :func:`deny_reason` gives a deny's short why-not
summary (:func:`deny_summary` of a why-not tree, within :data:`REASON_LIMITS`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from grantlog.grammar.diagnostics import GrantlogError, Span, error

from ..core import ir
from ..core.results import Decision
from ..core.terms import atom_vars
from ..eval.demand import DemandContext
from ..eval.derivation import deriving_rule
from ..plan.codegen import Binder, compile_keyed
from ..plan.demand import DemandPlans
from ..plan.join import plan_bound
from .explain import Limits, Proof


def decision_relation(program: ir.Program, relation: Callable[[str], ir.Relation]) -> str:
    """The relation ``check`` decides: the program's decision relation, which must have three
    columns (``relation`` looks it up, raising ``unknown-relation`` when there is none)."""
    rel = program.decision
    r = relation(rel)
    if r.arity != 3:
        raise GrantlogError([error("arity-mismatch",
                                   f"decision relation `{rel}` must have 3 columns",
                                   r.span or Span("<api>", 0, 0, 0, 0))])
    return rel


@dataclass(frozen=True)
class ReasonPlan:
    """How :meth:`Decider.decide` reads the premises of one deciding rule."""

    names: tuple[str, ...]  # the body's named variables, as the premise function emits them
    head: tuple[tuple[int, str], ...]  # (column, variable) of the head's variables
    fn: Binder  # the body (views unfolded), keyed by the head's terms: its first instance
    #: per body atom of a derived relation: (relation, columns, terms there, its one rule
    #: when it is an unfolded view)
    premises: tuple[tuple[str, tuple[int, ...], tuple[ir.Term, ...], ir.Rule | None], ...]


class Decider:
    """Decides rows of the decision relation with their reasons, for one reasoner.

    ``plans``: the reasoner's goal-directed plans (call :meth:`replanned` when they are made
    again); ``base``: its base facts of derived relations (a row there is decided by a fact).
    """

    def __init__(self, program: ir.Program, plans: DemandPlans,
                 base: Mapping[str, Mapping[ir.Row, None]]) -> None:
        self.program = program
        self.plans = plans
        self.base = base
        self.reason_plans: dict[int, ReasonPlan] = {}
        self.at(0)

    def at(self, revision: int) -> None:
        """Decide at ``revision`` from now on: the decisions made before are dropped.

        Decisions at the current revision are shared (immutable): every denial, every allowed
        one decided by a base fact, one per list of reasons."""
        self.revision = revision
        self.denied = Decision(False, (), revision)
        self.fact = Decision(True, (), revision)
        self.allowed: dict[tuple[str, ...], Decision] = {}

    def replanned(self) -> None:
        """The plans were made again: the premise functions made from them are dropped."""
        self.reason_plans.clear()

    def decide(self, ctx: DemandContext, rel: str, row: ir.Row) -> Decision:
        """Whether ``rel(row)`` holds in ``ctx``, with the rule that derived it first, then
        the rules that derived its premises in the first body instance found."""
        if rel in self.program.virtual:
            got = ctx.demand(rel, (0, 1, 2), row)
            if not got:
                return self.denied
            rid = got[row]
            rule = self.program.rules[rid] if rid >= 0 else None
        else:
            if row not in ctx.F[rel]:
                return self.denied
            rule = self.deriving_rule(ctx, rel, row)
        if rule is None:  # a base fact of the decision relation
            return self.fact
        plan = self.reason_plans.get(rule.index)
        if plan is None:
            plan = self.reason_plans[rule.index] = self.reason_plan(rule)
        reasons = [rule.name]
        env = self.premises(ctx, plan, row)
        for prel, cols, terms, fixed in plan.premises:
            if fixed is not None:  # a view with one rule and no stored rows
                sub: ir.Rule | None = fixed
            else:
                key = tuple(t.value if isinstance(t, ir.Const) else env[t.name] for t in terms)
                sub = self.rule_of(ctx, prel, cols, key)
            if sub is not None and sub.name not in reasons:
                reasons.append(sub.name)
        names = tuple(reasons)
        decision = self.allowed.get(names)
        if decision is None:  # one per list of reasons (immutable: shared)
            decision = self.allowed[names] = Decision(True, names, self.revision)
        return decision

    def reason_plan(self, rule: ir.Rule) -> ReasonPlan:
        """What :meth:`decide` needs of a deciding rule, computed once per plans."""
        names = tuple(sorted({n for lit in rule.body for n in atom_vars(lit)}))
        head = tuple((i, t.name) for i, t in enumerate(rule.head.args) if isinstance(t, ir.Var))
        bound = frozenset(n for _, n in head if n in names)
        # the body as the decision ran it: views unfolded (their answers are not kept, their
        # lookups' are), in statistics' order
        flat = self.plans.unfold(rule)
        order = self.plans.order(flat, bound)
        probe = ir.Rule(rule.index, rule.name, ir.Atom("<premises>", tuple(map(ir.Var, names))),
                        flat.body)
        pplan = plan_bound(probe, set(bound), self.program.virtual, order)
        fn = compile_keyed(pplan, rule.head.args, self.program.virtual, first=True,
                           wide=self.plans.wide(pplan))
        premises = []
        for lit in rule.body:
            if not isinstance(lit, ir.Atom) or lit.rel not in self.plans.rules:
                continue
            cols = tuple(c for c, t in enumerate(lit.args)
                         if isinstance(t, ir.Const) or not t.name.startswith("_?"))
            fixed = (self.plans.rules[lit.rel][0] if lit.rel in self.plans.unfolded
                     else None)
            premises.append((lit.rel, cols, tuple(lit.args[c] for c in cols), fixed))
        return ReasonPlan(names, head, fn, tuple(premises))

    @staticmethod
    def premises(ctx: DemandContext, plan: ReasonPlan, row: ir.Row) -> dict[str, ir.Value]:
        """The first binding of the rule's named body variables with its head equal to
        ``row``."""
        env = {n: row[i] for i, n in plan.head}
        out: dict[ir.Row, int] = {}
        ctx.bind(plan.fn)(out.setdefault, row)  # stops at the first instance
        for first in out:
            env.update(zip(plan.names, first, strict=True))
        return env

    def rule_of(self, ctx: DemandContext, rel: str, cols: tuple[int, ...],
                key: tuple[ir.Value, ...]) -> ir.Rule | None:
        """The rule that derived the first row of ``rel`` matching ``key`` (None: a fact)."""
        if rel in self.program.virtual:
            got = ctx.demand(rel, cols, key)
            for rid in got.values():
                return self.program.rules[rid] if rid >= 0 else None
            return None
        rows = ctx.lookup(rel, cols, key)
        for r in rows:
            return self.deriving_rule(ctx, rel, r)
        return None

    def deriving_rule(self, ctx: DemandContext, rel: str, row: ir.Row) -> ir.Rule | None:
        """A rule of materialized ``rel`` whose body holds for ``row`` (None: a base fact):
        the search of engine/eval/derivation.py, each body run by the code generated for the
        current plans."""
        base = self.base.get(rel)
        if base is None or row in base:
            return None

        def holds(rule: ir.Rule, env: dict[str, ir.Value]) -> bool:
            hit: list[ir.Row] = []
            self.plans.fn(rule, frozenset(env))(ctx.F, None, ctx.index, hit.append, env)
            return bool(hit)

        return deriving_rule(self.plans.rules.get(rel, ()), row, holds)


# -- failing closed, and a deny's reason --------------------------------------------------------


@dataclass(frozen=True)
class Failure:
    """Why a check failed (then it is a deny): the diagnostic's code and message, and the
    whole error as rendered (``str`` of the exception: with the source line, for a person)."""

    code: str
    message: str
    rendered: str = ""

    def __str__(self) -> str:
        return f"{self.code}: {self.message}"


def decide_or_deny(reasoner: Any, subject: str, operation: str,
                   resource: str) -> tuple[Decision, Failure | None]:
    """One check, failing closed: an error while deciding is a deny (no reasons) carrying
    what went wrong — the first diagnostic of a :class:`GrantlogError`, else
    ``internal-error`` with the exception's type and text."""
    try:
        return reasoner.check(subject, operation, resource), None
    except GrantlogError as exc:
        d = exc.diagnostics[0] if exc.diagnostics else None
        failure = (Failure(d.code, d.message, str(exc)) if d is not None
                   else Failure("error", str(exc), str(exc)))
    except Exception as exc:  # fail closed, whatever went wrong
        message = f"{type(exc).__name__}: {exc}"
        failure = Failure("internal-error", message, message)
    return Decision(False, (), getattr(reasoner, "revision", 0)), failure


#: a deny summary's reach: the rules that could allow, and what each needs, a few levels down
#: (a deny's reason must cost about what the check did, not a whole why-not tree's search)
REASON_LIMITS = Limits(depth=3, alternatives=3, nodes=30, search=500, proofs=False)
#: why-not node kinds that are not a failure
_OK = ("holds", "fact", "rule", "comparison")


def deny_reason(reasoner: Any, subject: str, operation: str, resource: str,
                limits: Limits = REASON_LIMITS) -> str:
    """A deny's why-not summary (:func:`deny_summary`), "" when there is none to give: the
    reason is optional, so nothing that goes wrong here turns a deny into an error."""
    goal = ir.show_atom(reasoner.program.decision, (subject, operation, resource))
    try:
        tree = reasoner.explain(goal, limits).why_not
    except Exception:
        return ""
    return "" if tree is None else deny_summary(tree)


def deny_summary(tree: Proof) -> str:
    """A why-not tree in one line: for each rule that could have allowed it (at most three),
    the chain of first failed conditions down to the deepest one explained."""
    alts = [c for c in tree.children if c.kind == "alternative"] or [tree]
    out = []
    for alt in alts[:3]:
        chain: list[str] = []
        node, last = alt, None
        while True:
            failed = next((c for c in node.children if c.kind not in _OK), None)
            if failed is None:
                break
            chain.append(failed.text)
            last = failed
            subs = [c for c in failed.children if c.kind == "alternative"]
            if len(subs) != 1:  # several rules could make it hold: stop at it
                break
            node = subs[0]
        name = f"rule {alt.rule.name}" if alt.rule is not None else "the goal"
        if last is None:
            out.append(f"{name}: {alt.reason()}")
        else:
            out.append(f"{name} needs " + ", which needs ".join(chain) + f": {last.reason()}")
    more = f" (and {len(alts) - 3} more rules)" if len(alts) > 3 else ""
    return "; ".join(out) + more if out else "no rule allows it"
