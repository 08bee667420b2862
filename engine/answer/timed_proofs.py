"""Proofs at a past revision by point reads: the why and the why-not of a goal at revision R
without rebuilding R.

``explain(goal, at_revision=R)`` asks a reasoner of R, rebuilt from every fact that held then
(engine/answer/history.py): seconds per revision at a million tables, and a timeline with
proofs (engine/answer/timelines.py ``prove``) asks one at each edge. Here the explanation is
made goal-directed over the point-read view of R instead (engine/answer/pointread.py
:class:`~.pointread.PastView`: the facts at R read by the temporal table's indexes as the
proof and the why-not tree reach them), with the same prover and why-not search as the
rebuilt reasoner (engine/answer/point_proofs.py), so the explanation is the same, node for
node. tests/test_history_timeline_proofs.py compares the explanations with the rebuilt
reasoner's on generated histories.

Where facts have validity intervals, an explanation is of a moment as well as a revision
(``now``: a timeline's edge, the commit or the moment an interval started or ended; a
review's path just before a loss): the view is then of the facts as they stood at that moment
(pointread.py ``MomentView``: their ``@valid`` rows read by points too), and the explanation
is the rebuilt reasoner's of that revision moved to that moment (``validity.at``):
tests/test_timeline_proofs_moments.py compares them at every commit and validity edge of
generated histories.

Where point reads do not apply (:func:`explain` gives None: the journal has no point reader
for R, facts have validity intervals and no moment is given, a stratum mixes materialized
and on-demand relations), the rebuilt reasoner answers (:func:`explain_at`).
"""

from __future__ import annotations

import threading
from bisect import bisect_right
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from ..core import ir
from ..core.journal import VALID
from ..core.times import decode, holds, instant
from . import history, point_proofs, pointread
from .explain import Explanation, Limits

Reasoner = Any


# -- a timeline's explanations: reads shared between its edges ---------------------------------

#: the kinds of a read of one edge's view: a point read, a page read (whether some fact
#: matches: point_proofs.py ``_Pages``), the validity intervals of the facts a point read
#: matches (a view at a moment: pointread.py ``MomentView``)
ROWS, PAGE, TIMED = "rows", "page", "timed"
#: a read: its kind, the relation, the bound columns and values, a page's limit
_Read = tuple[str, str, tuple[tuple[int, ir.Value], ...], int | None]
#: an explanation made: its reads with what they answered, the rule files' facts with an
#: interval holding at its moment (:func:`_policy`), the explanation
_Made = tuple[dict[_Read, Any], frozenset[tuple[str, ir.Row]] | None, Explanation]
#: the most recent explanations of a goal a new edge is compared with before it is explained
CANDIDATES = 16
#: the fewest edges whose explanations share their reads (timelines.py ``prove``): the
#: versions of a wide read over a long stretch (a role's grants over the whole history)
#: cost more than a few point reads of it (at 1M tables: a typical pair's 2-16 edges)
SHARED_FROM = 32


class Shared:
    """The reads of a timeline's explanations (engine/answer/timelines.py ``prove``: the why
    at each interval's start, the why-not at its end), shared between its edges.

    * A point read of a relation at an edge's revision is answered from every version of the
      facts it matches over the edges' revisions ``[first, last]`` (the journal's timed reader:
      the temporal table's rows with the revisions each was present in), read once for all
      the edges: the rows present at the revision. A page read (whether some fact matches:
      point_proofs.py ``_Pages``) is too once those versions are read, else by the edge's
      own point reader.
    * Where facts have validity intervals (a ``@valid`` row at some revision of the edges, or
      rule-file facts with one), an edge is explained at its moment (``now``: the commit, or
      the moment an interval started or ended) over the facts as they stood then
      (pointread.py ``MomentView``), the intervals of the facts a point read matches read
      from their versions too: what such a read answered is the facts whose interval holds
      at the view's moment.
    * An explanation is a function of the program, the goal and what its reads answered (the
      prover and the why-not search take the smallest binding among equals, never the order
      rows come in). Each explanation keeps the reads its view made (:class:`_SharedAt`);
      an edge whose every such read answers the same at its revision and moment — the point
      reads from the versions, the intervals' facts holding at the edge's moment, the page
      reads read again — and at whose moment the same rule-file facts with an interval hold
      has that explanation, as it is, without a view of its own. A relation that changed
      between the two edges in a row the explanation read, or a fact it read whose interval
      holds at one moment and not at the other, answers differently there, and the edge is
      explained afresh.
    """

    def __init__(self, reader: Any, first: int, last: int) -> None:
        self.reader, self.first, self.last = reader, first, last
        self._versions: dict[tuple[str, tuple[tuple[int, ir.Value], ...]], _Versions] = {}
        self._timed: dict[tuple[str, tuple[tuple[int, ir.Value], ...]], _Versions] = {}
        self._decoded: dict[ir.Row, tuple[ir.Row, tuple[float, float]]] = {}
        self._moments: bool | None = None
        self._programs: dict[int, ir.Program] = {}
        #: per (program, goal, why or why-not): the explanations made, each with its reads
        self.done: dict[tuple[int, str, bool], list[_Made]] = {}
        #: explanations made afresh, and taken from another edge (the benchmark prints them)
        self.made = self.reused = 0

    def program(self, r: Reasoner, revision: int) -> ir.Program:
        """:func:`_program`, asked once per revision."""
        got = self._programs.get(revision)
        if got is None:
            got = self._programs[revision] = _program(r, revision)
        return got

    def moments(self) -> bool:
        """Whether some stored fact has a validity interval at a revision of ``[first,
        last]`` (one indexed read, made once)."""
        if self._moments is None:
            self._moments = bool(self.reader.present(VALID, {}, self.first, self.last))
        return self._moments

    def versions(self, rel: str, bound: Mapping[int, ir.Value]) -> _Versions:
        """The facts of ``rel`` matching ``bound`` at some revision of ``[first, last]``,
        each with its intervals there: read once, by the first column of ``bound`` (the
        most selective), the others' values selected among those versions."""
        return self._read(self._versions, self.reader.rows, lambda row: row, rel, bound)

    def timed(self, rel: str, bound: Mapping[int, ir.Value]) -> _Versions:
        """The validity intervals (``@valid`` rows) of the facts of ``rel`` matching
        ``bound`` at some revision of ``[first, last]``, each with the revisions it was
        present in, read as :meth:`versions` reads facts."""
        return self._read(self._timed, self.reader.timed, lambda vrow: self._decode(vrow)[0],
                          rel, bound)

    def _read(self, memo: dict[Any, _Versions], read: Callable[..., Any],
              fact: Callable[[ir.Row], ir.Row], rel: str,
              bound: Mapping[int, ir.Value]) -> _Versions:
        """:meth:`versions` and :meth:`timed`: ``read`` once per (``rel``, first bound
        column), kept in ``memo``; more bound columns select among those rows (``fact``: the
        fact a row is of)."""
        k = (rel, tuple(bound.items()))
        got = memo.get(k)
        if got is None:
            if len(bound) > 1:
                c, v = k[1][0]
                rows = {row: spans for row, spans
                        in self._read(memo, read, fact, rel, {c: v}).rows.items()
                        if _matches(fact(row), k[1])}
            else:
                rows = dict(read(rel, bound, self.first, self.last))
            got = memo[k] = _Versions(rows)
        return got

    def _decode(self, vrow: ir.Row) -> tuple[ir.Row, tuple[float, float]]:
        got = self._decoded.get(vrow)
        if got is None:
            _, fact, iv = decode(vrow)
            got = self._decoded[vrow] = (fact, iv)
        return got

    def seen(self, vrows: Iterable[ir.Row], now: float) -> frozenset[ir.Row]:
        """The facts of ``vrows`` (``@valid`` rows) whose interval holds at ``now``."""
        return frozenset(fact for vrow in vrows
                         for fact, iv in (self._decode(vrow),) if holds(iv, now))

    def has(self, rel: str, bound: Mapping[int, ir.Value]) -> bool:
        return (rel, tuple(bound.items())) in self._versions

    def at(self, point: Any, now: float | None = None) -> _SharedAt:
        """``point`` (a point reader of one of the edges' revisions) reading through this,
        for a view at the moment ``now`` (None: no moment)."""
        return _SharedAt(self, point, now)

    def explain(self, r: Reasoner, revision: int, goal: str, holds: bool,
                now: object = None) -> Explanation | None:
        """``goal`` explained at ``revision`` and the moment ``now`` (the facts' validity
        intervals read then; None: no moment, where no fact has one) (``holds``: expected
        to hold there, a why; else a why-not): an earlier edge's explanation whose reads
        all answer the same at ``revision`` and ``now``, else :func:`explain` through this
        (None where it does not apply)."""
        program = self.program(r, revision)
        t = None if now is None else instant(now, "now")
        k = (id(program), goal, holds)
        made: list[_Made] = self.done.setdefault(k, [])
        point: list[Any] = []  # the revision's own point reader, made for a page read
        policy = _policy(program, t)
        for reads, was, ex in reversed(made[-CANDIDATES:]):
            if was == policy and policy is not None \
                    and self._same(r, reads, revision, t, point):
                self.reused += 1
                return ex
        got = view(r, revision, self, t)
        if got is None:
            return None
        got_ex = explain(r, revision, goal, None, self, t)
        v = got[1]
        if got_ex is not None and isinstance(v.reader, _SharedAt) and v.reader.shared is self:
            self.made += 1
            with v.lock:  # (another thread's check may read through the kept view)
                made.append((dict(v.reader.log), policy, got_ex))
        return got_ex

    def _same(self, r: Reasoner, reads: dict[_Read, Any], revision: int, t: float | None,
              point: list[Any]) -> bool:
        """Whether every read in ``reads`` answers the same at ``revision`` and the moment
        ``t``: the point reads first (from the versions), then the intervals' facts holding
        at ``t``, the page reads (read again) only if they all do."""
        pages, timed = [], []
        for k, (v, was) in reads.items():
            if k[0] == PAGE:
                pages.append((k, was))
            elif k[0] == TIMED:
                timed.append((v, was))
            elif v.at(revision) != was:  # a point read: its answer's number at the revision
                return False
        for v, was in timed:  # the facts whose interval holds at the view's moment
            if t is None or was is None or self.seen(v.answers[v.at(revision)], t) != was:
                return False
        for (_, rel, bound, limit), was in pages:
            b = dict(bound)
            if not point:
                make = getattr(r.journal, "point_reader", None)
                point.append(None if make is None else make(revision))
            if point[0] is None:
                return False
            page, complete = point[0].first(rel, b, limit)
            if (frozenset(page), complete) != was:
                return False
        return True


def _matches(row: ir.Row, bound: Iterable[tuple[int, ir.Value]]) -> bool:
    return all(i < len(row) and row[i] == x for i, x in bound)


def _policy(program: ir.Program, t: float | None) -> frozenset[tuple[str, ir.Row]] | None:
    """The rule files' facts with a validity interval holding at ``t`` (None: ``t`` is None
    and there are some: no view then)."""
    validity = getattr(program, "validity", None) or {}
    if not validity:
        return frozenset()
    if t is None:
        return None
    return frozenset((rel, row) for rel, rows in validity.items()
                     for row, iv in rows.items() if holds(iv, t))


class _Versions:
    """The versions of the facts one read matches, each with its intervals, answered per
    revision: the revisions where some fact came or went cut them into stretches, each with
    one answer, numbered once per distinct answer (two revisions whose numbers are equal
    have the same rows). A stretch's rows are those of the last one computed with the facts
    that came and went at the cuts between them (edges are asked mostly in order)."""

    def __init__(self, rows: Mapping[ir.Row, Sequence[tuple[int, int]]]) -> None:
        self.rows = rows
        came: dict[int, list[ir.Row]] = {}
        went: dict[int, list[ir.Row]] = {}
        for row, spans in rows.items():
            for lo, hi in spans:
                came.setdefault(lo, []).append(row)
                went.setdefault(hi, []).append(row)
        #: where the answer may change: every interval's ends, sorted
        self.cuts = sorted(came.keys() | went.keys())
        self._came = [came.get(c, ()) for c in self.cuts]
        self._went = [went.get(c, ()) for c in self.cuts]
        self._stretch: dict[int, int] = {}  # stretch -> its answer's number
        self._numbers: dict[frozenset[ir.Row], int] = {}
        self.answers: list[frozenset[ir.Row]] = []
        self._s = 0  # the stretch :attr:`_rows` is of (0: before the first cut, none)
        self._rows: set[ir.Row] = set()
        #: a kept view reading through this may answer another thread's check meanwhile
        self._lock = threading.Lock()

    def at(self, revision: int) -> int:
        """The number of the answer at ``revision`` (:attr:`answers` holds its rows)."""
        s = bisect_right(self.cuts, revision)
        got = self._stretch.get(s)
        if got is not None:
            return got
        with self._lock:
            rows = self._rows
            while self._s < s:  # forward over cut ``_s``: what ended there goes, what began
                # there comes
                rows.difference_update(self._went[self._s])
                rows.update(self._came[self._s])
                self._s += 1
            while self._s > s:  # back over cut ``_s - 1``
                self._s -= 1
                rows.difference_update(self._came[self._s])
                rows.update(self._went[self._s])
            key = frozenset(rows)
            got = self._numbers.get(key)
            if got is None:
                got = self._numbers[key] = len(self.answers)
                self.answers.append(key)
            self._stretch[s] = got
        return got


class _SharedAt:
    """A point reader of one revision reading through a :class:`Shared`, keeping each read
    and its answer (``log``). A lookup on several columns is read with all of them bound
    (``narrows``: engine/answer/pointread.py ``_Index``), so that what is kept is what the
    explanation was answered (a grant's object asked for one privilege: that privilege's
    grants, not every grant on the object). ``now``: the moment of the view reading through
    it (a ``MomentView``'s), at which the validity intervals it reads (:meth:`timed`) are
    seen."""

    narrows = True

    def __init__(self, shared: Shared, point: Any, now: float | None = None) -> None:
        self.shared, self.point, self.now = shared, point, now
        self.revision: int = point.revision
        self.log: dict[_Read, Any] = {}

    def rows(self, rel: str, bound: Mapping[int, ir.Value]) -> list[ir.Row]:
        v = self.shared.versions(rel, bound)
        n = v.at(self.revision)
        self.log[(ROWS, rel, tuple(bound.items()), None)] = (v, n)
        return list(v.answers[n])

    def first(self, rel: str, bound: Mapping[int, ir.Value],
              limit: int | None = None) -> tuple[list[ir.Row], bool]:
        if limit is None or rel == VALID or self.shared.has(rel, bound):
            # (whether any fact has a validity interval: every such row over the edges read
            # once, none in most stores; pointread.py ``usable``)
            return self.rows(rel, bound), True
        page, complete = self.point.first(rel, bound, limit)
        self.log[(PAGE, rel, tuple(bound.items()), limit)] = (None, (frozenset(page), complete))
        return page, complete

    def timed(self, rel: str, bound: Mapping[int, ir.Value]) -> list[ir.Row]:
        """The ``@valid`` rows at the revision of the facts of ``rel`` matching ``bound``
        (grantlog/store/temporal.py ``PastFacts.timed``), from their versions; kept as the
        facts whose interval holds at :attr:`now` (what the view takes of them)."""
        v = self.shared.timed(rel, bound)
        got = v.answers[v.at(self.revision)]
        self.log[(TIMED, rel, tuple(bound.items()), None)] = (
            v, None if self.now is None else self.shared.seen(got, self.now))
        return list(got)


def shared(r: Reasoner, revisions: Iterable[int]) -> Shared | None:
    """The reads of explanations at ``revisions`` shared (:class:`Shared`), or None where
    the journal has no timed reader (no temporal table)."""
    revs = sorted(set(revisions))
    make = getattr(r.journal, "timed_reader", None)
    reader = None if make is None or not revs else make()
    return None if reader is None else Shared(reader, revs[0], revs[-1])


def view(r: Reasoner, revision: int, shared: Shared | None = None, now: object = None,
         ) -> tuple[ir.Program, pointread.PastView] | None:
    """The program in force at ``revision`` and the point-read view of it (kept with the
    views of as-of checks: engine/answer/history.py), or None where point reads do not
    apply there (no point reader for it; facts with validity intervals and no ``now``).
    ``now``: the moment the facts' validity intervals are read at, where some fact has one
    (the view is then of the facts as they stood at ``now``: pointread.py ``MomentView``,
    kept for that moment only). ``shared``: a new view reads through it (:class:`Shared`;
    where facts over its edges have intervals, every view with a moment is one at that
    moment, so that what each explanation saw of them is kept with it)."""
    journal = r.journal
    if journal is None:
        return None
    program = _program(r, revision) if shared is None else shared.program(r, revision)
    t = None if now is None else instant(now, "now")
    key = ("points", revision, program.digest)
    got = history._kept.get(r, key)
    if got is None or not got.fits(t):  # (a view of another moment: not this one's)
        make = getattr(journal, "point_reader", None)
        reader = None if make is None else make(revision)
        if reader is None:
            return None
        at = False  # a view at the moment ``t``
        if shared is not None:
            reader = shared.at(reader, t)
            at = t is not None and (bool(program.validity) or shared.moments())
        if not at and not pointread.usable(program, reader):
            at = t is not None
            if not at:
                return None
        if at and getattr(reader, "timed", None) is None:
            return None  # (intervals not read by points)
        pointread.planned(r, program)  # planned once, by the live reasoner's statistics
        got = pointread.MomentView(program, reader, t) if at and t is not None \
            else pointread.PastView(program, reader)
        history._kept.put(r, key, got)
    assert isinstance(got, pointread.PastView)
    return program, got


def _program(r: Reasoner, revision: int) -> ir.Program:
    """The program in force at ``revision`` (the reasoner's own when it is the same)."""
    program: ir.Program = r.journal.policy_at(revision) or r.program
    return r.program if program.digest == r.program.digest else program


def explain(r: Reasoner, revision: int, goal: str, limits: Limits | None = None,
            shared: Shared | None = None, now: object = None) -> Explanation | None:
    """``r.explain(goal, limits, at_revision=revision)`` by point reads (see the module
    docstring), the facts' validity intervals read at the moment ``now`` (as the reasoner
    of that revision moved to ``now`` answers, ``validity.at``; with no ``now`` where some
    fact has one: None); None where they do not apply (:func:`explain_at` asks the
    rebuilt reasoner then). ``shared``: the reads of a timeline's other edges
    (:class:`Shared`)."""
    got = view(r, revision, shared, now)
    return None if got is None else point_proofs.explain_in(*got, goal, limits)


def explain_at(r: Reasoner, revision: int, goal: str,
               limits: Limits | None = None) -> Explanation:
    """The explanation of ``goal`` at ``revision``: by point reads where they apply, else
    from the rebuilt reasoner of that revision, or the one it keeps already."""
    kept = history.kept(r, revision)
    got = None if kept is not None else explain(r, revision, goal, limits)
    if got is not None:
        return got
    return history.past(r, revision, None).explain(goal, limits)  # type: ignore[no-any-return]


__all__ = ["Shared", "explain", "explain_at", "shared", "view"]
