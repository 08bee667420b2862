"""As-of answers: ``check``, ``list``, ``who``, ``explain`` and ``query`` as they stood at a
past revision or moment, under the policy in force then.

A reasoner with a journal (engine/core/journal.py) answers ``at_revision=R`` — or
``as_of=T``, a ``datetime``, a ``date``, an ISO 8601 string or seconds since the epoch: the
last revision committed at or before ``T``, naive times being UTC — from a read-only reasoner
of that revision: the journal's facts at ``R`` (:meth:`~engine.core.journal.Journal.snapshot_at`:
read by the store in SQL, no transaction replayed) under the program in force then
(:meth:`~engine.core.journal.Journal.policy_at`; None: the reasoner's own). The last
:data:`CACHE` of them are kept (the least recently used dropped), so a run of questions about
one moment builds one. Answers say the revision they are of (``.revision``); ``at_least`` has
nothing to wait for there (the journal has every committed revision).

The errors are the journal's: ``revision-compacted`` below the oldest revision the log keeps
(naming it), ``revision-ahead`` above the head, ``before-history`` for a time before the first
transaction; a reasoner without a journal has no history (``history-unavailable``).
"""

from __future__ import annotations

import functools
import math
import threading
import weakref
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, date, datetime
from typing import Any, TypeVar

from grantlog.grammar.diagnostics import GrantlogError, Span, error

from ..compile.restrict import cone
from ..core import arguments

#: the engine's reasoner (engine/answer/reasoner.py, which imports this module: a question
#: is given the reasoner it is asked of)
Reasoner = Any
#: past reasoners kept per reasoner
CACHE = 4
_API = Span("<api>", 0, 0, 0, 0)
_F = TypeVar("_F", bound=Callable[..., Any])

_lock = threading.Lock()
_kept: weakref.WeakKeyDictionary[Any, OrderedDict[tuple[int, str], Reasoner]] = \
    weakref.WeakKeyDictionary()


def moment(value: object, name: str = "as_of") -> float:
    """``value`` as seconds since the epoch: a ``datetime`` (naive: UTC), a ``date`` (its
    midnight, UTC), an ISO 8601 string of either, or a number of seconds."""
    if isinstance(value, str):
        try:
            value = datetime.fromisoformat(value.strip())
        except ValueError:
            raise arguments.bad_argument(
                name, "a time", value, "an ISO 8601 time, e.g. `2026-03-03T12:00:00Z`, or "
                "a date, e.g. `2026-03-03`") from None
    if isinstance(value, datetime):
        return (value if value.tzinfo else value.replace(tzinfo=UTC)).timestamp()
    if isinstance(value, date):
        return datetime(value.year, value.month, value.day, tzinfo=UTC).timestamp()
    seconds = float(arguments.number(name, value))
    if not math.isfinite(seconds):
        raise arguments.bad_argument(name, "a finite number of seconds", value,
                                     "seconds since the epoch, e.g. `1772539200`")
    return seconds


def past(r: Reasoner, at_revision: object, as_of: object) -> Reasoner:
    """The read-only reasoner of ``r``'s journal at ``at_revision`` or ``as_of``."""
    if at_revision is not None and as_of is not None:
        raise arguments.bad_argument("as_of", "None when `at_revision` is given", as_of,
                                     "ask at a revision or at a time, not both")
    journal = r.journal
    if journal is None:
        raise GrantlogError([error(
            "history-unavailable", "this reasoner keeps no history: its facts live in "
            "memory only", _API, "open it over a store (`store=`), whose change log is the "
            "history")])
    when = None if as_of is None else moment(as_of)
    revision = arguments.integer("at_revision", at_revision, 0) if when is None \
        else journal.revision_at(when)
    program = journal.policy_at(revision, when) or r.program
    if program.digest == r.program.digest:
        program = r.program  # its compiled plans are shared
    key = (revision, program.digest)
    with _lock:
        kept = _kept.setdefault(r, OrderedDict())
        found = kept.get(key)
        if found is not None:
            kept.move_to_end(key)
            return found
    at, rows = journal.snapshot_at(revision)
    p = _past_class(_engine_class(type(r)))(program)
    p.seed({rel: rs for rel, rs in rows.items() if rs and rel in program.relations}, at)
    with _lock:
        kept[key] = p
        while len(kept) > CACHE:
            kept.popitem(last=False)
    return p


def asof(method: _F) -> _F:
    """A question that takes ``at_revision=`` and ``as_of=`` (keyword-only): asked of the
    past reasoner when either is given."""
    name = method.__name__

    @functools.wraps(method)
    def ask(self: Reasoner, *args: Any, at_revision: object = None, as_of: object = None,
            **kwargs: Any) -> Any:
        if at_revision is None and as_of is None:
            return method(self, *args, **kwargs)
        return getattr(past(self, at_revision, as_of), name)(*args, **kwargs)

    return ask  # type: ignore[return-value]


def _engine_class(cls: type) -> type:
    """The engine's reasoner class among ``cls`` and its bases (the public API's reasoner
    subclasses it with a store's constructor)."""
    return next(c for c in cls.__mro__ if c.__module__.endswith("engine.answer.reasoner"))


@functools.cache
def _past_class(base: type) -> type:
    class Past(base):  # type: ignore[misc]
        """A reasoner of a past revision: it answers, it is never written."""

        def wait_for(self, revision: int, timeout: float | None = None) -> int:
            return int(self.revision)  # the journal had every revision up to this one

        def _commit(self, *args: Any, **kwargs: Any) -> Any:
            raise GrantlogError([error(
                "read-only-revision", f"revision {self.revision} is in the past: it cannot "
                "be written", _API, "write to the reasoner itself")])

    return Past


# -- timelines ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Edge:
    """The transaction that opened or closed an interval: its revision, when it committed
    (None: unknown, revision 0 or compacted), who wrote it and why."""

    revision: int
    committed_at: float | None = None
    author: str | None = None
    reason: str | None = None
    ticket: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"revision": self.revision, "committed_at": self.committed_at,
                "author": self.author, "reason": self.reason, "ticket": self.ticket}


@dataclass(frozen=True)
class Interval:
    """Revisions in which a decision held: from ``start`` until ``end`` (None: it still
    held at the end of the timeline). ``held_before``: it already held at the timeline's
    first revision (``start`` is that revision, not the transaction that opened it)."""

    start: Edge
    end: Edge | None
    held_before: bool = False

    def __contains__(self, revision: object) -> bool:
        return isinstance(revision, int) and self.start.revision <= revision and (
            self.end is None or revision < self.end.revision)

    def to_dict(self) -> dict[str, Any]:
        return {"start": self.start.to_dict(), "held_before": self.held_before,
                "end": None if self.end is None else self.end.to_dict()}


def _bound(r: Reasoner, value: object, name: str) -> int | None:
    """``since``/``until`` as a revision: an int is one, anything else a moment."""
    if value is None or (isinstance(value, int) and not isinstance(value, bool)):
        return None if value is None else arguments.integer(name, value, 0)
    journal = r.journal
    assert journal is not None
    return int(journal.revision_at(moment(value, name)))


def timeline(r: Reasoner, subject: str, operation: str, resource: str,
             since: object = None, until: object = None) -> list[Interval]:
    """The intervals between ``since`` and ``until`` (revisions, or times: :func:`moment`;
    default: the oldest revision kept and the head) in which ``decision(subject, operation,
    resource)`` held, each edge the transaction that opened or closed it.

    No reasoner per revision: only the transactions whose log touches a relation the
    decision depends on (its dependency cone) and the revisions a policy was installed at
    can change it. The facts at ``since`` are read once (``Journal.snapshot_at``); each such
    transaction is then applied to them incrementally and the decision asked again (a new
    policy: the facts at its revision read again under it)."""
    arguments.question(arguments.DECIDED, (subject, operation, resource))
    journal = r.journal
    if journal is None:
        past(r, 0, None)  # history-unavailable
    assert journal is not None
    committed = {c.revision: c for c in journal.transactions(0)}
    head = journal.head()
    first = _bound(r, since, "since")
    if first is None:
        first = min(committed) - 1 if committed else head
    last = head if until is None else _bound(r, until, "until")
    assert last is not None
    if last < first:
        raise arguments.bad_argument("until", f"a revision of at least {first} (`since`)",
                                     until)
    policies = {rev for rev in journal.policy_revisions() if first < rev <= last}

    def edge(rev: int) -> Edge:
        c = committed.get(rev)
        return Edge(rev) if c is None else Edge(rev, c.committed_at, c.author, c.reason,
                                                c.ticket)

    program, live = _build(r, first)
    cone_rels = cone(program, [program.decision])
    held = held_first = bool(live.check(subject, operation, resource))
    out: list[Interval] = []
    opened: Edge | None = edge(first) if held else None
    entries = [e for e in journal.since(first) if e.revision <= last]
    for e in entries:
        touched = (e.added.keys() | e.removed.keys()) & cone_rels
        if e.revision in policies:
            program, live = _build(r, e.revision)
            cone_rels = cone(program, [program.decision])
        elif touched:
            with live.transaction() as tx:
                for rel in touched & e.removed.keys():
                    tx.retract(rel, e.removed[rel])
                for rel in touched & e.added.keys():
                    tx.insert(rel, e.added[rel])
        else:
            continue
        now = bool(live.check(subject, operation, resource))
        if now and not held:
            opened = edge(e.revision)
        elif held and not now:
            assert opened is not None
            out.append(Interval(opened, edge(e.revision), not out and held_first))
            opened = None
        held = now
    if opened is not None:
        out.append(Interval(opened, None, not out and held_first))
    return out


def _build(r: Reasoner, revision: int) -> tuple[Any, Any]:
    """A writable reasoner of the facts at ``revision`` under the policy in force then."""
    journal = r.journal
    assert journal is not None
    program = journal.policy_at(revision) or r.program
    if program.digest == r.program.digest:
        program = r.program
    at, rows = journal.snapshot_at(revision)
    live = _engine_class(type(r))(program)
    live.seed({rel: rs for rel, rs in rows.items() if rs and rel in program.relations}, at)
    return program, live
