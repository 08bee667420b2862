"""Sets of revisions as sorted lists of disjoint half-open intervals ``[lo, hi)``: the
algebra of facts that carry the revisions they held in (engine/answer/timed.py evaluates rules
over them: a join intersects, a union merges, a negation subtracts; the review on Spark,
spark_bridge/review.py, does the same in DataFrame columns).

A :data:`Spans` is a list of ``(lo, hi)`` with ``lo < hi``, sorted, neither overlapping nor
touching (``[1, 3)`` and ``[3, 5)`` are one ``[1, 5)``); the empty list is no revision.

**Moments** (:class:`Moments`). With validity intervals (expiring and scheduled grants:
engine/answer/validity.py) a timeline also changes between two commits, when time passes an
interval's bound. Its points are then the commits *and* those moments, in the order the replay
of the log meets them (engine/answer/timelines.py ``keyed``): commit ``R`` at its time, then
each bound ``t`` after it at revision ``R`` up to the next commit's time (a bound at a commit's
own time passes before that commit). Revisions and times both grow along it, so it is the
lexicographic order of ``(revision, time)``, and each point is one integer: ``R << SHIFT`` for
commit ``R`` (before every moment of ``R``), ``(R << SHIFT) + OFFSET + µs`` for the moment
``µs`` (microseconds since the epoch, as intervals are kept) passed at ``R``. A fact present
in revisions ``[lo, hi)`` is present at the points ``[lo << SHIFT, hi << SHIFT)``; a validity
interval ``[from, until)`` holds at the points ``[p(from), p(until))``, where ``p(t)`` is the
moment ``t`` at the revision in force then (the last committed before ``t``; a bound before
the timeline's start is its start). Both are intervals of the one axis, so the algebra above
applies unchanged (ints, no pairs to compare). Why not a two-dimensional domain (revision
stretches x time): a fact's presence would become a union of rectangles, each join a
rectangle intersection, each negation a rectangle difference (fragmenting), and the timeline
would still be read off along the same path at the end; the one axis costs one lookup of
``p(t)`` per distinct bound met (indexed: the revisions by commit time).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

#: revisions ``[lo, hi)``, sorted, disjoint and not touching
Spans = list[tuple[int, int]]


def merge(parts: Iterable[tuple[int, int]]) -> Spans:
    """The union of any intervals (unsorted, overlapping), as :data:`Spans`."""
    out: Spans = []
    for lo, hi in sorted(parts):
        if lo >= hi:
            continue
        if out and lo <= out[-1][1]:
            if hi > out[-1][1]:
                out[-1] = (out[-1][0], hi)
        else:
            out.append((lo, hi))
    return out


def meet(a: Spans, b: Spans) -> Spans:
    """The revisions in both."""
    if not a or not b:
        return []
    if len(a) == 1 and b[0][0] >= a[0][0] and b[-1][1] <= a[0][1]:
        return b  # ``a`` covers ``b`` (a stretch's whole, most often)
    if len(b) == 1 and a[0][0] >= b[0][0] and a[-1][1] <= b[0][1]:
        return a
    out: Spans = []
    i = j = 0
    while i < len(a) and j < len(b):
        lo = max(a[i][0], b[j][0])
        hi = min(a[i][1], b[j][1])
        if lo < hi:
            out.append((lo, hi))
        if a[i][1] < b[j][1]:
            i += 1
        else:
            j += 1
    return out


def minus(a: Spans, b: Spans) -> Spans:
    """The revisions in ``a`` and not in ``b``."""
    if not a or not b:
        return a
    out: Spans = []
    j = 0
    for lo, hi in a:
        while j < len(b) and b[j][1] <= lo:
            j += 1
        k = j
        while k < len(b) and b[k][0] < hi:
            if b[k][0] > lo:
                out.append((lo, b[k][0]))
            lo = max(lo, b[k][1])
            if lo >= hi:
                break
            k += 1
        if lo < hi:
            out.append((lo, hi))
    return out


#: a commit's position on the axis of moments is its revision shifted by this many bits
SHIFT = 64
#: added to a moment's microseconds (so that every moment of a revision follows its commit)
OFFSET = 1 << 63
MASK = (1 << SHIFT) - 1
INF = float("inf")


def micros(t: float) -> int:
    return round(t * 1_000_000)


class Moments:
    """The axis of a timeline with validity intervals, from revision ``first`` at time
    ``start`` (the state the timeline starts from) to revision ``last`` at time ``end``
    (None: at its commit only); ``before(t)``: the last revision committed before ``t``
    (None: none kept). See the module docstring."""

    def __init__(self, first: int, last: int, start: float, end: float | None,
                 before: Callable[[float], int | None]) -> None:
        self.first, self.last, self.t0 = first, last, start
        self.start = first << SHIFT
        self.end = (last << SHIFT) + 1 if end is None else \
            (last << SHIFT) + OFFSET + micros(end) + 1
        self._before = before
        self._at: dict[float, int] = {}
        #: the moments placed (validity bounds), by position: the time and its text
        self.named: dict[int, tuple[float, str | None]] = {}

    def at(self, t: float, text: str | None = None) -> int:
        """The position of a validity bound ``t`` (``text``: as the store keeps it)."""
        got = self._at.get(t)
        if got is None:
            if t <= self.t0:  # before the start (or at it): held at the start already
                got = self.start
            elif t == INF:
                got = self.end
            else:
                rev = self._before(t)
                rev = self.first if rev is None else min(max(rev, self.first), self.last)
                got = (rev << SHIFT) + OFFSET + micros(t)
                self.named.setdefault(got, (t, text))
            self._at[t] = got
        return got

    def stretch(self, lo: int, hi: int) -> Spans:
        """The points of revisions ``lo`` to ``hi`` (a policy's stretch)."""
        return [(lo << SHIFT, min((hi + 1) << SHIFT, self.end))]

    def revisions(self, spans: Iterable[tuple[int, int]]) -> Spans:
        """Revision intervals (sorted, disjoint) as the points of the axis."""
        end = self.end
        out = [(lo << SHIFT, hi << SHIFT) for lo, hi in spans]
        if out and out[-1][1] > end:
            out = [(lo, min(hi, end)) for lo, hi in out if lo < end]
        return out

    def valid(self, spans: Spans, lo: float, hi: float, text: tuple[str | None, str | None] = (
              None, None)) -> Spans:
        """``spans`` while a validity interval ``[lo, hi)`` holds."""
        a, b = self.at(lo, text[0]), self.at(hi, text[1])
        return meet(spans, [(a, b)]) if a < b else []


def revision(position: int, moments: Moments | None) -> int:
    """The revision in force at a position (a revision itself without moments)."""
    return position if moments is None else position >> SHIFT


__all__ = ["MASK", "SHIFT", "Moments", "Spans", "meet", "merge", "minus", "revision"]
