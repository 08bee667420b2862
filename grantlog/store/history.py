"""A store's history: who wrote each transaction and why, and the facts as they stood at any
revision the change log keeps (the journal's side of engine/answer/history.py).

Every transaction's row in ``grantlog_revisions`` has its commit time and, when the writer
gave them, ``author``, ``reason`` and ``ticket`` (:func:`transactions`). The facts at a
revision ``R`` are read in SQL, whichever is cheaper (a count of log rows on each side of
``R``, from ``grantlog_revisions``):

* **backward**: the tables now, minus the rows the log added after ``R``, plus the rows it
  removed after ``R``: per (relation, row), the signs logged after ``R`` summed by the
  database (``+1``: absent at ``R``, present now; ``-1``: the other way round; ``0``: as now);
* **forward** (only while the log was never compacted: it starts from the empty store): the
  rows whose signs logged up to ``R`` sum to ``+1``.

Neither replays a transaction in Python. A revision below the log's horizon is refused
(``revision-compacted``, naming the oldest one kept: the horizon itself, whose facts are the
tables minus everything logged after it), one above the head too (``revision-ahead``). Rows are
grouped by their JSON text (SQLite) or value (PostgreSQL's ``jsonb``: a bulk load there logs
the same row with other spacing).
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from grantlog.engine.core import ir
from grantlog.engine.core.journal import COMPACTED

from . import checkpoints
from .base import META_COLUMNS, Store
from .records import StoredPolicy, decode_row, store_error


@dataclass(frozen=True)
class Committed:
    """One transaction as ``grantlog_revisions`` has it."""

    revision: int
    committed_at: float
    added: int
    removed: int
    author: str | None = None
    reason: str | None = None
    ticket: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"revision": self.revision, "committed_at": self.committed_at,
                "time": iso(self.committed_at), "added": self.added, "removed": self.removed,
                "author": self.author, "reason": self.reason, "ticket": self.ticket}


def iso(at: float) -> str:
    """A commit time as messages and reports show it (UTC, to the millisecond)."""
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(at)) + f".{int(at * 1000) % 1000:03d}Z"


@contextmanager
def _read(st: Store) -> Iterator[Any]:
    """A read transaction's cursor (one consistent view)."""
    with st._cursor() as cur:
        st._begin_read(cur)
        try:
            yield cur
        finally:
            st._rollback(cur)


def _has_meta(st: Store, cur: Any) -> bool:
    return st._meta_columns or set(META_COLUMNS) <= st._columns(cur, "grantlog_revisions")


def transactions(st: Store, since: int = 0, limit: int | None = None,
                 upto: int | None = None) -> list[Committed]:
    """The transactions after ``since`` (up to ``upto``), oldest first, with who wrote them
    and why (None where not given, or the store predates the columns)."""
    with _read(st) as cur:
        cols = ", author, reason, ticket" if _has_meta(st, cur) else ""
        sql = (f"SELECT revision, committed_at, added, removed{cols} FROM grantlog_revisions "
               "WHERE revision > ?" + ("" if upto is None else f" AND revision <= {int(upto)}")
               + " ORDER BY revision" + ("" if limit is None else f" LIMIT {int(limit)}"))
        cur.execute(st._sql(sql), (since,))
        return [Committed(int(r[0]), float(r[1]), int(r[2]), int(r[3]), *r[4:])
                for r in cur.fetchall()]


def _bounds(cur: Any) -> tuple[int, int]:
    cur.execute("SELECT revision, horizon FROM grantlog_head WHERE id = 1")
    head, horizon = cur.fetchone()
    return int(head), int(horizon)


def _check(st: Store, revision: int, head: int, horizon: int) -> None:
    if revision < horizon:
        raise store_error(
            COMPACTED, f"revision {revision} is older than the change log keeps: the oldest "
            f"revision it can answer at is {horizon}", st._shown(),
            f"ask at revision {horizon} or later (`grantlog store compact` decides how much "
            "history a store keeps)")
    if revision > head:
        raise store_error(
            "revision-ahead", f"revision {revision} is not committed yet: the store is at "
            f"revision {head}", st._shown(),
            f"ask at revision {head} or earlier (`at_least` waits for a revision to come)")


def snapshot_at(st: Store, revision: int) -> tuple[int, dict[str, list[ir.Row]]]:
    """Every stored fact as it stood at ``revision`` (see the module docstring)."""
    pg = st.dialect == "postgres"
    key = "row::jsonb" if pg else "row"

    def decode(v: Any) -> ir.Row:
        return tuple(v) if pg else decode_row(v)

    with _read(st) as cur:
        head, horizon = _bounds(cur)
        _check(st, revision, head, horizon)
        out: dict[str, list[ir.Row]] = {rel: [] for rel in st.tables}
        if revision == head:
            for rel, t in st.tables.items():
                out[rel] = st._fetch_all(cur, t)
            return revision, out
        folded = checkpoints.facts_at(st, cur, revision)
        if folded is not None:
            return revision, folded
        if horizon == 0 and _forward(st, cur, revision):
            cur.execute(st._sql(f"SELECT relation, {key} FROM grantlog_log WHERE revision <= ? "
                                f"GROUP BY relation, {key} HAVING SUM(sign) > 0"), (revision,))
            for rel, v in cur.fetchall():
                out.setdefault(rel, []).append(decode(v))
            return revision, out
        return revision, checkpoints.facts_at_horizon(st, cur, revision)


#: how much more a log row costs to read than a table row (grouped by its JSON text, and
#: summed): ~6 on SQLite (2,000 tables: 28.6k log rows grouped in 590 ms, the tables read
#: in 100 ms)
LOG_ROW_COST = 6


def _forward(st: Store, cur: Any, revision: int, weight: int = LOG_ROW_COST) -> bool:
    """Whether the log up to ``revision`` costs less to read than the tables and the log
    after it (a log never compacted: its counts give the tables' size too)."""
    cur.execute(st._sql("SELECT COALESCE(SUM(CASE WHEN revision <= ? THEN added + removed "
                        "ELSE 0 END), 0), COALESCE(SUM(CASE WHEN revision > ? THEN added + "
                        "removed ELSE 0 END), 0), COALESCE(SUM(added - removed), 0) FROM "
                        "grantlog_revisions"), (revision, revision))
    before, after, now = (int(x) for x in cur.fetchone())
    return before * weight < now + after * weight


def revision_at(st: Store, when: float) -> int:
    """The last revision committed at or before ``when`` (seconds since the epoch)."""
    with _read(st) as cur:
        head, horizon = _bounds(cur)
        cur.execute(st._sql("SELECT revision FROM grantlog_revisions WHERE committed_at <= ? "
                            "ORDER BY committed_at DESC, revision DESC LIMIT 1"), (when,))
        row = cur.fetchone()
        if row is not None:
            return int(row[0])
        if head == horizon == 0:  # nothing was ever written: the empty store
            return 0
        if horizon > 0 and "horizon_at" in st._columns(cur, "grantlog_head"):
            cur.execute("SELECT horizon_at FROM grantlog_head WHERE id = 1")
            (at,) = cur.fetchone()
            if at is not None and float(at) <= when:  # after the horizon's commit
                return horizon
        cur.execute("SELECT revision, committed_at FROM grantlog_revisions "
                    "ORDER BY revision LIMIT 1")
        first = cur.fetchone()
    shown = f"`{iso(when)}`"
    if horizon > 0:
        kept = f"; the oldest kept is {first[0]}, committed at {iso(float(first[1]))}" \
            if first is not None else ""
        raise store_error(COMPACTED, f"{shown} is before the history the store keeps (its "
                          f"change log starts after revision {horizon}{kept})", st._shown(),
                          "ask about a later time (`grantlog store compact` decides how much "
                          "history a store keeps)")
    assert first is not None
    raise store_error("before-history", f"{shown} is before the store's first transaction "
                      f"(revision {first[0]}, committed at {iso(float(first[1]))})",
                      st._shown(), "ask about a later time")


def committed_at(st: Store, revision: int) -> float | None:
    """When ``revision`` committed: its transaction's time, or the horizon's kept by the
    compaction that dropped it (None: revision 0, or a store compacted before it kept it)."""
    with _read(st) as cur:
        cur.execute(st._sql("SELECT committed_at FROM grantlog_revisions WHERE revision = ?"),
                    (revision,))
        row = cur.fetchone()
        if row is None and revision > 0 and "horizon_at" in st._columns(cur, "grantlog_head"):
            cur.execute(st._sql("SELECT horizon_at FROM grantlog_head WHERE id = 1 AND "
                                "horizon = ?"), (revision,))
            row = cur.fetchone()
    return None if row is None or row[0] is None else float(row[0])


def policy_at(st: Store, revision: int, when: float | None = None) -> StoredPolicy | None:
    """The newest policy installed at or before ``revision`` (and ``when``, when given);
    None: none was."""
    sql = ("SELECT serial, hash, roots, sources, set_at, revision FROM grantlog_policies "
           "WHERE revision <= ?" + ("" if when is None else " AND set_at <= ?")
           + " ORDER BY serial DESC LIMIT 1")
    with _read(st) as cur:
        cur.execute(st._sql(sql), (revision,) if when is None else (revision, when))
        row = cur.fetchone()
    if row is None:
        return None
    serial, digest, roots, sources, at, rev = row
    return StoredPolicy(int(serial), str(digest), json.loads(roots), json.loads(sources),
                        float(at), int(rev))


def policy_revisions(st: Store) -> list[int]:
    """The revisions at which policies were installed, ascending."""
    with _read(st) as cur:
        cur.execute("SELECT DISTINCT revision FROM grantlog_policies ORDER BY revision")
        return [int(r[0]) for r in cur.fetchall()]
