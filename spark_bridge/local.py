"""Small inputs on the driver: a goal-less run over few rows is evaluated by the in-memory engine.

A Spark job costs about a tenth of a second to seconds whatever its rows; a goal-less run of a
model of a hundred rules is hundreds of jobs (a checkpoint per shared relation, per semi-naive
round and per level of the reasons), minutes for the 96 facts of the Gravitino example on two
shared cores. When the rule files' facts and the inputs hold at most ``local_rows`` rows
(``run(..., local_rows=)``, CLI ``--local-rows``; 0: always on Spark), :func:`evaluate` reads
the inputs to the driver (in the internal encoding, encoding.py, so values and column kinds
are exactly Spark's), evaluates the program with the in-memory engine
(engine/answer/reasoner.py) and hands every relation back as a DataFrame; the answers are the
in-memory engine's, which every Spark test compares with anyway.

Reasons (``with_reasons``) are read from the in-memory proof of each decision row
(engine/answer/explain/prover.py: a derivation of least height): its rule, and the grant it
bottoms out in, found by following the same premise as on Spark (reasons.py
:func:`~.reasons.reason_literal`) down the proof to a stored fact. A decision row that is a
fact has none, as on Spark.

Not used with a goal (the demand rewrite runs on Spark); a run with more rows than the
threshold is untouched. Rows given for a ``@writable`` derived relation are inserted, as the
in-memory engine takes them, and join what its rules derive, as on Spark.
"""

from __future__ import annotations

import time
from collections.abc import Collection, Mapping
from typing import Any, Protocol

from grantlog.engine.answer.reasoner import Reasoner
from grantlog.engine.core import ir
from grantlog.engine.eval import seminaive
from grantlog.engine.eval.database import Database
from grantlog.engine.eval.seminaive import CompiledStratum, StratumStats, evaluate_stratum
from grantlog.engine.plan.codegen import compile_plan
from grantlog.engine.plan.join import NegCheck, RulePlan, Scan
from grantlog.grammar.diagnostics import plural

from . import encoding, planner
from .reasons import reason_literal, schema
from .report import StratumReport

#: a goal-less run whose facts and inputs hold at most this many rows runs in memory
LOCAL_ROWS = 20_000


class Run(Protocol):
    """What :func:`evaluate` reads and fills of a run (spark_bridge/evaluator.py)."""

    program: ir.Program
    spark: Any

    @property
    def F(self) -> Any: ...  # pyspark.sql.functions
    @property
    def T(self) -> Any: ...  # pyspark.sql.types

    inputs: dict[str, Any]
    with_reasons: bool
    decision: str
    full: dict[str, Any]
    sizes: dict[str, int]
    reasons: Any
    reports: list[StratumReport]
    plans: list[str]

    def _internal_input(self, rel: str, df: Any) -> Any: ...
    def progress(self, line: str) -> None: ...


def gather(run: Run, limit: int) -> dict[str, list[ir.Row]] | None:
    """The inputs' rows, read to the driver, when a goal-less run may be evaluated in memory:
    at most ``limit`` rows in the rule files' facts and the inputs together (each input read
    up to the rest of the budget, so a large input costs one bounded job); else None."""
    program = run.program
    if limit <= 0:
        return None
    left = limit - len(program.facts)
    out: dict[str, list[ir.Row]] = {}
    for rel, df in run.inputs.items():
        if left < 0:
            return None
        got = run._internal_input(rel, df).limit(left + 1).collect()
        left -= len(got)
        out[rel] = ([tuple(encoding.decode(v) for v in r) for r in got]
                    if program.relations[rel].arity else [()] if got else [])
    return out if left >= 0 else None


def _grant(program: ir.Program, proof: Any) -> tuple[str | None, str | None, str | None]:
    """(rule, reason_rel, reason_row) of a decision row's proof: the root's rule, and the
    stored fact reached by following each rule's premise (:func:`reason_literal`)"""
    if proof.kind != "rule" or proof.rule is None:
        return None, None, None
    rule = proof.rule.name
    node = proof
    while node.kind == "rule" and node.rule is not None:
        i = reason_literal(program, node.rule)
        if i is None:  # no premise to follow: the rule decided by itself
            return rule, None, None
        node = node.children[i]
    if node.rel is None:
        return rule, None, None
    return rule, node.rel, ir.show_atom(node.rel, node.row)


def _frames(run: Run, rows: dict[str, list[tuple[str, ...]]]) -> dict[str, Any]:
    """One DataFrame per relation of internal rows, all sliced from one created DataFrame
    (a ``createDataFrame`` per relation cost a Spark analysis each)"""
    F, T = run.F, run.T
    schema = T.StructType([T.StructField("rel", T.StringType(), False),
                           T.StructField("row", T.ArrayType(T.StringType(), False), False)])
    every = run.spark.createDataFrame(
        [(rel, list(row)) for rel, part in rows.items() for row in part], schema)
    out = {}
    for rel, r in run.program.relations.items():
        cols = [f"c{i}" for i in range(r.arity)] if r.arity else ["_u"]
        out[rel] = every.filter(F.col("rel") == rel).select(
            *[F.col("row")[i].alias(c) for i, c in enumerate(cols)])
    return out


def evaluate(run: Run, inputs: Mapping[str, list[ir.Row]]) -> None:
    """Evaluate ``run``'s program in memory over ``inputs`` (:func:`gather`'s rows) and fill
    its relations (internal columns), sizes, reports and, with reasons, the decision
    relation's grants."""
    t0 = time.perf_counter()
    program = run.program
    mem = Reasoner(program)
    with mem.transaction() as tx:
        for rel, got in inputs.items():
            tx.insert(rel, got)
    ctx = mem.view()
    rows: dict[str, list[tuple[str, ...]]] = {}
    for rel in program.relations:
        rows[rel] = sorted(tuple(encoding.encode(v) for v in row) or ("1",)
                           for row in ctx.F[rel])
        run.sizes[rel] = len(rows[rel])
    run.full.update(_frames(run, rows))
    rel = run.decision
    if run.with_reasons and rel in program.relations:
        prover = mem.prover(ctx)
        reasons = [(*(tuple(encoding.encode(v) for v in row) or ("1",)),
                    *_grant(program, prover.prove(rel, row)))
                   for row in sorted(ctx.F[rel], key=ir.row_key)]
        cols = [f"c{i}" for i in range(program.relations[rel].arity)] or ["_u"]
        T = run.T
        run.reasons = run.spark.createDataFrame(reasons, schema(T, cols))
    seconds = time.perf_counter() - t0
    for st in program.strata:
        n = sum(run.sizes[rel] for rel in st.relations)
        run.reports.append(StratumReport(st.index, st.relations, "in-memory", 1, n,
                                         seconds / max(1, len(program.strata))))
    run.plans.append(f"in memory: {plural(len(program.rules), 'rule')} over "
                     f"{plural(sum(run.sizes.values()), 'row')} (at most the local-rows "
                     "threshold of facts and inputs)")
    run.progress(f"in memory: {plural(len(program.strata), 'stratum', 'strata')}, "
                 f"{plural(sum(run.sizes.values()), 'row')}, {seconds:.2f} s")


# ---------------------------------------------------------------------------------------------
# small strata on the driver (runs with or without a goal)

#: a relation of at most this many rows is kept on the driver as well (``run(...,
#: driver_rows=)``): a stratum reading only such relations is evaluated there, no Spark job
DRIVER_ROWS = 100_000
Rows = Collection[tuple[str, ...]]


def stratum_rows(st: ir.Stratum, plans: list[RulePlan], arity: Mapping[str, int],
                 rows: Mapping[str, Rows], cap: int) -> tuple[dict[str, set[tuple[str, ...]]],
                                                              int]:
    """The stratum ``st``'s relations on the driver, by the in-memory engine's semi-naive
    evaluation of ``plans`` (engine/eval/seminaive.py, the plans compiled as for memory):
    ``rows`` holds, in the internal encoding, the stratum's own facts and inputs and every
    relation its rules read. The rows (encoded) and the number of rounds; ``TooMany`` when
    a relation passes ``cap`` rows
    (``seminaive.TooMany``)."""
    def values(rel: str) -> set[ir.Row]:
        if not arity[rel]:
            return {()} if rows[rel] else set()
        return {tuple(encoding.decode(v) for v in row) for row in rows[rel]}

    reads = {s.rel for p in plans for s in p.steps if isinstance(s, Scan | NegCheck)}
    db = Database(())
    for rel in reads | set(st.relations):
        db.ensure(rel)
        db.add(rel, values(rel), 0)
    compiled = [(p, compile_plan(p)) for p in plans]
    cs = CompiledStratum(st, tuple(c for c in compiled if c[0].delta_literal is None),
                         tuple(c for c in compiled if c[0].delta_literal is not None))
    stats = StratumStats(st.index, st.relations)
    evaluate_stratum(db, cs, 0, stats, cap=cap)
    out = {r: {tuple(encoding.encode(v) for v in row) or ("1",) for row in db.full[r]}
           for r in st.relations}
    if any(len(got) > cap for got in out.values()):
        raise seminaive.TooMany(cap)
    return out, stats.iterations


def frame(run: Run, rows: Rows, arity: int, cols: list[str] | None = None) -> Any:
    """A DataFrame of internal rows held on the driver (columns ``cols``, by default the
    relation's internal ones): an Arrow table, so a local relation in the plan (no Python
    worker reads it; ``createDataFrame`` of a list is a Python RDD)."""
    T = run.T
    if cols is None:
        cols = [f"c{i}" for i in range(arity)] if arity else ["_u"]
    schema = T.StructType([T.StructField(c, T.StringType(), False) for c in cols])
    try:
        import pyarrow as pa
    except ImportError:  # pragma: no cover - pyarrow comes with pyspark's SQL extras
        return run.spark.createDataFrame(list(rows), schema)
    data = list(rows)
    table = pa.table({c: pa.array([r[i] for r in data], pa.string())
                      for i, c in enumerate(cols)})
    return run.spark.createDataFrame(table, schema=schema)


def on_driver(run: Any, st: ir.Stratum) -> StratumReport | None:
    """The stratum ``st`` of ``run`` (evaluator.py ``_Run``) evaluated on the driver when
    every relation it reads and its own facts and inputs are held there and its rows stay
    within ``run.driver_rows``; else None (and its relations' rows are dropped from the
    driver: Spark's are whole)."""
    rels = st.relations
    reads = {a.rel for rid in st.rules for lit in run.program.rules[rid].body
             for a in [lit.atom if isinstance(lit, ir.Neg) else lit]
             if isinstance(a, ir.Atom)}
    if (run.driver_rows <= 0 or (run.with_reasons and run.decision in rels)
            or not (reads | set(rels)) <= set(run.rows)):
        for r in rels:
            run.rows.pop(r, None)
        return None
    rec = frozenset(rels) if st.recursive else frozenset()
    arity = {r: rel.arity for r, rel in run.program.relations.items()}
    plans = [p for rid in st.rules
             for p in planner.plans(run.program.rules[rid], rec, run.seeds, run.low)]
    try:
        got, rounds = stratum_rows(st, plans, arity, run.rows, run.driver_rows)
    except seminaive.TooMany:  # past the driver's budget: on Spark
        for r in rels:
            run.rows.pop(r, None)
        return None
    for p in plans:
        run.plans.append(f"{p.rule.name}: {p.describe()} (on the driver)")
    for r in rels:
        run.rows[r] = got[r]
        run.sizes[r] = len(got[r])
        run.weight[r] = 1
        run.full[r] = frame(run, got[r], run.program.relations[r].arity)
    return StratumReport(st.index, rels, "driver", rounds, sum(len(got[r]) for r in rels))
