"""Plans kept with the program for every reasoner of it, while its statistics look alike.

Each reasoner orders its goal-directed plans by its own statistics (engine/plan/stats.py),
and a fresh reasoner of the same program used to plan the same lookups again: the test
blocks of a rule file (one reasoner each) spent 85 % of their time in the exhaustive join
ordering. A join order (``Statistics.order``) and a lookup's coarser lookup
(engine/plan/demand.py ``DemandPlans.coarse``) depend only on the program and on a few
numbers the estimates read: relation sizes, distinct counts, bucket sizes, the walks of a
closure from sampled values. The statistics record what each estimate reads (:class:`Reads`:
a node per estimate of a virtual relation, shared by the later estimates that reuse it), and
:class:`PlanCache` keeps each decision with what it read. A later planner takes a kept
decision when every number it read falls, on the planner's own statistics, in the same power
of two (:func:`bucket`); otherwise it plans again, and that variant is kept beside the other.

So a reasoner of the same program over facts of similar sizes reuses the plans, and one over
very different sizes (a factor of two in anything the order read) plans again. A plan is an
order of the same body: any order is correct, so a reused plan can only be slower, never
wrong; a factor of two is also what the reasoner tolerates before it re-plans its own plans
as its facts grow. The cache is kept per program (``analysis:plans``), bounded to
:data:`LIMIT` decisions of :data:`VARIANTS` variants each, least recently used first out.
"""

from __future__ import annotations

import math
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Any, Protocol, TypeVar

from ..core import ir
from ..core.analyses import analysis

T = TypeVar("T")
#: decisions kept per program (each a key with up to :data:`VARIANTS` variants)
LIMIT = 4096
#: variants kept per decision (statistics of different shapes), most recently used first
VARIANTS = 4
#: what :meth:`PlanCache.get` gives when no kept variant fits
MISS: Any = object()
#: a relation of fewer rows is read as small, whatever its numbers (:func:`shaped`)
SMALL = 16


class Reads:
    """What one estimate (or one decision) read of the statistics: ``own``, the numbers it
    read itself, by read (``("size", rel)``, ``("distinct", rel, col)``, ``("weighted", rel,
    cols, where)``, ``("closure", rel, cols, sources)``); ``kids``, the nodes of the
    estimates it took from the memo or computed below it (their reads are its reads too)."""

    __slots__ = ("kids", "own")

    def __init__(self) -> None:
        self.own: dict[tuple[Any, ...], Any] = {}
        self.kids: set[Reads] = set()


class Sample(tuple[ir.Value, ...]):
    """Values of a column among stored rows (engine/plan/stats.py ``Statistics._sampled``),
    with where they were drawn from, ``of`` (the atom and the column): a closure's estimate
    walked from them is read again from the same atom's rows on other statistics."""

    of: tuple[ir.Atom, int]


class Measured(Protocol):
    """The statistics as the cache reads them (engine/plan/stats.py ``Statistics``)."""

    reads: Reads
    checked: dict[Any, Any]


def read(stats: Any, what: tuple[Any, ...]) -> Any:
    """A read recorded in a :class:`Reads` (of ``stats`` or of other statistics) made on
    ``stats``: what it records there."""
    outer = stats.reads
    stats.reads = Reads()
    try:
        kind = what[0]
        if kind == "size":
            stats.size(what[1])
        elif kind == "distinct":
            stats.distinct(what[1], what[2])
        elif kind == "weighted":
            stats.weighted(what[1], what[2], what[3])
        else:  # a closure walked from values sampled from atoms' rows
            _, rel, cols, sources = what
            stats._walk(rel, cols, {c: stats._sampled(a, col) for c, a, col in sources})
        return stats.reads.own.get(what)
    finally:
        stats.reads = outer


def shaped(rows: float, v: T) -> T | None:
    """A read's value ``v`` as recorded, of a relation of ``rows`` rows (or a walk over
    ``rows`` nodes): None (small) below :data:`SMALL`. Every plan does little work in a
    small relation, so its numbers (1 or 9 rows, 1 or 3 per key) do not make a plan again:
    the blocks of a rule file's tests, a handful of rows each, share their plans; a big
    relation's are compared by their power of two (:func:`bucket`)."""
    return v if rows >= SMALL else None


def bucket(v: Any) -> Any:
    """The power of two a read's value falls in (None, 0 and negative numbers apart; a
    pair of numbers bucket by bucket): values in one bucket plan alike."""
    if v is None:
        return None
    if isinstance(v, tuple):
        return tuple(map(bucket, v))
    if v <= 0:
        return -2000  # below every power of two a positive float has
    return math.frexp(v)[1]


def holds(node: Reads, stats: Measured) -> bool:
    """Whether every read of ``node`` (and of the nodes below it) falls in the same bucket on
    ``stats``: each read and node checked once per statistics (``stats.checked``)."""
    memo = stats.checked
    got = memo.get(node)
    if got is not None:
        return bool(got)
    memo[node] = True  # (no node is below itself; a cycle would end here)
    ok = True
    for what, was in node.own.items():
        now = memo.get(what, MISS)
        if now is MISS:
            now = memo[what] = read(stats, what)
        if bucket(now) != bucket(was):
            ok = False
            break
    if ok:
        ok = all(holds(kid, stats) for kid in node.kids)
    memo[node] = ok
    return ok


def recorded(stats: Measured, plan: Callable[[], T]) -> tuple[T, Reads]:
    """``plan()`` run with a fresh node recording what it reads of ``stats``; the node is
    also one of the reads of whatever was recording before."""
    outer = stats.reads
    node = stats.reads = Reads()
    try:
        got = plan()
    finally:
        stats.reads = outer
    outer.kids.add(node)
    return got, node


class PlanCache:
    """Decisions of planners of one program, by key (the rule body and its bound variables,
    or the looked-up relation and columns), each with the reads it depends on. Safe to
    share between threads (the variants' lists change under a lock; a check reads
    statistics its caller holds)."""

    def __init__(self) -> None:
        self._kept: OrderedDict[Hashable, list[tuple[Reads, Any]]] = OrderedDict()
        self._lock = threading.Lock()
        #: decisions taken from the cache and planned (what the tests count)
        self.hits = 0
        self.misses = 0

    def __len__(self) -> int:
        return len(self._kept)

    def get(self, key: Hashable, stats: Measured) -> Any:
        """The kept decision for ``key`` whose reads fall in the same buckets on ``stats``
        (its reads then count as ``stats``' current node's), else :data:`MISS`."""
        with self._lock:
            variants = self._kept.get(key)
            if variants is None:
                return MISS
            self._kept.move_to_end(key)
            variants = list(variants)
        for node, got in variants:
            if holds(node, stats):
                stats.reads.kids.add(node)
                with self._lock:
                    self.hits += 1
                    kept = self._kept.get(key) or []
                    at = next((i for i, v in enumerate(kept) if v[0] is node), 0)
                    if at:  # the most recently used variant is tried first
                        kept.insert(0, kept.pop(at))
                return got
        return MISS

    def plan(self, key: Hashable, stats: Measured, plan: Callable[[], T]) -> T:
        """The decision for ``key``: kept, or ``plan()`` now (recording its reads) and kept."""
        got = self.get(key, stats)
        if got is not MISS:
            return got  # type: ignore[no-any-return]
        made, node = recorded(stats, plan)
        with self._lock:
            self.misses += 1
            variants = self._kept.setdefault(key, [])
            variants.insert(0, (node, made))
            del variants[VARIANTS:]
            self._kept.move_to_end(key)
            while len(self._kept) > LIMIT:
                self._kept.popitem(last=False)
        return made


def plan_cache(program: ir.Program) -> PlanCache:
    """The program's :class:`PlanCache`, shared by every planner of it."""
    return analysis(program, "plans", _new)


def _new(_program: ir.Program) -> PlanCache:
    return PlanCache()
