"""Cold start from Python lists (issue 26, item 5): a bulk load keeps its rows in the order
given, and the planner's statistics read a big relation that nothing has indexed yet without
building its index.

* A transaction's inserts into a relation keep the order they were given in
  (engine/eval/database.py ``Given``) through the bulk path (the relation's rows, then the
  indexes built over them, read memory in order); a reasoner loaded so, then written to,
  answers and stores exactly what a reasoner loaded row by row does.
* The statistics' closure counts read without an index (engine/core/index.py ``Fanout``)
  and the first rows of a rare constant found by a scan (``first_holding``) equal what the
  database's indexes give, whatever the edges (cycles, DAGs, self-loops).
"""

from __future__ import annotations

from typing import Any

import pytest
from grantlog.engine.answer import reasoner as reasoner_mod
from grantlog.engine.core.index import Fanout, build_index, first_holding
from grantlog.engine.eval.database import Database, Given, in_order, net_change
from grantlog.engine.plan import stats as stats_mod
from grantlog.engine.plan.stats import Statistics
from hypothesis import given, settings
from hypothesis import strategies as st

import grantlog

MODEL = """
rel edge(parent, child).
rel kind(obj, type).
rel grant(who, obj).
rel below(x, y).
below(X, Y) :- edge(X, Y).
below(X, Z) :- below(X, Y), edge(Y, Z).
@demand
rel can(who, obj).
can(W, O) :- grant(W, O).
can(W, O) :- grant(W, P), below(P, O).
rel typed_grant(who, obj, type).
typed_grant(W, O, T) :- grant(W, O), kind(O, T).
"""

_nodes = st.sampled_from([f"n{i}" for i in range(8)])
_edges = st.lists(st.tuples(_nodes, _nodes), unique=True, max_size=25)
_kinds = st.lists(st.tuples(_nodes, st.sampled_from(["a", "b", "c"])), unique=True,
                  max_size=10)
_grants = st.lists(st.tuples(st.sampled_from(["u1", "u2"]), _nodes), unique=True, max_size=6)
_writes = st.lists(st.tuples(st.booleans(), st.sampled_from(["edge", "kind", "grant"]),
                             st.tuples(_nodes, _nodes)), max_size=8)


@pytest.fixture(scope="module")
def program() -> Any:
    return grantlog.compile(MODEL)


def _row(rel: str, row: tuple[str, str]) -> tuple[str, str]:
    """A write's row made to fit ``rel`` (kinds and grants take their own values)."""
    if rel == "kind":
        return (row[0], "abc"[int(row[1][1:]) % 3])
    if rel == "grant":
        return ("u" + str(1 + int(row[0][1:]) % 2), row[1])
    return row


def _answers(r: Any) -> Any:
    nodes = [f"n{i}" for i in range(8)]
    return r.all_rows(), [r.ask(f'can("{u}", "{o}")') for u in ("u1", "u2") for o in nodes]


@settings(max_examples=60, deadline=None)
@given(_edges, _kinds, _grants, _writes)
def test_a_bulk_load_then_writes_answers_as_row_by_row(
        program: Any, edges: list[Any], kinds: list[Any], grants: list[Any],
        writes: list[Any]) -> None:
    """One transaction of every fact through the bulk path (re-evaluation from scratch,
    rows in the order given), then writes maintained incrementally, against a reasoner that
    took every fact one row at a time (each its own transaction, maintained)."""
    facts = {"edge": edges, "kind": kinds, "grant": grants}
    was = reasoner_mod.BULK_MIN
    reasoner_mod.BULK_MIN = 1  # small worlds through the bulk path
    try:
        bulk = grantlog.Reasoner(program)
        with bulk.transaction() as tx:
            for rel, rows in facts.items():
                tx.insert(rel, rows)
    finally:
        reasoner_mod.BULK_MIN = was
    plain = grantlog.Reasoner(program)
    for rel, rows in facts.items():
        for row in rows:
            plain.insert(rel, [row])
    db = bulk.database()
    for rel, rows in facts.items():  # the relation's rows in the order given
        assert list(db.full[rel]) == rows
    assert _answers(bulk) == _answers(plain)
    for present, rel, row in writes:
        for r in (bulk, plain):
            (r.insert if present else r.retract)(rel, [_row(rel, row)])
        assert _answers(bulk) == _answers(plain)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(_nodes, _nodes), unique=True, max_size=20), st.booleans())
def test_given_rows_keep_their_order_until_changed(rows: list[Any], change: bool) -> None:
    ops = {"r": dict.fromkeys(rows, True)}
    ins, dels = net_change(ops, lambda rel: {})
    assert not dels
    if not rows:
        assert ins == {}
        return
    got = ins["r"]
    assert type(got) is Given and got == set(rows)
    assert list(in_order(got)) == rows
    if change:
        got.add(("x", "y"))
        assert in_order(got) is got  # changed: no order claimed
    db = Database(["r"])
    db.add("r", got, 0)
    assert set(db.full["r"]) == set(got)
    if not change:
        assert list(db.full["r"]) == rows


def _stats(program: Any, edges: list[Any], kinds: list[Any], indexed: bool) -> Statistics:
    db = Database(program.relations)
    db.add("edge", edges, 0)
    db.add("kind", kinds, 0)
    if indexed:  # the database's own indexes, which the statistics then read
        for rel, cols in (("edge", (0,)), ("edge", (1,)), ("kind", (1,))):
            db.index(rel, cols)
    return Statistics(program, db.full, db.index)


@settings(max_examples=150, deadline=None)
@given(_edges, _kinds)
def test_closure_counts_and_rare_rows_without_an_index_equal_the_indexed(
        program: Any, edges: list[Any], kinds: list[Any]) -> None:
    """With SAMPLE small, every relation is 'big': the statistics of a database with no
    index read the rows (Fanout, first_holding), those of one with its indexes built read
    them; every node's counts down and up, and every type's first rows, are the same."""
    was = stats_mod.SAMPLE
    stats_mod.SAMPLE = 1
    try:
        fresh, indexed = (_stats(program, edges, kinds, i) for i in (False, True))
        for s in (fresh, indexed):  # the sample: every row (a parent's children counted)
            s.samples.update({rel: list(s.full[rel]) for rel in ("edge", "kind")})
        for node in [f"n{i}" for i in range(9)]:
            for down in (True, False):
                assert (fresh.reached("edge", node, down)
                        == indexed.reached("edge", node, down)), (node, down)
        for t in ("a", "b", "c", "z"):
            assert (fresh.first_rows("kind", ((1, t),))
                    == indexed.first_rows("kind", ((1, t),)))
    finally:
        stats_mod.SAMPLE = was
    assert fresh.walked == indexed.walked
    for col in (0, 1):  # a column of few keys (each twice on average): counted, no index
        few = len(edges) > 1 and 2 * len({e[col] for e in edges}) <= len(edges)
        assert (("edge", (col,)) in fresh.scanned) == few
    assert not indexed.scanned


@settings(max_examples=150, deadline=None)
@given(_edges, st.integers(1, 5))
def test_fanout_and_first_holding_read_as_the_index(edges: list[Any], limit: int) -> None:
    rows = dict.fromkeys(edges, 0)
    for a, b in ((0, 1), (1, 0)):
        ix = build_index(rows, lambda r, a=a: r[a])
        fan = Fanout(rows, a, b)
        for node in [f"n{i}" for i in range(9)]:
            assert fan.has(node) == (node in ix)
            if node in ix:
                assert fan.count(node) == len(ix.get(node))
                inner = [r for r in ix.get(node) if r[b] in ix]
                assert list(fan.kids(node)) == inner
        keys = [r[a] for r in rows]
        for node in [f"n{i}" for i in range(9)]:
            want = list(ix.get(node, ()))[:limit]
            assert first_holding(rows, keys, node, limit) == want
            assert first_holding(list(rows), keys, node, limit) == want
