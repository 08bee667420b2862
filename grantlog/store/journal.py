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

import os
from collections.abc import Mapping
from typing import Any

from grantlog.engine.core import ir
from grantlog.engine.core.journal import Change, Meta, Snapshot

from . import history, planstats, temporal
from .base import Store
from .records import Revision

#: compiled past policies kept per journal (by hash)
POLICIES = 8


class StoreJournal:
    """The journal protocol over a :class:`Store`; ``owns``: :meth:`close` closes the store."""

    def __init__(self, store: Store, owns: bool = False) -> None:
        self.store = store
        self.owns = owns
        self._pid = os.getpid()
        #: a store of this process's own, for history read in a forked child (a service's
        #: snapshot must not use the connection it shares with its worker)
        self._forked: tuple[int, Store] | None = None
        self._programs: dict[str, ir.Program] = {}

    def head(self) -> int:
        return self.store.head()[0]

    def snapshot(self) -> Snapshot:
        return self.store.snapshot()

    def since(self, revision: int) -> list[Revision]:
        return self.store.since(revision)

    # -- the planner's statistics (engine/plan/kept.py ``Keeper``; grantlog/store/planstats.py)

    def statistics(self) -> dict[str, Any] | None:
        return planstats.read(self.store)

    def keep_statistics(self, data: Mapping[str, Any]) -> None:
        planstats.write(self.store, data)

    def append(self, change: Change, meta: Meta | None = None) -> int | None:
        with self.store.writing(meta) as w:
            ins, dels = change(w)
            w.apply(ins, dels)
        return w.committed

    # -- history (engine/answer/history.py) -----------------------------------------------

    def _reader(self) -> Store:
        if os.getpid() == self._pid:
            return self.store
        if self._forked is None or self._forked[0] != os.getpid():
            from . import open_store

            st = open_store(self.store.url)
            st.attach()
            self._forked = (os.getpid(), st)
        return self._forked[1]

    def snapshot_at(self, revision: int) -> Snapshot:
        return history.snapshot_at(self._reader(), revision)

    def revision_at(self, when: float) -> int:
        return history.revision_at(self._reader(), when)

    def point_reader(self, revision: int) -> temporal.PastFacts | None:
        return temporal.reader_at(self._reader(), revision)

    def timed_reader(self) -> temporal.TimedFacts | None:
        return temporal.timed_reader(self._reader())

    def policy_at(self, revision: int, when: float | None = None) -> ir.Program | None:
        stored = history.policy_at(self._reader(), revision, when)
        if stored is None:
            return None
        program = self._programs.get(stored.hash)
        if program is None:
            from grantlog.engine.compile.compiler import compile_program

            program = compile_program(None, stored.roots, files=stored.sources, disk=False)
            if len(self._programs) >= POLICIES:
                self._programs.pop(next(iter(self._programs)))
            self._programs[stored.hash] = program
        return program

    def policy_revisions(self) -> list[int]:
        return history.policy_revisions(self._reader())

    def committed_at(self, revision: int) -> float | None:
        return history.committed_at(self._reader(), revision)

    def transactions(self, since: int = 0, upto: int | None = None,
                     ) -> list[history.Committed]:
        """The transactions after ``since`` (up to ``upto``) with who wrote them and why."""
        return history.transactions(self._reader(), since, upto=upto)

    def close(self) -> None:
        if self._forked is not None and self._forked[0] == os.getpid():
            self._forked[1].close()
            self._forked = None
        if self.owns:
            self.store.close()
