"""A whole-platform access review on Spark: every (subject, operation, resource) of the
decision relation with the intervals of revisions in which it held over a period of a store's
history, written as Parquet (``grantlog review --spark --store URL --since A --until B -o
DIR``).

The facts come as intervals (engine/answer/periods.py: each base fact with the revisions
``[lo, hi)`` it was present in, per policy stretch) and the rules run once over them, the
intervals carried through the joins (a temporal Datalog): every relation's rows carry
``lo``/``hi``; each join of a rule's plan (engine/plan/join.py, Spark's join order:
planner.py) intersects the intervals of the rows it joins (``greatest`` of the starts,
``least`` of the ends, empty ones dropped); a relation is the union of its rules' rows,
coalesced per row (overlapping and adjacent intervals merged: gaps and islands over a
window). That is exact for positive rules: a row holds at revision ``t`` iff some
derivation's facts all held at ``t``. Negation (a DENY) is exact too, because the negated
relation is complete (a lower stratum) and coalesced first: a row whose key has no negated
row keeps its interval (``left_anti``), the others are intersected with the gaps between the
negated key's intervals. Recursive strata run semi-naively on the coalesced rows (the delta:
the coalesced rows that are new). Comparisons and assignments act on the values, not the
intervals, as in the plain evaluator (spark_bridge/evaluator.py, whose value encoding this
module shares).

Every stratum's relations are coalesced (not only ``distinct``: a row derived along two paths
over overlapping intervals is one row per stretch of presence, so fragments do not multiply
through the joins that read it); a relation of one rule whose head keeps every variable comes
coalesced from coalesced relations and is left as it is (:func:`_keeps_all`). A join
broadcasts a side known to hold at most :data:`BROADCAST_ROWS` rows when the other may hold
more (sizes: the base relations' and the computed ones' counts, and for a lazy relation the
bound its rules give: the sum over its rules of the product of their scans' rows); a
negation is one left join with the gaps of the negated rows' intervals.

Two rewrites of the plans for size (neither changes an answer; tests/test_spark_review_plan.py):
a *product view*, a one-rule relation none of whose atoms binds its whole head (users
registered for every object of their site), is unfolded into its callers
(:func:`unfold_products`), so its rows (users × objects) are never computed; and a rule's
bindings that may hold more than :data:`DISTINCT_ROWS` rows lose their exact duplicates
where its plan first drops a variable before a later join (a user reaching one grant
through several roles, before the join that expands a grant to every object below it).

Few Spark jobs (:meth:`_Temporal.run`): the base facts are the driver's rows and a
non-recursive stratum a lazy plan (no job); lazy relations still to be read are computed
together, one job for all (:meth:`_Temporal.settle`), before a recursive stratum or when a
plan grows past ``PLAN_LIMIT`` reads; a recursive stratum costs one job per round. So the
jobs follow the recursion's rounds, not the number of strata (:class:`Jobs` counts them).
The relations of such a job are one tagged union, locally checkpointed (or, with
``review_cache.CACHE``, in Spark's columnar cache sorted by relation: spark_bridge/review_cache.py);
when it holds more than :data:`SPLIT_ROWS` rows, its small relations are read back to the
driver by one job more (:meth:`_Temporal._small_to_driver`).

Interchangeable values (spark_bridge/review_symmetry.py): values with the same rows and the same
intervals are collapsed to one representative per class before the rules run, and the
decision's intervals are expanded to every member after (:func:`intervals` ``symmetry``).

Output columns: ``subject, operation, resource`` (the decision's three columns, as text),
``from_revision, from_time`` (the transaction that opened the interval; the period's first
revision when it held already then: ``held_at_since`` true), ``until_revision, until_time``
(the one that closed it; null while it still held at the period's end). Times are UTC
timestamps (commit times). A policy change inside the period starts a new stretch, evaluated
under that policy; intervals that continue across it are one interval.
"""

from __future__ import annotations

import os
import tempfile
import uuid
from collections.abc import Mapping
from typing import Any

from grantlog.engine.answer.periods import Period, Stretch, period
from grantlog.engine.compile.restrict import restrict
from grantlog.engine.core import arguments, ir, progress
from grantlog.engine.core.terms import is_anon
from grantlog.engine.plan.join import Assign, Filter, NegCheck, RulePlan, Scan
from grantlog.grammar.diagnostics import NO_SPAN, GrantlogError, error

from . import encoding, planner, review_cache, review_heads
from .evaluator import PLAN_LIMIT, rel_cols

#: interval bounds beyond any revision (the gaps before the first and after the last
#: interval of a negated row)
LOW, HIGH = -(2**62), 2**62
#: a relation (or delta) known to hold at most this many rows is broadcast to its joins
BROADCAST_ROWS = 100_000
#: a rule's bindings that may hold more rows than this lose their duplicates (``distinct``)
#: where its plan first drops a variable before a later join (:meth:`_Temporal.rule_df`)
DISTINCT_ROWS = 1_000_000
#: a checkpoint of more rows than this gives its small relations (at most
#: :data:`BROADCAST_ROWS` rows each, :data:`DRIVER_ROWS` in all) to the driver
#: (:meth:`_Temporal._small_to_driver`)
SPLIT_ROWS, DRIVER_ROWS = 1_000_000, 500_000
#: the Parquet layout (docs/history.md)
COLUMNS = ("subject", "operation", "resource", "from_revision", "from_time",
           "until_revision", "until_time", "held_at_since")


class _Temporal:
    """One policy stretch's rules over interval-annotated relations (columns ``c0..`` as
    the plain evaluator encodes values, then ``lo``, ``hi``)."""

    def __init__(self, spark: Any, stretch: Stretch, caches: list[Any] | None = None) -> None:
        from pyspark.sql import Window
        from pyspark.sql import functions as F
        from pyspark.sql import types as T

        self.spark, self.F, self.T, self.W = spark, F, T, Window
        self.program = stretch.program
        self.stretch = stretch
        self.full: dict[str, Any] = {}
        #: relation -> about how many relation reads its lazy plan holds (1: computed)
        self.weight: dict[str, int] = {}
        #: relation -> its rows, when known (the driver's, or counted by :meth:`settle`)
        self.sizes: dict[str, int] = {}
        #: (frame, flag value) -> rows, of the last :meth:`settle`
        self.counts: dict[tuple[Any, Any], int] = {}
        #: the last :meth:`settle`'s cache (its tagged union) and its keys in order
        self.kept: tuple[Any, list[Any]] = (None, [])
        #: relation -> the column its cached rows are sorted by (review_cache.sort_columns)
        self.sorts = review_cache.sort_columns(self.program)
        #: every cache :meth:`settle` made (freed by the caller: :func:`intervals`)
        self.caches: list[Any] = [] if caches is None else caches

    # -- relations --------------------------------------------------------------------------

    def _schema(self, arity: int) -> Any:
        T = self.T
        return T.StructType([T.StructField(c, T.StringType(), False) for c in rel_cols(arity)]
                            + [T.StructField("lo", T.LongType(), False),
                               T.StructField("hi", T.LongType(), False)])

    def _base(self, rel: str) -> Any:
        """The base facts of ``rel``: the store's with their intervals, the rule files'
        through the whole stretch."""
        s = self.stretch
        rows = [(*(encoding.encode(v) for v in row), lo, hi) if row else ("1", lo, hi)
                for row, lo, hi in s.facts.get(rel, ())]
        rows += [(*(encoding.encode(v) for v in f.row), s.start, s.end) if f.row
                 else ("1", s.start, s.end) for f in self.program.facts if f.rel == rel]
        self.sizes[rel] = len(rows)  # a derived relation's: its rules' rows added later
        return self.spark.createDataFrame(rows, self._schema(self.program.relations[rel].arity))

    def coalesce(self, df: Any, keys: list[str], *aggs: Any, distinct: bool = True) -> Any:
        """Per row of ``keys``, its intervals merged where they overlap or touch: one row
        per stretch of presence. The exact duplicates go first (``distinct``: an aggregate
        that drops them before its shuffle, where a join's derivations of one row through
        different paths mostly share their interval), then a window over each row's
        intervals in order numbers the stretches. ``aggs``: more aggregates of each
        stretch's rows."""
        F, W = self.F, self.W
        if distinct:
            df = df.distinct()
        w = W.partitionBy(*keys).orderBy("lo", "hi")
        before = F.max("hi").over(w.rowsBetween(W.unboundedPreceding, -1))
        starts = F.when(before.isNull() | (F.col("lo") > before), 1).otherwise(0)
        g = df.withColumn("_s", starts).withColumn(
            "_g", F.sum("_s").over(w.rowsBetween(W.unboundedPreceding, 0)))
        return g.groupBy(*keys, "_g").agg(F.min("lo").alias("lo"), F.max("hi").alias("hi"),
                                           *aggs).drop("_g")

    def _next(self, rel: str, found: list[Any], heads: list[ir.Atom]) -> Any:
        """A recursive relation's next round: its rows (coalesced) and the rows ``found``
        that the rules of ``heads`` derived from the round's deltas, coalesced together in
        one shuffle (its rows hold no duplicate: only ``found`` loses its own), each flagged
        ``_new`` unless the round had it, interval and all. A merged stretch is one of the
        round's iff one of the round's intervals in it spans all of it (a row's intervals
        neither overlap nor touch, so two of them never make one stretch unchanged), so no
        join tells them apart. Only the keys ``found`` may touch are coalesced again: where
        every head has a constant in one column (review_heads.bounded), the rows with
        another value there are kept as they are (a read of the cache, no shuffle)."""
        F = self.F
        full, cols = self.full[rel], rel_cols(self.program.relations[rel].arity)
        if not found:
            return full.withColumn("_new", F.lit(False))
        rest = None
        part = review_heads.bounded(heads, self.sorts.get(rel, 0))
        if part is not None:
            hit = F.col(f"c{part[0]}").isin(part[1])
            rest = full.filter(~hit).withColumn("_new", F.lit(False))
            full = full.filter(hit)
        rows = full.withColumn("_o", F.lit(True)).unionByName(
            review_cache.union(found).distinct().withColumn("_o", F.lit(False)))
        length = F.col("hi") - F.col("lo")
        old = F.max(F.when(F.col("_o"), length)).alias("_span")
        merged = self.coalesce(rows, cols, old, distinct=False).select(
            *cols, "lo", "hi", F.coalesce(F.col("_span") != length, F.lit(True)).alias("_new"))
        return merged if rest is None else rest.unionByName(merged)

    # -- rules ------------------------------------------------------------------------------

    def rule_df(self, plan: RulePlan, sources: Mapping[str, Any],
                deltas: Mapping[str, Any], delta_sizes: Mapping[str, int] | None = None,
                heads: tuple[ir.Atom, ...] = ()) -> tuple[Any, int] | None:
        """The head rows of one plan with their intervals (None: a constant comparison
        makes the rule empty) and at most how many (the product of its scans' rows,
        :meth:`_rows`; ``delta_sizes``: the deltas' rows); ``heads``: the heads of the rules
        of the same body (spark_bridge/review_heads.py), each binding giving a row of each
        (default: the plan's own). A join of a side of at most
        :data:`BROADCAST_ROWS` rows with one that may hold more broadcasts the small side
        (a shuffle of the big one saved); two small sides are joined as they are (a
        broadcast of a computed relation is a Spark job of its own). Where the plan first
        drops a variable before its last join, bindings that may hold more than
        :data:`DISTINCT_ROWS` rows lose their exact duplicates (``distinct``: rows and
        intervals; overlapping ones are merged by the stratum's coalesce), so the later
        joins do not multiply them."""
        F = self.F
        v = encoding.VarColumns()
        expr = v.expr

        steps = plan.steps
        need = planner.needed(plan)
        last = max((i for i, s in enumerate(steps) if isinstance(s, Scan)), default=-1)
        deduped = False
        b: Any = None
        most = 1  # at most this many rows so far (the product of the rows of the scans)
        for i, s in enumerate(steps):
            if isinstance(s, Scan):
                src = (deltas if s.source == "delta" else sources)[s.rel]
                n = self._rows(s, delta_sizes or {})
                conds, proj, join_on = encoding.scan_columns(s, need[i], v)
                for c in conds:
                    src = src.filter(c)
                right = src.select(*[e.alias(n) for n, e in proj.items()],
                                   F.col("lo").alias("l2"), F.col("hi").alias("h2"))
                if not proj:  # only when it held matters
                    right = self.coalesce(right.withColumnRenamed("l2", "lo")
                                          .withColumnRenamed("h2", "hi"), []) \
                        .select(F.col("lo").alias("l2"), F.col("hi").alias("h2"))
                    n = min(n, self.stretch.end - self.stretch.start)  # disjoint intervals
                if b is None:
                    b, most = right.withColumnRenamed("l2", "lo").withColumnRenamed("h2", "hi"), n
                    continue
                if n <= BROADCAST_ROWS < most:
                    right = F.broadcast(right)
                elif most <= BROADCAST_ROWS < n:
                    b = F.broadcast(b)
                most = min(most * n, HIGH)
                b = b.join(right, on=join_on, how="inner") if join_on else b.crossJoin(right)
                b = b.withColumn("lo", F.greatest("lo", "l2")) \
                    .withColumn("hi", F.least("hi", "h2")).drop("l2", "h2") \
                    .filter(F.col("lo") < F.col("hi"))
            elif isinstance(s, Filter):
                cond = encoding.filter_step(s, expr)
                if cond is False:
                    return None
                if cond is not True:
                    b = b.filter(cond)
            elif isinstance(s, Assign):
                b = (self._whole() if b is None else b).withColumn(v(s.var), expr(s.value))
            else:
                b = self._without(self._whole() if b is None else b, s, sources, v,
                                  most > BROADCAST_ROWS)
            if b is None:  # a comparison of constants that holds: nothing bound yet
                continue
            keep = [v(n) for n in sorted(need[i]) if v(n) in b.columns] + ["lo", "hi"]
            if len(keep) < len(b.columns):
                b = b.select(*keep)
                if isinstance(s, Scan) and not deduped and i < last and most > DISTINCT_ROWS:
                    b, deduped = b.distinct(), True  # before a later join multiplies them
        if b is None:
            b = self._whole()
        rows = [[expr(t).alias(f"c{i}") for i, t in enumerate(h.args)] or [
            F.lit("1").alias("_u")] for h in heads or (plan.head,)]
        if len(rows) == 1:
            return b.select(*rows[0], "lo", "hi"), most
        each = F.explode(F.array(*[F.struct(*row) for row in rows])).alias("_h")
        return b.select(each, "lo", "hi").select("_h.*", "lo", "hi"), min(most * len(rows), HIGH)

    def _whole(self) -> Any:
        """One binding holding through the whole stretch (a rule that starts without a scan)."""
        F = self.F
        return self.spark.range(1).select(F.lit(self.stretch.start).cast("long").alias("lo"),
                                          F.lit(self.stretch.end).cast("long").alias("hi"))

    def _without(self, b: Any, s: NegCheck, sources: Mapping[str, Any], v: Any,
                 big: bool = False) -> Any:
        """``b`` where the negated atom does not hold: a binding whose key the negated
        relation never has keeps its interval; the others keep the parts of it that fall in
        the gaps between the (coalesced) intervals of their key. One left join with the
        gaps (every key the negated relation has has one at least: the one before its first
        interval), so ``b`` is read once."""
        F, W = self.F, self.W
        neg = sources[s.rel]
        conds, proj = encoding.key_columns(s.key_cols, s.key_terms, v)
        for c in conds:
            neg = neg.filter(c)
        keys = list(proj)
        held = self.coalesce(neg.select(*[e.alias(n) for n, e in proj.items()], "lo", "hi"),
                             keys)
        w = W.partitionBy(*keys).orderBy("lo")
        gaps = held.select(*keys, F.coalesce(F.lag("hi").over(w), F.lit(LOW)).alias("l2"),
                           F.col("lo").alias("h2"))
        ends = held.groupBy(*keys).agg(F.max("hi").alias("l2")) \
            .withColumn("h2", F.lit(HIGH).cast("long"))
        gaps = gaps.unionByName(ends)
        if big and (not keys or self.sizes.get(s.rel, HIGH) <= BROADCAST_ROWS):
            gaps = F.broadcast(gaps)  # (twice the rows of ``held`` at most)
        out = b.join(gaps, on=keys, how="left") if keys else b.join(gaps, how="left")
        free = F.col("l2").isNull()
        return out.withColumn("lo", F.when(free, F.col("lo")).otherwise(F.greatest("lo", "l2"))) \
            .withColumn("hi", F.when(free, F.col("hi")).otherwise(F.least("hi", "h2"))) \
            .drop("l2", "h2").filter(F.col("lo") < F.col("hi"))

    def _rows(self, s: Scan, delta_sizes: Mapping[str, int]) -> int:
        """At most how many rows scan ``s`` reads: its relation's (:attr:`sizes`; a delta's:
        ``delta_sizes``; unknown: :data:`HIGH`)."""
        if s.source == "delta":
            return delta_sizes.get(s.rel, HIGH)
        return self.sizes.get(s.rel, HIGH)

    # -- materialization --------------------------------------------------------------------

    def settle(self, frames: Mapping[Any, Any], flag: str | None = None) -> dict[Any, Any]:
        """Every frame of ``frames`` (relation-shaped: ``c0..``, ``lo``, ``hi``; ``flag``: a
        boolean column more) computed in ONE Spark job: one tagged union, locally
        checkpointed (spark_bridge/review_cache.py; ``CACHE``: in the columnar cache, sorted
        by relation, so that a read skips the others' rows) and counted per tag (and
        per ``flag``) by the same job; each comes back as a read of it. Sets :attr:`counts`
        ``[(key, flag value)]`` (``flag`` None: ``[(key, None)]``)."""
        cols = {k: self._cols(df) for k, df in frames.items()}
        sort = {k: min(self.sorts.get(k, 0), max(len(c) - 1, 0)) for k, c in cols.items()}
        kept, counts, out = review_cache.settle(self.spark, frames, cols, sort, flag)
        self.kept = (kept, list(frames))
        self.caches.append(kept)
        self.counts.update(counts)
        return out

    @staticmethod
    def _cols(df: Any) -> list[str]:
        return [c for c in df.columns if c not in ("lo", "hi", "_new")]

    def _settle_lazy(self, needed: set[str], say: Any = None) -> None:
        """The lazy relations among ``needed`` computed together (one job)."""
        lazy = {rel: self.full[rel] for rel in sorted(needed) if self.weight.get(rel, 1) > 1}
        if lazy:
            for rel, df in self.settle(lazy).items():
                self.full[rel], self.weight[rel] = df, 1
                self.sizes[rel] = self.counts.get((rel, None), 0)  # none: no rows
            self._small_to_driver(lazy)
            if say is not None:
                say("computed " + ", ".join(f"{rel} ({self.sizes[rel]})" for rel in lazy))

    def _small_to_driver(self, settled: Mapping[str, Any]) -> None:
        """After :meth:`settle`, the small relations of a large checkpoint read back as the
        driver's rows (one more job, one read of the cache): a relation of a few thousand
        rows is then read without a look at the cache's batches (tens of millions of rows
        beside it: their statistics at least). Only when the checkpoint holds
        more than :data:`SPLIT_ROWS` rows; relations of at most :data:`BROADCAST_ROWS` rows,
        :data:`DRIVER_ROWS` in all at most."""
        F = self.F
        total = sum(self.sizes[rel] for rel in settled)
        small = sorted((rel for rel in settled
                        if self.sizes[rel] <= BROADCAST_ROWS and self.program.relations[rel].arity),
                       key=lambda rel: self.sizes[rel])
        while small and sum(self.sizes[rel] for rel in small) > DRIVER_ROWS:
            small.pop()
        if total <= SPLIT_ROWS or not small:
            return
        made, keys = self.kept
        kept = made.rows
        index = review_cache.tags(keys, small)
        rows: dict[int, list[tuple[Any, ...]]] = {i: [] for i in index.values()}
        for row in kept.filter(F.col("_r").isin(list(index.values()))).collect():
            arity = self.program.relations[keys[row["_r"] // 2]].arity
            rows[row["_r"]].append((*(row[f"x{j}"] for j in range(arity)), row["lo"], row["hi"]))
        for rel, i in index.items():
            self.full[rel] = self.spark.createDataFrame(
                rows[i], self._schema(self.program.relations[rel].arity))

    def _weight(self, st: ir.Stratum) -> int:
        """About how many relation reads a stratum's lazy plan holds: its rules' reads, each
        counted with the reads of the lazy plan it reads (a negated one three times: the
        gaps between its intervals read it again)."""
        return 1 + sum(self.weight.get(lit.rel, 1) if isinstance(lit, ir.Atom)
                       else 3 * self.weight.get(lit.atom.rel, 1)
                       for i in st.rules for lit in self.program.rules[i].body
                       if isinstance(lit, ir.Atom | ir.Neg))

    # -- strata -----------------------------------------------------------------------------

    def run(self, say: Any = None) -> Any:
        """Every stratum of the decision relation's cone; returns its rows (coalesced).

        Spark jobs: none for the base relations (the driver's rows) and none for a
        non-recursive stratum (its plan stays lazy, as spark_bridge/evaluator.py's do); the
        lazy relations still to be read are computed together, in one job, before a
        recursive stratum (whose rounds would each recompute them) or when a stratum's plan
        would read more than :data:`PLAN_LIMIT` relations; a recursive stratum costs one
        job per semi-naive round (all its relations at once)."""
        program = self.program
        for rel in program.relations:
            if rel not in program.derived:
                self.full[rel] = self._base(rel)
        reads = [{a.rel for i in st.rules for a in _atoms(program.rules[i])}
                 for st in program.strata]
        for k, st in enumerate(program.strata):
            if st.recursive or self._weight(st) > PLAN_LIMIT:
                lazy = set(self.full) & (set().union(*reads[k:]) | {program.decision})
                self._settle_lazy(lazy, say)
            self._stratum(st, self._weight(st), say)
            if say is not None:
                say(f"stratum {st.index}: {', '.join(st.relations)}")
        return self.full[program.decision]

    def _stratum(self, st: ir.Stratum, weight: int, say: Any = None) -> None:
        """A stratum's relations: the union of their rules' rows, coalesced (a row's
        intervals merged: the same answer in fewer rows, so fragments of one stretch do not
        multiply through the joins that read it), lazy; a recursive stratum runs
        semi-naively on coalesced rows, one job per round (:meth:`settle`: every relation
        of the stratum, each row flagged new or not, the new ones counted)."""
        program = self.program
        mine = frozenset(st.relations)
        cols = {rel: rel_cols(program.relations[rel].arity) for rel in mine}
        start: dict[str, list[Any]] = {rel: [self._base(rel)] for rel in mine}
        most = {rel: self.sizes[rel] for rel in mine}
        plain = {rel for rel in mine if not most[rel]}  # one rule's rows, as they are
        later = []
        for rule, heads in review_heads.groups(program.rules[i] for i in st.rules):
            body = {lit.rel for lit in rule.body if isinstance(lit, ir.Atom)}
            if st.recursive and body & mine:
                later.append((rule, heads))
                continue
            for plan in planner.plans(rule):
                got = self.rule_df(plan, self.full, {}, heads=heads)
                if got is not None:
                    start[rule.head.rel].append(got[0])
                    most[rule.head.rel] = min(most[rule.head.rel] + got[1], HIGH)
                    if not _keeps_all(plan) or len(heads) > 1:
                        plain.discard(rule.head.rel)
        if not later:
            for rel in mine:
                one = rel in plain and len(start[rel]) == 2
                self.full[rel] = start[rel][1] if one else \
                    self.coalesce(review_cache.union(start[rel]), cols[rel])
                self.weight[rel], self.sizes[rel] = weight, most[rel]
            return
        F = self.F
        first = {rel: self.coalesce(review_cache.union(start[rel]), cols[rel])
                 .withColumn("_new", F.lit(True)) for rel in mine}
        rows = self.settle(first, "_new")
        mine_kept = self.kept[0]
        while True:
            self.full.update({rel: rows[rel].drop("_new") for rel in mine})
            self.weight.update(dict.fromkeys(mine, 1))
            news = {rel: self.counts.get((rel, True), 0) for rel in mine}
            self.sizes.update({rel: news[rel] + self.counts.get((rel, False), 0)
                               for rel in mine})
            fresh = {rel for rel in mine if news[rel]}
            if say is not None:
                say(f"stratum {st.index} round: new rows " + ", ".join(
                    f"{rel} {news[rel]} of {self.sizes[rel]}" for rel in sorted(mine)))
            if not fresh:
                return
            delta = {rel: rows[rel].filter("_new").drop("_new") for rel in fresh}
            found: dict[str, list[Any]] = {rel: [] for rel in mine}
            made: dict[str, list[ir.Atom]] = {rel: [] for rel in mine}
            for rule, heads in later:
                for plan in planner.plans(rule, mine):
                    if plan.delta_literal is not None and plan.delta_rel in fresh:
                        got = self.rule_df(plan, self.full, delta, news, heads)
                        if got is not None:
                            found[rule.head.rel].append(got[0])
                            made[rule.head.rel] += heads
            nxt = {rel: self._next(rel, found[rel], made[rel]) for rel in mine}
            self.counts.clear()
            rows = self.settle(nxt, "_new")
            review_cache.drop(mine_kept)  # the round before's, read by nothing any more
            mine_kept = self.kept[0]


def _keeps_all(plan: RulePlan) -> bool:
    """Whether ``plan``'s head keeps every variable its positive atoms bind (none is
    anonymous): then a binding is a head row, and a relation of that one rule over
    coalesced relations is coalesced as it comes (a row's intervals are the intersections
    of its body rows', disjoint and not touching), so :meth:`_Temporal.coalesce` is
    skipped: it would only cost a shuffle and a sort."""
    head = {t.name for t in plan.head.args if isinstance(t, ir.Var)}
    return all(not isinstance(t, ir.Var) or (not is_anon(t) and t.name in head)
               for lit in plan.rule.body if isinstance(lit, ir.Atom) for t in lit.args)


def unfold_products(program: ir.Program) -> ir.Program:
    """``program`` with every positive call of a *product view* replaced by the view's body
    (engine/plan/magic.py ``unfold_views``; the relation stays defined for negated calls,
    and is dropped when nothing reads it any more). A product view is a one-rule relation
    outside recursion (engine/core/analyses.py ``views``) none of whose positive atoms binds
    all of its head's variables: its rows can outnumber every relation it reads (a join on a
    column of few values pairs everything on one side with everything on the other), so
    computing it costs more than the joins of its callers, which bind most of its head.
    Exact with intervals too: a caller's row holds at ``t`` iff some derivation's facts all
    hold at ``t``, whether the view's rows are computed first or not."""
    from grantlog.engine.core import analyses
    from grantlog.engine.plan.magic import unfold_views

    def product(rule: ir.Rule) -> bool:
        head = {t.name for t in rule.head.args if isinstance(t, ir.Var)}
        return not any(head <= {t.name for t in a.args if isinstance(t, ir.Var)}
                       for a in rule.body if isinstance(a, ir.Atom))

    views = frozenset(rel for rel, rule in analyses.views(program).items()
                      if rel != program.decision and product(rule))
    if not views:
        return program
    # no relation is the goal here: every caller's calls are unfolded
    out, _, _ = unfold_views(program, views, "")
    return restrict(out, [program.decision])


def _atoms(rule: ir.Rule) -> list[ir.Atom]:
    """The atoms a rule's body reads, negated ones included."""
    return [lit.atom if isinstance(lit, ir.Neg) else lit for lit in rule.body
            if isinstance(lit, ir.Atom | ir.Neg)]


def intervals(spark: Any, p: Period, say: Any = None, symmetry: bool | None = None,
              caches: list[Any] | None = None) -> Any:
    """The decision rows of ``p`` with their intervals, as :data:`COLUMNS`. ``symmetry``:
    run over one representative per class of interchangeable values and expand the
    intervals (spark_bridge/review_symmetry.py; None: when a stretch holds at least
    ``review_symmetry.MIN_ROWS`` fact rows). The frame reads the Spark caches of the
    relations computed on the way (spark_bridge/review_cache.py), which are added to
    ``caches``: free them (``review_cache.drop``) once the frame is written; without a list
    they stay until the session ends."""
    from pyspark.sql import functions as F
    from pyspark.sql import types as T

    from . import review_symmetry

    if spark.sparkContext.getCheckpointDir() is None:
        spark.sparkContext.setCheckpointDir(tempfile.mkdtemp(prefix="grantlog-review-"))
    parts = []
    with review_cache.own_broadcasts(spark):  # the settles: planned and run inside
        for s in p.stretches:
            cut = Stretch(unfold_products(restrict(s.program, [s.program.decision])), s.start,
                          s.end, s.facts)
            c = review_symmetry.find(cut, cut.program) if review_symmetry.use(cut, symmetry) \
                else None
            if c is not None and say is not None:
                say(c.summary)
            rows = _Temporal(spark, cut if c is None else c.stretch, caches).run(say)
            rows = rows.select("c0", "c1", "c2", "lo", "hi")
            if c is not None:
                rows = review_symmetry.expand(spark, c, rows, cut.program.decision)
            parts.append(rows)
    # one stretch whose decision relation has rules: its rows are coalesced already (by
    # its stratum; an expanded row comes from one representative row); else merged here
    one = len(parts) == 1 and p.stretches[0].program.decision in p.stretches[0].program.derived
    rows = parts[0] if one else \
        _Temporal(spark, p.stretches[0]).coalesce(review_cache.union(parts), ["c0", "c1", "c2"])
    edges = spark.createDataFrame(
        [(rev, e.committed_at) for rev, e in sorted(p.edges.items())],
        T.StructType([T.StructField("rev", T.LongType(), False),
                      T.StructField("at", T.DoubleType(), True)]))
    opened = edges.select(F.col("rev").alias("lo"),
                          F.col("at").cast("timestamp").alias("from_time"))
    closed = edges.select(F.col("rev").alias("hi"),
                          F.col("at").cast("timestamp").alias("until_time"))
    shown = [F.when(encoding.is_int_col(F.col(f"c{i}")),
                    encoding.decode_long_col(F.col(f"c{i}")).cast("string"))
             .otherwise(encoding.decode_string_col(F.col(f"c{i}"))).alias(n)
             for i, n in enumerate(COLUMNS[:3])]  # an integer as its digits
    out = rows.join(F.broadcast(opened), on="lo", how="left") \
        .join(F.broadcast(closed), on="hi", how="left")
    return out.select(
        *shown, F.col("lo").alias("from_revision"), "from_time",
        F.when(F.col("hi") <= p.last, F.col("hi")).alias("until_revision"),
        F.when(F.col("hi") <= p.last, F.col("until_time")).alias("until_time"),
        (F.col("lo") == p.first).alias("held_at_since"))


def prepare(r: Any, since: object = None, until: object = None,
            output: str | None = None) -> Period:
    """The period a review of ``r``'s store covers, with every argument checked, before any
    Spark session is needed: the decision relation's shape (``unsupported-feature``),
    ``since``/``until`` (``bad-argument``, as :func:`~engine.answer.periods.period` reads
    them) and ``output`` (``bad-argument``: the review replaces a directory's contents, so it
    is a new or empty directory, or a review written before: one with Spark's ``_SUCCESS``)."""
    decision = r.program.decision
    if r.program.relations[decision].arity != 3:
        raise GrantlogError([error(
            "unsupported-feature", f"the decision relation `{decision}` does not take "
            "(subject, operation, resource)", NO_SPAN,
            "declare a decision relation of three columns")])
    if output is not None and os.path.lexists(output) and not (
            os.path.isdir(output) and (not os.listdir(output)
                                       or os.path.exists(os.path.join(output, "_SUCCESS")))):
        raise arguments.bad_argument(
            "output", "a new directory, an empty one or an earlier review's", output,
            "name a new directory: the review replaces what the directory holds")
    return period(r, since, until)


def review(r: Any, spark: Any, output: str, since: object = None,
           until: object = None, *, checked: Period | None = None,
           symmetry: bool | None = None) -> tuple[Period, int]:
    """Write the whole-platform review of ``r``'s store between ``since`` and ``until`` to
    the Parquet directory ``output``; returns the period and how many intervals.
    ``checked``: the period :func:`prepare` returned for these arguments (not read twice);
    ``symmetry``: as :func:`intervals` takes it. The intervals are written, then counted
    from the Parquet files' footers (not kept in memory for a count)."""
    p = prepare(r, since, until, output) if checked is None else checked
    with progress.task("reviewing on Spark", len(p.stretches), "stretch") as advance:
        caches: list[Any] = []
        with review_cache.own_broadcasts(spark):
            df = intervals(spark, p, lambda line: advance(0, postfix=line), symmetry, caches)
            df.write.mode("overwrite").parquet(output)
        for kept in caches:
            review_cache.drop(kept)
        n = spark.read.schema(df.schema).parquet(output).count()  # no schema job
        advance(len(p.stretches))
    return p, n


class Jobs:
    """The Spark jobs (and their stages, skipped ones included) that the code inside ``with
    Jobs(spark) as j:`` ran from this thread: ``j.jobs``, ``j.stages`` (a job group of its own,
    read back from the status tracker; the caller's group is restored after)."""

    def __init__(self, spark: Any) -> None:
        self.sc = spark.sparkContext
        self.group = f"grantlog-review-{uuid.uuid4().hex}"
        self.jobs = self.stages = 0
        self._was: tuple[str | None, ...] = ()

    def __enter__(self) -> Jobs:
        self._was = tuple(self.sc.getLocalProperty(k) for k in _GROUP)
        self.sc.setJobGroup(self.group, "grantlog review")
        return self

    def __exit__(self, *exc: object) -> None:
        for k, v in zip(_GROUP, self._was, strict=True):
            self.sc.setLocalProperty(k, v)
        tracker = self.sc.statusTracker()
        ids = tracker.getJobIdsForGroup(self.group)
        self.jobs = len(ids)
        self.stages = sum(len(info.stageIds) for info in map(tracker.getJobInfo, ids) if info)


#: the local properties a job group sets
_GROUP = ("spark.jobGroup.id", "spark.job.description", "spark.job.interruptOnCancel")


def session(master: str = "local[*]") -> Any:
    """A Spark session for the command line's review (the active one when there is one)."""
    import os
    import sys

    from pyspark.sql import SparkSession

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    fresh = SparkSession.getActiveSession() is None
    spark = (SparkSession.builder.master(master).appName("grantlog-review")
             .config("spark.ui.showConsoleProgress", "false").getOrCreate())
    if fresh:
        spark.sparkContext.setLogLevel("ERROR")
    return spark


__all__ = ["COLUMNS", "Jobs", "intervals", "prepare", "review", "session"]
