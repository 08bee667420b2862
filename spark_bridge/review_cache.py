"""The relations the whole-platform review (spark_bridge/review.py) computes together, kept so
that reading one of them reads its own rows, not every relation computed beside it.

A settle (:meth:`review._Temporal.settle`) computes several lazy relations in one Spark job:
their rows go into one tagged union, and each relation is read back as a filter of it. Kept as a
row-based checkpoint, every read of a relation scanned the whole union: a rule reading a few
thousand rows of one relation scanned the tens of millions of rows of the others, and each of
the hundred rules of a decision stratum that reads a large relation through a constant (the
privilege of ``p(U, some_privilege, X)``) scanned all of it.

Here the union is kept in Spark's columnar cache (memory, then disk), each partition sorted by
its tag, then by the column of the relation that the program's atoms most often bind to a
constant (:func:`sort_columns`; the relation's first column when none does). The cache keeps the
least and greatest value of each column per batch of rows
(``spark.sql.inMemoryColumnarStorage.batchSize``), and a read's filters on the tag and on that
column skip the batches that cannot hold its rows without decoding them
(``spark.sql.inMemoryColumnarStorage.partitionPruning``, on by default). A recursive round's
flag (its new rows) is part of the tag (``2 × relation + new``), so a round's delta is read the
same way. A read's plan is the cache alone (Spark's ``InMemoryRelation``, :func:`leaf`): the
lineage is cut as a checkpoint cuts it, so a plan reading a relation does not grow with what
the relation was computed from; where Spark gives no such frame (Spark Connect), a checkpoint
as before. The review frees a recursive round's cache once the next round's is computed, and
every cache once its output is written (:func:`drop`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from grantlog.engine.core import ir


def sort_columns(program: ir.Program) -> dict[str, int]:
    """Per relation, the column its atoms (negated ones included) bind to a constant most
    often over the program's rules (ties: the first); 0 when none does."""
    seen: dict[str, Counter[int]] = {}
    for rule in program.rules:
        for lit in rule.body:
            atom = lit.atom if isinstance(lit, ir.Neg) else lit
            if isinstance(atom, ir.Atom):
                c = seen.setdefault(atom.rel, Counter())
                c.update(i for i, t in enumerate(atom.args) if isinstance(t, ir.Const))
    return {rel: max(sorted(c), key=lambda i: c[i]) if c else 0 for rel, c in seen.items()}


#: whether :func:`settle` keeps its union in the columnar cache (else a row checkpoint): off by
#: default, since the review of 1,000 tables x 1,000 users ran out of a 3 GB driver's heap in
#: its third recursive round with it (benchmarks/RESULTS.md, session 28)
CACHE = False


def settle(spark: Any, frames: Mapping[Any, Any], cols: Mapping[Any, list[str]],
           sort: Mapping[Any, int], flag: str | None = None, cache: bool | None = None
           ) -> tuple[Settled, dict[tuple[Any, Any], int], dict[Any, Any]]:
    """Every frame of ``frames`` (``cols[key]``, then ``lo``, ``hi``; ``flag``: a boolean
    column more) computed in ONE Spark job into one cached union; returns the union (tag
    ``_r``: ``2 × i + new``, the values in ``x0..``), the rows per (key, flag value) (flag
    None: ``(key, None)``) and each frame as a read of the cache (``cols[key]``, ``lo``,
    ``hi``, and ``flag``). ``sort[key]``: the index in ``cols[key]`` of the column its rows
    are sorted by after the tag. ``cache``: :data:`CACHE` by default."""
    from pyspark import StorageLevel
    from pyspark.sql import functions as F

    keys = list(frames)
    width = max((len(cols[k]) for k in keys), default=0)
    parts = []
    for i, k in enumerate(keys):
        c = cols[k]
        tag = F.lit(2 * i) + F.col(flag).cast("int") if flag else F.lit(2 * i)
        parts.append(frames[k].select(
            tag.alias("_r"), *[F.col(x).alias(f"x{j}") for j, x in enumerate(c)],
            *[F.lit(None).cast("string").alias(f"x{j}") for j in range(len(c), width)],
            "lo", "hi"))
    both = union(parts)
    # a union's partitions are its branches' (a hundred rules: a hundred tasks): fewer
    n = max(spark.sparkContext.defaultParallelism, 1)
    if both.rdd.getNumPartitions() > n:
        both = both.coalesce(n)
    then = None
    for i, k in enumerate(keys):
        if cols[k]:
            mine = F.col("_r").between(2 * i, 2 * i + 1)
            then = (F.when(mine, F.col(f"x{sort[k]}")) if then is None
                    else then.when(mine, F.col(f"x{sort[k]}")))
    held = kept = None
    alone = unplanned(spark, both) if (CACHE if cache is None else cache) else None
    if alone is not None:
        held = alone.sortWithinPartitions("_r", *([then] if then is not None else [])) \
            .persist(StorageLevel.MEMORY_AND_DISK)  # serialized: its size known, spilled
        kept = leaf(spark, held)
        if kept is None:
            held.unpersist()
            held = None
    if kept is None:  # no cache to read on its own: a checkpoint (every read scans it all)
        kept = both.localCheckpoint(eager=False)
    counts: dict[tuple[Any, Any], int] = {}
    for row in kept.groupBy("_r").count().collect():  # the one job
        r = row["_r"]
        counts[(keys[r // 2], bool(r % 2) if flag else None)] = row["count"]
    out = {}
    for i, k in enumerate(keys):
        which = F.col("_r").between(2 * i, 2 * i + 1) if flag else F.col("_r") == 2 * i
        out[k] = kept.filter(which).select(
            *[F.col(f"x{j}").alias(x) for j, x in enumerate(cols[k])], "lo", "hi",
            *([(F.col("_r") == 2 * i + 1).alias(flag)] if flag else []))
    return Settled(kept, held), counts, out


def union(dfs: list[Any]) -> Any:
    """``dfs`` (one or more, same columns) as one frame, joined pairwise as a balanced tree:
    each ``unionByName`` analyses the plan it is given, so a left fold over a hundred rules'
    frames analysed it quadratically often"""
    level = list(dfs)
    while len(level) > 1:
        level = [level[i].unionByName(level[i + 1]) if i + 1 < len(level) else level[i]
                 for i in range(0, len(level), 2)]
    return level[0]


class Settled:
    """What :func:`settle` keeps: ``rows``, the frame its reads read (the cache, or a
    checkpoint), and ``held``, the persisted frame that owns the cache (None: a checkpoint)"""

    def __init__(self, rows: Any, held: Any) -> None:
        self.rows, self.held = rows, held


def unplanned(spark: Any, df: Any) -> Any:
    """``df``'s rows as a frame whose plan is one leaf: the RDD that computes them (Spark's
    ``LogicalRDD``, as a checkpoint's, but nothing stored). A cache of it describes itself in
    a line: a cache's description holds its plan's, and a plan reading caches of caches of
    a hundred reads each would describe them all, nested (tens of gigabytes of text by the
    decision stratum's second round). None where this Spark does not give one."""
    try:
        jdf = df._jdf
        rows = jdf.queryExecution().toRdd()
        return type(df)(spark._jsparkSession.internalCreateDataFrame(rows, jdf.schema(), False),
                        spark)
    except Exception:  # any py4j failure: a checkpoint instead
        return None


def leaf(spark: Any, held: Any) -> Any:
    """The persisted frame ``held`` as a frame whose plan is its cache alone (Spark's
    ``InMemoryRelation``): the lineage cut as a checkpoint cuts it (so a plan reading it
    does not grow with what it was computed from), the cache's batch statistics kept (a
    checkpoint's rows have none). The cache is computed by the first job that reads it.
    None where this Spark does not give one (Spark Connect; a version without these
    classes)."""
    try:
        jss = spark._jsparkSession
        cached = jss.sharedState().cacheManager().lookupCachedData(held._jdf)
        if cached.isEmpty():
            return None
        rel = cached.get().cachedRepresentation()
        for owner in ("classic", None):  # Spark 4; Spark 3.5
            pkg = spark._jvm.org.apache.spark.sql
            try:
                cls = pkg.classic.Dataset if owner else pkg.Dataset
                return type(held)(cls.ofRows(jss, rel), spark)
            except TypeError:  # no such class here: py4j gives a package, not callable
                continue
    except Exception:  # any py4j failure: a checkpoint instead
        return None
    return None


@contextmanager
def own_broadcasts(spark: Any) -> Iterator[None]:
    """Spark's own broadcast of the relations it knows to be small off inside (restored
    after): a cache knows its size where a checkpoint did not, and each such broadcast is a
    Spark job of its own; the review broadcasts what its row counts say
    (``review.BROADCAST_ROWS``: hinted broadcasts are made all the same)."""
    key = "spark.sql.autoBroadcastJoinThreshold"
    was = spark.conf.get(key)
    spark.conf.set(key, "-1")
    try:
        yield
    finally:
        spark.conf.set(key, was)


def tags(keys: list[Any], wanted: list[Any]) -> dict[Any, int]:
    """The tag of each of ``wanted`` (keys of a settle without a flag) in its union"""
    return {k: 2 * keys.index(k) for k in wanted}


def drop(kept: Settled | None) -> None:
    """Frees the cache of a :func:`settle` that nothing reads any more."""
    if kept is not None and kept.held is not None:
        kept.held.unpersist(blocking=False)
        kept.held = None


__all__ = ["Settled", "drop", "leaf", "own_broadcasts", "settle", "sort_columns", "tags",
           "union", "unplanned"]
