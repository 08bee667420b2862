"""The embedded store: one SQLite file (standard library ``sqlite3``) in WAL mode.

``sqlite:///relative/path.db`` or ``sqlite:////absolute/path.db``; options in the query
string: ``synchronous`` (``normal``, the default: a commit survives a crash of the process,
the last ones may not survive a power loss; ``full``: each commit is synced to disk) and
``timeout`` (seconds a writer waits for another writer's lock, default 10).

Writers take SQLite's write lock first (``BEGIN IMMEDIATE``), so write transactions are
serialized across processes. Followers poll ``PRAGMA data_version``, which changes when
another connection commits (grantlog/store/base.py has the tables).
"""

from __future__ import annotations

import os
import sqlite3
import threading
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager, suppress
from typing import Any
from urllib.parse import parse_qs, urlsplit

from grantlog.engine.core import ir
from grantlog.grammar.diagnostics import GrantlogError

from . import schema
from .records import Listener, encode_row, not_found, q, store_error
from .verify import VerifiedStore

#: how often a follower looks at ``PRAGMA data_version`` (seconds)
POLL = 0.002


def sqlite_path(url: str) -> tuple[str, dict[str, str]]:
    parts = urlsplit(url)
    path = url[len("sqlite://"):].split("?", 1)[0]
    if path.startswith("/"):
        path = path[1:]  # sqlite:///rel.db -> rel.db; sqlite:////abs.db -> /abs.db
    opts = {k: v[-1] for k, v in parse_qs(parts.query).items()}
    return path, opts


class SqliteStore(VerifiedStore):
    dialect = "sqlite"

    def __init__(self, url: str, create: bool = True) -> None:
        super().__init__(url)
        self.path, opts = sqlite_path(url)
        if not self.path:
            raise store_error("bad-store-url", f"`{url}` names no file", url,
                              "write sqlite:///relative/path.db or sqlite:////absolute/path.db")
        sync = opts.get("synchronous", "normal").upper()
        if sync not in ("OFF", "NORMAL", "FULL", "EXTRA"):
            raise store_error("bad-store-url", f"unknown synchronous mode `{sync.lower()}`", url,
                              "use normal or full")
        self.timeout = float(opts.get("timeout", "10"))
        if not create and not os.path.exists(self.path):  # connecting would create the file
            raise not_found(url, f"no store at `{self.path}`: the file does not exist")
        self._sync = sync
        self._lock = threading.Lock()
        self._conn = self._connect()

    @property
    def connection(self) -> sqlite3.Connection:
        """The store's SQLite connection (for tools and tests: PRAGMAs such as
        ``max_page_count``); transactions go through the store's methods."""
        return self._conn

    def _connect(self) -> sqlite3.Connection:
        try:
            conn = sqlite3.connect(self.path, timeout=self.timeout, isolation_level=None,
                                   check_same_thread=False)
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute(f"PRAGMA synchronous={self._sync}")
            return conn
        except sqlite3.Error as exc:
            raise self._error(exc) from None

    def _error(self, exc: sqlite3.Error) -> GrantlogError:
        text = str(exc)
        name = getattr(exc, "sqlite_errorname", "")
        if "locked" in text or name.startswith("SQLITE_BUSY"):
            return store_error("store-locked", f"the store is locked by another writer ({text})",
                               self.url, "retry; a writer holds the lock too long")
        if "full" in text or name.startswith("SQLITE_FULL"):
            return store_error("store-full", f"the store cannot grow: {text}", self.url,
                               "free disk space; nothing of the transaction was applied")
        if "unable to open" in text or name.startswith("SQLITE_CANTOPEN"):
            return store_error("store-unavailable", f"cannot open `{self.path}`: {text}",
                               self.url)
        if "not a database" in text or name.startswith("SQLITE_NOTADB"):
            return store_error("store-unavailable", f"`{self.path}` is not a SQLite database",
                               self.url)
        return store_error("store-error", f"the store failed: {text}", self.url)

    @contextmanager
    def _cursor(self) -> Iterator[Any]:
        with self._lock:
            try:
                cur = self._conn.cursor()
                try:
                    yield cur
                finally:
                    cur.close()
            except sqlite3.Error as exc:
                if self._conn.in_transaction:
                    with suppress(sqlite3.Error):
                        self._conn.rollback()
                raise self._error(exc) from None

    def _begin_write(self, cur: Any, wait: bool = True) -> None:
        if wait:
            cur.execute("BEGIN IMMEDIATE")
            return
        cur.execute("PRAGMA busy_timeout = 0")  # another writer's lock: SQLITE_BUSY at once
        try:
            cur.execute("BEGIN IMMEDIATE")
        finally:
            cur.execute(f"PRAGMA busy_timeout = {int(self.timeout * 1000)}")

    def _begin_read(self, cur: Any) -> None:
        cur.execute("BEGIN")

    def _commit(self, cur: Any) -> None:
        if self._conn.in_transaction:
            cur.execute("COMMIT")

    def _rollback(self, cur: Any) -> None:
        if self._conn.in_transaction:
            cur.execute("ROLLBACK")

    def _column_type(self, kind: str) -> str:
        return {"string": "TEXT", "int": "INTEGER"}.get(kind, "")  # untyped keeps both

    def _without_rowid(self) -> str:
        return " WITHOUT ROWID"

    def _columns(self, cur: Any, table: str) -> set[str]:
        cur.execute(f"PRAGMA table_info({q(table)})")
        return {str(r[1]) for r in cur.fetchall()}

    def _add_column(self, cur: Any, table: str, definition: str) -> None:
        cur.execute(f"ALTER TABLE {q(table)} ADD COLUMN {definition}")

    def _stream(self, cur: Any, sql: str) -> Iterator[tuple[Any, ...]]:
        cur.execute(sql)
        while True:
            batch = cur.fetchmany(10_000)
            if not batch:
                return
            yield from batch

    def _structure_check(self, cur: Any, limit: int) -> list[str]:
        """``PRAGMA quick_check`` of each table: its pages, its b-tree and its order.
        SQLite 3.40.0 to 3.41.0 report false NULLs for a WITHOUT ROWID table whose columns
        are not in its primary key's order (``grantlog_log``): that table is left to the
        replay there, which reads and checks every row of it anyway."""
        cur.execute("SELECT name FROM sqlite_schema WHERE type = 'table' AND "
                    "name NOT LIKE 'sqlite!_%' ESCAPE '!'")
        names = [str(r[0]) for r in cur.fetchall()]
        if (3, 40, 0) <= sqlite3.sqlite_version_info <= (3, 41, 0):
            names = [n for n in names if n != "grantlog_log"]
        found: list[str] = []
        for name in names:
            cur.execute(f"PRAGMA quick_check({q(name)})")
            found += [f"SQLite's quick_check of {name}: {r[0]}" for r in cur.fetchall()
                      if r[0] != "ok"]
        return found[:limit]

    @contextmanager
    def _verifying(self, tolerant: bool = False) -> Iterator[None]:
        """Text that is not UTF-8 (a changed byte) is read with the bad bytes kept as
        surrogates, so that it is reported, not a failure of the read."""
        if not tolerant:
            yield
            return
        old = self._conn.text_factory
        self._conn.text_factory = lambda b: b.decode("utf-8", "surrogateescape")
        try:
            yield
        finally:
            self._conn.text_factory = old

    def _marks(self, t: schema.Table) -> str:
        return ", ".join("?" * len(t.columns))

    def _insert(self, cur: Any, t: schema.Table, rows: Iterable[ir.Row]) -> None:
        if not t.columns:
            cur.execute(f"INSERT OR IGNORE INTO {q(t.name)} (present) VALUES (1)")
            return
        cur.executemany(f"INSERT OR IGNORE INTO {q(t.name)} VALUES ({self._marks(t)})", rows)

    def _delete(self, cur: Any, t: schema.Table, rows: Iterable[ir.Row]) -> None:
        if not t.columns:
            cur.execute(f"DELETE FROM {q(t.name)}")
            return
        where = " AND ".join(f"{q(c)} = ?" for c in t.columns)
        cur.executemany(f"DELETE FROM {q(t.name)} WHERE {where}", rows)

    def _log(self, cur: Any, revision: int, rel: str, sign: int,
             rows: Iterable[ir.Row]) -> None:
        cur.executemany("INSERT OR IGNORE INTO grantlog_log VALUES (?, ?, ?, ?)",
                        ((revision, rel, sign, encode_row(r)) for r in rows))

    def _load(self, cur: Any, t: schema.Table, rows: Iterable[ir.Row], revision: int) -> int:
        if not t.columns:
            cur.execute(f"SELECT COUNT(*) FROM {q(t.name)}")
            if cur.fetchone()[0] or not any(True for _ in rows):
                return 0
            self._insert(cur, t, [()])
            self._log(cur, revision, t.rel, 1, [()])
            return 1
        cols = ", ".join(f"t.{q(c)}" for c in t.columns)
        log = (f"INSERT OR IGNORE INTO grantlog_log SELECT ?, ?, 1, json_array({cols}) "
               "FROM {src} AS t")
        cur.execute(f"SELECT EXISTS (SELECT 1 FROM {q(t.name)})")
        if not cur.fetchone()[0]:  # an empty table: every row is new
            cur.executemany(f"INSERT OR IGNORE INTO {q(t.name)} VALUES ({self._marks(t)})",
                            rows)
            cur.execute(log.format(src=q(t.name)), (revision, t.rel))
            return int(cur.rowcount)
        tmp = q("load_" + t.rel)
        col_defs = ", ".join(f"{q(c)} {self._column_type(k)}"
                             for c, k in zip(t.columns, t.kinds, strict=True))
        cur.execute(f"CREATE TEMP TABLE IF NOT EXISTS {tmp} ({col_defs})")
        cur.execute(f"DELETE FROM {tmp}")
        cur.executemany(f"INSERT INTO {tmp} VALUES ({self._marks(t)})", rows)
        match = " AND ".join(f"s.{q(c)} = t.{q(c)}" for c in t.columns)
        new = f"(SELECT DISTINCT * FROM {tmp}) AS t WHERE NOT EXISTS " \
              f"(SELECT 1 FROM {q(t.name)} AS s WHERE {match})"
        cur.execute(log.format(src=f"(SELECT t.* FROM {new})"), (revision, t.rel))
        n = int(cur.rowcount)
        cur.execute(f"INSERT OR IGNORE INTO {q(t.name)} SELECT * FROM {tmp}")
        cur.execute(f"DELETE FROM {tmp}")
        return n

    def _notify(self, cur: Any, revision: int) -> None:
        """Nothing to send: followers see ``PRAGMA data_version`` change."""

    def listener(self) -> Listener:
        return _DataVersion(self)

    def close(self) -> None:
        with self._lock:
            self._conn.close()

    def size_bytes(self) -> int | None:
        total = 0
        for suffix in ("", "-wal", "-shm"):
            with suppress(OSError):
                total += os.path.getsize(self.path + suffix)
        return total


class _DataVersion(Listener):
    """Polls ``PRAGMA data_version`` on a connection of its own."""

    def __init__(self, store: SqliteStore) -> None:
        self._conn = sqlite3.connect(store.path, timeout=store.timeout, isolation_level=None,
                                     check_same_thread=False)
        self._version = self._read()

    def _read(self) -> int:
        return int(self._conn.execute("PRAGMA data_version").fetchone()[0])

    def wait(self, timeout: float) -> bool:
        end = time.monotonic() + timeout
        while True:
            v = self._read()
            if v != self._version:
                self._version = v
                return True
            left = end - time.monotonic()
            if left <= 0:
                return False
            time.sleep(min(POLL, left))

    def close(self) -> None:
        self._conn.close()
