"""Expiring and scheduled grants: base facts with a validity interval, counted when
``valid_from <= now < valid_until`` (either bound optional).

The reasoner holds the facts valid at its clock (:class:`Clock`): a fact whose interval does
not hold then is kept here, not in the database. A heap of the upcoming edges (a start or an
end) lets the clock move forward at the cost of the facts whose edge it passes: every read
moves it to the wall clock first (:meth:`Clock.tick`; nothing is due: one ``time.time()``
and a look at the heap), and a crossed edge is applied as a change of the base facts, so the
listeners (the change feed, the service's watch streams) see the gains and losses as they
see a write's, at the same revision. ``Reasoner.tick(now)`` moves the clock on request (the
decision service runs a timer that calls it at the next edge).

A question asked with ``now=`` (:func:`timed`) is answered by the reasoner itself when no
edge lies between its clock and ``now`` (the valid facts are the same: it costs nothing
more), else by a read-only reasoner of the facts valid at ``now``, built as the as-of
answers build theirs (engine/answer/history.py) and kept (the last :data:`CACHE`) for the
next question about the same stretch of time.

A store keeps an interval beside the facts as a row of the reserved relation :data:`VALID`
(``relation, fact, valid_from, valid_until``: the fact's values as a JSON array, the bounds
as ISO 8601 UTC text, ``""`` unbounded); a fact with an interval is not in its relation's
table, so the journal's log, snapshots, followers and past revisions carry intervals as they
carry facts. A write of a fact replaces its interval (an insert without one makes it
permanent; a retract removes it either way).
"""

from __future__ import annotations

import bisect
import functools
import heapq
import threading
import time
from collections.abc import Callable, Collection, Iterator, Mapping
from contextlib import contextmanager
from typing import Any, TypeVar

from grantlog.grammar.diagnostics import GrantlogError, Span, error

from ..core import ir
from ..core.journal import VALID
from ..core.results import Delta, Transaction
from ..core.times import (
    INF,
    Interval,
    canonical,
    holds,
    interval,
    validity_derived,
)
from ..core.times import decode as decode  # validity.decode/encode: the `@valid` rows' codec
from ..core.times import encode as encode
from ..core.times import instant as instant  # validity.instant: the times ``now=`` takes
from .history import Kept, _engine_class, asof

#: reasoners at other moments kept per reasoner
CACHE = 4
_API = Span("<api>", 0, 0, 0, 0)
_F = TypeVar("_F", bound=Callable[..., Any])
_start = threading.local()
_kept = Kept(CACHE)


def refuse_derived(program: ir.Program, rel: str, span: Span = _API) -> None:
    """``validity-derived`` when rules derive ``rel``: only base facts have intervals."""
    if rel in program.derived:
        raise GrantlogError([validity_derived(rel, span)])


class Permanent(Collection[ir.Row]):
    """A relation's stored rows without those the clock made visible (what a write compares
    with: a fact valid in an interval is journaled as a :data:`VALID` row, not in its
    relation)."""

    def __init__(self, rows: Collection[ir.Row], timed: Collection[ir.Row]) -> None:
        self._rows, self._timed = rows, timed

    def __contains__(self, row: object) -> bool:
        return row in self._rows and row not in self._timed

    def __iter__(self) -> Iterator[ir.Row]:
        return (r for r in self._rows if r not in self._timed)

    def __len__(self) -> int:
        return sum(1 for _ in self)


class Clock:
    """A reasoner's moment and the facts with an interval: the journaled ones (``runtime``)
    and the rule files' (``policy``), the edges to come (a heap) and, per relation, those
    visible now."""

    def __init__(self, reasoner: Any, now: float, follows: bool) -> None:
        self._r = reasoner
        self.now = now
        #: whether reads move the clock to the wall clock (a reasoner at another moment: no)
        self.follows = follows
        self.runtime: dict[str, dict[ir.Row, Interval]] = {}
        self.policy: dict[str, dict[ir.Row, Interval]] = {}
        #: the :data:`VALID` rows of ``runtime`` (what the journal holds)
        self.rows: set[ir.Row] = set()
        #: per relation, the facts with an interval that holds now
        self.visible: dict[str, set[ir.Row]] = {}
        self._heap: list[tuple[float, str, ir.Row]] = []
        #: the moment being passed (while its changes are applied; None: a write's)
        self.passing: float | None = None
        #: bumped on every change of an interval (the cache key of other moments)
        self.version = 0
        self._edges: list[float] | None = None

    # -- set up and written ---------------------------------------------------------------

    def hide_policy(self, program: ir.Program, stores: Mapping[str, dict[ir.Row, None]]
                    ) -> None:
        """Take the rule files' facts with an interval (``program.validity``) out of
        ``stores`` (the reasoner's facts before the first evaluation) unless valid now."""
        for rel, rows in getattr(program, "validity", {}).items():
            kept = self.policy.setdefault(rel, {})
            for row, iv in rows.items():
                kept[row] = iv
                self._schedule(rel, row, iv)
                if holds(iv, self.now):
                    self.visible.setdefault(rel, set()).add(row)
                else:
                    stores.get(rel, {}).pop(row, None)

    def interval_of(self, rel: str, row: ir.Row) -> Interval | None:
        iv = self.runtime.get(rel, {}).get(row)
        return iv if iv is not None else self.policy.get(rel, {}).get(row)

    def stored(self, rel: str, rows: Callable[[], Collection[ir.Row]]
               ) -> Collection[ir.Row]:
        """What a write compares with: ``rows()`` without the facts valid now by an
        interval (:class:`Permanent`); of :data:`VALID`: the journaled intervals."""
        if rel == VALID:
            return self.rows
        timed = self.visible.get(rel)
        return Permanent(rows(), timed) if timed else rows()

    def expand(self, tx: Transaction) -> dict[str, dict[ir.Row, bool]]:
        """A transaction's operations with the intervals as :data:`VALID` rows: a write of a
        fact drops its interval; an insert with one puts it in :data:`VALID`, not in the
        fact's relation."""
        given = tx.valid
        if not given and not self.runtime and VALID not in tx.ops:
            return tx.ops
        ops = {rel: dict(rows) for rel, rows in tx.ops.items() if rel != VALID}
        program = self._r.program
        v = {checked(program, vrow): present for vrow, present in tx.ops.get(VALID, {}).items()}
        for rel, rows in ops.items():
            old, new = self.runtime.get(rel, {}), given.get(rel, {})
            if new:
                refuse_derived(program, rel)
            for row, present in rows.items():
                had = old.get(row)
                if had is not None:
                    v[encode(rel, row, had)] = False
                bounds = new.get(row) if present else None
                if bounds is not None:
                    iv = interval(*bounds)
                    ops[rel][row] = False
                    v[encode(rel, row, iv)] = True
        if v:
            ops[VALID] = v
        return ops

    def translate(self, ins: Delta, dels: Delta) -> tuple[Delta, Delta]:
        """A net change of the journaled facts (:data:`VALID` rows included) as a change of
        the visible ones (what the database gets)."""
        if VALID not in ins and VALID not in dels:
            return ins, dels
        ins, dels = dict(ins), dict(dels)
        gone, new = dels.pop(VALID, set()), ins.pop(VALID, set())
        for vrow in gone:
            rel, row, iv = decode(vrow)
            self.rows.discard(vrow)
            self.runtime.get(rel, {}).pop(row, None)
            if holds(iv, self.now):
                self.visible.get(rel, set()).discard(row)
                _move(rel, row, ins, dels)
        for vrow in new:
            rel, row, iv = decode(vrow)
            self.rows.add(vrow)
            self.runtime.setdefault(rel, {})[row] = iv
            self._schedule(rel, row, iv)
            if holds(iv, self.now):
                self.visible.setdefault(rel, set()).add(row)
                _move(rel, row, dels, ins)
        self._changed()
        return ({r: rs for r, rs in ins.items() if rs}, {r: rs for r, rs in dels.items() if rs})

    def seed(self, rows: Mapping[str, Any]) -> Mapping[str, Any]:
        """A snapshot's rows (before the first evaluation) with its :data:`VALID` rows taken
        as intervals: the facts valid now join their relations."""
        if VALID not in rows:
            return rows
        out = {rel: rs for rel, rs in rows.items() if rel != VALID}
        ins, _ = self.translate({VALID: set(rows[VALID])}, {})
        for rel, rs in ins.items():
            out[rel] = [*out.get(rel, ()), *rs]
        return out

    def _schedule(self, rel: str, row: ir.Row, iv: Interval) -> None:
        for t in iv:
            if self.now < t < INF:
                heapq.heappush(self._heap, (t, rel, row))

    def _changed(self) -> None:
        self.version += 1
        self._edges = None

    # -- moving ---------------------------------------------------------------------------

    def due(self) -> float | None:
        """When the next edge is (None: none is to come)."""
        return self._heap[0][0] if self._heap else None

    def tick(self) -> None:
        """Move to the wall clock if an edge is due (every read does this first)."""
        if self.follows and self._heap and self._heap[0][0] <= time.time():
            self.move(time.time())

    def move(self, t: float) -> None:
        """Move the clock to ``t``; the facts whose interval starts or ends on the way
        change as a transaction of no new revision (the listeners see it)."""
        r = self._r
        t = canonical(t)  # to the microsecond, as the intervals are
        with r._lock:
            if t == self.now:
                return
            edge = t  # the moment the changes are of: the last edge passed, going forward
            if t > self.now:
                seen: set[tuple[str, ir.Row]] = set()
                while self._heap and self._heap[0][0] <= t:
                    edge, rel, row = heapq.heappop(self._heap)
                    seen.add((rel, row))
            else:  # back in time: every fact with an interval may change
                seen = {(rel, row) for d in (self.runtime, self.policy)
                        for rel, rows in d.items() for row in rows}
            ins: Delta = {}
            dels: Delta = {}
            before, self.now = self.now, t
            for rel, row in seen:
                iv = self.interval_of(rel, row)
                if iv is None or holds(iv, before) == holds(iv, t):
                    continue
                vis = self.visible.setdefault(rel, set())
                if holds(iv, t):
                    vis.add(row)
                    ins.setdefault(rel, set()).add(row)
                else:
                    vis.discard(row)
                    dels.setdefault(rel, set()).add(row)
            if t < before:
                self._heap = [(e, rel, row) for rel, row in seen
                              for e in self.interval_of(rel, row) or () if t < e < INF]
                heapq.heapify(self._heap)
            if ins or dels:
                self.passing = edge
                try:
                    r._apply(ins, dels, r._watch, r.revision)
                finally:
                    self.passing = None

    def edges(self) -> list[float]:
        """Every edge of every interval, sorted (made again after a change)."""
        if self._edges is None:
            self._edges = sorted({e for d in (self.runtime, self.policy)
                                  for rows in d.values() for iv in rows.values()
                                  for e in iv if -INF < e < INF})
        return self._edges

    def window(self, t: float) -> int:
        """Which stretch between two edges ``t`` falls in (the same: the same facts)."""
        return bisect.bisect_right(self.edges(), t)


def checked(program: ir.Program, vrow: ir.Row) -> ir.Row:
    """A :data:`VALID` row written as it is (a replay of a journal's log): of a base relation
    of ``program``, a fact it may hold, a non-empty interval (``bad-fact`` otherwise)."""
    try:
        rel, row, iv = decode(vrow)
        program.writable_rows(rel, [row])
        refuse_derived(program, rel)
        if iv[1] <= iv[0]:
            raise ValueError("empty")
    except GrantlogError:
        raise
    except Exception:
        raise GrantlogError([error(
            "bad-fact", f"`{ir.show_atom(VALID, vrow)}` is not an interval of a fact", _API,
            "give intervals with `insert(..., valid_from=, valid_until=)`")]) from None
    return vrow


def _move(rel: str, row: ir.Row, source: Delta, target: Delta) -> None:
    """``row`` changes: cancel the opposite change of ``source`` or add it to ``target``."""
    got = source.get(rel)
    if got is not None and row in got:
        got.discard(row)
    else:
        target.setdefault(rel, set()).add(row)


# -- reasoners at another moment ---------------------------------------------------------------


def clock(r: Any) -> Clock:
    """The clock of a new reasoner ``r``: at the wall clock and following it, or at the
    moment :func:`starting` gives (and staying there)."""
    at = getattr(_start, "at", None)
    c = Clock(r, time.time() if at is None else at, at is None)
    c.hide_policy(r.program, {**(r._initial or {}), **r._base})
    return c


@contextmanager
def starting(t: float) -> Iterator[None]:
    """Reasoners made in the block start at ``t`` and stay there."""
    _start.at = t
    try:
        yield
    finally:
        _start.at = None


def at(r: Any, t: float) -> Any:
    """The reasoner that answers for the moment ``t``: ``r`` itself when no edge lies
    between its clock and ``t``, else one of the facts valid at ``t``."""
    t = canonical(t)
    with r._lock:
        c: Clock = r._clock
        c.tick()
        lo, hi = min(c.now, t), max(c.now, t)
        if c.window(lo) == c.window(hi):
            return r
        key = (r.revision, c.version, c.window(t))
        found = _kept.get(r, key)
        if found is not None:
            return found
        rows = journaled_facts(r)
        revision = r.revision
    with starting(t):
        p = _engine_class(type(r))(r.program)
    p.seed({rel: rs for rel, rs in rows.items() if rs}, revision)
    _kept.put(r, key, p)
    return p


def next_edge(r: Any) -> float | None:
    """When ``r``'s next validity edge is due (None: none is to come); an edge that an
    interval no longer has may be named (passing it changes nothing)."""
    with r._lock:
        due: float | None = r._clock.due()
        return due


def journaled_facts(r: Any) -> dict[str, set[ir.Row]]:
    """``r``'s base facts as a journal holds them: the facts with an interval as
    :data:`VALID` rows, not in their relations (what a reasoner of other rules is seeded
    with, intervals kept)."""
    with r._lock:
        c: Clock = r._clock
        rows: dict[str, set[ir.Row]] = {}
        for rel, facts in r.base_facts().items():
            timed = c.visible.get(rel)
            rows[rel] = facts - timed if timed else facts
        if c.rows:
            rows[VALID] = set(c.rows)
        return rows


def timed(method: _F) -> _F:
    """A question that takes ``now=`` (keyword-only; a time as ``as_of`` takes it): asked
    of the reasoner of that moment (:func:`at`) when given."""

    @functools.wraps(method)
    def ask(self: Any, *args: Any, now: object = None, **kwargs: Any) -> Any:
        if now is None:
            return method(self, *args, **kwargs)
        return method(at(self, instant(now, "now")), *args, **kwargs)

    return ask  # type: ignore[return-value]


def question(method: _F) -> _F:
    """A question asked as of a past revision or moment (``at_revision=``/``as_of=``:
    engine/answer/history.py) or at a moment of the facts' validity (``now=``)."""
    return asof(timed(method))


def tick(r: Any, now: object = None) -> float:
    """Move ``r``'s clock to ``now`` (default: the wall clock); returns the clock."""
    c: Clock = r._clock
    c.move(time.time() if now is None else instant(now, "now"))
    return c.now

