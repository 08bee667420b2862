"""The journal protocol: where a reasoner's transactions become durable, and where the
transactions of other writers arrive from.

The engine's :class:`~engine.answer.reasoner.Reasoner` takes ``journal=`` (None: it keeps its
facts in memory only). SpiceDB's datastore interface is the model: ``HeadRevision`` is
:meth:`JournalReader.head`, ``SnapshotReader(rev)`` is :meth:`JournalReader.snapshot`,
``Watch`` is :meth:`JournalReader.since`, and ``ReadWriteTx(fn)`` is :meth:`Journal.append`:

* a reasoner starts from :meth:`~JournalReader.snapshot` (the revision and every journaled
  fact);
* a transaction calls :meth:`Journal.append` with a function: the journal locks its head and
  calls it with a reader of the locked state, from which the reasoner first applies what
  other writers committed since its revision, then checks ``if_revision`` and returns the net
  change to write; the journal writes it and commits, and only then does the reasoner make
  the change visible, as the revision ``append`` returned. Writers are serialized by the
  journal's lock, so transactions are serializable; reads never wait for the journal;
* catching up (``wait_for``, ``at_least=``, a follower's ``sync()``) reads
  :meth:`~JournalReader.since`; a reasoner further behind than the journal keeps
  (``since`` raises the :data:`COMPACTED` error) reloads the snapshot and applies the
  difference;
* history (engine/answer/history.py): a transaction carries who wrote it and why
  (:class:`Meta`); :meth:`Journal.snapshot_at` gives the facts as they stood at a past
  revision, :meth:`Journal.revision_at` the revision a moment saw, and
  :meth:`Journal.policy_at` the program that was in force then (None: the reasoner's own).

The journal holds only the facts written at run time: the program's own facts (the rule
files') are always visible and never journaled; a journaled fact may also be one of them.
grantlog/store/journal.py implements the protocol over a SQLite or PostgreSQL store.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Protocol

from grantlog.grammar.diagnostics import GrantlogError

from . import ir
from .results import VALID, Delta

#: the code of the ``GrantlogError`` :meth:`JournalReader.since` raises for a revision whose
#: successors the journal no longer keeps
COMPACTED = "revision-compacted"

#: a revision and every journaled fact per relation (every relation the journal has)
Snapshot = tuple[int, Mapping[str, Iterable[ir.Row]]]


@dataclass(frozen=True)
class Meta:
    """Who wrote a transaction and why, as the journal records it beside its commit time
    (each None when not given): ``ticket`` is free text (a change request's id, a URL)."""

    author: str | None = None
    reason: str | None = None
    ticket: str | None = None

    def __bool__(self) -> bool:
        return any(v is not None for v in (self.author, self.reason, self.ticket))


class Committed(Protocol):
    """A committed transaction's record: when, who and why (each None when not given)."""

    @property
    def revision(self) -> int: ...

    @property
    def committed_at(self) -> float: ...

    @property
    def author(self) -> str | None: ...

    @property
    def reason(self) -> str | None: ...

    @property
    def ticket(self) -> str | None: ...


class Entry(Protocol):
    """One committed transaction as the journal records it: its net change."""

    @property
    def revision(self) -> int: ...

    @property
    def added(self) -> Delta: ...

    @property
    def removed(self) -> Delta: ...


class JournalReader(Protocol):
    """The journal at one moment: its head, its facts, its transactions since a revision."""

    def head(self) -> int:
        """The last committed revision."""
        ...

    def snapshot(self) -> Snapshot:
        """The head revision and every journaled fact, read consistently."""
        ...

    def since(self, revision: int) -> Sequence[Entry]:
        """The transactions committed after ``revision``, in commit order; a
        ``GrantlogError`` of code :data:`COMPACTED` when they are no longer all kept."""
        ...


#: what :meth:`Journal.append` calls under the journal's lock: the reader sees the locked
#: state; returns the net change to write (rows to add, all absent; rows to remove, all
#: present)
Change = Callable[[JournalReader], tuple[Delta, Delta]]


class Journal(JournalReader, Protocol):
    """A durable log of base-fact transactions shared by several writers."""

    def append(self, change: Change, meta: Meta | None = None) -> int | None:
        """One write transaction: lock the head, call ``change`` with the locked state, write
        the net change it returns (and ``meta``) and commit. Returns the new revision (None:
        ``change`` wrote nothing). Nothing is written if ``change`` raises."""
        ...

    def snapshot_at(self, revision: int) -> Snapshot:
        """Every journaled fact as it stood at ``revision`` (which the result repeats): a
        ``GrantlogError`` of code :data:`COMPACTED` below the oldest revision kept, of code
        ``revision-ahead`` above the head."""
        ...

    def revision_at(self, when: float) -> int:
        """The last revision committed at or before ``when`` (seconds since the epoch;
        :data:`COMPACTED` when the journal no longer knows, ``before-history`` when ``when``
        is before its first transaction)."""
        ...

    def committed_at(self, revision: int) -> float | None:
        """When ``revision`` committed (the oldest revision kept's too, after a compaction
        dropped its transaction; None: revision 0, or not known)."""
        ...

    def policy_at(self, revision: int, when: float | None = None) -> ir.Program | None:
        """The program in force at ``revision`` (and, with ``when``, installed by then);
        None: the journal keeps no policy of that time (the reasoner's own applies)."""
        ...

    def policy_revisions(self) -> list[int]:
        """The revisions at which a policy was installed (each in force from there)."""
        ...

    def transactions(self, since: int = 0, upto: int | None = None) -> Sequence[Committed]:
        """The transactions after ``since`` (up to ``upto``) the journal keeps, oldest
        first, with when they committed and who wrote them and why."""
        ...

    def close(self) -> None:
        """Release what the journal holds."""
        ...


class PointReader(Protocol):
    """The journaled facts at one past revision, read a few at a time (engine/answer/
    pointread.py): a journal that can, gives one by ``point_reader(revision)`` (None where
    it cannot, e.g. it keeps no temporal index; grantlog/store/temporal.py)."""

    @property
    def revision(self) -> int: ...

    def rows(self, rel: str, bound: Mapping[int, ir.Value]) -> Iterable[ir.Row]:
        """The facts of ``rel`` at the revision whose column ``i`` is ``bound[i]``
        (``bound``'s most selective column first: a reader may look up by it alone)."""
        ...


class TimedReader(Protocol):
    """The journaled facts over a stretch of revisions, each version with the revisions
    ``[lo, hi)`` it was present in (engine/answer/timed.py): a journal that can, gives one
    by ``timed_reader()`` (None where it cannot; grantlog/store/temporal.py)."""

    @property
    def head(self) -> int: ...

    @property
    def oldest(self) -> int: ...

    def check(self, revision: int) -> None:
        """Raise the journal's error for a revision it does not keep (or has not yet)."""
        ...

    def reading(self) -> AbstractContextManager[None]:
        """Inside it, every read is of one snapshot (one read transaction)."""
        ...

    def rows(self, rel: str, bound: Mapping[int, ir.Value], first: int,
             last: int) -> Mapping[ir.Row, Sequence[tuple[int, int]]]:
        """The facts of ``rel`` present in ``[first, last]`` whose column ``i`` is
        ``bound[i]``, each with its sorted disjoint intervals clipped to ``[first, last + 1)``."""
        ...

    def transactions(self, revisions: Iterable[int]) -> Mapping[int, Committed]:
        """The transactions of ``revisions`` the journal keeps, by revision."""
        ...

    def timed(self, rel: str, bound: Mapping[int, ir.Value], first: int,
              last: int) -> Mapping[ir.Row, Sequence[tuple[int, int]]]:
        """The :data:`VALID` rows (validity intervals) of the facts of ``rel`` whose column
        ``i`` is ``bound[i]``, present in ``[first, last]``, with their intervals as
        :meth:`rows` gives them."""
        ...

    def present(self, rel: str, bound: Mapping[int, ir.Value], first: int, last: int) -> bool:
        """Whether some fact of ``rel`` whose column ``i`` is ``bound[i]`` may be present
        in ``[first, last]`` (False: none is)."""
        ...

    def revision_before(self, when: float) -> int | None:
        """The last revision committed before ``when`` (None: none kept)."""
        ...


def compacted(exc: GrantlogError) -> bool:
    """Whether ``exc`` says the journal no longer keeps the transactions asked for."""
    return bool(exc.diagnostics) and exc.diagnostics[0].code == COMPACTED


__all__ = ["COMPACTED", "VALID", "Change", "Committed", "Entry", "Journal", "JournalReader", "Meta",
           "PointReader", "Snapshot", "TimedReader", "compacted"]
