"""The whole-platform review's settled relations on Spark (spark_bridge/review_cache.py,
spark_bridge/review.py): relations computed together are kept as one union in Spark's columnar
cache, sorted by relation, by a round's flag and by the column the rules most often bind to a
constant, so that a read of one relation (or of a round's new rows, or of one privilege's rows)
skips the others' batches; a recursive round coalesces the relation's rows with the rows its
rules derived in one shuffle, a stretch flagged new unless one of the round before's
intervals spans it. Each read gives back exactly its frame; the review of generated histories
where a closure's intervals are bridged and extended from round to round equals the as-of
answers interval for interval."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

from conftest import examples
from grantlog.spark_bridge import review_cache, review_heads
from test_spark_review import _expected, _parquet

import grantlog

#: a closure four levels deep whose edges come and go (a row of ``under`` is derived at several
#: rounds, along paths of different lengths, over intervals that overlap, touch or bridge), a
#: second recursive relation reading the first through a constant, a DENY
MODEL = """
rel parent(child: string, parent: string).
rel grant(user: string, op: string, res: string).
rel deny(user: string, res: string).
rel link(a: string, b: string).
under(X, Y) :- parent(X, Y).
under(X, Z) :- parent(X, Y), under(Y, Z).
allowed(U, O, X) :- grant(U, O, X), not deny(U, X).
allowed(U, O, X) :- grant(U, O, P), under(X, P), not deny(U, X).
allowed(U, read, X) :- allowed(U, write, X).
allowed(U, read, Y) :- allowed(U, read, X), link(X, Y).
allowed(U, audit, X) :- grant(U, write, P), under(X, P), not deny(U, P).
allowed(U, export, Y) :- grant(U, write, Q), under(Y, Q), not deny(U, Q).
allowed(U, copy, Y) :- allowed(U, read, X), link(X, Y).
allowed(U, move, Z) :- allowed(U, read, W), link(W, Z).
"""
NODES = ["a", "b", "c", "d", "e", "f"]


def _history(r: Any, rng: random.Random, n: int) -> None:
    """a chain a < b < c < d < e < f with a shortcut or two, then ``n`` transactions that
    retract and re-insert edges, grants, links and DENYs"""
    r.insert("parent", [(NODES[i], NODES[i + 1]) for i in range(len(NODES) - 1)]
             + [("a", "c"), ("b", "e")])
    r.insert("grant", [("u1", "read", "f"), ("u2", "write", "d"), ("u1", "write", "c")])
    r.insert("link", [("a", "x"), ("x", "y")])
    r.insert("deny", [("u2", "b")])
    make = {
        "parent": lambda: tuple(sorted(rng.sample(NODES, 2))),
        "grant": lambda: (rng.choice(("u1", "u2")), rng.choice(("read", "write")),
                          rng.choice(NODES)),
        "link": lambda: (rng.choice((*NODES, "x")), rng.choice(("x", "y"))),
        "deny": lambda: (rng.choice(("u1", "u2")), rng.choice(NODES)),
    }
    for _ in range(n):
        rel = rng.choice(("parent", "parent", "grant", "link", "deny"))
        rows = sorted(r.rows(rel))
        with r.transaction() as tx:
            if rows and rng.random() < 0.5:
                tx.retract(rel, [rng.choice(rows)])
            else:
                tx.insert(rel, [make[rel]()])


def test_rules_of_one_body_are_one_group() -> None:
    """Rules whose bodies are the same but for their variables' names, and whose heads differ
    in their constants only, are one group: its first rule, every head in its variables."""
    program = grantlog.compile(MODEL, filename="cache.gl")
    found = {tuple(str(h) for h in heads)
             for _, heads in review_heads.groups(r for r in program.rules
                                                 if r.head.rel == "allowed")}
    assert ("allowed(U, audit, X)", "allowed(U, export, X)") in found
    assert ("allowed(U, read, Y)", "allowed(U, copy, Y)", "allowed(U, move, Y)") in found
    assert len(found) == 4  # and the two rules of bodies of their own


def test_sort_columns_follow_the_constants() -> None:
    program = grantlog.compile(MODEL, filename="cache.gl")
    sort = review_cache.sort_columns(program)
    assert sort["allowed"] == 1  # allowed(U, write, X), allowed(U, read, X)
    assert sort["parent"] == 0 and sort["under"] == 0  # no constant: the first column


def test_a_settled_relation_reads_its_own_rows(spark: Any) -> None:
    """Three frames settled together (one flagged): each read gives back its frame, the
    counts are per frame and flag, and the cache holds them sorted by tag, then by the
    frame's sort column (so a read's filters on them skip the other batches)."""
    from pyspark.sql import types as T

    def frame(rows: list[tuple[Any, ...]], arity: int, flag: bool = False) -> Any:
        fields = [T.StructField(f"c{i}", T.StringType(), False) for i in range(arity)]
        fields += [T.StructField("lo", T.LongType(), False),
                   T.StructField("hi", T.LongType(), False)]
        if flag:
            fields.append(T.StructField("_new", T.BooleanType(), False))
        return spark.createDataFrame(rows, T.StructType(fields))

    rng = random.Random(7)
    ops = ["read", "write", "list"]
    p = [(f"u{rng.randrange(9)}", rng.choice(ops), f"t{i}", i, i + 3) for i in range(60)]
    q = [(f"t{i}", i, i + 1) for i in range(25)]
    p_flags = [(*row, i % 3 == 0) for i, row in enumerate(p)]
    frames = {"p": frame(p, 3), "q": frame(q, 1)}
    cols = {"p": ["c0", "c1", "c2"], "q": ["c0"]}
    kept, counts, out = review_cache.settle(spark, frames, cols, {"p": 1, "q": 0},
                                            cache=True)
    assert counts == {("p", None): 60, ("q", None): 25}
    assert {tuple(x) for x in out["p"].collect()} == set(p)
    assert {tuple(x) for x in out["q"].collect()} == set(q)
    assert kept.held is not None  # a cache read on its own, not the checkpoint
    held = [(x["_r"], x["x1"] if x["_r"] == 0 else x["x0"]) for x in kept.rows.collect()]
    assert held == sorted(held)  # one partition in the tests (spark.default.parallelism)
    review_cache.drop(kept)

    frames = {"q": frame([(*row, False) for row in q], 1, flag=True),
              "p": frame(p_flags, 3, flag=True)}
    kept, counts, out = review_cache.settle(spark, frames, cols, {"p": 1, "q": 0}, "_new",
                                            cache=True)
    assert counts == {("q", False): 25, ("p", True): 20, ("p", False): 40}
    assert {tuple(x) for x in out["p"].collect()} == set(p_flags)
    assert {tuple(x) for x in out["p"].filter("_new").drop("_new").collect()} == {
        row[:5] for row in p_flags if row[5]}
    one = out["p"].filter("c1 = 'write'")
    assert {tuple(x)[:5] for x in one.collect()} == {row for row in p if row[1] == "write"}
    review_cache.drop(kept)


def test_closures_extended_from_round_to_round_equal_the_as_of_answers(
        spark: Any, tmp_path: Path) -> None:
    """Generated histories over a closure and a second recursion (one generated history in
    `make test`, three in the long profile): the review equals the as-of answers at every
    revision. A stretch that a round extends or bridges is new (else what it derives in the
    next round would keep the old stretch's interval)."""
    from grantlog.spark_bridge.review import review

    program = grantlog.compile(MODEL, filename="cache.gl")
    for seed in (11, 12, 13)[:examples(1, 3)]:
        url = f"sqlite:///{tmp_path / f'c{seed}.db'}"
        with grantlog.Reasoner(program, store=url, create=True) as r:
            _history(r, random.Random(seed), 16)
            head = r.journal.head()
            review(r, spark, str(tmp_path / f"o{seed}"), 1, head, symmetry=False)
            got, _ = _parquet(spark, tmp_path / f"o{seed}")
            assert got == _expected(r, 1, head)

