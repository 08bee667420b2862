"""Join order on Spark: the engine's plan steps (engine/plan.py), ordered for DataFrame joins.

The in-memory engine orders a body greedily by bound columns, counting constants, because a
constant is an index lookup there. On Spark every step is a join of the rows so far with a
relation, so the costly mistake is a join that shares no variable with what is bound (a cross
join multiplying the rows). This planner builds the same steps (``Scan``, ``Filter``, ``Assign``,
``NegCheck``) in a Spark-minded order:

1. the delta atom of a semi-naive variant, then the *seed* atoms (the magic atoms of a
   demand-rewritten program, engine/magic.py: the bindings asked for, usually few rows);
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

from grantlog.engine.core import ir
from grantlog.engine.core.terms import is_anon
from grantlog.engine.plan.join import Assign, Filter, NegCheck, RulePlan, Scan, Step


def _bound_term(t: ir.Term, bound: set[str]) -> bool:
    return isinstance(t, ir.Const) or (t.name in bound and not is_anon(t))


def _scan(lit: ir.Atom, pos: int, source: str, bound: set[str]) -> Scan:
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


def order(
    body: tuple[ir.Lit, ...], first: int | None = None, seeds: Collection[str] = (),
    low: Mapping[str, frozenset[int]] | None = None,
) -> list[Step]:
    """The steps of a body (``first``: the position read from the delta; ``low``: see
    :func:`low_columns`)."""
    low = low or {}
    lowvars: set[str] = set()  # bound variables that hold few distinct values
    bound: set[str] = set()
    steps: list[Step] = []
    others = [(i, lit) for i, lit in enumerate(body) if not isinstance(lit, ir.Atom)]
    atoms = [(i, lit) for i, lit in enumerate(body) if isinstance(lit, ir.Atom)]

    def flush() -> None:
        progress = True
        while progress:
            progress = False
            for item in list(others):
                i, lit = item
                if isinstance(lit, ir.Cmp):
                    lb, rb = _bound_term(lit.left, bound), _bound_term(lit.right, bound)
                    if lb and rb:
                        steps.append(Filter(lit.op, lit.left, lit.right, i))
                    elif lit.op == "=" and lb and isinstance(lit.right, ir.Var):
                        steps.append(Assign(lit.right.name, lit.left, i))
                        bound.add(lit.right.name)
                    elif lit.op == "=" and rb and isinstance(lit.left, ir.Var):
                        steps.append(Assign(lit.left.name, lit.right, i))
                        bound.add(lit.left.name)
                    else:
                        continue
                else:
                    assert isinstance(lit, ir.Neg)
                    named = [t for t in lit.atom.args if isinstance(t, ir.Var) and not is_anon(t)]
                    if not all(t.name in bound for t in named):
                        continue
                    cols = [c for c, t in enumerate(lit.atom.args) if not is_anon(t)]
                    steps.append(NegCheck(lit.atom.rel, len(lit.atom.args), tuple(cols),
                                          tuple(lit.atom.args[c] for c in cols), i))
                others.remove(item)
                progress = True

    def take(i: int, atom: ir.Atom, source: str) -> None:
        cols = low.get(atom.rel, frozenset())
        fresh = {t.name for t in atom.args if isinstance(t, ir.Var) and t.name not in bound}
        high = {t.name for c, t in enumerate(atom.args)
                if isinstance(t, ir.Var) and c not in cols}
        lowvars.update(fresh - high)
        steps.append(_scan(atom, i, source, bound))
        flush()

    if first is not None:
        lit = body[first]
        atom = lit.atom if isinstance(lit, ir.Neg) else lit
        assert isinstance(atom, ir.Atom)
        atoms = [a for a in atoms if a[0] != first]
        take(first, atom, "delta")
    flush()
    for i, atom in [a for a in atoms if a[1].rel in seeds]:
        atoms.remove((i, atom))
        take(i, atom, "full")

    def score(a: tuple[int, ir.Atom]) -> tuple[int, int, int, int]:
        _, atom = a
        shared = {t.name for t in atom.args
                  if isinstance(t, ir.Var) and not is_anon(t) and t.name in bound}
        return (len(shared - lowvars), len(shared),
                sum(1 for t in atom.args if _bound_term(t, bound)), -a[0])

    while atoms:
        best = max(atoms, key=score)
        atoms.remove(best)
        take(best[0], best[1], "full")
    if others:  # the safety check rules this out; keep the failure loud if it ever happens
        raise AssertionError(f"unplaceable literals {[str(o) for _, o in others]}")
    return steps


def plans(
    rule: ir.Rule, recursive: frozenset[str] = frozenset(), seeds: Collection[str] = (),
    low: Mapping[str, frozenset[int]] | None = None,
) -> list[RulePlan]:
    """One plan for a rule outside recursion; one delta variant per recursive body atom."""
    rec = [i for i, lit in enumerate(rule.body)
           if isinstance(lit, ir.Atom) and lit.rel in recursive]
    if not rec:
        return [RulePlan(rule, rule.head, tuple(order(rule.body, seeds=seeds, low=low)), None)]
    return [RulePlan(rule, rule.head, tuple(order(rule.body, i, seeds, low)), i) for i in rec]
