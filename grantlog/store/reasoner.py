"""A reasoner whose base facts live in a store (``grantlog.Reasoner(program, store=URL)``).

The base facts a reasoner sees are the rule files' own facts (the policy) and the store's
facts. A transaction:

1. locks the store's head (:meth:`Store.writing`) and first applies, in memory, whatever other
   processes committed since this reasoner's revision (so its view is the latest);
2. computes the net change against that view (``if_revision`` compare-and-set is checked here);
3. writes the facts and their change-log rows and commits (one database transaction);
4. only then applies the change in memory (incremental maintenance) as the new revision.

A failure in 1-3 leaves memory as it was (apart from step 1's already-committed changes) and
raises a ``GrantlogError`` with the store's code. Writers are serialized by the head lock,
so transactions are serializable; reads never wait for the store.

A follower thread (``follow=True``) wakes on the store's signal (SQLite: ``PRAGMA
data_version``; PostgreSQL: LISTEN/NOTIFY, and once a second regardless) and applies new
log entries incrementally, one revision at a time. It retries a lost store with backoff.
A reasoner further behind than the compacted log reloads the facts and applies the
difference.

A retract of a fact written in the rule files is refused (``policy-fact``): the store cannot
make it go away durably; edit the rule file.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterable
from typing import Any

from grantlog.engine.core import ir
from grantlog.engine.core.results import Changes, Delta, RevisionConflict, Transaction
from grantlog.grammar.diagnostics import GrantlogError, Span, error
from grantlog.reasoner import Reasoner

from . import Store, check, open_store
from .base import Revision

#: a follower reads the log at least this often without a signal (seconds)
FOLLOW_INTERVAL = 1.0
#: the longest pause between retries of a lost store (seconds)
MAX_BACKOFF = 2.0
#: more pending revisions than this are applied as one net change
MERGE_ABOVE = 64


class StoredReasoner(Reasoner):
    def __init__(self, program: ir.Program, watch: Iterable[str] | str = (),
                 backend: str = "memory", store: str | Store | None = None,
                 follow: bool = True, verify: bool = False) -> None:
        super().__init__(program, watch)
        assert store is not None
        if isinstance(store, str):
            self.store: Store = open_store(store, program, verify=verify)
        else:
            self.store = store
            if verify:
                check(store)
        self._owns_store = isinstance(store, str)
        #: the rule files' facts per relation (visible whether or not the store has them)
        self._policy: dict[str, set[ir.Row]] = {}
        for f in program.facts:
            self._policy.setdefault(f.rel, set()).add(f.row)
        #: rows the store holds that are also policy facts
        self._overlap: dict[str, set[ir.Row]] = {}
        #: the follower's last error (None while the store answers)
        self.follow_error: GrantlogError | None = None
        rev, rows = self.store.snapshot()
        self._note_overlap(rows)
        self.seed(rows, rev)
        self._stop = threading.Event()
        self._follower: threading.Thread | None = None
        if follow:
            self._follower = threading.Thread(target=self._follow, name="grantlog-follower",
                                              daemon=True)
            self._follower.start()

    def _note_overlap(self, rows: dict[str, list[ir.Row]]) -> None:
        self._overlap = {}
        for rel, rs in rows.items():
            pol = self._policy.get(rel)
            if pol:
                both = pol.intersection(rs)
                if both:
                    self._overlap[rel] = both

    # -- writing -------------------------------------------------------------------------------

    def _stored(self, rel: str) -> Any:
        """The rows of ``rel`` in memory (base facts)."""
        base = self._base.get(rel)
        return self._database().full[rel] if base is None else base

    def _commit(self, tx: Transaction, watch: frozenset[str],
                if_revision: int | None = None) -> Changes:
        with self._lock:
            with self.store.writing() as w:
                if w.revision != self.revision:
                    self._catch_up_with(w)
                if if_revision is not None and if_revision != self.revision:
                    raise RevisionConflict(if_revision, self.revision)
                mem_ins, mem_dels, st_ins, st_dels = self._split(tx.ops)
                w.apply(st_ins, st_dels)
            if w.committed is None:
                return Changes({}, self.program.derived, self.revision)
            self._move_overlap(st_ins, st_dels)
            return self._apply(mem_ins, mem_dels, watch, w.committed)

    def _split(self, ops: dict[str, dict[ir.Row, bool]]) -> tuple[Delta, Delta, Delta, Delta]:
        """A transaction's net change: to memory (ins, dels) and to the store (ins, dels)."""
        mem_ins: Delta = {}
        mem_dels: Delta = {}
        st_ins: Delta = {}
        st_dels: Delta = {}
        for rel, rows in ops.items():
            pol = self._policy.get(rel, set())
            both = self._overlap.get(rel, set())
            mem = self._stored(rel)
            for row, present in rows.items():
                in_policy = row in pol
                in_store = row in both if in_policy else row in mem
                if present and not in_store:
                    st_ins.setdefault(rel, set()).add(row)
                    if not in_policy:
                        mem_ins.setdefault(rel, set()).add(row)
                elif not present and in_store:
                    st_dels.setdefault(rel, set()).add(row)
                    if not in_policy:
                        mem_dels.setdefault(rel, set()).add(row)
                elif not present and in_policy:
                    span = self._spans.get(rel, {}).get(row)
                    raise GrantlogError([error(
                        "policy-fact",
                        f"`{ir.show_atom(rel, row)}` is written in the rule files, not stored: "
                        "a store cannot retract it", span or Span("<api>", 0, 0, 0, 0),
                        "remove the fact from the rule file (and reload the policy)")])
        return mem_ins, mem_dels, st_ins, st_dels

    def _move_overlap(self, ins: Delta, dels: Delta) -> None:
        for rel, rows in ins.items():
            pol = self._policy.get(rel)
            if pol:
                self._overlap.setdefault(rel, set()).update(rows & pol)
        for rel, rows in dels.items():
            if rel in self._overlap:
                self._overlap[rel] -= rows

    # -- following -----------------------------------------------------------------------------

    def _catch_up_with(self, w: Any) -> None:
        """Inside a write transaction: apply what others committed since our revision."""
        if self.revision < w.horizon:
            self._reload(w.snapshot())
        else:
            self._follow_revisions(w.since(self.revision))

    def _catch_up(self) -> None:
        self.sync()

    def sync(self) -> int:
        """Apply every transaction committed to the store since this reasoner's revision
        (what the follower does when woken); returns the revision reached."""
        have = self.revision
        try:
            revisions = self.store.since(have)
        except GrantlogError as exc:
            if exc.diagnostics[0].code != "revision-compacted":
                raise
            snap = self.store.snapshot()
            with self._lock:
                if self.revision == have:
                    self._reload(snap)
            return self.revision
        if revisions:
            with self._lock:
                self._follow_revisions(revisions)
        return self.revision

    def _follow_revisions(self, revisions: list[Revision]) -> None:
        fresh = [rv for rv in revisions if rv.revision > self.revision]
        if len(fresh) > MERGE_ABOVE and not self.listeners:
            fresh = [_merge(fresh)]
        for rv in fresh:
            mem_ins: Delta = {}
            mem_dels: Delta = {}
            for rel, rows in rv.removed.items():
                pol = self._policy.get(rel, set())
                mem = self._stored(rel)
                gone = {r for r in rows if r not in pol and r in mem}
                if gone:
                    mem_dels[rel] = gone
            self._move_overlap(rv.added, rv.removed)
            for rel, rows in rv.added.items():
                pol = self._policy.get(rel, set())
                mem = self._stored(rel)
                new = {r for r in rows if r not in pol and r not in mem}
                if new:
                    mem_ins[rel] = new
            self._apply(mem_ins, mem_dels, self._watch, rv.revision)

    def _reload(self, snapshot: tuple[int, dict[str, list[ir.Row]]]) -> None:
        """Too far behind for the log: take the store's facts and apply the difference."""
        rev, rows = snapshot
        mem_ins: Delta = {}
        mem_dels: Delta = {}
        for rel in self.store.tables:
            pol = self._policy.get(rel, set())
            new = set(rows.get(rel, ()))
            have = {r for r in self._stored(rel) if r not in pol}
            added, removed = new - pol - have, have - new
            if added:
                mem_ins[rel] = added
            if removed:
                mem_dels[rel] = removed
        self._note_overlap(rows)
        self._apply(mem_ins, mem_dels, self._watch, rev)

    def _follow(self) -> None:
        backoff = 0.05
        listener = None
        last = time.monotonic()
        while not self._stop.is_set():
            try:
                if listener is None:
                    listener = self.store.listener()
                    self.sync()
                woke = listener.wait(0.2)
                if woke or time.monotonic() - last >= FOLLOW_INTERVAL:
                    self.sync()
                    last = time.monotonic()
                self.follow_error = None
                backoff = 0.05
            except GrantlogError as exc:
                self.follow_error = exc
                if listener is not None:
                    with contextlib.suppress(Exception):  # a broken connection may fail
                        listener.close()
                    listener = None
                self._stop.wait(backoff)
                backoff = min(backoff * 2, MAX_BACKOFF)
        if listener is not None:
            listener.close()

    def close(self) -> None:
        """Stop following and close the store (if this reasoner opened it)."""
        self._stop.set()
        if self._follower is not None:
            self._follower.join(timeout=5)
        if self._owns_store:
            self.store.close()


def _merge(revisions: list[Revision]) -> Revision:
    """Consecutive transactions as one net change."""
    added: Delta = {}
    removed: Delta = {}
    for rv in revisions:
        _net(rv.removed, added, removed)  # a removal cancels an earlier addition
        _net(rv.added, removed, added)
    return Revision(revisions[-1].revision, added, removed)


def _net(rows: Delta, opposite: Delta, same: Delta) -> None:
    """Add ``rows`` to ``same``, except those in ``opposite``, which they cancel."""
    for rel, rs in rows.items():
        o = opposite.get(rel, set())
        for r in rs:
            if r in o:
                o.discard(r)
            else:
                same.setdefault(rel, set()).add(r)
