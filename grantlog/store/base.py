"""What the SQLite and PostgreSQL stores share: the tables, the change log, revisions.

Tables (``T`` is a relation's table, grantlog/store/schema.py):

* ``grantlog_head(id, revision, horizon, policy)``: one row; ``revision`` is the last committed
  transaction's number. Every write transaction locks and updates this row first, so writers
  are serialized and **revision order is commit order** (a follower reading the log in
  revision order never skips a transaction that committed late). ``horizon``: log entries at
  or below it were compacted away; ``horizon_at``: when the horizon's transaction committed
  (its ``grantlog_revisions`` row goes with it; added by :meth:`_upgrade`).
* ``grantlog_relations(relation, spec)``: each fact table and its columns (schema checks).
* ``rel_<relation>``: the base facts, a primary key over all columns.
* ``grantlog_log(revision, relation, sign, row)``: append-only, one row per fact a transaction
  added (+1) or removed (-1), net; ``row`` is the fact's values as a JSON array.
* ``grantlog_revisions(revision, committed_at, added, removed, digest, author, reason,
  ticket)``: one row per transaction; ``digest`` the checksum of its log rows
  (grantlog/store/digest.py), NULL for a bulk load above
  :data:`~.writer.CHECKSUM_LOAD_MAX` facts and for revisions written before checksums were
  kept; ``author``, ``reason``, ``ticket``: who wrote it and why, when the writer said (NULL
  otherwise; grantlog/store/history.py reads them, and the facts as they stood at any
  revision the log keeps).
* ``grantlog_checkpoint(relation, rows, digest)``: each relation's facts at the log's horizon
  as a count and a digest, kept by compaction (``grantlog_head.checkpoint`` is the revision
  they are of: the horizon, or NULL when they are not known), so that the tables can still be
  checked against the log once its start is gone (grantlog/store/verify.py).
* ``grantlog_policies(serial, hash, roots, sources, set_at, revision)``: the rule files a
  decision service installed (:meth:`Store.put_policy`), newest last; ``grantlog_head.policy``
  is the newest one's hash. Every worker of a service serves the newest.
* ``grantlog_statistics``: the planner's statistics of the facts, created with the first ones
  kept (grantlog/store/planstats.py).

A write transaction (:meth:`Store.writing`) locks the head, returns the log since the
caller's revision (so the caller catches up inside the same database transaction), then
writes the facts, their log rows and the new head in one database transaction.
"""

from __future__ import annotations

import json
import time
from abc import ABC, abstractmethod
from collections.abc import Iterable, Iterator
from contextlib import AbstractContextManager, contextmanager
from typing import Any

from grantlog.engine.core import ir
from grantlog.engine.core.journal import VALID, Meta
from grantlog.grammar.diagnostics import GrantlogError

from . import checkpoints, schema, snapshots
from .digest import MASK, add_log, digest, hex64
from .records import Listener, Revision, StoredPolicy, group, policy_conflict, q, store_error
from .writer import Writer

#: a transaction writing this many rows refreshes the planner's statistics
ANALYZE_AFTER = 10_000
#: the columns of ``grantlog_revisions`` that say who wrote a transaction and why
META_COLUMNS = ("author", "reason", "ticket")

class Store(ABC):
    """A durable home for base facts with a change log (see the module docstring)."""

    dialect = ""
    #: placeholder of the driver's parameter style
    param = "?"

    def __init__(self, url: str) -> None:
        self.url = url
        self.tables: dict[str, schema.Table] = {}
        #: tables of relations that may get base facts later (derived relations)
        self._pending_tables: dict[str, schema.Table] = {}
        #: whether the store keeps checksums (``grantlog_revisions.digest``, the checkpoint):
        #: known once :meth:`open` (or compaction) brought an older store's tables up to date
        self._checksums = False
        #: whether ``grantlog_revisions`` has the write metadata's columns (:meth:`_upgrade`)
        self._meta_columns = False

    # -- the dialect ----------------------------------------------------------------------------

    @abstractmethod
    def _cursor(self) -> AbstractContextManager[Any]:
        """A context manager: a cursor on the store's connection, for one transaction."""

    @abstractmethod
    def _begin_write(self, cur: Any, wait: bool = True) -> None:
        """Begin a write transaction (``wait`` False: fail at once, ``store-locked``, when
        another writer holds the lock, instead of waiting for it)."""

    @abstractmethod
    def _begin_read(self, cur: Any) -> None: ...

    @abstractmethod
    def _commit(self, cur: Any) -> None: ...

    @abstractmethod
    def _rollback(self, cur: Any) -> None: ...

    @abstractmethod
    def _column_type(self, kind: str) -> str: ...

    @abstractmethod
    def _insert(self, cur: Any, t: schema.Table, rows: Iterable[ir.Row]) -> None: ...

    @abstractmethod
    def _delete(self, cur: Any, t: schema.Table, rows: Iterable[ir.Row]) -> None: ...

    @abstractmethod
    def _log(self, cur: Any, revision: int, rel: str, sign: int,
             rows: Iterable[ir.Row]) -> None: ...

    @abstractmethod
    def _load(self, cur: Any, t: schema.Table, rows: Iterable[ir.Row], revision: int) -> int: ...

    @abstractmethod
    def _notify(self, cur: Any, revision: int) -> None: ...

    @abstractmethod
    def listener(self) -> Listener: ...

    @abstractmethod
    def close(self) -> None: ...

    @abstractmethod
    def size_bytes(self) -> int | None: ...

    def _sql(self, text: str) -> str:
        return text if self.param == "?" else text.replace("?", self.param)

    def _shown(self) -> str:
        """The URL as errors and reports show it."""
        return self.url

    @abstractmethod
    def _columns(self, cur: Any, table: str) -> set[str]:
        """The columns ``table`` has."""

    @abstractmethod
    def _add_column(self, cur: Any, table: str, definition: str) -> None: ...

    @abstractmethod
    def _stream(self, cur: Any, sql: str) -> Iterator[tuple[Any, ...]]:
        """The rows of a query, fetched in batches (inside the cursor's transaction)."""

    def _structure_check(self, cur: Any, limit: int) -> list[str]:
        """What the database finds wrong with its own structure (verify)."""
        return []

    @contextmanager
    def _verifying(self, tolerant: bool = False) -> Iterator[None]:
        """Around a verification (SQLite: ``tolerant`` reads text that is not UTF-8)."""
        yield

    # -- opening --------------------------------------------------------------------------------

    def _create_meta(self, cur: Any) -> None:
        big = self._column_type("int")
        text = self._column_type("string")
        for stmt in (
            f"CREATE TABLE IF NOT EXISTS grantlog_head (id INTEGER PRIMARY KEY, "
            f"revision {big} NOT NULL, horizon {big} NOT NULL, policy {text} NOT NULL)",
            f"CREATE TABLE IF NOT EXISTS grantlog_relations (relation {text} PRIMARY KEY, "
            f"spec {text} NOT NULL)",
            f"CREATE TABLE IF NOT EXISTS grantlog_log (revision {big} NOT NULL, "
            f"relation {text} NOT NULL, sign SMALLINT NOT NULL, row {text} NOT NULL, "
            f"PRIMARY KEY (revision, relation, row)){self._without_rowid()}",
            f"CREATE TABLE IF NOT EXISTS grantlog_revisions (revision {big} PRIMARY KEY, "
            f"committed_at DOUBLE PRECISION NOT NULL, added {big} NOT NULL, "
            f"removed {big} NOT NULL)",
            f"CREATE TABLE IF NOT EXISTS grantlog_policies (serial {big} PRIMARY KEY, "
            f"hash {text} NOT NULL, roots {text} NOT NULL, sources {text} NOT NULL, "
            f"set_at DOUBLE PRECISION NOT NULL, revision {big} NOT NULL)",
        ):
            cur.execute(stmt)
        cur.execute(self._sql(
            "INSERT INTO grantlog_head (id, revision, horizon, policy) VALUES (1, 0, 0, ?) "
            "ON CONFLICT (id) DO NOTHING"), ("",))

    def _without_rowid(self) -> str:
        return ""

    def _upgrade(self, cur: Any) -> None:
        """Bring an older store's tables up to date, inside a write transaction: the
        revisions' checksums and the checkpoint (a store older than them keeps working: its
        earlier revisions have no checksum, and where its log was already compacted the
        checkpoint is unknown until the next compaction takes one)."""
        if "digest" not in self._columns(cur, "grantlog_revisions"):
            self._add_column(cur, "grantlog_revisions", f"digest {self._column_type('string')}")
        if "checkpoint" not in self._columns(cur, "grantlog_head"):
            self._add_column(cur, "grantlog_head", f"checkpoint {self._column_type('int')}")
            # a log never compacted starts from the empty store: a checkpoint of nothing
            cur.execute("UPDATE grantlog_head SET checkpoint = 0 WHERE id = 1 AND horizon = 0")
        if "horizon_at" not in self._columns(cur, "grantlog_head"):  # the horizon's commit time
            self._add_column(cur, "grantlog_head", "horizon_at DOUBLE PRECISION")
        text, big = self._column_type("string"), self._column_type("int")
        cur.execute(f"CREATE TABLE IF NOT EXISTS grantlog_checkpoint (relation {text} PRIMARY "
                    f"KEY, rows {big} NOT NULL, digest {text} NOT NULL)")
        self._checksums = True
        have = self._columns(cur, "grantlog_revisions")  # the write metadata (history)
        for col in META_COLUMNS:
            if col not in have:
                self._add_column(cur, "grantlog_revisions", f"{col} {text}")
        cur.execute("CREATE INDEX IF NOT EXISTS grantlog_revisions_time ON grantlog_revisions "
                    "(committed_at)")  # as of a time: the last revision committed by then
        self._meta_columns = True

    def open(self, program: ir.Program) -> None:
        """Create the store's tables for ``program``, or check that an existing store fits
        it: tables for new relations are added; a changed relation, or a dropped one that
        still has facts, is refused (``store-schema-mismatch``)."""
        with self._cursor() as cur:
            self._begin_write(cur)
            try:
                self._create_meta(cur)
                self._upgrade(cur)
                cur.execute("SELECT relation, spec FROM grantlog_relations")
                recorded: dict[str, tuple[str, int]] = {}
                for rel, spec in cur.fetchall():
                    t = schema.Table(rel, *self._parse_spec(spec))
                    cur.execute(f"SELECT COUNT(*) FROM {q(t.name)}")
                    recorded[rel] = (spec, cur.fetchone()[0])
                add, drop, diags = schema.compare(program, recorded, self.url)
                if diags:
                    raise GrantlogError(diags)
                for rel in drop:
                    cur.execute(f"DROP TABLE IF EXISTS {q('rel_' + rel)}")
                    cur.execute(self._sql("DELETE FROM grantlog_relations WHERE relation = ?"),
                                (rel,))
                wanted = schema.stored_relations(program)
                for rel in add:
                    self._create_table(cur, wanted[rel])
                self.tables = {rel: schema.table_of(program, rel)
                               for rel in {*recorded, *add} if rel not in drop}
                # a derived relation's table is created with its first base fact
                self._pending_tables = {r: schema.table(rel)
                                        for r, rel in program.relations.items()}
                self._pending_tables[VALID] = schema.validity_table()
                self._commit(cur)
            except BaseException:
                self._rollback(cur)
                raise

    def exists(self) -> bool:
        """Whether the database holds a store (``store init`` or ``create=True`` made it)."""
        with self._cursor() as cur:
            return bool(self._columns(cur, "grantlog_head"))

    def create(self) -> None:
        """Make the database an empty store: its own tables, no relation's yet."""
        with self._cursor() as cur:
            self._begin_write(cur)
            try:
                self._create_meta(cur)
                self._upgrade(cur)
                self._commit(cur)
            except BaseException:
                self._rollback(cur)
                raise

    def attach(self) -> None:
        """Use an existing store without rules: its tables as recorded (``stats``, ``log``,
        ``compact``)."""
        try:
            with self._cursor() as cur:
                self._begin_read(cur)
                try:
                    cur.execute("SELECT relation, spec FROM grantlog_relations")
                    rows = cur.fetchall()
                finally:
                    self._rollback(cur)
        except GrantlogError as exc:
            if exc.diagnostics[0].code != "store-error":
                raise
            raise store_error("store-unavailable", "this is not a grantlog store", self.url,
                              "create one with `grantlog store init STORE RULES...`") from None
        self.tables = {rel: schema.Table(rel, *self._parse_spec(spec)) for rel, spec in rows}

    @staticmethod
    def _parse_spec(spec: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
        parts = [p.split(":") for p in spec.split(",") if p]
        return tuple(p[0] for p in parts), tuple(p[1] for p in parts)

    def _create_table(self, cur: Any, t: schema.Table) -> None:
        cols = ", ".join(f"{q(c)} {self._column_type(k)} NOT NULL".replace("  ", " ")
                         for c, k in zip(t.columns, t.kinds, strict=True))
        key = ", ".join(q(c) for c in t.columns)
        body = f"{cols}, PRIMARY KEY ({key})" if t.columns else "present INTEGER PRIMARY KEY"
        cur.execute(f"CREATE TABLE IF NOT EXISTS {q(t.name)} ({body}){self._without_rowid()}")
        cur.execute(self._sql("INSERT INTO grantlog_relations (relation, spec) VALUES (?, ?) "
                              "ON CONFLICT (relation) DO NOTHING"), (t.rel, t.spec()))
        self.tables[t.rel] = t

    def _table(self, cur: Any, rel: str, create: bool = False) -> schema.Table:
        t = self.tables.get(rel)
        if t is None:
            if not create:
                raise store_error("unknown-relation", f"the store has no table for `{rel}`",
                                  self.url)
            t = self._pending_tables.get(rel)
            if t is None:
                raise store_error("unknown-relation", f"the rules have no relation `{rel}`",
                                  self.url)
            self._create_table(cur, t)
        return t

    # -- reading --------------------------------------------------------------------------------

    def head(self) -> tuple[int, int]:
        """(revision, horizon) as last committed."""
        with self._cursor() as cur:
            self._begin_read(cur)
            try:
                cur.execute("SELECT revision, horizon FROM grantlog_head WHERE id = 1")
                rev, hor = cur.fetchone()
                return int(rev), int(hor)
            finally:
                self._rollback(cur)

    def policy(self) -> StoredPolicy | None:
        """The newest policy installed by :meth:`put_policy` (None: none was)."""
        with self._cursor() as cur:
            self._begin_read(cur)
            try:
                cur.execute("SELECT serial, hash, roots, sources, set_at, revision FROM "
                            "grantlog_policies ORDER BY serial DESC LIMIT 1")
                row = cur.fetchone()
            finally:
                self._rollback(cur)
        if row is None:
            return None
        serial, digest, roots, sources, at, rev = row
        return StoredPolicy(int(serial), str(digest), json.loads(roots), json.loads(sources),
                            float(at), int(rev))

    def policy_serial(self) -> int:
        """The newest installed policy's serial number (0: none), a cheap poll."""
        with self._cursor() as cur:
            self._begin_read(cur)
            try:
                cur.execute("SELECT COALESCE(MAX(serial), 0) FROM grantlog_policies")
                return int(cur.fetchone()[0])
            finally:
                self._rollback(cur)

    def put_policy(self, program: ir.Program, if_hash: str | None = None) -> StoredPolicy:
        """Install ``program``'s rule texts (all its files, imports included) as the store's
        policy, ordered with the write transactions by the head lock; with ``if_hash``, only
        if the newest policy has that hash (else ``policy-conflict``). The program's
        relations must fit the store (:meth:`open` it first)."""
        roots = list(program.files)
        sources = dict(program.sources)
        with self.writing() as w:
            cur = w.cur
            if if_hash is not None:
                cur.execute("SELECT policy FROM grantlog_head WHERE id = 1")
                (current,) = cur.fetchone()
                if current != if_hash:
                    raise policy_conflict(if_hash, current, self.url)
            cur.execute("SELECT COALESCE(MAX(serial), 0) FROM grantlog_policies")
            serial = int(cur.fetchone()[0]) + 1
            at = time.time()
            cur.execute(self._sql("INSERT INTO grantlog_policies (serial, hash, roots, "
                                  "sources, set_at, revision) VALUES (?, ?, ?, ?, ?, ?)"),
                        (serial, program.digest, json.dumps(roots), json.dumps(sources), at,
                         w.revision))
            cur.execute(self._sql("UPDATE grantlog_head SET policy = ? WHERE id = 1"),
                        (program.digest,))
            w.keep = True
        return StoredPolicy(serial, program.digest, roots, sources, at, w.revision)

    def snapshot(self, relations: Iterable[str] | None = None,
                 ) -> tuple[int, dict[str, list[ir.Row]]]:
        """The revision and every stored fact, read in one transaction (a consistent view)."""
        with self._cursor() as cur:
            self._begin_read(cur)
            try:
                cur.execute("SELECT revision FROM grantlog_head WHERE id = 1")
                (rev,) = cur.fetchone()
                names = sorted(self.tables if relations is None else relations)
                kept = snapshots.read(self, cur, names)  # the big ones in one blob, if fresh
                return int(rev), {r: kept[r] if r in kept else self._fetch_all(
                    cur, self.tables[r]) for r in names}
            finally:
                self._rollback(cur)

    # -- read by a verification (grantlog/store/verify.py) --------------------------------------

    def _select_columns(self, table: str, columns: tuple[str, ...]) -> str:
        return f"SELECT {', '.join(q(c) for c in columns) or 'present'} FROM {q(table)}"

    def _table_digest(self, cur: Any, rel: str, columns: tuple[str, ...]) -> tuple[int, int]:
        """(count, digest) of a relation's table, streamed."""
        rows = self._stream(cur, self._select_columns("rel_" + rel, columns))
        return digest(rel, rows if columns else (() for _ in rows))

    def _table_rows(self, cur: Any, rel: str, columns: tuple[str, ...]) -> list[ir.Row]:
        return [tuple(r) if columns else () for r in
                self._stream(cur, self._select_columns("rel_" + rel, columns))]

    def _log_of(self, cur: Any, rel: str) -> list[tuple[int, str]]:
        """(sign, row) of ``rel``'s log rows in revision order."""
        cur.execute(self._sql("SELECT sign, row FROM grantlog_log WHERE relation = ? "
                              "ORDER BY revision"), (rel,))
        return [(int(a), b) for a, b in cur.fetchall()]

    def _logged_digest(self, cur: Any, revision: int, rel: str) -> int:
        """The signed digest of the log rows ``revision`` wrote for ``rel`` (a bulk load's,
        read back: which of its rows were new is decided by the database)."""
        cur.execute(self._sql("SELECT sign, row FROM grantlog_log WHERE revision = ? AND "
                              "relation = ?"), (revision, rel))
        sums: dict[str, list[int]] = {}
        add_log(((revision, rel, int(sign), text) for sign, text in cur.fetchall()), sums)
        return sums.get(rel, [0, 0])[1]

    def _fetch_all(self, cur: Any, t: schema.Table) -> list[ir.Row]:
        cols = ", ".join(q(c) for c in t.columns) or "present"
        cur.execute(f"SELECT {cols} FROM {q(t.name)}")
        rows: list[ir.Row] = cur.fetchall()  # tuples of str and int in both drivers (jsonb
        # values come back as str or int)
        if not t.columns:
            return [()] if rows else []
        return rows

    def since(self, revision: int) -> list[Revision]:
        """The transactions committed after ``revision``, in commit order."""
        with self._cursor() as cur:
            self._begin_read(cur)
            try:
                cur.execute("SELECT horizon FROM grantlog_head WHERE id = 1")
                (hor,) = cur.fetchone()
                return self._since(cur, revision, int(hor))
            finally:
                self._rollback(cur)

    def _since(self, cur: Any, revision: int, horizon: int) -> list[Revision]:
        if revision < horizon:
            raise store_error(
                "revision-compacted",
                f"the change log before revision {horizon} was compacted; revision {revision} "
                "cannot be followed from it", self.url, "reload the store's facts")
        cur.execute(self._sql("SELECT revision, relation, sign, row FROM grantlog_log "
                              "WHERE revision > ? ORDER BY revision"), (revision,))
        return group(cur.fetchall())

    def revisions(self, since: int = 0, limit: int | None = None,
                  ) -> list[tuple[int, float, int, int]]:
        """(revision, committed_at, added, removed) of each transaction after ``since``."""
        sql = ("SELECT revision, committed_at, added, removed FROM grantlog_revisions "
               "WHERE revision > ? ORDER BY revision")
        if limit is not None:
            sql += f" LIMIT {int(limit)}"
        with self._cursor() as cur:
            self._begin_read(cur)
            try:
                cur.execute(self._sql(sql), (since,))
                return [(int(a), float(b), int(c), int(d)) for a, b, c, d in cur.fetchall()]
            finally:
                self._rollback(cur)

    def stats(self) -> dict[str, Any]:
        """Sizes: facts per relation, the change log, revisions, bytes on disk."""
        with self._cursor() as cur:
            self._begin_read(cur)
            try:
                facts = {}
                for rel, t in sorted(self.tables.items()):
                    cur.execute(f"SELECT COUNT(*) FROM {q(t.name)}")
                    facts[rel] = int(cur.fetchone()[0])
                cur.execute("SELECT revision, horizon FROM grantlog_head WHERE id = 1")
                rev, hor = cur.fetchone()
                cur.execute("SELECT COUNT(*) FROM grantlog_log")
                log_rows = int(cur.fetchone()[0])
                cur.execute("SELECT COUNT(*) FROM grantlog_revisions")
                txs = int(cur.fetchone()[0])
            finally:
                self._rollback(cur)
        return {"store": self.url, "dialect": self.dialect, "revision": int(rev),
                "horizon": int(hor), "facts": facts, "total_facts": sum(facts.values()),
                "log_rows": log_rows, "log_transactions": txs, "bytes": self.size_bytes()}

    # -- writing --------------------------------------------------------------------------------

    @contextmanager
    def writing(self, meta: Meta | None = None, wait: bool = True) -> Iterator[Writer]:
        """One write transaction: the head locked, then facts + log + head committed together
        when the block ends (rolled back if it raises or wrote nothing); ``meta``: who
        writes and why (also settable as ``Writer.meta`` inside the block); ``wait`` False:
        ``store-locked`` at once when another writer holds the lock (a write that may be
        skipped, such as the planner's statistics, never waits the busy timeout)."""
        with self._cursor() as cur:
            try:
                rev, hor = self._lock_head(cur, wait)
                w = Writer(self, cur, rev, hor)
                w.meta = meta or w.meta
                yield w
                if not w.changed:
                    (self._commit if w.keep else self._rollback)(cur)
                    return
                checkpoints.committed(self, cur, w.next)  # every N revisions, when asked
                self._finish(cur, w.next, time.time(), w._added, w._removed,
                             None if w._digest is None or not self._checksums
                             else hex64(w._digest), w.meta)
                w.committed = w.next
                if w._added + w._removed >= ANALYZE_AFTER:
                    self._analyze(cur)
            except BaseException:
                self._rollback(cur)
                raise

    def _lock_head(self, cur: Any, wait: bool = True) -> tuple[int, int]:
        """Begin a write transaction and lock the head: (revision, horizon)."""
        self._begin_write(cur, wait)
        cur.execute("SELECT revision, horizon FROM grantlog_head WHERE id = 1"
                    + self._for_update())
        rev, hor = cur.fetchone()
        return int(rev), int(hor)

    def _finish(self, cur: Any, revision: int, at: float, added: int, removed: int,
                digest: str | None = None, meta: Meta | None = None) -> None:
        """The new head, the transaction's row (with the checksum of its log rows, where the
        store keeps them, and who wrote it and why), the wake-up signal; commit."""
        cur.execute(self._sql("UPDATE grantlog_head SET revision = ? WHERE id = 1"),
                    (revision,))
        if meta and self._meta_columns:
            cur.execute(self._sql(
                "INSERT INTO grantlog_revisions (revision, committed_at, added, removed, "
                "digest, author, reason, ticket) VALUES (?, ?, ?, ?, ?, ?, ?, ?)"),
                (revision, at, added, removed, digest, meta.author, meta.reason, meta.ticket))
        elif self._checksums:
            cur.execute(self._sql("INSERT INTO grantlog_revisions (revision, committed_at, "
                                  "added, removed, digest) VALUES (?, ?, ?, ?, ?)"),
                        (revision, at, added, removed, digest))
        else:
            cur.execute(self._sql("INSERT INTO grantlog_revisions (revision, committed_at, "
                                  "added, removed) VALUES (?, ?, ?, ?)"),
                        (revision, at, added, removed))
        self._notify(cur, revision)
        self._commit(cur)

    def _for_update(self) -> str:
        return ""

    def _analyze(self, cur: Any) -> None:  # noqa: B027 (optional: a dialect may do nothing)
        """Refresh the planner's statistics after a big transaction (a bulk load)."""

    def compact(self, keep: int | None = None, *, before_time: float | None = None,
                before_revision: int | None = None) -> int:
        """Drop the change log up to a new horizon (the facts stay; followers further behind
        reload); returns the number of log rows removed. Exactly one of: ``keep``, the last
        ``keep`` transactions; ``before_time`` (seconds since the epoch), every revision in
        force at or after that time (the horizon: the last one committed at or before it);
        ``before_revision``, every revision from it on (it becomes the horizon). The horizon
        never moves back; kept transactions keep their time, author, reason and ticket.

        The checkpoint moves to the new horizon first: the facts at the old one plus the
        log rows dropped, per relation, as a count and a digest (so that a verification
        still checks the tables against what is left). Where the old checkpoint is not known
        (a store compacted before checkpoints were kept), it is taken from the tables as they
        are, minus the log kept after the horizon: from then on they are checked again."""
        with self.writing() as w:
            cur = w.cur
            horizon = checkpoints.horizon(self, w, keep, before_time, before_revision)
            self._upgrade(cur)
            self._checkpoint(cur, w.horizon, horizon)
            checkpoints.compacted(self, cur, horizon)  # the temporal table, where kept
            cur.execute(self._sql("DELETE FROM grantlog_log WHERE revision <= ?"), (horizon,))
            removed = int(cur.rowcount or 0)
            # its row goes: its time is kept, so that as of a time after it stays answerable
            cur.execute(self._sql("UPDATE grantlog_head SET horizon_at = COALESCE((SELECT "
                                  "committed_at FROM grantlog_revisions WHERE revision = ?), "
                                  "horizon_at) WHERE id = 1"), (horizon,))
            cur.execute(self._sql("DELETE FROM grantlog_revisions WHERE revision <= ?"),
                        (horizon,))
            cur.execute(self._sql("UPDATE grantlog_head SET horizon = ? WHERE id = 1"),
                        (horizon,))
            w.keep = True
        return removed

    def checkpoint(self, every: int | None = None) -> int:
        """Fold the change log into the temporal table now (and every ``every`` revisions
        from now on; 0 stops that): grantlog/store/checkpoints.py, with the big relations'
        snapshot (grantlog/store/snapshots.py). Returns its revision."""
        snapshots.write(self)
        return checkpoints.checkpoint(self, every)

    def _checkpoint(self, cur: Any, old: int, new: int) -> None:
        """Move the checkpoint from horizon ``old`` to ``new`` (see :meth:`compact`)."""
        cur.execute("SELECT checkpoint FROM grantlog_head WHERE id = 1")
        (at,) = cur.fetchone()
        if at is not None and int(at) == old and new == old:
            return
        sums: dict[str, list[int]] = {}

        def add(rel: str, n: int, d: int) -> None:
            c = sums.setdefault(rel, [0, 0])
            c[0] += n
            c[1] += d

        log = "SELECT revision, relation, sign, row FROM grantlog_log WHERE revision > "
        if at is not None and int(at) == old:
            cur.execute("SELECT relation, rows, digest FROM grantlog_checkpoint")
            for rel, n, d in cur.fetchall():
                add(rel, int(n), int(d, 16))
            dropped: dict[str, list[int]] = {}
            add_log(self._stream(cur, f"{log}{int(old)} AND revision <= {int(new)}"), dropped)
            for rel, (n, d) in dropped.items():
                add(rel, n, d)
        else:  # not known: the tables as they are, the log after the horizon undone
            cur.execute("SELECT relation, spec FROM grantlog_relations")
            for rel, spec in cur.fetchall():
                add(rel, *self._table_digest(cur, rel, self._parse_spec(spec)[0]))
            kept: dict[str, list[int]] = {}
            add_log(self._stream(cur, f"{log}{int(new)}"), kept)
            for rel, (n, d) in kept.items():
                add(rel, -n, -d)
        cur.execute("DELETE FROM grantlog_checkpoint")
        rows = [(rel, n, hex64(d)) for rel, (n, d) in sorted(sums.items()) if n or d & MASK]
        if rows:
            cur.executemany(self._sql("INSERT INTO grantlog_checkpoint (relation, rows, digest) "
                                      "VALUES (?, ?, ?)"), rows)
        cur.execute(self._sql("UPDATE grantlog_head SET checkpoint = ? WHERE id = 1"), (new,))
