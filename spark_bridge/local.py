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

import gc
import time
from collections import ChainMap
from collections.abc import (
    Callable,
    Collection,
    Iterable,
    Iterator,
    Mapping,
    MutableMapping,
    Sequence,
)
from typing import Any, Protocol

from grantlog.engine.answer.reasoner import Reasoner
from grantlog.engine.core import ir
from grantlog.engine.eval import seminaive
from grantlog.engine.eval.database import Database
from grantlog.engine.eval.seminaive import CompiledStratum, StratumStats, evaluate_stratum
from grantlog.engine.plan.codegen import compile_plan
from grantlog.engine.plan.join import RulePlan, plan_bound
from grantlog.engine.plan.stats import Statistics
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
    full: Frames
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

#: relations are kept on the driver as well while they hold at most this many rows in all
#: (``run(..., driver_rows=)``, CLI ``--driver-rows``): a stratum reading only such relations
#: is evaluated there, no Spark job. The in-memory engine derives a row in about a third of
#: Spark's CPU (local[2]), so the cap is the driver's memory: about 75-150 bytes a row held
#: (values shared; the Gravitino bulk goal's 5.6M rows at 100k tables: +416 MiB), so at most
#: about 1.5 GB of the driver (benchmarks/RESULTS.md, "the driver strata in place")
DRIVER_ROWS = 10_000_000
Rows = Collection[tuple[str, ...]]


class Lazy:
    """A relation's DataFrame not made yet: ``make()`` makes it (:class:`Frames`)."""

    __slots__ = ("make",)

    def __init__(self, make: Callable[[], Any]) -> None:
        self.make = make


class Frames(MutableMapping[str, Any]):
    """A run's relations as DataFrames (evaluator.py ``_Run.full``), some not made yet: a
    :class:`Lazy` value stored is made on its first read and kept (a relation held on the
    driver becomes an Arrow DataFrame only when something on Spark reads it: a later Spark
    stratum, symmetry's expansion, the corrections, the results handed out)."""

    def __init__(self) -> None:
        self.data: dict[str, Any] = {}

    def __getitem__(self, rel: str) -> Any:
        got = self.data[rel]
        if type(got) is Lazy:
            got = self.data[rel] = got.make()
        return got

    def __setitem__(self, rel: str, df: Any) -> None:
        self.data[rel] = df

    def __delitem__(self, rel: str) -> None:
        del self.data[rel]

    def __iter__(self) -> Iterator[str]:
        return iter(self.data)

    def __len__(self) -> int:
        return len(self.data)

    def __contains__(self, rel: object) -> bool:
        return rel in self.data

    def made(self, rel: str) -> bool:
        """whether ``rel``'s DataFrame exists (not :class:`Lazy`)"""
        return type(self.data.get(rel)) is not Lazy

    def then(self, rel: str, fn: Callable[[Any], Any]) -> None:
        """``self[rel] = fn(self[rel])``, when ``rel`` is read (now if it is made)"""
        got = self.data[rel]
        self.data[rel] = (Lazy(lambda: fn(got.make())) if type(got) is Lazy else fn(got))

    def over(self, extra: Mapping[str, Any]) -> Mapping[str, Any]:
        """these relations with ``extra``'s in their place (none made by it)"""
        return ChainMap(dict(extra), self)


class Driver:
    """The relations a run holds on the driver (evaluator.py ``_Run.driver``): their rows,
    decoded once, in one engine :class:`Database` that the driver strata are evaluated in,
    in place (engine/eval/seminaive.py), and whose rows they keep. A relation is held whole
    or not at all; its internal (encoded) rows are made only for its DataFrame
    (:meth:`frame`), when Spark reads it."""

    def __init__(self, run: Any) -> None:
        self.run = run
        self.db = Database(())
        #: relation held -> its internal columns
        self.cols: dict[str, list[str]] = {}
        self._values: dict[str, ir.Value] = {}  # internal encoding -> value, one object each

    def held(self, rel: str) -> bool:
        return rel in self.cols

    def put(self, rel: str, rows: Iterable[Sequence[str]], cols: list[str]) -> int:
        """hold ``rel``'s rows given in the internal encoding (columns ``cols``); how many"""
        memo = self._values
        got: set[ir.Row] = set()
        if cols == ["_u"]:
            got = {() for _ in rows}
        else:
            for row in rows:
                vals = []
                for s in row:
                    v = memo.get(s)
                    if v is None:
                        v = memo[s] = encoding.decode(s)
                    vals.append(v)
                got.add(tuple(vals))
        self.put_values(rel, got, cols)
        return len(got)

    def put_values(self, rel: str, rows: Collection[ir.Row], cols: list[str]) -> None:
        """hold ``rel`` with ``rows`` (values: the rule files' facts, decoded rows)"""
        self.drop(rel)
        self.cols[rel] = cols
        self.db.ensure(rel)
        self.db.add(rel, rows, 0)

    def drop(self, rel: str) -> None:
        """``rel`` no longer held (its rows and indexes let go)"""
        if self.cols.pop(rel, None) is not None:
            self.db.drop(rel)

    def size(self, rel: str) -> int:
        return len(self.db.full[rel])

    def room(self) -> int:
        """rows the driver may still take: ``run.driver_rows`` in all, every relation held
        counted (its inputs, facts and derived rows); 0 when off"""
        cap = self.run.driver_rows
        return max(0, cap - self.db.rows) if cap > 0 else 0

    def frame(self, rel: str, rows: Collection[ir.Row] | None = None) -> Lazy:
        """``rel``'s DataFrame (of ``rows``, by default its rows held), made when read"""
        cols = self.cols[rel]
        arity = 0 if cols == ["_u"] else len(cols)
        data = self.db.full[rel] if rows is None else rows
        return Lazy(lambda: frame(self.run, encoding.encode_rows(data, arity), arity, cols))

    def plans(self, st: ir.Stratum) -> list[RulePlan]:
        """The stratum ``st``'s plans on the driver: a recursive stratum's as on Spark (its
        delta variants); another's body in the order the in-memory engine's statistics
        estimate cheapest over the rows held (engine/plan/stats.py), not Spark's (magic
        atoms first, joins on shared variables), which on nested loops of lookups can read
        every grant of a privilege per row (the Gravitino bulk goal's `has_privilege__bbb`:
        3x the time)."""
        run = self.run
        rules = [run.program.rules[rid] for rid in st.rules]
        if st.recursive:
            return [p for rule in rules
                    for p in planner.plans(rule, frozenset(st.relations), run.seeds, run.low)]
        stats = Statistics(run.program, self.db.full, self.db.index)
        return [plan_bound(rule, set(), atom_order=stats.order(rule.body, set()))
                for rule in rules]

    def evaluate(self, st: ir.Stratum, plans: list[RulePlan]) -> int:
        """Evaluate the stratum ``st`` (its ``plans``, the in-memory engine's semi-naive
        evaluation, engine/eval/seminaive.py) over the rows held, adding its rows there; the
        number of rounds. ``seminaive.TooMany`` when its rows pass the driver's
        :meth:`room` (checked after each round; its rows are then partial: :meth:`leave`)."""
        cap = self.room()
        if cap <= 0:
            raise seminaive.TooMany(cap)
        compiled = [(p, compile_plan(p)) for p in plans]
        cs = CompiledStratum(st, tuple(c for c in compiled if c[0].delta_literal is None),
                             tuple(c for c in compiled if c[0].delta_literal is not None))
        stats = StratumStats(st.index, st.relations)
        # many small tuples, no cycles among them: the cyclic collector only burns time
        # while they are built (as engine/eval/seminaive.py's Evaluator)
        was = gc.isenabled()
        gc.disable()
        try:
            evaluate_stratum(self.db, cs, 0, stats, cap=cap)
        finally:
            if was:
                gc.enable()
        if self.db.rows > self.run.driver_rows:
            raise seminaive.TooMany(cap)
        return stats.iterations

    def leave(self, rels: Iterable[str]) -> None:
        """``rels`` go to Spark: no longer held; a DataFrame of the rows they held before
        their stratum (their facts and inputs, level 0) is kept where it was not made yet"""
        full = self.run.full
        for rel in rels:
            if not self.held(rel):
                continue
            if rel in full and not full.made(rel):
                base = [row for row, level in self.db.full[rel].items() if not level]
                full[rel] = self.frame(rel, base)
            self.drop(rel)


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
    """The stratum ``st`` of ``run`` (evaluator.py ``_Run``) evaluated on the driver
    (:class:`Driver`) when every relation it reads and its own facts and inputs are held
    there and the rows held stay within ``run.driver_rows`` in all; else None (and its
    relations leave the driver: Spark's are whole)."""
    d: Driver = run.driver
    rels = st.relations
    reads = {a.rel for rid in st.rules for lit in run.program.rules[rid].body
             for a in [lit.atom if isinstance(lit, ir.Neg) else lit]
             if isinstance(a, ir.Atom)}
    if (run.driver_rows <= 0 or (run.with_reasons and run.decision in rels)
            or not all(d.held(r) for r in reads | set(rels))):
        d.leave(rels)
        return None
    plans = d.plans(st)
    try:
        rounds = d.evaluate(st, plans)
    except seminaive.TooMany:  # past the driver's budget: on Spark
        d.leave(rels)
        return None
    for p in plans:
        run.plans.append(f"{p.rule.name}: {p.describe()} (on the driver)")
    for r in rels:
        run.sizes[r] = d.size(r)
        run.weight[r] = 1
        run.full[r] = d.frame(r)
    return StratumReport(st.index, rels, "driver", rounds, sum(d.size(r) for r in rels))
