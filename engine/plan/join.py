"""Rule bodies → ordered join plans, with semi-naive delta variants for recursive strata.

A plan is a list of steps run left to right, each binding more variables:

* :class:`Scan` — a positive atom: iterate a relation (or its delta), or look up a hash index on
  the columns already bound (constants and bound variables), or test membership when every
  column is bound.
* :class:`Filter` — a comparison whose variables are bound.
* :class:`Assign` — ``X = term`` where ``X`` is not bound yet.
* :class:`NegCheck` — ``not atom`` once its named variables are bound (anonymous ones are
  wildcards).

Join order is sideways information passing, one loop (:func:`greedy`) with the score as the
caller's policy: after the delta atom (if any), take the best-scored atom given what is bound
(:class:`Policy`, the in-memory default: most bound columns, ties in source order); place
comparisons and negations as soon as they are bound. Goal-directed plans (engine/eval/demand.py)
take the order engine/plan/stats.py estimates cheapest from the database's sizes; the Spark
planner (spark_bridge/planner.py) passes its own policy; the demand rewrite's ``sips``
(engine/plan/magic.py) runs the same loop.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from ..core import ir
from ..core.terms import is_anon

Source = str  # "full" or "delta"


@dataclass(frozen=True)
class Scan:
    rel: str
    source: Source
    arity: int
    key_cols: tuple[int, ...]
    key_terms: tuple[ir.Term, ...]
    out: tuple[tuple[int, str], ...]  # column -> newly bound variable
    eqs: tuple[tuple[int, str], ...]  # column must equal a variable bound earlier in this atom
    literal: int  # position in the rule body


@dataclass(frozen=True)
class NegCheck:
    rel: str
    arity: int
    key_cols: tuple[int, ...]
    key_terms: tuple[ir.Term, ...]
    literal: int


@dataclass(frozen=True)
class Filter:
    op: str
    left: ir.Term
    right: ir.Term
    literal: int


@dataclass(frozen=True)
class Assign:
    var: str
    value: ir.Term
    literal: int


Step = Scan | NegCheck | Filter | Assign


@dataclass(frozen=True)
class RulePlan:
    rule: ir.Rule
    head: ir.Atom
    steps: tuple[Step, ...]
    delta_literal: int | None  # body position read from the delta, or None
    pre_bound: tuple[str, ...] = ()

    @property
    def delta_rel(self) -> str | None:
        if self.delta_literal is None:
            return None
        lit = self.rule.body[self.delta_literal]
        atom = lit.atom if isinstance(lit, ir.Neg) else lit
        assert isinstance(atom, ir.Atom)
        return atom.rel

    def describe(self) -> str:
        parts = []
        for s in self.steps:
            if isinstance(s, Scan):
                how = "delta " if s.source == "delta" else ""
                if len(s.key_cols) == s.arity:
                    parts.append(f"member {how}{s.rel}{list(s.key_cols)}")
                elif s.key_cols:
                    parts.append(f"lookup {how}{s.rel}{list(s.key_cols)}")
                else:
                    parts.append(f"scan {how}{s.rel}")
            elif isinstance(s, NegCheck):
                parts.append(f"not {s.rel}{list(s.key_cols)}")
            elif isinstance(s, Filter):
                parts.append(f"filter {s.left} {s.op} {s.right}")
            else:
                parts.append(f"let {s.var} = {s.value}")
        return " -> ".join(parts)


def _bound_term(t: ir.Term, bound: set[str]) -> bool:
    return isinstance(t, ir.Const) or (t.name in bound and not is_anon(t))


def _scan(lit: ir.Atom, pos: int, source: Source, bound: set[str]) -> Scan:
    key_cols: list[int] = []
    key_terms: list[ir.Term] = []
    out: list[tuple[int, str]] = []
    eqs: list[tuple[int, str]] = []
    fresh: set[str] = set()
    for col, t in enumerate(lit.args):
        if _bound_term(t, bound):
            key_cols.append(col)
            key_terms.append(t)
        else:
            assert isinstance(t, ir.Var)
            if t.name in fresh:
                eqs.append((col, t.name))
            else:
                fresh.add(t.name)
                out.append((col, t.name))
    bound.update(fresh)
    return Scan(lit.rel, source, len(lit.args), tuple(key_cols), tuple(key_terms),
                tuple(out), tuple(eqs), pos)


T = TypeVar("T")


def comparison(lit: ir.Cmp, is_bound: Callable[[ir.Term], bool]) -> bool | tuple[ir.Var, ir.Term]:
    """How a comparison is placed, given which terms are bound: True, a filter (both sides
    bound); ``(X, term)``, an assignment ``X = term`` (``=`` with one side a variable not
    bound yet, the other bound); False, not yet."""
    lb, rb = is_bound(lit.left), is_bound(lit.right)
    if lb and rb:
        return True
    if lit.op == "=" and lb and isinstance(lit.right, ir.Var):
        return (lit.right, lit.left)
    if lit.op == "=" and rb and isinstance(lit.left, ir.Var):
        return (lit.left, lit.right)
    return False


def place_ready(pending: list[tuple[int, T]], place: Callable[[int, T], bool]) -> None:
    """Place the ``pending`` comparisons and negations (body position, literal) as soon as
    they are ready, until none is: ``place`` places one (True) or finds it not ready (False);
    an assignment placed can make another literal ready."""
    progress = True
    while progress:
        progress = False
        for item in list(pending):
            if place(*item):
                pending.remove(item)
                progress = True


def greedy(items: Iterable[T], score: Callable[[T], Any], take: Callable[[T], None]) -> None:
    """The one sideways-information-passing loop every planner runs (memory, statistics,
    magic sets, Spark): take the best-scored item left (highest ``score``; ties: the first
    in ``items``) until none is; ``take`` places it and binds its variables, which the next
    round's scores see. Each caller passes its own score: the policy."""
    left = list(items)
    while left:
        best = max(left, key=score)
        left.remove(best)
        take(best)


class Policy:
    """How :func:`order_body` chooses the next positive atom: the highest :meth:`score`;
    :meth:`taking` sees each atom (the delta one too) just before it is read. This default
    is the in-memory engine's: most bound columns first, counting constants (an index
    lookup); a fully bound atom (a membership test) before a lookup; a stored relation before
    a virtual one, whose lookups evaluate rules; ties in source order."""

    def __init__(self, virtual: frozenset[str] = frozenset()) -> None:
        self.virtual = virtual

    def score(self, pos: int, atom: ir.Atom, bound: set[str]) -> Any:
        n = sum(1 for t in atom.args if not is_anon(t) and _bound_term(t, bound))
        full = n == len(atom.args)
        return (1 if n or full else 0, 1 if full else 0, 0 if atom.rel in self.virtual else 1,
                n)

    def taking(self, pos: int, atom: ir.Atom, bound: set[str]) -> None:
        """Called before ``atom`` (at body position ``pos``) is read, ``bound`` not yet
        updated."""


def order_body(
    body: tuple[ir.Lit, ...],
    pre_bound: set[str] | None = None,
    first: int | None = None,
    virtual: frozenset[str] = frozenset(),
    atom_order: Sequence[int] | None = None,
    policy: Policy | None = None,
) -> list[Step]:
    """Steps for a body: the delta literal first (``first``), then the positive atoms in
    ``atom_order`` (body positions, e.g. chosen from statistics by engine/plan/stats.py) or
    greedily by the ``policy``'s score (default: bound columns, :class:`Policy`; the Spark
    planner passes its own), each comparison and negation as soon as it is bound — except,
    in an ``atom_order`` plan, a negation of a virtual relation: its lookup evaluates rules,
    so it waits until every positive atom has been read (``not denied(U, P, O)`` is asked
    only where an ALLOW applied, not for every object looked at)."""
    bound = set(pre_bound or ())
    policy = policy or Policy(virtual)
    defer = atom_order is not None and bool(virtual) and any(
        isinstance(lit, ir.Atom) for lit in body)
    steps: list[Step] = []
    others = [(i, lit) for i, lit in enumerate(body) if not isinstance(lit, ir.Atom)]
    atoms = [(i, lit) for i, lit in enumerate(body) if isinstance(lit, ir.Atom)]

    def place(i: int, lit: ir.Lit, last: bool) -> bool:
        if isinstance(lit, ir.Cmp):
            how = comparison(lit, lambda t: _bound_term(t, bound))
            if how is False:
                return False
            if how is True:
                steps.append(Filter(lit.op, lit.left, lit.right, i))
            else:
                var, value = how
                steps.append(Assign(var.name, value, i))
                bound.add(var.name)
            return True
        assert isinstance(lit, ir.Neg)
        named = [t for t in lit.atom.args if isinstance(t, ir.Var) and not is_anon(t)]
        if not all(t.name in bound for t in named):
            return False
        if defer and not last and lit.atom.rel in virtual:
            return False
        cols = [c for c, t in enumerate(lit.atom.args) if not is_anon(t)]
        steps.append(NegCheck(lit.atom.rel, len(lit.atom.args), tuple(cols),
                              tuple(lit.atom.args[c] for c in cols), i))
        return True

    def flush(last: bool = False) -> None:
        place_ready(others, lambda i, lit: place(i, lit, last))

    if first is not None:
        # the delta literal goes first; a negated literal read from a delta binds its atom's
        # variables from the delta rows (incremental maintenance, engine/eval/incremental.py) and
        # stays in the body as a check: `not p(_)` may still be false because of other rows
        lit = body[first]
        atom = lit.atom if isinstance(lit, ir.Neg) else lit
        assert isinstance(atom, ir.Atom)
        atoms = [a for a in atoms if a[0] != first]
        policy.taking(first, atom, bound)
        steps.append(_scan(atom, first, "delta", bound))
    flush()
    if atom_order is not None:
        by_pos = dict(atoms)
        assert sorted(atom_order) == sorted(by_pos), "atom_order must list every atom"
        for n, i in enumerate(atom_order, 1):
            a = by_pos[i]
            assert isinstance(a, ir.Atom)
            policy.taking(i, a, bound)
            steps.append(_scan(a, i, "full", bound))
            flush(n == len(atom_order))
        atoms = []

    def take(item: tuple[int, ir.Atom]) -> None:
        i, atom = item
        policy.taking(i, atom, bound)
        steps.append(_scan(atom, i, "full", bound))
        flush()

    greedy(atoms, lambda a: policy.score(a[0], a[1], bound), take)
    if others:  # the safety check rules this out; keep the failure loud if it ever happens
        raise AssertionError(f"unplaceable literals {[str(o) for _, o in others]}")
    return steps


def plan_rule(rule: ir.Rule, recursive_rels: frozenset[str] = frozenset(),
              policy: Callable[[], Policy] = Policy) -> list[RulePlan]:
    """One plan for a rule outside recursion; one delta variant per recursive body atom
    (``policy``: makes the join-order policy of each, :class:`Policy` by default)."""
    rec = [i for i, lit in enumerate(rule.body)
           if isinstance(lit, ir.Atom) and lit.rel in recursive_rels]
    if not rec:
        return [RulePlan(rule, rule.head, tuple(order_body(rule.body, policy=policy())), None)]
    return [RulePlan(rule, rule.head, tuple(order_body(rule.body, first=i, policy=policy())), i)
            for i in rec]


def plan_variant(rule: ir.Rule, position: int) -> RulePlan:
    """The rule with body literal ``position`` (an atom or a negated atom) read from a delta."""
    return RulePlan(rule, rule.head, tuple(order_body(rule.body, first=position)), position)


def plan_bound(
    rule: ir.Rule, pre_bound: set[str], virtual: frozenset[str] = frozenset(),
    atom_order: Sequence[int] | None = None,
) -> RulePlan:
    """A plan for the body with some variables already bound (explanations, queries, demand)."""
    steps = order_body(rule.body, pre_bound, virtual=virtual, atom_order=atom_order)
    return RulePlan(rule, rule.head, tuple(steps), None, tuple(sorted(pre_bound)))
