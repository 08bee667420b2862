"""The one sideways-information-passing loop every planner runs (memory, statistics, magic
sets, Spark): :func:`greedy` takes the best-scored item left until none is, each caller passing
its own score (the policy; engine/plan/join.py :class:`~.join.Policy` is the in-memory one), and
:func:`place_ready` places comparisons and negations as soon as they are bound."""

from __future__ import annotations

import heapq
from collections.abc import Callable, Hashable, Iterable, Iterator, Sequence
from typing import Any, TypeVar

T = TypeVar("T")


def place_ready(pending: list[tuple[int, T]], place: Callable[[int, T], bool]) -> None:
    """Place the ``pending`` comparisons and negations (body position, literal) as soon as
    they are ready, until none is: ``place`` places one (True) or finds it not ready (False);
    an assignment placed can make another literal ready."""
    progress = True
    while progress:
        progress = False
        for item in list(pending):
            if place(*item):
                pending.remove(item)
                progress = True


def greedy(items: Iterable[T], score: Callable[[T], Any], take: Callable[[T], Any],
           depends: Callable[[T], Iterable[Hashable]] | None = None) -> None:
    """The one sideways-information-passing loop every planner runs (memory, statistics,
    magic sets, Spark): take the best-scored item left (highest ``score``; ties: the first
    in ``items``) until none is; ``take`` places it and binds its variables, which the next
    round's scores see. Each caller passes its own score: the policy.

    With ``depends`` (the names an item's score reads, e.g. its variables), ``take`` returns
    the names it bound, and only the items that read one of them are scored again: a heap
    of scores instead of a pass over every item left per round, so a body of n atoms is
    ordered in about n log n steps, not n² scores (a 1,600-literal body: n³ with its delta
    variants). The choice is the same as the full pass's, provided a score changes only
    when a name it depends on is bound. :func:`greedy_steps` is the same loop, one take at
    a time."""
    for _ in greedy_steps(items, score, take, depends):
        pass


class Start:
    """What :func:`greedy_steps` computes before its first take, kept to start several runs
    over the same items from (the delta variants of one body, :class:`Variants`): every
    item's score with nothing bound, the items sorted by them (best first), and name -> the
    items whose score reads it. A run reads the sorted items through a pointer and keeps
    the items it scores again in a heap of its own: nothing copied per run. Valid for a run
    whose scores, with nothing bound, are these (a pure score)."""

    __slots__ = ("fast", "order", "readers", "scores", "shape")

    def __init__(self, items: Sequence[T], score: Callable[[T], Any],
                 depends: Callable[[T], Iterable[Hashable]]) -> None:
        self.readers: dict[Hashable, list[int]] = {}
        self.scores = []
        for k, item in enumerate(items):
            for name in depends(item):
                self.readers.setdefault(name, []).append(k)
            self.scores.append(score(item))
        # the entries: (negated score, item, version) while every score is a number or a
        # tuple of numbers of one length (compared in C), else :class:`_Entry`
        self.shape = _shape(self.scores[0]) if self.scores else None
        self.fast = self.shape is not None and all(_shape(x) == self.shape for x in self.scores)
        self.order: list[Any] = sorted(
            [(_negated(x), k, 0) for k, x in enumerate(self.scores)] if self.fast
            else [_Entry(x, k, 0) for k, x in enumerate(self.scores)])


def greedy_steps(items: Sequence[T] | Iterable[T], score: Callable[[T], Any],
                 take: Callable[[T], Any],
                 depends: Callable[[T], Iterable[Hashable]] | None = None,
                 start: Start | None = None, taken: Iterable[int] = (),
                 bound: Iterable[Hashable] = ()) -> Iterator[None]:
    """:func:`greedy`, yielding after each take. ``start``: the state before the first take
    computed once for several runs (:class:`Start`, over the same ``items``; needs
    ``depends``), this run's ``taken`` items left out and the items reading the names in
    ``bound`` (bound before the run) scored again, as if the run had scored them all now."""
    if depends is None:
        rest = list(items)
        while rest:
            best = max(rest, key=score)
            rest.remove(best)
            take(best)
            yield
        return
    left = items if isinstance(items, list) else list(items)
    if start is None:
        start = Start(left, score, depends)
    readers, shape, fast = start.readers, start.shape, start.fast
    base, at = start.order, 0  # the entries scored with nothing bound, best first
    heap: list[Any] = []  # the entries scored again in this run
    scores: dict[int, Any] = {}
    version: dict[int, int] = {}
    done = set(taken)
    seen: set[Hashable] = set()

    def rescore(names: Iterable[Hashable]) -> None:
        nonlocal fast, heap, base
        for name in names:
            if name in seen:
                continue
            seen.add(name)
            for j in readers.get(name, ()):
                if j in done:
                    continue
                v = version[j] = version.get(j, 0) + 1
                x = scores[j] = score(left[j])
                if fast and _shape(x) != shape:  # from now on, compared in Python
                    fast, base = False, []
                    heap = [_Entry(scores.get(i, start.scores[i]), i, version.get(i, 0))
                            for i in range(len(left)) if i not in done and i != j]
                    heapq.heapify(heap)
                heapq.heappush(heap, (_negated(x), j, v) if fast else _Entry(x, j, v))

    rescore(bound)
    while True:
        if heap and (at == len(base) or heap[0] < base[at]):
            e = heapq.heappop(heap)
        elif at < len(base):
            e, at = base[at], at + 1
        else:
            return
        k, v = (e[1], e[2]) if fast else (e.k, e.version)
        if k in done or v != version.get(k, 0):
            continue  # taken, or scored again since
        done.add(k)
        rescore(take(left[k]) or ())
        yield


def _shape(score: Any) -> int | None:
    """-1 for a number, n for a tuple of n numbers, else None (see :func:`_negated`)."""
    t = type(score)
    if t is int or t is float:
        return -1
    if t is tuple and all(type(x) is int or type(x) is float for x in score):
        return len(score)
    return None


def _negated(score: Any) -> Any:
    """A number or a tuple of numbers of one length, negated: the order reversed."""
    return -score if type(score) is not tuple else tuple(-x for x in score)


class _Entry:
    """An item's score in :func:`greedy`'s min-heap where scores are not all numbers (or
    tuples of numbers of one length): the least entry is the highest score, then the first
    item."""

    __slots__ = ("k", "key", "version")

    def __init__(self, key: Any, k: int, version: int) -> None:
        self.key, self.k, self.version = key, k, version

    def __lt__(self, other: _Entry) -> bool:
        if self.key == other.key:
            return self.k < other.k
        return bool(other.key < self.key)
