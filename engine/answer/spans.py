"""Sets of revisions as sorted lists of disjoint half-open intervals ``[lo, hi)``: the
algebra of facts that carry the revisions they held in (engine/answer/timed.py evaluates rules
over them: a join intersects, a union merges, a negation subtracts; the review on Spark,
spark_bridge/review.py, does the same in DataFrame columns).

A :data:`Spans` is a list of ``(lo, hi)`` with ``lo < hi``, sorted, neither overlapping nor
touching (``[1, 3)`` and ``[3, 5)`` are one ``[1, 5)``); the empty list is no revision.
"""

from __future__ import annotations

from collections.abc import Iterable

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


__all__ = ["Spans", "meet", "merge", "minus"]
