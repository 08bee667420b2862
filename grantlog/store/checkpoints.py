"""Checkpoints of a store's history: the change log folded into a temporal table, so that the
facts at a past revision are one query and never a pass over the whole log.

``grantlog_intervals(relation, row, added_at, removed_at)`` holds one row per time a fact was
present: added at revision ``added_at``, removed at ``removed_at`` (NULL: still present at
the checkpoint). ``grantlog_intervals_head(id, revision, every)`` says up to which revision
the log is folded in (the checkpoint ``C``) and, when set, every how many revisions a commit
folds the log since (``Store.checkpoint(every=N)`` / ``grantlog store checkpoint --every N``).

The facts at ``R <= C`` are the intervals with ``added_at <= R < removed_at``; at ``R > C``
those at ``C`` plus the log rows in ``(C, R]`` (:func:`facts_at`). Folding is incremental:
each checkpoint reads only the log since the last one; and set-based: two statements per batch
of revisions, in the database (:func:`_fold_batch`). Why a temporal table and not a copy
per checkpoint: a copy costs the whole fact set every N revisions (1M facts x 1,000
checkpoints), the intervals cost one row per fact ever added, which the log held anyway.

A store whose log was compacted before its first checkpoint seeds the intervals with the
facts at its horizon (added at the horizon: nothing below it is answerable). Compaction folds
the log up to its new horizon first, then drops the intervals closed at or below it.
"""

from __future__ import annotations

import json
import weakref
from typing import Any

from grantlog.engine.core import ir

from .records import decode_row, encode_row, store_error

#: grantlog/store/base.py's store (which calls this module: typed loosely, no import cycle)
Store = Any

#: what a log row and an interval row cost to read, in table rows (benchmarks/RESULTS.md,
#: "Retention and checkpoints": 28.6k facts read from the tables in ~17 ms, as intervals in ~70)
LOG_ROW_COST = 6
INTERVAL_ROW_COST = 4

TABLE = "grantlog_intervals"
HEAD = "grantlog_intervals_head"


def _has(st: Store, cur: Any) -> bool:
    return bool(st._columns(cur, HEAD))


def _create(st: Store, cur: Any) -> None:
    big, text = st._column_type("int"), st._column_type("string")
    cur.execute(f"CREATE TABLE IF NOT EXISTS {TABLE} (relation {text} NOT NULL, row {text} NOT "
                f"NULL, added_at {big} NOT NULL, removed_at {big})")
    cur.execute(f"CREATE INDEX IF NOT EXISTS {TABLE}_row ON {TABLE} (relation, row)")
    cur.execute(f"CREATE INDEX IF NOT EXISTS {TABLE}_added ON {TABLE} (added_at)")
    point_indexes(st, cur)
    cur.execute(f"CREATE TABLE IF NOT EXISTS {HEAD} (id INTEGER PRIMARY KEY, revision {big} "
                f"NOT NULL, every {big})")


def value_sql(st: Store, i: int) -> str:
    """The SQL expression of an interval row's ``i``-th value (text on PostgreSQL)."""
    return f"((row::jsonb) ->> {i})" if st.dialect == "postgres" \
        else f"json_extract(row, '$[{i}]')"


#: the values of a row the temporal table is indexed on, by position (point reads)
INDEXED = 3


def fact_sql(st: Store, i: int) -> str:
    """The SQL expression of the ``i``-th value of the fact a validity interval's row (the
    reserved relation ``@valid``: relation, fact as a JSON array, bounds) is of."""
    return f"(((row::jsonb) ->> 1)::jsonb ->> {i})" if st.dialect == "postgres" \
        else f"json_extract(json_extract(row, '$[1]'), '$[{i}]')"


#: the reserved relation of validity intervals (engine/answer/validity.py), as SQL text
VALID_SQL = "'@valid'"


def point_indexes(st: Store, cur: Any) -> None:
    """The indexes of point reads at a revision (grantlog/store/temporal.py): a row's
    first :data:`INDEXED` values, each with its relation; and, of the validity intervals'
    rows only (partial indexes), the fact's relation with each of the fact's first
    :data:`INDEXED` values, and the end of the interval (a timeline's moments)."""
    for i in range(INDEXED):
        cur.execute(f"CREATE INDEX IF NOT EXISTS {TABLE}_v{i} ON {TABLE} (relation, "
                    f"{value_sql(st, i)})")
    for i in range(INDEXED):
        cur.execute(f"CREATE INDEX IF NOT EXISTS {TABLE}_f{i} ON {TABLE} ({value_sql(st, 0)}, "
                    f"{fact_sql(st, i)}) WHERE relation = {VALID_SQL}")
    cur.execute(f"CREATE INDEX IF NOT EXISTS {TABLE}_until ON {TABLE} ({value_sql(st, 3)}) "
                f"WHERE relation = {VALID_SQL}")


def revision(st: Store) -> int | None:
    """The checkpoint's revision (None: the store never took one)."""
    with st._cursor() as cur:
        st._begin_read(cur)
        try:
            at = head(st, cur)
        finally:
            st._rollback(cur)
    return None if at is None else at[0]


def intervals(st: Store) -> tuple[list[tuple[str, str, int, int | None]], int | None]:
    """Every row of the temporal table (relation, encoded row, added_at, removed_at) and the
    checkpoint's revision (None and no rows: the store never took one); for tests and audits."""
    with st._cursor() as cur:
        st._begin_read(cur)
        try:
            at = head(st, cur)
            rows: list[tuple[str, str, int, int | None]] = []
            if at is not None:
                cur.execute(f"SELECT relation, row, added_at, removed_at FROM {TABLE}")
                rows = [(r, t, int(a), None if b is None else int(b))
                        for r, t, a, b in cur.fetchall()]
        finally:
            st._rollback(cur)
    return rows, None if at is None else at[0]


def head(st: Store, cur: Any) -> tuple[int, int | None] | None:
    """(the checkpoint's revision, every how many revisions one is taken) or None: never."""
    if not _has(st, cur):
        return None
    cur.execute(f"SELECT revision, every FROM {HEAD} WHERE id = 1")
    row = cur.fetchone()
    return None if row is None else (int(row[0]), None if row[1] is None else int(row[1]))


def fold(st: Store, cur: Any, upto: int, horizon: int) -> int:
    """Fold the log up to revision ``upto`` into the intervals (inside a write transaction
    that holds the head); returns the checkpoint's revision."""
    at = head(st, cur)
    if at is None:
        _create(st, cur)
        start = horizon
        if horizon > 0:  # the log before it is gone: the facts at the horizon, as they are
            seed = [(rel, encode_row(r), horizon) for rel, rows in
                    facts_at_horizon(st, cur, horizon).items() for r in rows]
            cur.executemany(st._sql(f"INSERT INTO {TABLE} (relation, row, added_at) "
                                    "VALUES (?, ?, ?)"), seed)
        cur.execute(st._sql(f"INSERT INTO {HEAD} (id, revision) VALUES (1, ?)"), (start,))
    else:
        start = at[0]
    if upto <= start:
        return start
    lo = start
    for hi in _batches(st, cur, start, upto):
        _fold_batch(st, cur, lo, hi)
        lo = hi
    cur.execute(st._sql(f"UPDATE {HEAD} SET revision = ? WHERE id = 1"), (upto,))
    return upto


#: log rows folded per statement (a batch of whole revisions: a bigger revision is one batch)
FOLD_BATCH = 500_000


def _batches(st: Store, cur: Any, start: int, upto: int) -> list[int]:
    """The ends of consecutive revision ranges in ``(start, upto]`` of about
    :data:`FOLD_BATCH` log rows each (by the transactions' counts; the last ends at
    ``upto``, whose own row may not be written yet: a fold inside its commit)."""
    ends: list[int] = []
    n = 0
    for rev, count in st._stream(cur, "SELECT revision, added + removed FROM grantlog_revisions "
                                 f"WHERE revision > {int(start)} AND revision < {int(upto)} "
                                 "ORDER BY revision"):
        n += int(count)
        if n >= FOLD_BATCH:
            ends.append(int(rev))
            n = 0
    return [*ends, upto]


def _row_sql(st: Store) -> str:
    """A log row's values as the temporal table keeps them (records.encode_row's compact
    JSON: SQLite's log has it already; PostgreSQL's text may be ``json_build_array``'s,
    spaced, so its elements are joined again)."""
    if st.dialect != "postgres":
        return "row"
    return ("COALESCE((SELECT '[' || string_agg(e.v::text, ',' ORDER BY e.n) || ']' FROM "
            "jsonb_array_elements(row::jsonb) WITH ORDINALITY AS e(v, n)), '[]')")


def _fold_batch(st: Store, cur: Any, lo: int, hi: int) -> None:
    """Fold the log rows of revisions ``(lo, hi]`` in, set-based: a fact's log rows in a
    range alternate (the writer adds only what is absent, removes only what is present),
    so a fact present at ``lo`` has a removal as its first row there — which closes its
    open interval — and each addition opens an interval that the fact's next row (a
    removal, or none) closes."""
    rng = f"revision > {int(lo)} AND revision <= {int(hi)}"
    row = _row_sql(st)
    # close first: the intervals opened below come after, and a fact added and removed in
    # the range must not be closed by its first removal
    cur.execute(f"UPDATE {TABLE} SET removed_at = c.rev FROM (SELECT relation, {row} AS row, "
                f"MIN(revision) AS rev FROM grantlog_log WHERE {rng} AND sign < 0 GROUP BY "
                f"relation, {row}) AS c WHERE {TABLE}.relation = c.relation AND {TABLE}.row = "
                f"c.row AND {TABLE}.removed_at IS NULL")
    # removed_at = LEAD(revision): the next row of the same fact in the range (a removal)
    cur.execute(f"INSERT INTO {TABLE} (relation, row, added_at, removed_at) SELECT relation, "
                f"row, revision, nxt FROM (SELECT relation, {row} AS row, sign, revision, "
                f"LEAD(revision) OVER (PARTITION BY relation, {row} ORDER BY revision) AS nxt "
                f"FROM grantlog_log WHERE {rng}) AS e WHERE sign > 0")


def horizon(st: Store, w: Any, keep: int | None, before_time: float | None,
            before_revision: int | None) -> int:
    """The horizon a compaction moves to (``Store.compact``'s arguments; ``w``: its writer,
    holding the head): never below the current one."""
    if sum(x is not None for x in (keep, before_time, before_revision)) != 1:
        raise store_error("bad-option", "compact needs exactly one of `keep`, `before_time` "
                          "and `before_revision`", st._shown(), "say how much history to "
                          "keep: a number of transactions, a time or a revision")
    if keep is not None:
        target = w.revision - max(keep, 0)
    elif before_revision is not None:
        if before_revision > w.revision:
            raise store_error("revision-ahead", f"revision {before_revision} is not committed "
                              f"yet: the store is at revision {w.revision}", st._shown(),
                              f"compact before revision {w.revision} or earlier")
        target = before_revision
    else:
        w.cur.execute(st._sql("SELECT MAX(revision) FROM grantlog_revisions WHERE "
                              "committed_at <= ?"), (before_time,))
        (found,) = w.cur.fetchone()
        target = w.horizon if found is None else int(found)
    return max(int(w.horizon), int(target))


def compacted(st: Store, cur: Any, horizon: int) -> None:
    """Before the log up to ``horizon`` is dropped: fold it in, drop what closed by then."""
    if head(st, cur) is None:
        return
    fold(st, cur, horizon, horizon)
    cur.execute(st._sql(f"DELETE FROM {TABLE} WHERE removed_at IS NOT NULL AND "
                        "removed_at <= ?"), (horizon,))


#: the stores this process found without a temporal table (not asked again on every commit;
#: a checkpoint taken here clears the mark; another process's is seen once reopened, and
#: folding is never needed for exact answers: facts_at reads the log past the checkpoint)
_WITHOUT: weakref.WeakSet[Any] = weakref.WeakSet()


def committed(st: Store, cur: Any, revision: int) -> None:
    """Before a commit: fold the log in when ``every`` revisions passed since the
    checkpoint (the last one folded is this transaction's)."""
    if st in _WITHOUT:
        return
    at = head(st, cur)
    if at is None:
        _WITHOUT.add(st)
    elif at[1] and revision - at[0] >= at[1]:
        fold(st, cur, revision, 0)


def checkpoint(st: Store, every: int | None = None) -> int:
    """Fold the log up to the head now (and, given ``every``, after every ``every`` revisions
    from now on; 0 stops that); returns the checkpoint's revision."""
    _WITHOUT.discard(st)
    with st.writing() as w:
        at = fold(st, w.cur, w.revision, w.horizon)
        point_indexes(st, w.cur)  # a temporal table from before they were kept
        if every is not None:
            w.cur.execute(st._sql(f"UPDATE {HEAD} SET every = ? WHERE id = 1"),
                          (every or None,))
        w.keep = True
    return at


def facts_at(st: Store, cur: Any, revision: int) -> dict[str, list[ir.Row]] | None:
    """The facts at ``revision`` from the checkpoint (see the module docstring); None when
    the store has none, or it is above ``revision`` by more log rows than the backward read
    costs (the tables now and the log after ``revision``)."""
    at = head(st, cur)
    if at is None:
        return None
    c = at[0]
    cur.execute(st._sql("SELECT COALESCE(SUM(CASE WHEN revision > ? AND revision <= ? THEN "
                        "added + removed ELSE 0 END), 0), COALESCE(SUM(CASE WHEN revision > ? "
                        "THEN added + removed ELSE 0 END), 0), COALESCE(SUM(added - removed), "
                        "0) FROM grantlog_revisions"), (c, revision, revision))
    between, after, now = (int(x) for x in cur.fetchone())
    # the backward read costs the tables (~ the facts now) and the log after ``revision``;
    # this one the intervals (~ the facts, a few times a table row: decoded from JSON) and
    # the log between the checkpoint and ``revision``
    if LOG_ROW_COST * after < INTERVAL_ROW_COST * now + LOG_ROW_COST * between:
        return None
    upto = min(revision, c)
    cur.execute(st._sql(f"SELECT relation, row FROM {TABLE} WHERE added_at <= ? AND "
                        "(removed_at IS NULL OR removed_at > ?)"), (upto, upto))
    out: dict[str, set[ir.Row]] = {rel: set() for rel in st.tables}
    for rel, text in cur.fetchall():
        out.setdefault(rel, set()).add(tuple(json.loads(text)))
    if revision > c:
        for _, rel, sign, row in st._stream(
                cur, "SELECT revision, relation, sign, row FROM grantlog_log WHERE revision > "
                f"{int(c)} AND revision <= {int(revision)} ORDER BY revision"):
            value = tuple(json.loads(row) if isinstance(row, str) else row)
            (out.setdefault(rel, set()).add if int(sign) > 0
             else out.setdefault(rel, set()).discard)(value)
    return {rel: sorted(rows, key=repr) for rel, rows in out.items()}


def facts_at_horizon(st: Store, cur: Any, revision: int) -> dict[str, list[ir.Row]]:
    """The facts at ``revision`` read backward: the tables now, the log after it undone
    (the only way at the horizon of a compacted log)."""
    pg = st.dialect == "postgres"
    key = "row::jsonb" if pg else "row"

    def decode(v: Any) -> ir.Row:
        return tuple(v) if pg else decode_row(v)

    out: dict[str, list[ir.Row]] = {rel: [] for rel in st.tables}
    cur.execute(st._sql(f"SELECT relation, {key}, SUM(sign) FROM grantlog_log WHERE "
                        f"revision > ? GROUP BY relation, {key} HAVING SUM(sign) <> 0"),
                (revision,))
    later: dict[str, tuple[set[ir.Row], set[ir.Row]]] = {}
    for rel, v, sign in cur.fetchall():
        added, removed = later.setdefault(rel, (set(), set()))
        (added if int(sign) > 0 else removed).add(decode(v))
    for rel, t in st.tables.items():
        rows = st._fetch_all(cur, t)
        if rel in later:
            added, removed = later[rel]
            rows = [r for r in rows if r not in added]
            rows += removed - set(rows)
        out[rel] = rows
    for rel, (_, removed) in later.items():  # a relation whose table is gone since
        if rel not in st.tables and removed:
            out[rel] = list(removed)
    return out
