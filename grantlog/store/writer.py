"""The open write transaction of a store (:meth:`grantlog.store.base.Store.writing`): net
changes and bulk loads written with their log rows, counted and checksummed."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from grantlog.engine.core import ir
from grantlog.engine.core.journal import Meta
from grantlog.engine.core.results import Delta

from .digest import MASK, digest
from .records import Revision

#: the store that opened the transaction (base.py's ``Store``; not imported: it imports this)
Store = Any

#: a bulk load (:meth:`Writer.load`) of more facts than this records no checksum: hashing
#: them would add about half to a SQLite bulk load; its facts are still checked against the
#: tables
CHECKSUM_LOAD_MAX = 100_000

class Writer:
    """The open write transaction of :meth:`Store.writing`."""

    def __init__(self, store: Store, cur: Any, revision: int, horizon: int) -> None:
        self.store = store
        self.cur = cur
        #: the head when the transaction began (the writer holds its lock)
        self.revision = revision
        self.horizon = horizon
        #: the revision this transaction commits as (None: it changed nothing)
        self.committed: int | None = None
        #: commit even without a new revision (maintenance: compaction)
        self.keep = False
        self._added = 0
        self._removed = 0
        #: the checksum of the rows logged so far (None: not kept, a big bulk load)
        self._digest: int | None = 0
        #: who writes and why (``grantlog_revisions.author``, ``reason``, ``ticket``)
        self.meta = Meta()

    @property
    def next(self) -> int:
        return self.revision + 1

    def head(self) -> int:
        """The head revision, locked by this transaction."""
        return self.revision

    def since(self, revision: int) -> list[Revision]:
        """The transactions after ``revision`` (committed by others; the head is locked, so
        no more can commit meanwhile). Raises ``revision-compacted`` below the horizon."""
        out: list[Revision] = self.store._since(self.cur, revision, self.horizon)
        return out

    def snapshot(self) -> tuple[int, dict[str, list[ir.Row]]]:
        """Every stored fact, read inside this transaction."""
        return self.revision, {rel: self.store._fetch_all(self.cur, t)
                               for rel, t in self.store.tables.items()}

    def apply(self, ins: Delta, dels: Delta) -> None:
        """Write a net change: every row of ``ins`` absent from the store, every row of
        ``dels`` present (the caller computed them against the state at ``revision``)."""
        st = self.store
        for rel, rows in dels.items():
            if rows:
                t = st._table(self.cur, rel)
                st._delete(self.cur, t, rows)
                st._log(self.cur, self.next, rel, -1, rows)
                self._removed += len(rows)
                self._sum(-digest(rel, rows)[1])
        for rel, rows in ins.items():
            if rows:
                t = st._table(self.cur, rel, create=True)
                st._insert(self.cur, t, rows)
                st._log(self.cur, self.next, rel, 1, rows)
                self._added += len(rows)
                self._sum(digest(rel, rows)[1])

    def _sum(self, value: int | None) -> None:
        self._digest = None if value is None or self._digest is None else \
            (self._digest + value) & MASK

    def load(self, rel: str, rows: Iterable[ir.Row]) -> int:
        """Add rows that may already be stored (a bulk load): only the new ones are written
        and logged. Returns how many were new."""
        st = self.store
        t = st._table(self.cur, rel, create=True)
        rows = rows if isinstance(rows, list | tuple | set | dict) else list(rows)
        n: int = st._load(self.cur, t, rows, self.next)
        self._added += n
        if n:  # the checksum of the rows it logged, read back (a small load only)
            self._sum(st._logged_digest(self.cur, self.next, rel)
                      if n <= CHECKSUM_LOAD_MAX else None)
        return n

    @property
    def changed(self) -> bool:
        return bool(self._added or self._removed)
