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
import threading
import weakref
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from grantlog.grammar.diagnostics import GrantlogError, Span, error

from ..core import arguments
from ..core.journal import VALID
from ..core.results import Decision
from ..core.times import moment as moment  # history.moment, as before
from . import pointread, recent

#: the engine's reasoner (engine/answer/reasoner.py, which imports this module: a question
#: is given the reasoner it is asked of)
Reasoner = Any
#: past reasoners kept per reasoner
CACHE = 4
_API = Span("<api>", 0, 0, 0, 0)
_F = TypeVar("_F", bound=Callable[..., Any])



class Kept:
    """Per reasoner, the last ``size`` reasoners built for it (of past revisions, of other
    moments: engine/answer/validity.py), by key; the least recently used dropped."""

    def __init__(self, size: int = CACHE) -> None:
        self.size = size
        self._lock = threading.Lock()
        self._by: weakref.WeakKeyDictionary[Any, OrderedDict[Any, Reasoner]] = \
            weakref.WeakKeyDictionary()

    def get(self, r: Reasoner, key: Any) -> Reasoner | None:
        with self._lock:
            kept = self._by.setdefault(r, OrderedDict())
            found = kept.get(key)
            if found is not None:
                kept.move_to_end(key)
            return found

    def put(self, r: Reasoner, key: Any, p: Reasoner) -> None:
        with self._lock:
            kept = self._by.setdefault(r, OrderedDict())
            kept[key] = p
            while len(kept) > self.size:
                kept.popitem(last=False)


_kept = Kept()


def past(r: Reasoner, at_revision: object, as_of: object,
         points: tuple[Any, Any] | None = None) -> Reasoner:
    """The read-only reasoner of ``r``'s journal at ``at_revision`` or ``as_of``. With
    ``points`` (a check's ``(args, kwargs)``), that check's decision instead when it is
    read by points (answer/pointread.py: at a revision whose reasoner is not kept)."""
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
    found = _kept.get(r, key)
    if found is not None:
        return found
    if points is not None:  # a check by point reads (answer/pointread.py), its view kept
        pkey = ("points", *key)
        got, view = pointread.check(r, revision, program, *points, _kept.get(r, pkey))
        if view is not None:
            _kept.put(r, pkey, view)
            return got
    at, rows = journal.snapshot_at(revision)
    p = _past_class(_engine_class(type(r)))(program)
    p.seed({rel: rs for rel, rs in rows.items() if rs and (rel in program.relations
                                                            or rel == VALID)}, at)
    _kept.put(r, key, p)
    return p


def kept(r: Reasoner, revision: int, points: bool = False) -> Any:
    """What ``r`` keeps of ``revision`` under its own program: the rebuilt reasoner, or
    with ``points`` the view of point reads (answer/pointread.py); None: nothing."""
    key = (revision, r.program.digest)
    return _kept.get(r, ("points", *key) if points else key)


def asof(method: _F) -> _F:
    """A question that takes ``at_revision=`` and ``as_of=`` (keyword-only): asked of the
    past reasoner when either is given."""
    name = method.__name__

    @functools.wraps(method)
    def ask(self: Reasoner, *args: Any, at_revision: object = None, as_of: object = None,
            **kwargs: Any) -> Any:
        if at_revision is None and as_of is None:
            return method(self, *args, **kwargs)
        got = recent.check(self, at_revision, as_of, args, kwargs) if name == "check" else None
        if got is not None:  # a recent revision, from the live reasoner (answer/recent.py)
            return got
        if as_of is not None and kwargs.get("now") is None:
            kwargs["now"] = as_of  # validity intervals are read at that moment too
        p = past(self, at_revision, as_of, (args, kwargs) if name == "check" else None)
        return p if isinstance(p, Decision) else getattr(p, name)(*args, **kwargs)

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
    (None: unknown, revision 0 or compacted), who wrote it and why. Or no transaction: the
    moment a fact's validity interval started or ended (``passed``: those facts, ``+fact``
    started, ``-fact`` ended; ``committed_at``: the moment; ``revision``: the one in force;
    engine/answer/validity.py)."""

    revision: int
    committed_at: float | None = None
    author: str | None = None
    reason: str | None = None
    ticket: str | None = None
    passed: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {"revision": self.revision, "committed_at": self.committed_at,
                "author": self.author, "reason": self.reason, "ticket": self.ticket,
                **({"passed": list(self.passed)} if self.passed else {})}


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


def span(r: Reasoner, since: object, until: object) -> tuple[Any, dict[int, Any], int, int]:
    """``r``'s journal, its committed transactions by revision, and the revisions ``since``
    and ``until`` stand for (default: the oldest revision kept and the head; times as
    ``as_of`` takes them): the stretch of history a timeline or a period covers."""
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
    return journal, committed, first, last


def _build(r: Reasoner, revision: int, clock: float | None = None) -> tuple[Any, Any]:
    """A writable reasoner of the facts at ``revision`` under the policy in force then (its
    clock at ``clock``, moved only on request; None: the wall clock)."""
    journal = r.journal
    assert journal is not None
    program = journal.policy_at(revision) or r.program
    if program.digest == r.program.digest:
        program = r.program
    at, rows = journal.snapshot_at(revision)
    live = _engine_class(type(r))(program)
    live.seed({rel: rs for rel, rs in rows.items() if rs and (rel in program.relations
                                                               or rel == VALID)}, at)
    if clock is not None:
        live._clock.follows = False
        live._clock.move(clock)
    return program, live
