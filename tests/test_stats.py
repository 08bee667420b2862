"""Statistics for goal-directed plans: distinct counts of big relations are estimated from a
sample, close enough for ordering joins (within a factor of two here)."""

from __future__ import annotations

from grantlog.engine import ir
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


def test_an_atoms_constants_select_the_rows_its_lookup_is_estimated_on() -> None:
    """``grant(R, P, A, deny)`` with ``P`` and ``A`` bound: the buckets of the DENY rows, not
    of all rows (ALLOWs pile up on a few objects, DENYs are rare), exact and sampled; and the
    plan that follows reads the selective index before the user's roles."""
    text = ("rel grant(role, priv, obj, cond).\nrel holds(user, role).\n"
            "denied: denied(U, P, O) :- holds(U, R), grant(R, P, O, deny).\n")
    p = grantlog.compile(text)
    for n in (SAMPLE // 2, 4 * SAMPLE):
        grants = {(f"r{i}", "read", f"o{i % 5}", "allow"): 0 for i in range(n)}
        grants.update({(f"r{i}", "read", f"x{i}", "deny"): 0 for i in range(n // 100)})
        st = Statistics(p, {"grant": grants, "holds": {(f"u{i % 50}", f"r{i}"): 0
                                                       for i in range(n)}})
        everything = st.weighted("grant", (1, 2))
        denies = st.weighted("grant", (1, 2), ((3, "deny"),))
        assert everything > n / 10 and denies < 2, (n, everything, denies)
        assert st.weighted("grant", (1, 2), ((3, "none"),)) == 0.0
        body = p.rules[0].body
        first = body[st.order(body, {"U", "P", "O"})[0]]
        assert isinstance(first, ir.Atom) and first.rel == "grant", n
