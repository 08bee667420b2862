"""The planner's statistics kept with a store's facts (issue 26, item 5: cold start).

``grantlog_statistics(id, revision, measured_at, data)``: one row, the JSON that
engine/plan/kept.py ``export`` made of what the planner measured on the rows (sizes, distinct
counts, bucket sizes, samples of rows holding constants, closure walks), and the head revision
when it was written. A reasoner that opens the store reads it (:func:`read`) and plans its
first question without a pass over a million rows; when it measured anything new (nothing was
kept, they went stale, or a question read what they did not hold), it writes them back when it
closes (:func:`write`). ``grantlog store load`` measures them right after a load
(grantlog/store/warm.py).

They are stale, and :func:`read` gives None, once :data:`~grantlog.store.base.ANALYZE_AFTER`
rows were written since (the threshold that refreshes the database's own statistics; where
the log was compacted past them, the tables' sizes against the measured ones): the next
reasoner measures again and keeps the new ones. They are only a cost model: a reasoner
answers the same whatever they hold.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from typing import Any

from .base import ANALYZE_AFTER, Store
from .records import q

TABLE = "grantlog_statistics"


def read(store: Store) -> dict[str, Any] | None:
    """The statistics kept with the facts (None: none kept, or stale)."""
    with store._cursor() as cur:
        store._begin_read(cur)
        try:
            if not store._columns(cur, TABLE):
                return None
            cur.execute(f"SELECT revision, data FROM {TABLE} WHERE id = 1")
            row = cur.fetchone()
            if row is None:
                return None
            revision, text = int(row[0]), row[1]
            try:
                data = json.loads(text)
            except ValueError:  # not ours, or damaged: measured again
                return None
            if not isinstance(data, dict):
                return None
            cur.execute("SELECT horizon FROM grantlog_head WHERE id = 1")
            if revision < int(cur.fetchone()[0]):
                # the log no longer says what was written since (compacted): the tables'
                # sizes against the measured ones
                drift = _drift(store, cur, data.get("sizes"))
            else:
                cur.execute(store._sql("SELECT COALESCE(SUM(added + removed), 0) FROM "
                                       "grantlog_revisions WHERE revision > ?"), (revision,))
                drift = int(cur.fetchone()[0])
        finally:
            store._rollback(cur)
    return data if drift < ANALYZE_AFTER else None


def _drift(store: Store, cur: Any, sizes: Any) -> int:
    """How far the stored relations' sizes are from ``sizes`` (rows, summed)."""
    if not isinstance(sizes, dict):
        return ANALYZE_AFTER
    drift = 0
    for rel, n in sizes.items():
        t = store.tables.get(rel)
        if t is not None and type(n) is int:
            cur.execute(f"SELECT COUNT(*) FROM {q(t.name)}")
            drift += abs(int(cur.fetchone()[0]) - n)
    return drift


def write(store: Store, data: Mapping[str, Any]) -> None:
    """Keep ``data`` as the facts' statistics (replacing the kept ones), as of the head.
    Never waits for another writer: while one holds the lock this raises ``store-locked``
    at once (engine/plan/kept.py skips the write; the next reasoner measures and keeps
    them), so that closing a reasoner never waits the store's busy timeout."""
    text = json.dumps(data, separators=(",", ":"))
    big, string = store._column_type("int"), store._column_type("string")
    with store.writing(wait=False) as w:
        cur = w.cur
        cur.execute(f"CREATE TABLE IF NOT EXISTS {TABLE} (id INTEGER PRIMARY KEY, revision "
                    f"{big} NOT NULL, measured_at DOUBLE PRECISION NOT NULL, data {string} "
                    "NOT NULL)")
        cur.execute(f"DELETE FROM {TABLE} WHERE id = 1")
        cur.execute(store._sql(f"INSERT INTO {TABLE} (id, revision, measured_at, data) "
                               "VALUES (1, ?, ?, ?)"), (w.revision, time.time(), text))
        w.keep = True


def forget(store: Store) -> None:
    """Drop the kept statistics (the next reasoner measures the rows again)."""
    with store.writing() as w:
        if store._columns(w.cur, TABLE):
            w.cur.execute(f"DELETE FROM {TABLE}")
            w.keep = True
