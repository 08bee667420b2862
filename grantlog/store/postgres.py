"""The production store: PostgreSQL through psycopg 3 (``pip install 'grantlog[postgres]'``).

``postgresql://user:password@host:port/dbname`` (any libpq connection URL). Write
transactions run at READ COMMITTED and lock the head row first (``SELECT ... FOR UPDATE``), so
writers are serialized and revision order is commit order; each one ends with
``pg_notify('grantlog', revision)``. NOTIFY is only a wake-up: followers LISTEN and then read
the change log, which is the truth (a follower also reads the log every second without one).
Snapshots are read at REPEATABLE READ.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import Any

from grantlog.engine.core import ir
from grantlog.engine.core.journal import Meta
from grantlog.grammar.diagnostics import GrantlogError

from . import schema
from .records import Listener, encode_row, q, store_error
from .verify import VerifiedStore

CHANNEL = "grantlog"
#: rows above which writes go through COPY instead of batched statements
COPY_MIN = 200


def _psycopg() -> Any:
    try:
        import psycopg
    except ImportError as exc:
        raise store_error("missing-dependency", f"the PostgreSQL store needs psycopg ({exc})",
                          "<store>", "install it with `pip install 'grantlog[postgres]'`") \
            from None
    return psycopg


class PostgresStore(VerifiedStore):
    dialect = "postgres"
    param = "%s"

    def __init__(self, url: str, create: bool = True) -> None:
        super().__init__(url)
        self._pg = _psycopg()
        self._lock = threading.Lock()
        self._conn: Any = None
        #: server-side cursors opened (each stream's name is new)
        self._streams = 0
        with self._lock:
            self._connection()

    def _connection(self) -> Any:
        conn = self._conn
        if conn is None or conn.closed or conn.broken:
            try:
                self._conn = conn = self._pg.connect(self.url, autocommit=True,
                                                     connect_timeout=10)
            except self._pg.Error as exc:
                raise self._error(exc) from None
        return conn

    def _error(self, exc: Exception) -> GrantlogError:
        pg = self._pg
        text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        shown = self._shown()
        if isinstance(exc, pg.errors.DiskFull):
            return store_error("store-full", f"PostgreSQL cannot grow the store: {text}", shown,
                               "free disk space; nothing of the transaction was applied")
        if isinstance(exc, pg.errors.LockNotAvailable | pg.errors.DeadlockDetected):
            return store_error("store-locked", f"the store is locked: {text}", shown, "retry")
        if isinstance(exc, pg.OperationalError | pg.InterfaceError):
            return store_error("store-unavailable", f"cannot reach PostgreSQL: {text}", shown,
                               "check that the server is up; the next call reconnects")
        return store_error("store-error", f"PostgreSQL failed: {text}", shown)

    def _shown(self) -> str:
        """The URL without its password (errors are shown and logged)."""
        try:
            from urllib.parse import urlsplit, urlunsplit

            p = urlsplit(self.url)
            if p.password:
                netloc = p.netloc.replace(":" + p.password + "@", ":***@")
                return urlunsplit(p._replace(netloc=netloc))
        except ValueError:
            pass
        return self.url

    @contextmanager
    def _cursor(self) -> Iterator[Any]:
        with self._lock:
            conn = self._connection()
            try:
                with conn.cursor() as cur:
                    yield cur
            except self._pg.Error as exc:
                try:
                    if not conn.closed and not conn.broken:
                        conn.execute("ROLLBACK")
                except self._pg.Error:
                    pass
                raise self._error(exc) from None

    def _begin_write(self, cur: Any, wait: bool = True) -> None:
        cur.execute("BEGIN" if wait else "BEGIN; SET LOCAL lock_timeout = '100ms'")

    def _begin_read(self, cur: Any) -> None:
        cur.execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")

    def _commit(self, cur: Any) -> None:
        cur.execute("COMMIT")

    def _rollback(self, cur: Any) -> None:
        cur.execute("ROLLBACK")

    def _for_update(self) -> str:
        return " FOR UPDATE"

    # a durable grant is a handful of round trips: BEGIN with the head's lock in one, the
    # facts and the log, then the head, the transaction row, NOTIFY and COMMIT in one (the
    # values are integers and a float of ours, so the statements are plain text)

    def _lock_head(self, cur: Any, wait: bool = True) -> tuple[int, int]:
        # not waiting: NOWAIT on the head, and no more than 100 ms on any other lock
        cur.execute("BEGIN; SELECT revision, horizon FROM grantlog_head WHERE id = 1 "
                    "FOR UPDATE" if wait else "BEGIN; SET LOCAL lock_timeout = '100ms'; "
                    "SELECT revision, horizon FROM grantlog_head WHERE id = 1 FOR UPDATE NOWAIT")
        while cur.description is None and cur.nextset():
            pass
        rev, hor = cur.fetchone()
        return int(rev), int(hor)

    def _finish(self, cur: Any, revision: int, at: float, added: int, removed: int,
                digest: str | None = None, meta: Meta | None = None) -> None:
        if meta:  # who wrote it and why: text of the caller's, sent as parameters
            super()._finish(cur, revision, at, added, removed, digest, meta)
            return
        r, a, n, m = int(revision), float(at), int(added), int(removed)
        # the checksum is 16 hex digits of ours (verify.hex64): plain text too
        d = "NULL" if digest is None else "'" + f"{int(digest, 16):016x}" + "'"
        cols, vals = ("", "") if not self._checksums else (", digest", f", {d}")
        cur.execute(
            f"UPDATE grantlog_head SET revision = {r} WHERE id = 1; "
            f"INSERT INTO grantlog_revisions (revision, committed_at, added, removed{cols}) "
            f"VALUES ({r}, {a!r}, {n}, {m}{vals}); SELECT pg_notify('{CHANNEL}', '{r}'); "
            "COMMIT")

    def _analyze(self, cur: Any) -> None:
        """Without statistics, a freshly loaded log is read by a sequential scan (a follower
        then takes ~15 ms per revision at 230k log rows instead of ~1)."""
        cur.execute("ANALYZE grantlog_log")
        cur.execute("ANALYZE grantlog_revisions")
        for t in self.tables.values():
            cur.execute(f"ANALYZE {q(t.name)}")

    def _column_type(self, kind: str) -> str:
        return {"string": "TEXT", "int": "BIGINT"}.get(kind, "JSONB")

    def _columns(self, cur: Any, table: str) -> set[str]:
        """The columns of ``table`` as the search path finds it (as the queries do)."""
        cur.execute("SELECT attname FROM pg_attribute WHERE attrelid = to_regclass(%s) AND "
                    "attnum > 0 AND NOT attisdropped", (q(table),))
        return {str(r[0]) for r in cur.fetchall()}

    def _add_column(self, cur: Any, table: str, definition: str) -> None:
        # IF NOT EXISTS: two processes opening an older store at once both add it
        cur.execute(f"ALTER TABLE {q(table)} ADD COLUMN IF NOT EXISTS {definition}")

    def _stream(self, cur: Any, sql: str) -> Iterator[tuple[Any, ...]]:
        """A server-side cursor, fetched 10,000 rows at a time."""
        self._streams += 1
        name = f"grantlog_stream_{self._streams}"
        cur.execute(f"DECLARE {name} NO SCROLL CURSOR FOR {sql}")
        try:
            while True:
                cur.execute(f"FETCH 10000 FROM {name}")
                batch = cur.fetchall()
                if not batch:
                    return
                yield from batch
        finally:
            if not cur.connection.broken and cur.connection.info.transaction_status == \
                    self._pg.pq.TransactionStatus.INTRANS:
                cur.execute(f"CLOSE {name}")

    def _params(self, t: schema.Table) -> tuple[str, Any]:
        """VALUES placeholders and a function encoding a row for them (jsonb as JSON text)."""
        anys = [i for i, k in enumerate(t.kinds) if k == "any"]
        marks = ", ".join("%s::jsonb" if k == "any" else "%s" for k in t.kinds)
        if not anys:
            return marks, None

        def enc(row: ir.Row) -> tuple[Any, ...]:
            return tuple(json.dumps(v) if i in anys else v for i, v in enumerate(row))

        return marks, enc

    def _copy_rows(self, cur: Any, table: str, t: schema.Table, rows: Iterable[ir.Row]) -> None:
        cols = ", ".join(q(c) for c in t.columns)
        anys = {i for i, k in enumerate(t.kinds) if k == "any"}
        with cur.copy(f"COPY {table} ({cols}) FROM STDIN") as cp:
            if anys:
                for row in rows:
                    cp.write_row([json.dumps(v) if i in anys else v for i, v in enumerate(row)])
            else:
                for row in rows:
                    cp.write_row(row)

    def _temp(self, cur: Any, t: schema.Table) -> str:
        tmp = q("load_" + t.rel)
        cur.execute(f"CREATE TEMP TABLE IF NOT EXISTS {tmp} (LIKE {q(t.name)}) "
                    "ON COMMIT DELETE ROWS")
        return tmp

    def _write(self, cur: Any, t: schema.Table, rows: Iterable[ir.Row], bulk: str,
               each: str) -> None:
        """Many rows through COPY into a temporary table and one statement ``bulk`` (reading
        ``{tmp}``), few through ``each`` per row (``{marks}``: the row's placeholders)."""
        rows = list(rows)
        if len(rows) >= COPY_MIN:
            tmp = self._temp(cur, t)
            self._copy_rows(cur, tmp, t, rows)
            cur.execute(bulk.format(tmp=tmp))
            cur.execute(f"DELETE FROM {tmp}")
            return
        marks, enc = self._params(t)
        cur.executemany(each.format(marks=marks), rows if enc is None else map(enc, rows))

    def _insert(self, cur: Any, t: schema.Table, rows: Iterable[ir.Row]) -> None:
        if not t.columns:
            cur.execute(f"INSERT INTO {q(t.name)} (present) VALUES (1) ON CONFLICT DO NOTHING")
            return
        self._write(cur, t, rows,
                    f"INSERT INTO {q(t.name)} SELECT * FROM {{tmp}} ON CONFLICT DO NOTHING",
                    f"INSERT INTO {q(t.name)} VALUES ({{marks}}) ON CONFLICT DO NOTHING")

    def _delete(self, cur: Any, t: schema.Table, rows: Iterable[ir.Row]) -> None:
        if not t.columns:
            cur.execute(f"DELETE FROM {q(t.name)}")
            return
        match = " AND ".join(f"s.{q(c)} = d.{q(c)}" for c in t.columns)
        marks, _ = self._params(t)
        where = " AND ".join(f"{q(c)} = {m.strip()}"
                             for c, m in zip(t.columns, marks.split(","), strict=True))
        self._write(cur, t, rows, f"DELETE FROM {q(t.name)} AS s USING {{tmp}} AS d WHERE {match}",
                    f"DELETE FROM {q(t.name)} WHERE {where}")

    def _log(self, cur: Any, revision: int, rel: str, sign: int,
             rows: Iterable[ir.Row]) -> None:
        rows = list(rows)
        if len(rows) >= COPY_MIN:
            with cur.copy("COPY grantlog_log (revision, relation, sign, row) FROM STDIN") as cp:
                for r in rows:
                    cp.write_row((revision, rel, sign, encode_row(r)))
            return
        cur.executemany("INSERT INTO grantlog_log VALUES (%s, %s, %s, %s) "
                        "ON CONFLICT DO NOTHING",
                        [(revision, rel, sign, encode_row(r)) for r in rows])

    def _load(self, cur: Any, t: schema.Table, rows: Iterable[ir.Row], revision: int) -> int:
        if not t.columns:
            rows = list(rows)
            cur.execute(f"SELECT COUNT(*) FROM {q(t.name)}")
            if cur.fetchone()[0] or not rows:
                return 0
            self._insert(cur, t, [()])
            self._log(cur, revision, t.rel, 1, [()])
            return 1
        cols = ", ".join(f"i.{q(c)}" for c in t.columns)
        cur.execute(f"SELECT EXISTS (SELECT 1 FROM {q(t.name)})")
        if not cur.fetchone()[0]:  # an empty table (a first load): COPY straight into it
            self._copy_rows(cur, q(t.name), t, dict.fromkeys(rows))
            cur.execute(f"INSERT INTO grantlog_log SELECT %s, %s, 1, "
                        f"json_build_array({cols})::text FROM {q(t.name)} AS i",
                        (revision, t.rel))
            return int(cur.rowcount)
        tmp = self._temp(cur, t)
        self._copy_rows(cur, tmp, t, rows)
        cur.execute(
            f"WITH i AS (INSERT INTO {q(t.name)} SELECT DISTINCT * FROM {tmp} "
            f"ON CONFLICT DO NOTHING RETURNING *) "
            f"INSERT INTO grantlog_log SELECT %s, %s, 1, json_build_array({cols})::text "
            f"FROM i", (revision, t.rel))
        n = int(cur.rowcount)
        cur.execute(f"DELETE FROM {tmp}")
        return n

    def _notify(self, cur: Any, revision: int) -> None:
        cur.execute("SELECT pg_notify(%s, %s)", (CHANNEL, str(revision)))

    def listener(self) -> Listener:
        return _Listen(self)

    def close(self) -> None:
        with self._lock:
            if self._conn is not None:
                self._conn.close()

    def size_bytes(self) -> int | None:
        with self._cursor() as cur:
            cur.execute("SELECT pg_database_size(current_database())")
            return int(cur.fetchone()[0])


class _Listen(Listener):
    """LISTEN on a connection of its own; a lost connection is reconnected by the next wait
    (which then reports a possible change, so the follower reads the log)."""

    def __init__(self, store: PostgresStore) -> None:
        self._store = store
        self._conn: Any = None
        self._open()

    def _open(self) -> None:
        pg = self._store._pg
        try:
            self._conn = pg.connect(self._store.url, autocommit=True, connect_timeout=10)
            self._conn.execute(f"LISTEN {CHANNEL}")
        except pg.Error as exc:
            self._conn = None
            raise self._store._error(exc) from None

    def wait(self, timeout: float) -> bool:
        pg = self._store._pg
        if self._conn is None or self._conn.closed or self._conn.broken:
            self._open()
            return True
        try:
            for _ in self._conn.notifies(timeout=timeout, stop_after=1):
                return True
        except pg.Error as exc:
            self._conn = None
            raise self._store._error(exc) from None
        return False

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
