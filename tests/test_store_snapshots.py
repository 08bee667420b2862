"""The big relations' compact snapshot (grantlog/store/snapshots.py; issue 26, item 5): what
a store's open reads instead of the tables equals the tables after writes, compaction and a
new snapshot; answers are the same with and without it; a stale, damaged or foreign one is
never used. Real SQLite and PostgreSQL stores (the ``store_url`` fixture)."""

from __future__ import annotations

from typing import Any

import pytest

import grantlog
from grantlog.store import open_store, snapshots

_RULES = """
rel edge(a: string, b: string).
rel node(name: string, kind).
rel member(u: string, g: string).
reach(X, Y) :- edge(X, Y).
reach(X, Z) :- edge(X, Y), reach(Y, Z).
"""


def _small(url: str) -> tuple[Any, Any]:
    """A small program's store: ``edge`` and ``node`` of 120 rows (``node``'s untyped column
    holding strings and integers), ``member`` of 5; and the program."""
    program = grantlog.compile(_RULES)
    st = open_store(url, program)
    with st.writing() as w:
        w.load("edge", [(f"n{i // 2}", f"n{i + 1}") for i in range(120)])
        w.load("node", [(f"n{i}", i if i % 3 else "leaf") for i in range(120)])
        w.load("member", [(f"u{i}", "g") for i in range(5)])
    return program, st


def _tables(st: Any) -> dict[str, list[Any]]:
    """Every relation's rows as its table holds them (no snapshot), sorted: read inside a
    write transaction that writes nothing (the store's public seam to its connection)."""
    with st.writing() as w:
        out = {}
        for rel, t in st.tables.items():
            w.cur.execute(f"SELECT {', '.join(t.columns) or 'present'} FROM {t.name}")
            out[rel] = sorted((tuple(r) if t.columns else () for r in w.cur.fetchall()),
                              key=repr)
        return out


def _from_snapshot(st: Any) -> set[str]:
    """The relations an open would read from the snapshot."""
    with st.writing() as w:
        return set(snapshots.read(st, w.cur, st.tables))


def _opened(st: Any) -> dict[str, list[Any]]:
    """What an open reads (``Store.snapshot``), sorted."""
    return {rel: sorted(rows, key=repr) for rel, rows in st.snapshot()[1].items()}


def _set(st: Any, sql: str, *args: Any) -> None:
    with st.writing() as w:
        w.cur.execute(sql.replace("?", "%s") if st.dialect == "postgres" else sql, args)
        w.keep = True


def test_the_snapshot_equals_the_tables_after_writes_compaction_and_a_new_one(
        store_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    program, st = _small(store_url)
    try:
        assert snapshots.write(st, min_rows=50) is not None
        assert _from_snapshot(st) == {"edge", "node"}  # `member` is small: read from its table
        assert _opened(st) == _tables(st)
        r = grantlog.Reasoner(program, store=st, follow=False)
        r.retract("node", [("n7", 7)])  # a write: `node`'s part goes stale
        r.insert("member", [("u9", "g")])
        assert _from_snapshot(st) == {"edge"}
        assert _opened(st) == _tables(st)
        assert ("n7", 7) not in _opened(st)["node"]
        head = st.head()[0]
        st.compact(keep=0)  # the log no longer reaches back to the snapshot: none is used
        assert st.head()[0] == head
        assert _from_snapshot(st) == set()
        assert _opened(st) == _tables(st)
        monkeypatch.setattr(snapshots, "MIN_ROWS", 50)
        st.checkpoint()  # a checkpoint takes a new one (relations of MIN_ROWS or more)
        assert _from_snapshot(st) == {"edge", "node"}
        assert _opened(st) == _tables(st)
        assert snapshots.write(st, min_rows=50) == head
        r.insert("node", [("n7", 7)])
        assert _opened(st) == _tables(st) and _from_snapshot(st) == {"edge"}
        r.close()
    finally:
        st.close()


def test_answers_are_the_same_with_and_without_the_snapshot(store_url: str) -> None:
    program, st = _small(store_url)
    without = grantlog.Reasoner(program, store=st, follow=False)
    expected = (without.rows("reach"), without.query("reach(\"n0\", Y)"),
                {rel: dict(rows) for rel, rows in without.database().full.items()})
    without.close()
    snapshots.write(st, min_rows=50)
    assert _from_snapshot(st) == {"edge", "node"}
    st.close()
    again = grantlog.Reasoner(program, store=store_url, follow=False)
    try:
        got = (again.rows("reach"), again.query("reach(\"n0\", Y)"),
               {rel: dict(rows) for rel, rows in again.database().full.items()})
        assert got == expected
        assert len(expected[0]) > 120 and again.ask('node("n4", 4)')
        assert again.ask('node("n3", "leaf")') and not again.ask('node("n3", 3)')
    finally:
        again.close()


@pytest.mark.parametrize("damage", ["garbage", "format", "count", "columns", "types"])
def test_a_damaged_or_foreign_snapshot_is_not_used(store_url: str, damage: str) -> None:
    import marshal

    _, st = _small(store_url)
    try:
        snapshots.write(st, min_rows=50)
        assert _from_snapshot(st) == {"edge", "node"}
        truth = _tables(st)
        t = snapshots.TABLE
        if damage == "garbage":
            _set(st, f"UPDATE {t} SET data = ? WHERE id = 1", b"\x00not marshal")
        elif damage == "format":  # another interpreter's layout
            _set(st, f"UPDATE {t} SET format = ? WHERE id = 1", "marshal4-py2.7")
        elif damage == "count":
            _set(st, f"UPDATE {t} SET relations = ? WHERE id = 1",
                 '{"node": {"columns": ["name", "kind"], "rows": 1}}')
        elif damage == "columns":
            _set(st, f"UPDATE {t} SET relations = ? WHERE id = 1",
                 '{"node": {"columns": ["a", "b"], "rows": 120}}')
        else:  # rows of the right count holding values no fact holds
            _set(st, f"UPDATE {t} SET data = ? WHERE id = 1",
                 marshal.dumps({"node": [(None, b"x")] * 120}))
        assert _from_snapshot(st) == set()
        assert _opened(st) == truth
    finally:
        st.close()


def test_without_a_snapshot_table_the_open_reads_the_tables(store_url: str) -> None:
    _, st = _small(store_url)
    try:
        assert _from_snapshot(st) == set()
        assert snapshots.write(st, min_rows=10**9) is None  # nothing that big: none kept
        assert _from_snapshot(st) == set()
        snapshots.write(st, min_rows=10)
        assert _from_snapshot(st) == {"edge", "node"}
        snapshots.drop(st)
        assert _from_snapshot(st) == set()
        assert _opened(st) == _tables(st)
    finally:
        st.close()


def test_a_big_load_takes_the_snapshot(store_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    from grantlog.store import warm

    monkeypatch.setattr(snapshots, "MIN_ROWS", 50)
    program, st = _small(store_url)
    try:
        warm.after_load(st, program, warm.MEASURE_AFTER - 1)  # a small load: none taken
        assert _from_snapshot(st) == set()
        warm.after_load(st, program, warm.MEASURE_AFTER)  # what `grantlog store load` calls
        assert _from_snapshot(st) == {"edge", "node"}
        assert _opened(st) == _tables(st)
    finally:
        st.close()
