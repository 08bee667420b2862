"""A bulk load's rows hashed once (issue 26, item 5; session 26).

* A transaction's first write of many rows into a relation keeps them as given
  (engine/core/results.py ``Transaction.batches``; ``ops`` makes their dict when read); the
  reasoner makes one dict of them at level 0 (engine/eval/database.py ``Batch``), which the
  relation's dict is a copy of: no dict of the transaction's operations, no set of the rows.
* The relation's change (``BatchChange``) makes its set of rows only when read, exact then,
  and not changed by later writes to the relation.
* Checked against a reasoner that takes the same writes with no batch (the thresholds out of
  reach): the same changes, rows, levels and answers, through a re-evaluation from scratch
  or a change maintained row by row, with a relation written twice, rows given twice,
  intervals in the same transaction, watched virtual relations, then more writes.
* A string column's values are checked by joining them (engine/core/ir.py ``_rows_fine``):
  what it refuses, and what it takes, is what the row-by-row check does.
"""

from __future__ import annotations

import gc
from typing import Any

import pytest
from grantlog.engine.answer import reasoner as reasoner_mod
from grantlog.engine.core import results as results_mod
from grantlog.engine.core.results import Change, Transaction
from grantlog.engine.eval import database as database_mod
from grantlog.grammar.diagnostics import GrantlogError
from hypothesis import given, settings
from hypothesis import strategies as st

import grantlog

MODEL = """
rel edge(parent, child).
rel kind(obj, type).
rel grant(who, obj).
rel note(obj, text: string, n: int).
rel below(x, y).
below(X, Y) :- edge(X, Y).
below(X, Z) :- below(X, Y), edge(Y, Z).
@demand
rel can(who, obj).
can(W, O) :- grant(W, O).
can(W, O) :- grant(W, P), below(P, O).
rel typed_grant(who, obj, type).
typed_grant(W, O, T) :- grant(W, O), kind(O, T).
@writable
rel tagged(obj).
tagged(O) :- kind(O, "a").
"""

NODES = [f"n{i}" for i in range(10)]
_nodes = st.sampled_from(NODES)
_pairs = st.lists(st.tuples(_nodes, _nodes), max_size=30)  # (rows may come twice)
_writes = st.lists(st.tuples(st.booleans(), st.sampled_from(["edge", "kind", "grant"]),
                             st.tuples(_nodes, _nodes)), max_size=6)


@pytest.fixture(scope="module")
def program() -> Any:
    return grantlog.compile(MODEL)


def _row(rel: str, row: tuple[str, str]) -> tuple[str, ...]:
    if rel == "kind":
        return (row[0], "abc"[int(row[1][1:]) % 3])
    if rel == "grant":
        return ("u" + str(1 + int(row[0][1:]) % 2), row[1])
    if rel == "tagged":
        return (row[0],)
    return row


def _state(r: Any) -> Any:
    db = r.database()
    levels = {rel: dict(rows) for rel, rows in db.full.items() if rows}
    answers = [r.ask(f'can("{u}", "{o}")') for u in ("u1", "u2") for o in NODES]
    return levels, answers, r.all_rows()


def _load(program: Any, batched: bool, bulk_min: int, before: dict[str, list[Any]],
          facts: dict[str, list[Any]], second: list[Any], timed: bool,
          watch: Any) -> tuple[Any, Any]:
    """A reasoner given ``before`` (each its own transaction), then ``facts`` in one
    transaction (``second``: more writes in it; ``timed``: a grant with an interval too);
    ``batched``: with batches and the net change's ``Batch`` from 2 rows, else never."""
    saved = (results_mod.BATCH, database_mod.BULK, reasoner_mod.BULK_MIN)
    big = 10**9
    results_mod.BATCH = database_mod.BULK = 2 if batched else big
    reasoner_mod.BULK_MIN = bulk_min
    try:
        r = grantlog.Reasoner(program)
        for rel, rows in before.items():
            r.insert(rel, rows)
        with r.transaction(watch=watch) as tx:
            for rel, rows in facts.items():
                tx.insert(rel, rows)
            for present, rel, row in second:
                (tx.insert if present else tx.retract)(rel, [_row(rel, row)])
            if timed:
                tx.insert("grant", [("u1", "n9")], valid_from=0)
        return r, tx
    finally:
        results_mod.BATCH, database_mod.BULK, reasoner_mod.BULK_MIN = saved


@settings(max_examples=120, deadline=None)
@given(_pairs, _pairs, _pairs, st.sampled_from(["", "edge", "kind"]), _writes,
       st.booleans(), st.sampled_from([1, 10**9]), st.sampled_from([(), "can"]), _writes)
def test_batched_loads_answer_and_change_as_unbatched(
        program: Any, edges: list[Any], kinds: list[Any], grants: list[Any],
        stored: str, second: list[Any], timed: bool, bulk_min: int, watch: Any,
        after: list[Any]) -> None:
    """The same writes with batches (from 2 rows) and without: the same changes (read
    after the load, and again after more writes), levels, rows and answers; re-evaluated
    from scratch (``bulk_min`` 1) or maintained row by row (never a bulk change)."""
    facts = {"edge": edges, "kind": [_row("kind", k) for k in kinds],
             "grant": [_row("grant", g) for g in grants],
             "tagged": [_row("tagged", e) for e in edges]}
    # a relation holding rows before (some of those the load gives again)
    before = {stored: [("n0", "n1") if stored == "edge" else ("n0", "a"),
                       *facts[stored][:2]]} if stored else {}
    runs = [_load(program, batched, bulk_min, before, facts, second, timed, watch)
            for batched in (True, False)]
    (fast, ftx), (plain, ptx) = runs
    assert ftx.changes.to_dict() == ptx.changes.to_dict()
    assert ftx.changes.lines() == ptx.changes.lines()
    assert {r: bool(c) for r, c in ftx.changes.by_relation.items()} == {
        r: bool(c) for r, c in ptx.changes.by_relation.items()}
    assert _state(fast) == _state(plain)
    for present, rel, row in after:
        for r in (fast, plain):
            (r.insert if present else r.retract)(rel, [_row(rel, row)])
    assert _state(fast) == _state(plain)
    assert ftx.changes.to_dict() == ptx.changes.to_dict()  # as they were


@pytest.mark.parametrize("bulk_min", [1, 10**9])
def test_a_load_into_a_relation_holding_rows_gains_only_the_new_ones(bulk_min: int) -> None:
    """A batch into a relation that already holds some of its rows (and gives some twice):
    only the new ones gained, as without batches."""
    program = grantlog.compile(MODEL)
    had = [("n0", "n1"), ("n1", "n2"), ("n7", "n8")]
    facts = {"edge": [("n1", "n2"), ("n2", "n3"), ("n2", "n3"), ("n0", "n1"), ("n3", "n4")]}
    got = [_load(program, batched, bulk_min, {"edge": had}, facts, [], False, ())
           for batched in (True, False)]
    assert got[0][1].changes.gained("edge") == {("n2", "n3"), ("n3", "n4")}
    assert got[0][1].changes.to_dict() == got[1][1].changes.to_dict()
    assert _state(got[0][0]) == _state(got[1][0])


def test_a_bulk_write_of_a_fact_that_had_an_interval() -> None:
    """A load into a relation whose only fact holds by an interval: the net change is a
    batch (nothing stored without an interval), and the fact's interval, dropped by the
    write, moves it between the sets (engine/answer/validity.py ``translate``): made a set
    first (engine/eval/database.py ``settled``)."""
    program = grantlog.compile(MODEL)
    rows = [("u1", "n1")] + [(f"u{i}", f"o{i}") for i in range(database_mod.BULK + 10)]
    out = []
    for bulk in (database_mod.BULK, 10**9):
        saved = database_mod.BULK
        database_mod.BULK = bulk
        try:
            r = grantlog.Reasoner(program)
            r.insert("grant", [("u1", "n1")], valid_from=0)
            with r.transaction() as tx:
                tx.insert("grant", rows[:10])
                tx.insert("grant", rows[10:])  # written twice: the transaction's dict
        finally:
            database_mod.BULK = saved
        out.append((tx.changes.to_dict(), _state(r)))
    assert out[0] == out[1]
    assert len(out[0][0]["grant"]["gained"]) == len(rows) - 1


def _rows(n: int, tag: str = "") -> list[tuple[str, str]]:
    return [(f"p{i // 50:05d}{tag}", f"c{i:07d}{tag}") for i in range(n)]


def test_a_bulk_loads_change_is_made_when_read_and_stays_exact() -> None:
    """A million-row load's change holds no set of its rows until read (the collector
    would traverse one as long as the caller keeps ``tx``), is exact when read, and is not
    changed by later writes to the relation (whose rows are a copy of the load's dict)."""
    program = grantlog.compile(MODEL)
    n = max(results_mod.BATCH, database_mod.BULK, reasoner_mod.BULK_MIN) + 1000
    rows = _rows(n)  # kinds no rule copies (``below`` would hold edges: a set of them)
    given_twice = rows + rows[:100]
    r = grantlog.Reasoner(program)
    with r.transaction() as tx:
        tx.insert("kind", given_twice)
    marker = rows[-1]
    held = [o for o in gc.get_objects() if isinstance(o, set) and len(o) >= n and marker in o]
    assert held == []  # no set of the rows made (nor kept by the change)
    change = tx.changes.by_relation["kind"]
    assert bool(change) and not change.removed
    r.insert("kind", [("late", "row")])
    r.retract("kind", rows[:10])
    assert change.added == set(rows)
    assert change == Change(set(rows), set())
    assert tx.changes.gained("kind") == set(rows)
    assert tx.changes.lost("kind") == set()
    full = r.database().full["kind"]
    assert list(full)[:5] == rows[10:15]  # the order given, kept
    assert set(full) == set(rows[10:]) | {("late", "row")}
    assert set(full.values()) == {0}
    change.added |= {("x", "y")}  # set, as a Change's is
    assert ("x", "y") in change.added


def test_a_transactions_operations_read_as_written() -> None:
    """``ops`` holds a batch's rows as a dict once read; a second write to the relation,
    an interval, or the journal's rows keep them there, and the last write of a row wins."""
    rows = _rows(results_mod.BATCH)
    tx = Transaction()
    tx.insert("edge", rows)
    tx.insert("kind", [("n1", "a")])
    assert list(tx.ops) == ["edge", "kind"]  # the relations in the order written
    assert list(tx.ops["edge"]) == rows and all(tx.ops["edge"].values())
    tx = Transaction()
    tx.insert("edge", rows)
    tx.insert("kind", [("n1", "a")])
    tx.retract("edge", rows[:3])
    assert list(tx.ops) == ["edge", "kind"]  # the relations in the order written
    assert [tx.ops["edge"][r] for r in rows[:4]] == [False, False, False, True]
    assert tx.batches() == {}
    tx = Transaction()
    tx.insert("edge", rows)
    tx.insert("kind", [("n1", "a")], valid_from=0)
    assert tx.batches() == {}  # an interval in the transaction: as operations
    assert len(tx.ops["edge"]) == len(rows)
    tx = Transaction()
    tx.insert("kind", rows)
    tx.insert("edge", rows[:10])
    got = tx.batches()
    assert list(got) == ["kind"] and got["kind"] == rows
    assert list(tx.ops) == ["edge"]  # taken out


@pytest.mark.parametrize("bad, code", [
    (("p", "c\x00"), "NUL"), (("p", 3), "strings"), (("p", True), "strings"),
    (("p", 3.5), "strings"),
])
def test_a_bulk_writes_bad_value_is_refused_as_row_by_row(bad: tuple[Any, Any],
                                                          code: str) -> None:
    program = grantlog.compile(MODEL)
    rows = [*_rows(results_mod.BATCH), bad]
    r = grantlog.Reasoner(program)
    with pytest.raises(GrantlogError) as got:
        r.insert("note" if code == "strings" and bad[1] == 3 else "edge",
                 [(*row, 1) for row in rows] if code == "strings" and bad[1] == 3 else rows)
    if code == "strings" and bad[1] == 3:
        assert "column `text` of `note` is string" in str(got.value)
    else:
        assert code in str(got.value)
    assert r.database().full["edge"] == {}  # nothing applied


def test_string_subclasses_and_mixed_columns_are_taken_as_row_by_row() -> None:
    """What the join takes (a subclass of str) and what it passes on to the type check (an
    untyped column of strings and integers) are taken, as the row-by-row check takes them."""
    class Name(str):
        pass

    program = grantlog.compile(MODEL)
    r = grantlog.Reasoner(program)
    mixed = [(f"o{i}", i if i % 2 else f"s{i}") for i in range(results_mod.BATCH)]
    r.insert("kind", mixed)
    r.insert("edge", [(Name("a"), "b"), ("b", Name("c"))])
    with pytest.raises(GrantlogError, match="integers"):
        r.insert("note", [("o", "t", 2**63)])
    assert len(r.database().full["kind"]) == len(mixed)
    assert r.ask('below("a", "c")')
