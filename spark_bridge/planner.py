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

from collections.abc import Callable, Collection, Mapping
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


def copies(plan: RulePlan) -> bool:
    """Whether ``plan`` reads one atom and its head keeps every variable of it (its rows are
    as distinct as the relation's: every relation on Spark is)."""
    if len(plan.steps) != 1 or not isinstance(plan.steps[0], Scan):
        return False
    s = plan.steps[0]
    head = {t.name for t in plan.head.args if isinstance(t, ir.Var)}
    return all(not is_anon(ir.Var(name)) and name in head for _col, name in s.out)


def unique(plan: RulePlan) -> bool:
    """Whether ``plan``'s head rows are distinct without a ``distinct``: its head keeps every
    variable its scans bind and no scan drops a column (``_``), so each head row is one
    binding of the body, and the bindings of a join of distinct relations (every relation on
    Spark is) are distinct. :func:`copies` is the one-atom case."""
    head = {t.name for t in plan.head.args if isinstance(t, ir.Var)}
    return all(not is_anon(ir.Var(name)) and name in head
               for s in plan.steps if isinstance(s, Scan) for _col, name in s.out)


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


class Part:
    """Two of a rule's body atoms over small relations, linked by variables nothing else in
    the rule reads (:func:`factor`): joined on their own, the linking variables dropped and
    the rows de-duplicated, they become one small relation of the ``args`` the rest of the
    rule reads (``rule``: ``<name>(args) :- <the two atoms>``)."""

    def __init__(self, rule: ir.Rule, positions: tuple[int, ...], links: tuple[str, ...],
                 key: tuple[Any, ...], low: frozenset[int]) -> None:
        self.rule = rule
        #: where the atoms are in the factored rule's body
        self.positions = positions
        #: the linking variables (joined on, then dropped)
        self.links = links
        #: the same pair in any rule (variables renamed by first occurrence) has the same key
        self.key = key
        #: the columns of ``rule.head`` that hold few distinct values (:func:`low_columns`)
        self.low = low


def factor(
    rule: ir.Rule, small: Callable[[str], bool], seeds: Collection[str] = (),
    low: Mapping[str, frozenset[int]] | None = None,
) -> list[Part]:
    """Eager projection of small sub-joins: the pairs of positive atoms of ``rule`` over
    ``small`` relations that are linked by *local* variables (read by no other literal nor the
    head; not only few-valued ones, see :func:`low_columns`), and share no many-valued
    variable with a seed (the demand reaches those atoms directly: joined from the seed's
    bindings, they stay as few as the demand). Joined once and de-duplicated, such a pair is
    read by the rest of the rule once instead of once per path through it:
    ``p(U, O) :- seed(P, O), anc(A, O), holds(U, R), grant(R, P, A)`` joins ``anc`` with
    the distinct ``(U, P, A)`` of ``holds ⋈ grant``, not with every role ``R`` linking them.
    :func:`with_parts` puts the pairs kept in the rule; whether the pair's join is small
    enough is for the caller to judge (a pair linked through a variable of one value is a
    cross product)."""
    low = low or {}
    uses: dict[str, set[int]] = {}  # variable -> body positions reading it (-1: the head)
    for t in rule.head.args:
        if isinstance(t, ir.Var):
            uses.setdefault(t.name, set()).add(-1)
    for i, lit in enumerate(rule.body):
        terms: tuple[ir.Term, ...] = (lit.atom.args if isinstance(lit, ir.Neg) else
                                      lit.args if isinstance(lit, ir.Atom) else
                                      (lit.left, lit.right))
        for t in terms:
            if isinstance(t, ir.Var) and not is_anon(t):
                uses.setdefault(t.name, set()).add(i)

    def high(i: int) -> set[str]:
        """the many-valued variables of body atom ``i``"""
        lit = rule.body[i]
        assert isinstance(lit, ir.Atom)
        cols = low.get(lit.rel, frozenset())
        return {t.name for c, t in enumerate(lit.args)
                if isinstance(t, ir.Var) and not is_anon(t) and c not in cols}

    seeded: set[str] = set()
    for i, lit in enumerate(rule.body):
        if isinstance(lit, ir.Atom) and lit.rel in seeds:
            seeded |= high(i)
    cand = {i for i, lit in enumerate(rule.body)
            if isinstance(lit, ir.Atom) and lit.rel not in seeds and small(lit.rel)
            and not high(i) & seeded}
    links: dict[tuple[int, ...], list[str]] = {}
    for name, at in uses.items():
        if len(at) >= 2 and at <= cand and all(name in high(i) for i in at):
            links.setdefault(tuple(sorted(at)), []).append(name)
    # the pairs, each atom in one pair at most (an atom linked to two others stays)
    linked: dict[int, int] = {}
    for pos in links:
        for i in pos:
            linked[i] = linked.get(i, 0) + 1
    parts: list[Part] = []
    for pos, names in links.items():
        if len(pos) != 2 or any(linked[i] != 1 for i in pos) or len(rule.body) == 2:
            continue  # (a rule of the pair alone already is its join, de-duplicated)
        outer: list[str] = []  # the pair's variables read elsewhere, in order of occurrence
        for i in pos:
            lit = rule.body[i]
            assert isinstance(lit, ir.Atom)
            for t in lit.args:
                if (isinstance(t, ir.Var) and not is_anon(t) and t.name not in outer
                        and not uses[t.name] <= set(pos)):
                    outer.append(t.name)
        lowcols = frozenset(k for k, name in enumerate(outer)
                            if not any(name in high(i) for i in pos))
        body = tuple(rule.body[i] for i in pos)
        head = ir.Atom(f"{rule.name}__part", tuple(ir.Var(n) for n in outer))
        parts.append(Part(ir.Rule(rule.index, head.rel, head, body), pos, tuple(names),
                          _canonical(head, body), lowcols))
    return parts


def with_parts(rule: ir.Rule, parts: Mapping[str, Part]) -> ir.Rule:
    """``rule`` with each part's two atoms replaced by one atom over the relation it is
    given (the relation's columns: the part's head variables)."""
    replace: dict[int, ir.Atom | None] = {}
    for rel, part in parts.items():
        first, *rest = part.positions
        replace[first] = ir.Atom(rel, part.rule.head.args)
        for i in rest:
            replace[i] = None
    body: list[ir.Lit] = []
    for i, lit in enumerate(rule.body):
        got = replace.get(i, lit) if i in replace else lit
        if got is not None:
            body.append(got)
    return ir.Rule(rule.index, rule.name, rule.head, tuple(body), rule.doc, rule.span,
                   rule.labelled)


def _canonical(head: ir.Atom, body: tuple[ir.Lit, ...]) -> tuple[Any, ...]:
    """a pair's atoms and outer variables with the variables numbered by first occurrence"""
    names: dict[str, int] = {}

    def term(t: ir.Term) -> Any:
        if isinstance(t, ir.Const):
            return ("c", t.value)
        if is_anon(t):
            return ("_",)
        return ("v", names.setdefault(t.name, len(names)))

    atoms = tuple((lit.rel, tuple(term(t) for t in lit.args))
                  for lit in body if isinstance(lit, ir.Atom))
    return atoms, tuple(term(t) for t in head.args)
