"""A store as the journal a reasoner writes through (engine/core/journal.py).

``grantlog.Reasoner(program, store=URL)`` builds a :class:`StoreJournal` over the store and
gives it to the engine's reasoner. A transaction then:

1. locks the store's head (:meth:`Store.writing`) and, inside that database transaction,
   lets the reasoner apply whatever other processes committed since its revision (so its
   view is the latest) and check ``if_revision``;
2. writes the net change and its change-log rows and commits (one database transaction);
3. only then does the reasoner apply the change in memory (incremental maintenance) as the
   new revision.

A failure in 1-2 leaves memory as it was (apart from step 1's already-committed changes) and
raises a ``GrantlogError`` with the store's code. Writers are serialized by the head lock, so
transactions are serializable; reads never wait for the store. Other processes' transactions
arrive through :meth:`StoreJournal.since` (grantlog/store/follow.py wakes a reasoner to read
them); a reasoner further behind than the compacted log reloads the facts and applies the
difference.
"""

from __future__ import annotations

from grantlog.engine.core.journal import Change, Snapshot

from .base import Store
from .records import Revision


class StoreJournal:
    """The journal protocol over a :class:`Store`; ``owns``: :meth:`close` closes the store."""

    def __init__(self, store: Store, owns: bool = False) -> None:
        self.store = store
        self.owns = owns

    def head(self) -> int:
        return self.store.head()[0]

    def snapshot(self) -> Snapshot:
        return self.store.snapshot()

    def since(self, revision: int) -> list[Revision]:
        return self.store.since(revision)

    def append(self, change: Change) -> int | None:
        with self.store.writing() as w:
            ins, dels = change(w)
            w.apply(ins, dels)
        return w.committed

    def close(self) -> None:
        if self.owns:
            self.store.close()
