"""The rows derivable through a value: a role review's candidates (engine/answer/review.py).

A role review keeps a decision of a holder when the base facts of its proof name the role
(``_path``: a proof's ``fact`` leaves; a negated atom is an ``absent`` leaf, with no facts).
Asking every decision of every holder and explaining each does not scale: at 1M tables a
holder's decisions are every table under every grant of every role it holds. Here only the
rows that have *some* derivation using at least one base fact naming the value are found —
a superset of those whose proof names it, which the review's ``_path`` test then filters
exactly as before.

Sound by induction on a proof: the fact leaf naming the value is a base fact naming it; a
rule instance with such a row among its positive body rows, the others holding in the model
and its negated atoms absent from it, derives a row found here. So it is the semi-naive
delta of the base facts naming the value, everything else stable: per stratum in dependency
order, each rule's delta variant per positive body atom (that atom read from the delta,
the other atoms from the model, as engine/eval/seminaive.py's and incremental.py's
variants) is run over the rows found below; a recursive stratum repeats its own variants on
the rows it found until none is new. Negated atoms read the model, never the delta (their
facts are not in a proof). Only the relations a positive chain of body atoms leads from to
the asked relation are followed. Every row found holds in the model.

A variant is the rule's body less the delta atom, planned with that atom's variables bound
and ordered by the reasoner's statistics (engine/plan/demand.py ``DemandPlans.order``): the
plans a check's lookups use, so each delta row is followed by indexed lookups (virtual
relations answered on demand, those values bound). The incremental maintainer's variants
(engine/eval/incremental.py ``Maintainer``) were tried first: they are ordered without
statistics, and at 1M tables one read a user's ``authorized(U, use_schema, S)`` over the whole
platform before the delta's catalog (past 2.9 GB).

:func:`found` answers at the reasoner's state (its read's view). Over a store's history,
:func:`over` finds the same rows with the revisions each was found at, by the same
propagation evaluated over revision intervals (engine/answer/timed.py ``TimedContext``: the
base facts naming the value read with their intervals, a variant's bindings the delta row's
intervals met with the other atoms' (negated ones subtracted), a row's intervals the union
of its derivations').
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable
from typing import Any

from grantlog.grammar.facts import collector_paused

from ..core import ir
from ..core.journal import VALID
from ..plan.codegen import key_binding, solve
from ..plan.join import RulePlan, plan_bound
from . import timed
from .spans import Spans, meet, merge, minus

Reasoner = Any
Rows = set[ir.Row]


def reaching(program: ir.Program, rel: str) -> set[str]:
    """The relations from which a chain of positive body atoms leads to ``rel`` (itself
    included): the only ones whose delta rows can reach it."""
    heads: dict[str, set[str]] = {}
    for rule in program.rules:
        for lit in rule.body:
            if isinstance(lit, ir.Atom):
                heads.setdefault(rule.head.rel, set()).add(lit.rel)
    seen, stack = {rel}, [rel]
    while stack:
        for b in heads.get(stack.pop(), ()):
            if b not in seen:
                seen.add(b)
                stack.append(b)
    return seen


def naming(rows: Iterable[ir.Row], value: ir.Value) -> Rows:
    """The rows with ``value`` in some column (compared as values are: by type too)."""
    key = ir.value_key(value)
    return {row for row in rows if value in row
            and any(ir.value_key(v) == key for v in row if v == value)}


Found = dict[ir.Row, Spans]
#: what a variant's other atoms answer: each binding with its intervals
Solve = Callable[[RulePlan, dict[str, ir.Value]], Iterable[tuple[dict[str, ir.Value], Spans]]]
#: the rows of ``rel`` whose ``cols`` are ``key``: how many (a variant's first atom)
Count = Callable[[str, tuple[int, ...], tuple[ir.Value, ...]], int]
#: the one interval of a row found at a single state (:func:`found`)
NOW: Spans = [(0, 1)]


def found(r: Reasoner, value: ir.Value, rel: str | None = None) -> Rows:
    """The rows of ``rel`` (default: the decision relation) with a derivation that uses a
    base fact naming ``value``, at ``r``'s state (see the module docstring)."""
    program = r.program
    goal = rel or program.decision
    needed = reaching(program, goal)
    with r._read():
        ctx = r._context()
        db = r._database()
        delta: dict[str, Found] = {}
        for name in needed:
            base = r._base.get(name)
            rows = naming(base if base is not None else db.full.get(name, ()), value)
            if rows:
                delta[name] = dict.fromkeys(rows, NOW)

        def solve_now(plan: RulePlan, env: dict[str, ir.Value]
                      ) -> Iterable[tuple[dict[str, ir.Value], Spans]]:
            return ((e, NOW) for e in solve(plan, ctx.F, None, ctx.index, env))

        return set(propagate(program, goal, delta, r._plans, solve_now,
                             lambda rel, cols, key: len(ctx.lookup(rel, cols, key)),
                             lambda rel: rel not in program.virtual))


def over(ctx: Any, value: ir.Value, rel: str | None = None) -> Found:
    """The rows of ``rel`` (default: the decision relation) with a derivation that uses a
    base fact naming ``value``, each with the revisions it had one at: over the stretch of
    ``ctx`` (engine/answer/timed.py ``TimedContext``, under its policy; read inside its
    reader's ``reading()``)."""
    program = ctx.source
    goal = rel or program.decision
    delta: dict[str, Found] = {}
    for name in sorted(reaching(program, goal)):
        if name in program.derived and not ctx.stored(name):
            continue
        got: dict[ir.Row, list[tuple[int, int]]] = {}
        for c in range(program.relations[name].arity):
            for row, s in ctx.base(name, (c,), (value,)).items():
                got.setdefault(row, []).extend(s)
        if got:
            delta[name] = {row: merge(s) for row, s in got.items()}
    return propagate(program, goal, delta, ctx.plans, ctx._run,
                     lambda rel, cols, key: len(ctx.lookup(rel, cols, key)),
                     lambda rel: rel not in program.virtual)  # (kept: few rows a key)


def propagate(program: ir.Program, goal: str, delta: dict[str, Found], plans: Any,
              run: Solve, count: Count, stored: Callable[[str], bool]) -> Found:
    """The rows of ``goal`` derived from the ``delta`` rows (base facts), stratum by
    stratum: each rule's variant per positive body atom over the rows found below, and in a
    recursive stratum over its own new rows (or new intervals) until there are none."""
    needed = reaching(program, goal)
    variants: dict[tuple[int, int], tuple[ir.Atom, RulePlan]] = {}
    by_rel: dict[str, list[tuple[ir.Rule, int]]] = {}
    for rule in program.rules:
        if rule.head.rel in needed:
            for i, lit in enumerate(rule.body):
                if isinstance(lit, ir.Atom):
                    by_rel.setdefault(lit.rel, []).append((rule, i))

    def follow(rule: ir.Rule, i: int, rows: Found, out: dict[str, dict[ir.Row, list[Spans]]]
               ) -> None:
        got = variants.get((rule.index, i))
        if got is None:
            atom = rule.body[i]
            assert isinstance(atom, ir.Atom)
            rest = ir.Rule(rule.index, rule.name, rule.head, rule.body[:i] + rule.body[i + 1:])
            bound = frozenset(t.name for t in atom.args if isinstance(t, ir.Var))
            order = _order(plans, rest, atom, bound, rows, count, stored)
            got = variants[(rule.index, i)] = (
                atom, plan_bound(rest, set(bound), program.virtual, order))
        atom, plan = got
        head = out.setdefault(rule.head.rel, {})
        for row, spans in rows.items():
            env = key_binding(atom.args, row)
            if env is None:
                continue
            for e, s in run(plan, env):
                both = meet(spans, s)
                if both:
                    h = tuple(e[t.name] if isinstance(t, ir.Var) else t.value
                              for t in plan.head.args)
                    head.setdefault(h, []).append(both)

    for st in program.strata:
        rels = set(st.relations) & needed
        if not rels:
            continue
        parts: dict[str, dict[ir.Row, list[Spans]]] = {
            x: {row: [s] for row, s in delta.get(x, {}).items()} for x in rels}
        for dr in [d for d in delta if d not in st.relations]:
            for rule, i in by_rel.get(dr, ()):
                if rule.head.rel in rels:
                    follow(rule, i, delta[dr], parts)
        outs = union_all(parts)
        if st.recursive:
            frontier = {x: dict(rows) for x, rows in outs.items()}
            while any(frontier.values()):
                more: dict[str, dict[ir.Row, list[Spans]]] = {}
                for x, rows in frontier.items():
                    for rule, i in by_rel.get(x, ()):
                        if rows and rule.head.rel in rels:
                            follow(rule, i, rows, more)
                frontier = {}
                for x, rows in union_all(more).items():
                    had = outs.setdefault(x, {})
                    for row, s in rows.items():
                        new = minus(s, had.get(row, []))
                        if new:
                            had[row] = merge([*had.get(row, []), *new])
                            frontier.setdefault(x, {})[row] = new
        for x, rows in outs.items():
            if rows:
                delta[x] = rows
    return delta.get(goal, {})


#: the delta rows a variant's first atom is chosen by
SAMPLES = 8


def _order(plans: Any, rest: ir.Rule, atom: ir.Atom, bound: frozenset[str], rows: Found,
           count: Count, stored: Callable[[str], bool]) -> tuple[int, ...] | None:
    """The order of a variant's other atoms: the statistics' (engine/plan/stats.py), except
    that the first is the atom reading the delta's values with the fewest rows, counted for
    the first :data:`SAMPLES` delta rows (the most of them; ``count``: a lookup's rows as
    evaluation reads them), among the statistics' first atom, the stored ones and those the
    statistics expect no larger (so no count reads more than the statistics' first would).
    The statistics know averages: at 1M tables a role's grant on a catalog was followed, by
    them, through every user registered for each of the 7,614 objects below it (an average
    role has 370 holders) before the role's two holders."""
    stats = plans.stats
    envs = [e for row in itertools.islice(rows, SAMPLES)
            if (e := key_binding(atom.args, row)) is not None]
    if stats is None or not envs:
        return None
    order = tuple(stats.order(rest.body, set(bound)))
    if not order:
        return order

    def atom_at(j: int) -> ir.Atom:
        lit = rest.body[j]
        assert isinstance(lit, ir.Atom)
        return lit

    def lookup(j: int) -> tuple[str, tuple[int, ...], tuple[tuple[int, ir.Value], ...]]:
        lit = atom_at(j)
        cols = tuple(c for c, t in enumerate(lit.args)
                     if isinstance(t, ir.Const) or t.name in bound)
        consts = tuple((c, t.value) for c, t in enumerate(lit.args) if isinstance(t, ir.Const))
        return lit.rel, cols, consts

    def estimate(j: int) -> float:
        rel, cols, consts = lookup(j)
        return float(stats.estimate(rel, cols, len(atom_at(j).args), consts)[0])

    top = estimate(order[0])
    sizes: dict[int, int] = {}
    for j in order:
        rel, cols, _ = lookup(j)
        lit = atom_at(j)
        if cols and (j == order[0] or stored(rel) or estimate(j) <= top):
            sizes[j] = max(count(rel, cols, tuple(
                t.value if isinstance(t, ir.Const) else env[t.name]
                for t in (lit.args[c] for c in cols))) for env in envs)
    if not sizes:
        return order
    first = min(sizes, key=lambda j: (sizes[j], order.index(j)))
    if first == order[0]:
        return order
    more = set(bound) | {t.name for t in atom_at(first).args if isinstance(t, ir.Var)}
    return (first, *(j for j in stats.order(rest.body, more) if j != first))


def union_all(parts: dict[str, dict[ir.Row, list[Spans]]]) -> dict[str, Found]:
    """Per relation, each row's intervals merged."""
    return {x: {row: merge(y for s in p for y in s) for row, p in rows.items()}
            for x, rows in parts.items()}


def keys_over(r: Reasoner, value: ir.Value, first: int, last: int,
              rel: str | None = None) -> set[ir.Row] | None:
    """The rows of ``rel`` (default: each policy's decision relation) found by :func:`over`
    at some revision of ``[first, last]``: one stretch per policy installed in it, as
    engine/answer/timed.py ``decided`` cuts them. None where that path does not apply (no
    temporal table, or validity intervals: their axis is the caller's)."""
    journal = r.journal
    make = getattr(journal, "timed_reader", None)
    reader = make() if make is not None else None
    if reader is None:
        return None
    cuts = sorted({first, *(p for p in journal.policy_revisions() if first < p <= last)})
    stretches = []
    for lo, hi in zip(cuts, [*cuts[1:], last + 1], strict=True):
        program = journal.policy_at(lo) or r.program
        if program is not r.program and timed._digest(program) == timed._digest(r.program):
            program = r.program  # its plans are made already
        if program.validity:
            return None
        stretches.append((program, lo, hi - 1))
    if reader.present(VALID, {}, first, last):
        return None
    out: set[ir.Row] = set()
    # (the journal's own reads first: not inside the reader's transaction)
    with reader.reading(), collector_paused():
        for program, lo, hi in stretches:
            out |= over(timed.TimedContext(r, program, reader, lo, hi), value, rel).keys()
    return out
