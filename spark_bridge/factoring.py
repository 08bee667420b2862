"""Pairs of small atoms joined once (spark_bridge/planner.py ``factor``): in a rule such as
``authorized(U, P, O) :- holds(U, R), grant(R, P, O, allow), ...`` the pair linked only by
``R`` is joined on its own, ``R`` dropped and the rows de-duplicated, so the rule joins that
once instead of once per (role, ancestor) path. A small job first counts the pair's join paths
from per-link counts; a pair with more than ``PART_ROWS`` paths is left in the rule.

The functions take the evaluator's run (evaluator.py ``_Run``) first.
"""

from __future__ import annotations

from typing import Any

from grantlog.engine.core import ir
from grantlog.grammar.diagnostics import plural

from . import planner

#: evaluator.py's ``_Run`` (typed loosely: it imports this module)
Run = Any
#: with no broadcast threshold, relations of at most this many rows count as small for
#: factoring (planner.factor)
FACTOR_ROWS = 100_000
#: a pair of small atoms is joined on its own only when the join has at most this many paths
PART_ROWS = 2_000_000


def factored(run: Run, rule: ir.Rule) -> ir.Rule:
    """``rule`` with its pairs of small atoms linked by variables read nowhere else
    (planner.factor) read from their join, computed once, de-duplicated and
    materialized, when that join has at most ``PART_ROWS`` paths; the same pair in
    several rules is computed once."""
    limit = run.broadcast_rows if run.broadcast_rows > 0 else FACTOR_ROWS
    kept: dict[str, planner.Part] = {}
    for part in planner.factor(rule, lambda rel: run.sizes.get(rel, limit + 1) <= limit,
                               run.seeds, run.low):
        rel = run.parts.get(part.key)
        if rel is None:
            rel = run.parts[part.key] = part_relation(run, part)
        if rel:
            kept[rel] = part
    return planner.with_parts(rule, kept) if kept else rule

def part_relation(run: Run, part: planner.Part) -> str:
    """the relation holding ``part``'s rows, or "" when its join is too large"""
    F = run.F
    counts = []
    for k, lit in enumerate(part.rule.body):
        assert isinstance(lit, ir.Atom)
        one = ir.Rule(part.rule.index, part.rule.name,
                      ir.Atom("_", tuple(ir.Var(n) for n in part.links)), (lit,))
        (plan,) = planner.plans(one)
        df = run.rule_df(plan, run.full, {}, {})
        if df is None:
            return ""
        counts.append(df.groupBy(*[f"c{i}" for i in range(len(part.links))])
                      .agg(F.count(F.lit(1)).alias(f"n{k}")))
    paths = counts[0].join(counts[1], on=[f"c{i}" for i in range(len(part.links))]).agg(
        F.sum(F.col("n0") * F.col("n1")).alias("p")).collect()[0]["p"] or 0
    name = part.rule.name
    if paths > PART_ROWS:
        run.progress(f"{name}: not factored ({plural(paths, 'path')})")
        return ""
    n = len(run.parts)
    while f"{name}{n}" in run.program.relations:
        n += 1
    rel = f"{name}{n}"
    (plan,) = planner.plans(part.rule, seeds=run.seeds, low=run.low)
    run.plans.append(f"{rel}: {plan.describe()}")
    df = run.rule_df(plan, run.full, {}, {})
    arity = len(part.rule.head.args)
    df = run._empty(arity) if df is None else df.distinct()
    run.full[rel], run.sizes[rel] = run.materialize(df, rel)  # small: on the driver too
    run.low[rel] = part.low
    run.weight[rel] = 1
    run.progress(f"{rel}: {plural(run.sizes[rel], 'row')} ({plural(paths, 'path')})")
    return rel
