"""Statistics for goal-directed plans: distinct counts of big relations are estimated from a
sample, close enough for ordering joins (within a factor of two here)."""

from __future__ import annotations

from grantlog.engine.stats import SAMPLE, Statistics

import grantlog


def test_distinct_counts_of_big_relations_are_estimated_from_a_sample() -> None:
    p = grantlog.compile("rel t(key: int, kind: int, group: int).")
    n = 5 * SAMPLE
    rows = {(i, i % 7, i // 50): 0 for i in range(n)}  # a key, 7 kinds, groups of 50
    st = Statistics(p, {"t": rows})
    assert st.distinct("t", 1) == 7
    assert n / 2 <= st.distinct("t", 0) <= 2 * n
    assert (n // 50) / 2 <= st.distinct("t", 2) <= 2 * (n // 50)
    small = Statistics(p, {"t": {(i, i % 3, 0): 0 for i in range(100)}})
    assert (small.distinct("t", 0), small.distinct("t", 1), small.distinct("t", 2)) == (100, 3, 1)
