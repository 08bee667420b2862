"""Transitive closure by path doubling, on DataFrames or through GraphFrames.

A recursive stratum of exactly this shape (variables distinct, body order free)::

    p(X, Y) :- e(X, Y).
    p(X, Z) :- p(X, Y), e(Y, Z).      % left-linear, or
    p(X, Z) :- e(X, Y), p(Y, Z).      % right-linear, or
    p(X, Z) :- p(X, Y), p(Y, Z).      % non-linear

with no facts or inputs for ``p`` computes ``p = e⁺``, which path doubling reaches in about
log2(longest path) rounds instead of one round per edge of the longest path::

    T := e ; delta_T := T
    repeat: new_T := (delta_T ∘ T ∪ T ∘ delta_T) − T ; T := T ∪ new_T ; delta_T := new_T
    until new_T is empty

(``T ∘ T − T`` only needs the pairs with a factor new in the last round: the others were
composed the round before.)

GraphFrames has no transitive-closure primitive (``bfs`` finds paths between given vertex
sets, ``shortestPaths`` needs landmark vertices), so the GraphFrames strategy runs the same
doubling loop and computes each composition with GraphFrames' motif finding: the pattern
``(a)-[e1]->(b); (b)-[e2]->(c)`` over a graph whose edges are ``T`` (``relationship = "old"``)
plus ``delta_T`` once more (``relationship = "new"``), keeping the matches with a new edge. Motif
finding runs as DataFrame joins, so this is a faithful use of the library, not a faster one.
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from typing import Any

from grantlog.engine.core import ir
from grantlog.engine.core.analyses import Closure, closures


def closure_shape(program: ir.Program, stratum: ir.Stratum) -> Closure | None:
    """The transitive-closure shape of a stratum (see the module doc; recognised on the IR by
    engine/core/analyses.py), or None: the stratum must be that one recursive relation, with
    no facts of its own."""
    if not stratum.recursive or len(stratum.relations) != 1 or len(stratum.rules) != 2:
        return None
    p = stratum.relations[0]
    if any(f.rel == p for f in program.facts):
        return None
    c = closures(program).get(p)
    return None if c is None or c.flipped else c  # a reversed edge: semi-naive


# ---------------------------------------------------------------------------------------------
# Spark

Materialize = Callable[[Any], tuple[Any, int]]
Report = Callable[[int, int], None]


def _compose(left: Any, right: Any) -> Any:
    """{(x, y) | left(x, m), right(m, y)} on internal columns c0, c1"""
    a = left.select(left["c0"].alias("x"), left["c1"].alias("m"))
    b = right.select(right["c0"].alias("m"), right["c1"].alias("y"))
    return a.join(b, on="m").select("x", "y").toDF("c0", "c1")


def _compose_graphframes(total: Any, delta: Any) -> Any:
    """delta ∘ T ∪ T ∘ delta by GraphFrames motif finding: every edge of T is marked "old",
    and the edges of delta (a subset of T) appear once more marked "new"; a two-edge match
    with a "new" edge is a composition with a factor in delta"""
    from graphframes import GraphFrame
    from pyspark.sql import functions as F

    edges = (total.select(F.col("c0").alias("src"), F.col("c1").alias("dst"),
                        F.lit("old").alias("relationship"))
             .unionByName(delta.select(F.col("c0").alias("src"), F.col("c1").alias("dst"),
                                       F.lit("new").alias("relationship"))))
    vertices = (edges.select(F.col("src").alias("id"))
                .union(edges.select(F.col("dst").alias("id"))).distinct())
    g = GraphFrame(vertices, edges)
    m = g.find("(a)-[e1]->(b); (b)-[e2]->(c)")
    m = m.filter((F.col("e1.relationship") == "new") | (F.col("e2.relationship") == "new"))
    return m.select(F.col("a.id").alias("c0"), F.col("c.id").alias("c1"))


def doubling(
    edges: Any,
    materialize: Materialize,
    report: Report,
    max_iterations: int,
    on_cap: Callable[[int], Exception],
    use_graphframes: bool = False,
) -> tuple[Any, int]:
    """The closure of ``edges`` (internal columns c0, c1) by path doubling; returns the
    closure and the number of rounds (the first round is the edges themselves)."""
    total, n = materialize(edges.select("c0", "c1").distinct())
    report(1, n)
    delta, n_delta = total, n
    rounds = 1
    parts = [total]
    while n_delta:
        if rounds >= max_iterations:
            raise on_cap(rounds)
        rounds += 1
        if use_graphframes:
            cand = _compose_graphframes(total, delta)
        else:
            # new_T = (delta_T ∘ T ∪ T ∘ delta_T) − T
            cand = _compose(delta, total).unionByName(_compose(total, delta))
        new = cand.distinct().join(total, on=["c0", "c1"], how="left_anti")
        delta, n_delta = materialize(new)
        report(rounds, n_delta)
        if n_delta:
            parts.append(delta)
            total = _union(parts)
            if len(parts) >= 8:
                total, _ = materialize(total)
                parts = [total]
    return total, rounds


def _union(parts: list[Any]) -> Any:
    out = parts[0]
    for p in parts[1:]:
        out = out.unionByName(p)
    return out


def graphframes_status(spark: Any) -> tuple[bool, str]:
    """Whether GraphFrames can run here: (True, "") or (False, the reason)."""
    try:
        import graphframes  # noqa: F401
    except ImportError as e:
        return False, f"the graphframes Python package is not importable: {e}"
    try:
        jvm = spark.sparkContext._jvm
        loader = jvm.Thread.currentThread().getContextClassLoader()
        loader.loadClass("org.graphframes.GraphFramePythonAPI")
    except Exception as e:  # py4j raises Py4JJavaError (ClassNotFoundException) and others
        java = getattr(e, "java_exception", None)
        text = str(java if java is not None else e).strip()
        first = text.splitlines()[0] if text else type(e).__name__
        return False, f"GraphFrames JVM package not on the Spark classpath: {first}"
    return True, ""


def graph_model(edges: dict[str, Any]) -> tuple[Any, Any]:
    """Relations as GraphFrames' data model: ``edges`` maps a relation name to a two-column
    (external) DataFrame; returns ``(vertices[id], edges[src, dst, relationship])``, ids as
    strings (an integer id becomes its decimal text). Usable without the GraphFrames jar;
    with it, ``GraphFrame(*graph_model(...))``."""
    from pyspark.sql import functions as F

    parts = []
    for rel, df in sorted(edges.items()):
        a, b = df.columns[:2]
        parts.append(df.select(F.col(a).cast("string").alias("src"),
                               F.col(b).cast("string").alias("dst"),
                               F.lit(rel).alias("relationship")))
    if not parts:
        raise ValueError("graph_model needs at least one relation")
    e = _union(parts)
    v = e.select(F.col("src").alias("id")).union(e.select(F.col("dst").alias("id"))).distinct()
    return v, e


def full_on_spark(program: ir.Program, inputs: Collection[str] = ()) -> set[str]:
    """Relations a goal's rewrite leaves unrestricted on Spark: transitive closures (path
    doubling computes them in full in about log2(depth) rounds, where a restricted closure
    would take one round per level) and derived relations given rows as inputs."""
    out = {rel for rel in inputs if rel in program.derived}
    for st in program.strata:
        shape = closure_shape(program, st)
        if shape is not None:
            out.add(shape.rel)
    return out
