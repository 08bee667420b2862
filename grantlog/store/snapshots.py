"""A compact snapshot of a store's big relations (issue 26, item 5: cold start).

Opening a store reads every fact: at a million tables, two million rows through the driver,
one Python object per row and per value (~0.7 s on SQLite). A snapshot keeps the big
relations' rows (:data:`MIN_ROWS` or more) as one blob, ``grantlog_snapshot(id, revision,
format, relations, data)``: the rows as Python's ``marshal`` writes them, each distinct
value once (a table's name in ``entity`` and in ``contains`` is one string), read back in
one call (~0.14 s for the same two million rows).

It is written by ``grantlog store checkpoint`` (:meth:`Store.checkpoint`) and after a big
``grantlog store load`` (grantlog/store/warm.py), at the head revision ``S``; the change log
after it says which relations it no longer describes. :func:`read` gives a relation's rows
from the snapshot only when

* its ``format`` is this interpreter's (``marshal``'s layout and Python's version),
* the log still reaches back to ``S`` (no compaction past it) and holds no row of the
  relation after ``S``,
* the relation's table has the columns it was written with, and
* the rows read back have the count, arity and value types it was written with;

anything else, and every small relation, is read from the tables as before. The snapshot is
never a second truth: a relation it does not describe exactly is read from its table.
"""

from __future__ import annotations

import json
import marshal
import sys
from collections.abc import Iterable
from itertools import chain, islice
from operator import gt, itemgetter
from typing import Any

from grantlog.engine.core import ir
from grantlog.engine.core.index import SortedRows

#: grantlog/store/base.py's store (which calls this module: typed loosely, no import cycle)
Store = Any

TABLE = "grantlog_snapshot"
#: relations of at least this many rows are kept in the snapshot (smaller ones are read from
#: their tables in milliseconds)
MIN_ROWS = 10_000
#: the blob's layout: marshal's version and the interpreter's (marshal's data is not
#: portable across Python versions): a snapshot of another is not read
FORMAT = f"marshal{marshal.version}-py{sys.version_info[0]}.{sys.version_info[1]}"
#: the value types a snapshot's rows may hold (what the drivers give for a fact's columns)
_VALUES = frozenset({str, int, float})
#: the blob's entry of the rows sorted per column (not a relation's name)
ORDERS = "#orders"
#: columns of one of these value types are kept sorted (values of one type compare as
#: Python's dict finds them equal: no NaN, no mix of strings and numbers)
_SORTABLE = ({str}, {int})


def _blob_type(st: Store) -> str:
    return "BYTEA" if st.dialect == "postgres" else "BLOB"


def write(st: Store, min_rows: int | None = None) -> int | None:
    """Take the snapshot of ``st``'s relations of at least ``min_rows`` rows (default
    :data:`MIN_ROWS`) at the head, replacing the one kept: its revision, or None when no
    relation is that big (no snapshot is then kept)."""
    least = MIN_ROWS if min_rows is None else min_rows
    with st.writing() as w:
        cur = w.cur
        big, text = st._column_type("int"), st._column_type("string")
        cur.execute(f"CREATE TABLE IF NOT EXISTS {TABLE} (id INTEGER PRIMARY KEY, revision "
                    f"{big} NOT NULL, format {text} NOT NULL, relations {text} NOT NULL, "
                    f"data {_blob_type(st)} NOT NULL)")
        cur.execute(f"DELETE FROM {TABLE}")
        w.keep = True
        canon: dict[Any, Any] = {}
        kept: dict[str, list[ir.Row]] = {}
        meta: dict[str, dict[str, Any]] = {}
        for rel in sorted(st.tables):
            t = st.tables[rel]
            if not t.columns:
                continue
            rows = st._fetch_all(cur, t)
            if len(rows) < least:
                continue
            # one object per distinct value: marshal writes each once and reads it back as
            # one object (shared by every row holding it, its hash computed once)
            kept[rel] = [tuple([canon.setdefault(v, v) for v in row]) for row in rows]
            meta[rel] = {"columns": list(t.columns), "rows": len(rows)}
        if not kept:
            return None
        # the same row objects sorted per column (marshal writes each row once, then
        # references to it): an open reads a big relation's one-column indexes by
        # bisection over them instead of building hash indexes (engine/core/index.py)
        orders = {rel: _orders(rows) for rel, rows in kept.items()}
        cur.execute(st._sql(f"INSERT INTO {TABLE} (id, revision, format, relations, data) "
                            "VALUES (1, ?, ?, ?, ?)"),
                    (w.revision, FORMAT, json.dumps(meta),
                     marshal.dumps({**kept, ORDERS: orders})))
        return int(w.revision)


def _orders(rows: list[ir.Row]) -> dict[int, list[ir.Row]]:
    """``rows`` sorted (stably) on each column whose values are all of one sortable type;
    ``rows`` itself where it is already in that order (a table read in its key's order)."""
    out = {}
    for c in range(len(rows[0]) if rows else 0):
        key = itemgetter(c)
        if set(map(type, map(key, rows))) in _SORTABLE:
            if not any(map(gt, map(key, rows), map(key, islice(rows, 1, None)))):
                out[c] = rows
            else:
                out[c] = sorted(rows, key=key)
    return out


def drop(st: Store) -> None:
    """Forget the snapshot (every relation is read from its table again)."""
    with st.writing() as w:
        if st._columns(w.cur, TABLE):
            w.cur.execute(f"DELETE FROM {TABLE}")
            w.keep = True


def fresh(st: Store, cur: Any, relations: Iterable[str]) -> tuple[int, set[str]] | None:
    """Inside a read transaction: the snapshot's revision and which of ``relations`` it
    describes exactly (see the module docstring); None: no snapshot that could be read."""
    if not st._columns(cur, TABLE):
        return None
    cur.execute(f"SELECT revision, format, relations FROM {TABLE} WHERE id = 1")
    got = cur.fetchone()
    if got is None or got[1] != FORMAT:
        return None
    revision = int(got[0])
    try:
        meta = json.loads(got[2])
    except ValueError:
        return None
    cur.execute("SELECT horizon FROM grantlog_head WHERE id = 1")
    if int(cur.fetchone()[0]) > revision:  # the log no longer says what changed since
        return None
    cur.execute(st._sql("SELECT DISTINCT relation FROM grantlog_log WHERE revision > ?"),
                (revision,))
    changed = {r for (r,) in cur.fetchall()}
    ok = set()
    for rel in relations:
        m = meta.get(rel) if isinstance(meta, dict) else None
        t = st.tables.get(rel)
        if (rel not in changed and isinstance(m, dict) and t is not None
                and m.get("columns") == list(t.columns)):
            ok.add(rel)
    return revision, ok


def read(st: Store, cur: Any, relations: Iterable[str]) -> dict[str, list[ir.Row]]:
    """Inside a read transaction: the rows of those of ``relations`` the snapshot describes
    exactly (:func:`fresh`); the others are not in the result (read them from their
    tables). A blob that does not read back as written is not used."""
    got = fresh(st, cur, relations)
    if got is None or not got[1]:
        return {}
    wanted = got[1]
    cur.execute(f"SELECT relations, data FROM {TABLE} WHERE id = 1")
    row = cur.fetchone()
    if row is None:
        return {}
    meta = json.loads(row[0])
    try:
        data = marshal.loads(bytes(row[1]))
    except (ValueError, EOFError, TypeError):
        return {}
    if not isinstance(data, dict):
        return {}
    orders = data.get(ORDERS)
    out: dict[str, list[ir.Row]] = {}
    for rel in wanted:
        rows: Any = data.get(rel)
        if _intact(rows, len(meta[rel]["columns"]), meta[rel].get("rows")):
            by = _sorted(rows, orders.get(rel) if isinstance(orders, dict) else None)
            out[rel] = rows if by is None else SortedRows(rows, by)
    return out


def _sorted(rows: list[ir.Row], orders: Any) -> dict[int, list[ir.Row]] | None:
    """The rows' orders per column as kept (:func:`_orders`), those that hold ``rows``: the
    rows themselves, or as many of the same objects (the same sum of identities, at C
    speed; marshal wrote each row once and references to it after)."""
    if not isinstance(orders, dict) or not rows:
        return None
    ids = None
    out = {}
    for c, order in orders.items():
        if not (type(c) is int and 0 <= c < len(rows[0]) and type(order) is list):
            continue
        if order is not rows:
            if len(order) != len(rows):
                continue
            if ids is None:
                ids = sum(map(id, rows))
            if sum(map(id, order)) != ids:
                continue
        out[c] = order
    return out or None


def _intact(rows: Any, arity: int, count: Any) -> bool:
    """Whether ``rows`` are ``count`` tuples of ``arity`` plain values (checked at C speed)."""
    return (type(rows) is list and len(rows) == count
            and set(map(type, rows)) <= {tuple} and set(map(len, rows)) <= {arity}
            and set(map(type, chain.from_iterable(rows))) <= _VALUES)
