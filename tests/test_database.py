"""engine/eval/database.py: hash indexes stay equal to a scan of their relation through any sequence
of additions and removals, whichever representation a key's rows have (a unique index keeps
the row itself, an ordinary one a 1-tuple or a dict)."""

from __future__ import annotations

from grantlog.engine.core.index import UniqueIndex
from grantlog.engine.eval.database import Database
from hypothesis import given
from hypothesis import strategies as st

ROWS = st.tuples(st.sampled_from("abcd"), st.sampled_from("xyz"))


def _expected(rows: set[tuple[str, str]], col: int) -> dict[str, set[tuple[str, str]]]:
    out: dict[str, set[tuple[str, str]]] = {}
    for r in rows:
        out.setdefault(r[col], set()).add(r)
    return out


def _actual(db: Database, col: int) -> dict[str, set[tuple[str, str]]]:
    ix = db.index("r", (col,))
    return {k: set(ix.get(k, ())) for k in "abcdxyz" if ix.get(k)}


@given(st.lists(st.tuples(st.booleans(), st.lists(ROWS, max_size=4)), max_size=25))
def test_indexes_follow_additions_and_removals(steps: list[tuple[bool, list[tuple[str, str]]]]
                                               ) -> None:
    db = Database(["r"])
    rows: set[tuple[str, str]] = set()
    db.index("r", (0,))  # built empty: unique until a key gets a second row
    for add, batch in steps:
        if add:
            new = {r for r in batch if r not in rows}
            db.add("r", new, 0)
            rows |= new
        else:
            gone = {r for r in batch if r in rows}
            db.remove("r", gone)
            rows -= gone
        assert set(db.full["r"]) == rows
        assert _actual(db, 0) == _expected(rows, 0)
        assert _actual(db, 1) == _expected(rows, 1)  # built late: from the rows as they are
        assert db.rows == len(rows)


def test_a_unique_index_keeps_rows_and_widens_on_a_second_row() -> None:
    db = Database(["parent"])
    db.add("parent", [("t1", "s1"), ("t2", "s1")], 0)
    ix = db.index("parent", (0,))
    assert type(ix) is UniqueIndex and ix.get("t1") == (("t1", "s1"),)
    assert ix.get("nosuch") is None and ix.get("nosuch", ()) == ()
    db.add("parent", [("t3", "s2"), ("t1", "s9")], 0)
    wide = db.index("parent", (0,))
    assert type(wide) is dict and set(wide.get("t1", ())) == {("t1", "s1"), ("t1", "s9")}
    assert wide.get("t3") == (("t3", "s2"),)
    db.remove("parent", [("t1", "s9")])
    assert db.index("parent", (0,)).get("t1") == (("t1", "s1"),)
    assert type(db.index("parent", (1,))) is dict  # s1 has two rows from the start
