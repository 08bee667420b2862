"""A compiled program on Spark: each rule's join plan (engine/plan/join.py steps) as DataFrame
operations.

The steps are the in-memory engine's kinds (``Scan``, ``Filter``, ``Assign``, ``NegCheck``), one
plan per rule and one delta variant per recursive body atom, in a Spark-minded join order
(planner.py: delta and magic atoms first, joins on shared variables, no cross join while another
atom is joined). A goal (``run(..., goal=, where=)``) first rewrites the program for it
(engine/plan/magic.py). A plan's steps become, left to right:

* ``Scan`` — filter the relation on its constants and repeated variables, project the columns
  still needed, then an inner equi-join with the bindings so far on the bound variables (the
  first scan starts the bindings; no shared variable is a cross join). Base relations known to
  have at most ``broadcast_rows`` rows, and deltas that small, are ``F.broadcast`` hinted;
* ``Filter`` — a comparison on the internal encoding (encoding.py), which orders like the
  engine (integers before strings);
* ``Assign`` — ``withColumn``;
* ``NegCheck`` — a ``left_anti`` join on the negated atom's named columns (``_`` columns are
  left out, so they match anything); with none, the anti join keeps the bindings only when
  the relation has no matching row.

The head is a projection; a relation is the ``distinct`` union of its rules, its facts and its
inputs. Strata run in dependency order. Non-recursive strata stay lazy, except that a relation
read by two or more body literals, or whose lazy plan grows past ``PLAN_LIMIT`` relation reads,
is checkpointed (one job), so plans do not grow into trees of repeated subplans. Recursive
strata run semi-naively (``delta_<rel>``/``new_<rel>``, the new rows found by a ``left_anti``
join against the full relation, each delta checkpointed, which also cuts the lineage), or by
path doubling when the stratum is a transitive closure (closure.py). A goal-less run over at
most ``local_rows`` facts and input rows is evaluated in memory on the driver instead (local.py).
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Callable, Collection, Mapping
from functools import partial
from typing import Any

from grantlog.engine.core import arguments, ir, progress
from grantlog.engine.plan.join import Assign, Filter, RulePlan, Scan
from grantlog.engine.plan.magic import demand
from grantlog.grammar.diagnostics import NO_SPAN, GrantlogError, error, plural

from . import encoding, factoring, local, planner, schema, singles
from . import reasons as reasons_mod
from . import symmetry as symmetric
from .closure import closure_shape, doubling, full_on_spark, graphframes_status
from .reasons import grant_reasons
from .reasons import reason_literal as choose_reason
from .report import SparkResult, StratumReport, iteration_limit

Progress = Callable[[str], None]
#: a non-recursive relation whose lazy plan would read more relations than this (counting the
#: plans of lazy relations it reads) is checkpointed, which cuts its lineage
PLAN_LIMIT = 100
#: a materialized relation keeps about this many rows per partition (at least one partition)
ROWS_PER_PARTITION = 200_000
REASON_COLUMNS = encoding.REASON_COLUMNS


def rel_cols(arity: int) -> list[str]:
    """internal column names of a relation (a zero-arity relation has one unit column)"""
    return [f"c{i}" for i in range(arity)] if arity else ["_u"]


class _Run:
    def __init__(
        self, program: ir.Program, spark: Any, inputs: Mapping[str, Any], *,
        with_reasons: bool, closure_strategy: str, max_iterations: int, broadcast_rows: int,
        materialize: str, progress: Progress | None, seeds: frozenset[str] = frozenset(),
        display: Mapping[str, str] | None = None, decision: str | None = None,
        driver_rows: int = 0,
    ) -> None:
        from pyspark.sql import functions as F
        from pyspark.sql import types as T

        self.F = F
        self.T = T
        self.program = program
        self.spark = spark
        self.with_reasons = with_reasons
        self.closure_strategy = closure_strategy
        self.max_iterations = max_iterations
        self.broadcast_rows = broadcast_rows
        self.materialize_mode = materialize
        self.progress = progress or (lambda _line: None)
        #: relations scanned first in every rule reading them (magic relations)
        self.seeds = seeds
        #: the name a relation is shown with in reasons (adorned -> original)
        self.display = dict(display or {})
        #: the relation whose rows get reasons
        self.decision = program.decision if decision is None else decision
        self.full = local.Frames()  # some made when first read (local.Lazy)
        #: relation -> about how many relation reads its lazy plan holds (1: materialized)
        self.weight: dict[str, int] = {}
        self.sizes: dict[str, int] = {}  # relations with a known row count
        #: relations also held on the driver, ``driver_rows`` rows in all (decoded, in one
        #: engine database): a stratum reading only those runs there (local.py)
        self.driver_rows = driver_rows
        self.driver = local.Driver(self)
        self.reasons: Any = None
        self.local = False  # evaluated in memory (local.py): reasons are grants already
        self.plans: list[str] = []
        self.reports: list[StratumReport] = []
        self.inputs = dict(inputs)
        self.internal: dict[str, Any] = {}  # inputs in internal columns, as symmetry.py left them
        schema.check_inputs(program, self.inputs)
        input_types = {rel: [schema.spark_type_name(df.schema[c].dataType)
                             for c in program.relations[rel].columns]
                       for rel, df in self.inputs.items()}
        self.kinds = schema.column_kinds(program, input_types)
        reads: dict[str, int] = {}
        for r in program.rules:
            for lit in r.body:
                atom = lit.atom if isinstance(lit, ir.Neg) else lit
                if isinstance(atom, ir.Atom):
                    reads[atom.rel] = reads.get(atom.rel, 0) + 1
        self.reads = reads
        #: lazy relations read once, as their rules' union without its ``distinct``: the
        #: reading rule de-duplicates anyway (its relation's ``distinct``), so where it only
        #: joins small relations (broadcast, a map), one shuffle of the rows is saved
        self.loose: dict[str, Any] = {}
        self.low = dict(planner.low_columns(program, self.inputs))
        #: relations with no facts and no input (their rules' rows are all their rows)
        self.no_base: set[str] = set()
        #: a factored group's key (planner.factor) -> the relation holding its rows
        self.parts: dict[Any, str] = {}
        if spark.sparkContext.getCheckpointDir() is None:
            spark.sparkContext.setCheckpointDir(tempfile.mkdtemp(prefix="grantlog-spark-"))

    # -- inputs -----------------------------------------------------------------------------

    def _internal_input(self, rel: str, df: Any) -> Any:
        F = self.F
        r = self.program.relations[rel]
        if r.arity == 0:
            return df.limit(1).select(F.lit("1").alias("_u"))
        exprs = []
        for i, name in enumerate(r.columns):
            c = F.col(name)
            if schema.spark_type_name(df.schema[name].dataType) == "int":
                e = encoding.encode_long_col(c)
            elif self.kinds[rel][i] == "any":
                e = encoding.encode_shown_col(c)
            else:
                e = encoding.encode_string_col(c)
            exprs.append(e.alias(f"c{i}"))
        return df.select(*exprs).dropna()

    def _empty(self, arity: int) -> Any:
        T = self.T
        return self.spark.createDataFrame(
            [], T.StructType([T.StructField(c, T.StringType(), False) for c in rel_cols(arity)]))

    def _base(self, rel: str) -> Any:
        """facts from the rule files and inputs of ``rel``"""
        arity = self.program.relations[rel].arity
        rows = sorted({tuple(encoding.encode(v) for v in f.row) or ("1",)
                       for f in self.program.facts if f.rel == rel})
        T = self.T
        st = T.StructType([T.StructField(c, T.StringType(), False) for c in rel_cols(arity)])
        df = self.spark.createDataFrame(rows, st) if rows else None
        n: int | None = len(rows)
        if not rows and rel not in self.inputs:
            self.no_base.add(rel)
        if self.driver_rows > 0 and rel not in self.inputs:
            self.driver.put(rel, rows, rel_cols(arity))
        if rel in self.inputs:
            inp = self.internal.get(rel, None)
            inp = self._internal_input(rel, self.inputs[rel]) if inp is None else inp
            df = (inp if df is None else df.unionByName(inp)).distinct()
            if (room := self.driver.room()) > 0:
                # one job: a small input's rows to the driver (a big one is counted after)
                got = df.limit(room + 1).collect()
                if len(got) <= room:
                    n = self.driver.put(rel, got, rel_cols(arity))
                    self.progress(f"input {rel}: {plural(n, 'row')} (on the driver)")
                    if rel not in self.program.derived:
                        self.sizes[rel] = n
                    return self.driver.frame(rel)  # made when Spark reads it
            if self.reads.get(rel, 0) >= 2 and self.materialize_mode != "none":
                df = df.cache()  # read by several rules: scan and de-duplicate once
            n = None
            if self.broadcast_rows > 0:
                n = df.count()
                self.progress(f"input {rel}: {plural(n, 'row')}")
        if n is not None and rel not in self.program.derived:
            self.sizes[rel] = n  # derived relations get theirs when materialized
        return df if df is not None else self._empty(arity)

    # -- checkpoints ------------------------------------------------------------------------

    def materialize(self, df: Any, rel: str | None = None) -> tuple[Any, int]:
        """Compute ``df`` once and cut its lineage; returns the rows' new DataFrame and count.

        Persisted and counted (one job computes the plan once), then checkpointed from the
        persisted rows (an unpersisted eager checkpoint computes it twice; localCheckpoint
        fails on iterated joins; ``createDataFrame`` of collected rows is a Python RDD that
        makes every later job start Python workers). With ``rel``, rows that fit in the
        driver's room (``driver_rows`` in all) are read to the driver instead (one job on
        the persisted rows, no checkpoint), kept for the strata that read only such
        relations, and handed on as a local relation (local.py :class:`~.local.Driver`)."""
        from pyspark import StorageLevel

        df = df.persist(StorageLevel.MEMORY_AND_DISK)
        try:
            n = df.count()
            if rel is not None and self.driver_rows > 0 and n <= self.driver.room():
                self.driver.put(rel, df.collect(), list(df.columns))
                return self.driver.frame(rel), n
            # few rows, few partitions: 200 shuffle partitions of a dozen rows, kept, made
            # every later union (a decision relation's hundred rules) a job of 20,000 tasks
            parts = n // ROWS_PER_PARTITION + 1
            kept = df.coalesce(parts) if parts < df.rdd.getNumPartitions() else df
            return kept.checkpoint(eager=True), n
        finally:
            df.unpersist()

    # -- rules ------------------------------------------------------------------------------

    def _unit(self) -> Any:
        return self.spark.range(1).select()

    def _small(self, rel: str, source: str, deltas: Mapping[str, int]) -> bool:
        """whether ``rel`` (its delta: ``source == "delta"``) is known to be broadcast-small"""
        n = deltas.get(rel) if source == "delta" else self.sizes.get(rel)
        return n is not None and self.broadcast_rows > 0 and n <= self.broadcast_rows

    def _maybe_broadcast(self, df: Any, rel: str, source: str, deltas: Mapping[str, int]) -> Any:
        return self.F.broadcast(df) if self._small(rel, source, deltas) else df

    def reason_literal(self, rule: ir.Rule) -> int | None:
        """The body atom whose row is reported as the reason (reasons.py)."""
        return choose_reason(self.program, rule, self.seeds, self.display)

    def rule_df(
        self, plan: RulePlan, sources: Mapping[str, Any], deltas: Mapping[str, Any],
        delta_sizes: Mapping[str, int], reasons: bool = False,
    ) -> Any | None:
        """The head rows of one plan (internal columns), or None when a constant comparison
        makes the rule empty."""
        F = self.F
        v = encoding.VarColumns()
        expr = v.expr

        steps = plan.steps
        need = planner.needed(plan)
        reason_lit = self.reason_literal(plan.rule) if reasons else None
        reason_cols: list[str] = []
        b: Any = None
        # the bindings may repeat: a join's rows were projected, dropping a linking variable
        repeated = False
        for i, s in enumerate(steps):
            if isinstance(s, Scan):
                src = (deltas if s.source == "delta" else sources)[s.rel]
                conds, proj, join_on = encoding.scan_columns(s, need[i], v)
                if (repeated and join_on and set(join_on) == set(b.columns)
                        and not self._small(s.rel, s.source, delta_sizes)):
                    # a shuffled join on the whole row: de-duplicated on the same partitioning
                    b, repeated = b.distinct(), False
                if s.literal == reason_lit:
                    for col in range(s.arity):
                        proj[f"rs{col}"] = F.col(f"c{col}")
                        reason_cols.append(f"rs{col}")
                for c in conds:
                    src = src.filter(c)
                right = src.select(*[e.alias(n) for n, e in proj.items()])
                if not proj:
                    right = right.limit(1)  # only existence matters
                right = self._maybe_broadcast(right, s.rel, s.source, delta_sizes)
                if b is None:
                    b = right
                elif join_on:
                    b = b.join(right, on=join_on, how="inner")
                else:
                    b = b.crossJoin(right)
            elif isinstance(s, Filter):
                cond = encoding.filter_step(s, expr)
                if cond is False:
                    return None
                if cond is not True:
                    b = b.filter(cond)
            elif isinstance(s, Assign):
                b = (self._unit() if b is None else b).withColumn(v(s.var), expr(s.value))
            else:
                neg = sources[s.rel]
                nconds, nproj = encoding.key_columns(s.key_cols, s.key_terms, v)
                for c in nconds:
                    neg = neg.filter(c)
                nright = neg.select(*[e.alias(n) for n, e in nproj.items()])
                nright = self._maybe_broadcast(nright, s.rel, "full", delta_sizes)
                b = self._unit() if b is None else b
                if (repeated and nproj and set(nproj) == set(b.columns)
                        and not self._small(s.rel, "full", delta_sizes)):
                    b, repeated = b.distinct(), False
                if nproj:
                    b = b.join(nright, on=list(nproj), how="left_anti")
                else:
                    b = b.join(nright.limit(1), how="left_anti")
            if b is None:  # a comparison of constants that holds: nothing bound yet
                continue
            keep = [v(n) for n in sorted(need[i]) if v(n) in b.columns] + reason_cols
            if len(keep) < len(b.columns):
                b = b.select(*keep)
                repeated = repeated or (isinstance(s, Scan) and i > 0)
        if b is None:
            b = self._unit()
        head = [expr(t).alias(f"c{i}") for i, t in enumerate(plan.head.args)] or [
            F.lit("1").alias("_u")]
        if reasons:
            rule = plan.rule
            if reason_lit is not None:
                lit = rule.body[reason_lit]
                assert isinstance(lit, ir.Atom)
                shown = [encoding.shown_col(F.col(c)) for c in reason_cols]
                rel = self.display.get(lit.rel, lit.rel)
                row = (F.concat(F.lit(rel + "("), F.concat_ws(", ", *shown), F.lit(")"))
                       if shown else F.lit(rel))
                extra = [F.lit(rule.name).alias("rule"), F.lit(rel).alias("reason_rel"),
                         row.alias("reason_row")]
            else:
                extra = [F.lit(rule.name).alias("rule"),
                         F.lit(None).cast("string").alias("reason_rel"),
                         F.lit(None).cast("string").alias("reason_row")]
            head += extra
        return b.select(*head)

    def _union(self, dfs: list[Any], arity: int) -> Any:
        if not dfs:
            return self._empty(arity)
        # pairwise, as a balanced tree: every unionByName analyses the plan it is given, and
        # a left fold over a decision relation's hundred rules analysed it quadratically often
        level = list(dfs)
        while len(level) > 1:
            level = [level[i].unionByName(level[i + 1]) if i + 1 < len(level) else level[i]
                     for i in range(0, len(level), 2)]
        if len(dfs) > 8:  # a task per branch partition (179 for gravitino's `allowed`): group
            return level[0].coalesce(2 * self.spark.sparkContext.defaultParallelism)
        return level[0]

    # -- strata -----------------------------------------------------------------------------

    def run(self) -> None:
        program = self.program
        for rel in program.relations:
            self.full[rel] = self._base(rel)
        with progress.task("Spark strata", len(program.strata), "stratum") as advance:
            for st in program.strata:
                advance(0, postfix=f"stratum {st.index} [{', '.join(st.relations)}]")
                t0 = time.perf_counter()
                report = (local.on_driver(self, st) or (
                    self._recursive(st) if st.recursive else self._plain(st)))
                report.seconds = time.perf_counter() - t0
                self.reports.append(report)
                rows = "lazy" if report.rows is None else plural(report.rows, "row")
                self.progress(f"stratum {st.index} [{', '.join(st.relations)}] "
                              f"{report.strategy}: {rows}, {report.iterations} iteration(s), "
                              f"{report.seconds:.2f} s")
                advance(1)

    def _plain(self, st: ir.Stratum) -> StratumReport:
        rel = st.relations[0]
        arity = self.program.relations[rel].arity
        report = StratumReport(st.index, st.relations, "rules", 1)
        base = self.full[rel]
        dfs = [] if rel in self.no_base else [base]
        reason_dfs: list[Any] = []
        reasons = self.with_reasons and rel == self.decision
        plans: list[RulePlan] = []
        read_loose = False
        for rid in st.rules:
            rule = self.program.rules[rid]
            if not reasons:
                rule = factoring.factored(self, rule)
            for plan in planner.plans(rule, seeds=self.seeds, low=self.low):
                self.plans.append(f"{plan.rule.name}: {plan.describe()}")
                sources = self._sources(rule, reasons)
                if sources is not self.full:
                    read_loose = True  # its rows may repeat: the relation de-duplicates
                d = self.rule_df(plan, sources, {}, {}, reasons=reasons)
                if d is not None:
                    plans.append(plan)
                    (reason_dfs if reasons else dfs).append(d)
        if reasons:
            # each rule's rows carry their reason: the rules run once, and the relation is
            # the rows of its reasons (facts and inputs with none)
            cols = rel_cols(self.program.relations[rel].arity)
            self.reasons, n = self.materialize(reasons_mod.pick(
                self.F, cols, base, self._union(reason_dfs, 0) if reason_dfs else None))
            report.strategy, report.rows = "rules+checkpoint", n
            self.sizes[rel], self.weight[rel] = n, 1
            self.full[rel] = self.reasons.select(*rel_cols(arity))
            return report
        loose = None
        if (len(dfs) == 1 and len(plans) == 1 and planner.unique(plans[0])
                and not read_loose):
            # one rule keeping every variable of its body: its rows are already distinct
            df = dfs[0]
        else:
            loose = self._union(dfs, arity)
            df = loose.distinct()
        weight = 1 + sum(self.weight.get(s.rel, 1) for rid in st.rules
                         for lit in self.program.rules[rid].body
                         for s in [lit.atom if isinstance(lit, ir.Neg) else lit]
                         if isinstance(s, ir.Atom))
        shared = self.reads.get(rel, 0) >= 2
        mode = self.materialize_mode
        if mode == "all" or (mode == "shared" and (shared or weight > PLAN_LIMIT)):
            # a checkpoint, not cache(): a cached plan pins the broadcast tables of its joins
            # in the driver for as long as the cache lives (hundreds of MB over a rewritten
            # program's many small relations), a checkpoint keeps only the rows
            df, n = self.materialize(df, rel)
            report.strategy, report.rows = "rules+checkpoint", n
            self.sizes[rel] = n
            weight = 1
        elif shared and mode == "cache":
            df = df.cache()
            report.strategy = "rules+cache"
        elif self.reads.get(rel, 0) == 1 and loose is not None:
            self.loose[rel] = loose
        self.weight[rel] = weight
        self.full[rel] = df
        return report

    def _sources(self, rule: ir.Rule, reasons: bool) -> Mapping[str, Any]:
        """The relations ``rule`` reads: a loose relation (``self.loose``) as it is, without
        its ``distinct``, when every other atom of the rule is broadcast-small (so the extra
        rows only pass through maps before the rule's own ``distinct``)."""
        atoms = [lit.atom if isinstance(lit, ir.Neg) else lit for lit in rule.body]
        rels = [a.rel for a in atoms if isinstance(a, ir.Atom)]
        loose = [r for r in rels if r in self.loose]
        if reasons or len(loose) != 1 or not all(
                r in loose or self._small(r, "full", {}) for r in rels):
            return self.full
        return self.full.over({loose[0]: self.loose[loose[0]]})

    def _recursive(self, st: ir.Stratum) -> StratumReport:
        shape = None
        if self.closure_strategy != "semi-naive" and not any(
                r in self.inputs for r in st.relations) and not (
                self.with_reasons and self.decision in st.relations):
            shape = closure_shape(self.program, st)
        if shape is not None:
            use_gf = False
            if self.closure_strategy in ("auto", "graphframes"):
                ok, why = graphframes_status(self.spark)
                if not ok and self.closure_strategy == "graphframes":
                    raise GrantlogError([error("spark-unsupported", why, NO_SPAN)])
                use_gf = ok
            strategy = "graphframes" if use_gf else "doubling"
            report = StratumReport(st.index, st.relations, strategy)
            self.plans.append(f"{shape.rel}: transitive closure of {shape.edge} "
                              f"({shape.kind}) by path doubling"
                              + (" with GraphFrames motifs" if use_gf else ""))

            counted = [0]

            def say(k: int, n: int) -> None:
                counted[0] += n
                self.progress(f"stratum {st.index} [{shape.rel}] {strategy} round {k}: "
                              f"+{plural(n, 'row')}")

            total, rounds = doubling(
                self.full[shape.edge], self.materialize, say, self.max_iterations,
                partial(iteration_limit, st), use_gf)
            self.full[shape.rel] = total
            report.iterations = rounds
            report.rows = self.sizes[shape.rel] = counted[0]
            return report
        return self._semi_naive(st)

    def _semi_naive(self, st: ir.Stratum) -> StratumReport:
        rels = st.relations
        rec = frozenset(rels)
        report = StratumReport(st.index, rels, "semi-naive")
        exits: list[RulePlan] = []
        variants: list[RulePlan] = []
        for rid in st.rules:
            for p in planner.plans(self.program.rules[rid], rec, self.seeds, self.low):
                (variants if p.delta_literal is not None else exits).append(p)
                self.plans.append(f"{p.rule.name}: {p.describe()}")
        arity = {r: self.program.relations[r].arity for r in rels}
        # the decision relation, when it is here and reasons are asked for: its rows carry
        # (rule, reason_rel, reason_row) through the loop; a row keeps the reason of the round
        # that first derived it (a derivation of least height), the least one of that round
        why = self.decision if self.with_reasons and self.decision in rec else None
        reason_parts: list[Any] = []
        t0 = time.perf_counter()
        # exit rules and facts: the first round
        parts: dict[str, list[Any]] = {}
        total_rows = 0
        sizes_all: dict[str, list[int]] = {r: [] for r in rels}
        delta: dict[str, Any] = {}
        sizes: dict[str, int] = {}
        for r in rels:
            dfs = []
            for p in exits:
                if p.head.rel == r:
                    d = self.rule_df(p, self.full, {}, {}, reasons=r == why)
                    if d is not None:
                        dfs.append(d)
            if r == why:
                first = reasons_mod.pick(self.F, rel_cols(arity[r]), self.full[r],
                                         self._union(dfs, 0) if dfs else None)
                first, sizes[r] = self.materialize(first)
                reason_parts.append(first)
                delta[r] = first.select(*rel_cols(arity[r]))
            else:
                delta[r], sizes[r] = self.materialize(
                    self._union([self.full[r], *dfs], arity[r]).distinct())
            total_rows += sizes[r]
            sizes_all[r].append(sizes[r])
            parts[r] = [delta[r]]
            self.full[r] = delta[r]
        report.iterations = 1
        self._round(st, 1, sizes, t0)
        while any(sizes.values()):
            if report.iterations >= self.max_iterations:
                raise iteration_limit(st, report.iterations)
            report.iterations += 1
            t0 = time.perf_counter()
            new: dict[str, Any] = {}
            for r in rels:
                dfs = []
                for p in variants:
                    if p.head.rel != r or not sizes[p.delta_rel or ""]:
                        continue
                    d = self.rule_df(p, self.full, delta, sizes, reasons=r == why)
                    if d is not None:
                        dfs.append(d)
                cols = rel_cols(arity[r])
                # new_r = (rules over delta) - full_r
                if r == why:
                    new[r] = reasons_mod.least(
                        self.F, cols, self._union_reasons(dfs, arity[r])).join(
                        self.full[r], on=cols, how="left_anti")
                else:
                    new[r] = self._union(dfs, arity[r]).distinct().join(
                        self.full[r], on=cols, how="left_anti")
            for r in rels:
                if r == why:
                    got, sizes[r] = self.materialize(new[r])
                    if sizes[r]:
                        reason_parts.append(got)
                    delta[r] = got.select(*rel_cols(arity[r]))
                else:
                    delta[r], sizes[r] = self.materialize(new[r])
                total_rows += sizes[r]
                sizes_all[r].append(sizes[r])
            for r in rels:
                if sizes[r]:
                    parts[r].append(delta[r])
                    if len(parts[r]) >= 8:  # compact the union of checkpointed parts
                        self.full[r], _ = self.materialize(self._union(parts[r], arity[r]))
                        parts[r] = [self.full[r]]
                    else:
                        self.full[r] = self._union(parts[r], arity[r])
            self._round(st, report.iterations, sizes, t0)
        if why is not None:
            out = reason_parts[0]
            for part in reason_parts[1:]:
                out = out.unionByName(part)
            self.reasons = out
        report.rows = total_rows
        for r in rels:
            self.sizes[r] = sum(sizes_all[r])
        return report

    def _union_reasons(self, dfs: list[Any], arity: int) -> Any:
        if dfs:
            return self._union(dfs, arity)
        return self.spark.createDataFrame([], reasons_mod.schema(self.T, rel_cols(arity)))

    def _round(self, st: ir.Stratum, k: int, sizes: Mapping[str, int], t0: float) -> None:
        news = ", ".join(f"+{n} {r}" for r, n in sizes.items())
        self.progress(f"stratum {st.index} semi-naive iteration {k}: {news} "
                      f"({time.perf_counter() - t0:.2f} s)")

    # -- outputs ----------------------------------------------------------------------------

    def external(self, rel: str, df: Any, extra: tuple[str, ...] = ()) -> Any:
        r = self.program.relations[rel]
        return encoding.external(df, r.columns, self.kinds[rel], extra)

    def results(self, answer: tuple[str, str] | None = None) -> dict[str, Any]:
        """External DataFrames per relation; ``answer``: (relation, public name) of a goal's
        answers, shown under the public name with the decision relation's reasons."""
        out = {rel: self.external(rel, df) for rel, df in self.full.items()
               if rel in self.program.relations}  # not the factored groups
        dec = self.decision
        if self.with_reasons and self.reasons is not None and not self.local:
            self.reasons = grant_reasons(self)  # premises -> grants (reasons.py)
        if self.with_reasons and dec in self.full:
            if self.reasons is None:  # a base relation: its rows are facts, with no reason
                none = self.F.lit(None).cast("string")
                self.reasons = self.full[dec].select(
                    "*", *[none.alias(c) for c in REASON_COLUMNS])
            out[dec] = self.external(dec, self.reasons, REASON_COLUMNS)
        if answer is not None:
            rel, name = answer
            df = self.full[rel]
            if self.with_reasons and self.reasons is not None:
                cols = rel_cols(self.program.relations[rel].arity)
                df = df.join(self.reasons, on=cols, how="left").select(*cols, *REASON_COLUMNS)
                out[name] = self.external(rel, df, REASON_COLUMNS)
            else:
                out[name] = out[rel]
        return out


def run(
    program: ir.Program,
    spark: Any,
    inputs: Mapping[str, Any] | None = None,
    *,
    with_reasons: bool = False,
    closure: str = "auto",
    max_iterations: int = 10_000,
    broadcast_rows: int = 100_000,
    materialize: str = "shared",
    progress: Progress | None = None,
    goal: str | None = None,
    where: str | None = None,
    restrict: Collection[str] | None = None,
    local_rows: int = 0,
    driver_rows: int = 0,
    symmetry: bool | None = None, exceptions: bool | None = None,
) -> SparkResult:
    """Evaluate ``program`` on ``spark``: a :class:`SparkResult` (one DataFrame per relation,
    base and derived; column kinds, per-stratum reports, join plans, a goal's demand rewrite).

    ``inputs``: base relation -> DataFrame with the relation's column names (``c0, c1, ...``
    when undeclared), added to the rule files' facts; schemas are checked before any job runs
    (``bad-input``). ``with_reasons`` adds ``rule``, ``reason_rel``, ``reason_row`` to the
    decision relation. ``closure``: ``auto`` (GraphFrames when its jar is on the classpath,
    else path doubling, for transitive-closure strata), ``doubling``, ``graphframes`` (fail
    when unavailable) or ``semi-naive``. A recursive stratum running more than
    ``max_iterations`` rounds fails with ``iteration-limit``. Base relations of at most
    ``broadcast_rows`` rows are broadcast (0: no hints, inputs not counted).
    ``materialize="all"`` checkpoints every stratum (row counts in every report).

    ``goal`` (one atom, ``'allowed(U, load_table, T)'``) and ``where`` (literals sharing its
    variables, ``'catalog_of(T, "m1.c1")'``): the program is first rewritten for the goal
    (demand / magic sets, engine/plan/magic.py; ``restrict``: the derived relations computed
    on demand, default :func:`~grantlog.engine.plan.magic.default_restricted`), and
    ``relations[<goal relation>]`` holds exactly the goal's matching rows that satisfy
    ``where``; the rewritten program's relations (``allowed__fcb``, ``magic__allowed__fcb``)
    are there too.

    ``local_rows``: a run without a goal whose rule-file facts and inputs hold at most this
    many rows is evaluated by the in-memory engine on the driver and handed back as
    DataFrames (local.py; 0, the default here: always on Spark; CLI: ``local.LOCAL_ROWS``).

    ``driver_rows``: inputs and derived relations are also held on the driver while they
    hold at most this many rows in all, and a stratum reading only such relations (and
    staying within that) is evaluated there (local.py :class:`~.local.Driver`), not as Spark
    jobs; its rows are handed to the later strata as a local relation when Spark reads them
    (0, the default here: every stratum on Spark; the CLI's default is
    ``local.DRIVER_ROWS``).

    ``symmetry``: run on one representative per class of interchangeable input values, then
    expand them, reasons too (symmetry.py; sound classes only); None: on inputs of ≥ 1 MiB.
    ``exceptions`` (a goal, no reasons): classes of one too, as their base class (singles.py)."""
    if closure not in ("auto", "doubling", "graphframes", "semi-naive"):
        raise ValueError(f"unknown closure strategy {closure!r}")
    arguments.integer("local_rows", local_rows, minimum=0)
    arguments.integer("driver_rows", driver_rows, minimum=0)
    if materialize not in ("shared", "cache", "all"):
        raise ValueError(f"unknown materialize mode {materialize!r}")
    inputs = dict(inputs or {})
    if goal is None:
        if where is not None:
            raise ValueError("`where` needs a `goal`")
        r = _Run(program, spark, inputs, with_reasons=with_reasons,
                 closure_strategy=closure, max_iterations=max_iterations,
                 broadcast_rows=broadcast_rows, materialize=materialize, progress=progress,
                 driver_rows=driver_rows)
        rows = local.gather(r, local_rows)
        r.local = rows is not None
        if rows is not None:
            local.evaluate(r, rows)
        else:
            symmetric.run(r, symmetry)
        return SparkResult(r.results(), r.kinds, r.reports, r.plans)
    schema.check_inputs(program, inputs)  # against the whole program, before the rewrite
    d = demand(program, goal, where, restrict=restrict, keep=full_on_spark(program, inputs))
    if progress:
        progress(f"demand: `{goal}`" + (f" where `{where}`" if where else "")
                 + f" -> {plural(len(d.program.rules), 'rule')} over "
                 f"{plural(len(d.program.relations), 'relation')} ({len(d.magic)} magic), "
                 f"answers in `{d.answer}`")
    used = {rel: df for rel, df in inputs.items() if rel in d.program.relations}
    r = _Run(d.program, spark, used, with_reasons=with_reasons,
             closure_strategy=closure, max_iterations=max_iterations,
             broadcast_rows=broadcast_rows, materialize=materialize, progress=progress,
             seeds=d.magic, display=d.origin, decision=d.goal_relation,
             driver_rows=driver_rows)
    singles.run(r, symmetry, exceptions, program, goal, where, d)
    return SparkResult(r.results((d.answer, d.goal.rel)), r.kinds, r.reports, r.plans, d)
