"""Plans kept with the program (engine/plan/cache.py): a reasoner of the same program over
facts of the same sizes takes the orders another one chose, one over very different sizes
plans again, and gets the order a fresh planner gives it."""

from __future__ import annotations

from grantlog.engine.core import ir
from grantlog.engine.plan.cache import SMALL, PlanCache, bucket, plan_cache, shaped

import grantlog

TEXT = """
rel a(x, y).
rel b(y, z).
@demand rel q(x, z).
q(X, Z) :- a(X, Y), b(Y, Z).
"""


def _world(small: str, n: int, tag: str = "") -> dict[str, list[ir.Row]]:
    """``small`` holds 2 rows, the other relation ``n``: each of ``n`` keys once."""
    few = [(f"x{tag}{i}", f"k{i}") for i in range(2)]
    many = [(f"x{tag}{i}", f"k{i}") for i in range(n)]
    a = few if small == "a" else many
    b = [(y, x) for x, y in (many if small == "a" else few)]
    return {"a": a, "b": b}


def _reasoner(program: grantlog.Program, facts: dict[str, list[ir.Row]]) -> grantlog.Reasoner:
    r = grantlog.Reasoner(program)
    with r.transaction() as tx:
        for rel, rows in facts.items():
            tx.insert(rel, rows)
    return r


def _order(r: grantlog.Reasoner) -> tuple[int, ...] | None:
    """The order of ``q``'s rule asked with nothing bound (after a read that plans it)."""
    r.query("q(X, Z)")
    (rule,) = [rule for rule in r.program.rules if rule.head.rel == "q"]
    return r.planner.order(rule, frozenset())


def test_very_different_sizes_plan_again_as_a_fresh_planner_would() -> None:
    program = grantlog.compile(TEXT)
    first = _reasoner(program, _world("a", 1000))
    second = _reasoner(program, _world("b", 1000))
    # each order as a planner of its own program (nothing kept from the other) makes it
    fresh = [_order(_reasoner(grantlog.compile(TEXT), _world(s, 1000))) for s in "ab"]
    assert fresh[0] != fresh[1]  # the sizes decide: the small relation is read first
    assert [_order(first), _order(second)] == fresh
    assert second.planner.stats is not None and second.planner.stats.steps > 0


def test_the_same_sizes_take_the_kept_plans() -> None:
    program = grantlog.compile(TEXT)
    cache = plan_cache(program)
    first = _reasoner(program, _world("a", 1000))
    order = _order(first)
    assert first.planner.stats is not None and first.planner.stats.steps > 0
    hits, misses = cache.hits, cache.misses
    assert misses > 0
    # other rows, the same sizes: no order estimated, every decision taken from the cache
    again = _reasoner(program, _world("a", 1000, tag="other"))
    assert _order(again) == order
    assert again.planner.stats is not None and again.planner.stats.steps == 0
    assert cache.misses == misses and cache.hits > hits
    # twice the rows of the big relation: a power of two further, planned again
    bigger = _reasoner(program, _world("a", 2000))
    assert _order(bigger) == order
    assert bigger.planner.stats is not None and bigger.planner.stats.steps > 0
    assert cache.misses > misses


def test_small_relations_read_alike_and_the_cache_is_bounded() -> None:
    assert shaped(SMALL - 1, 3.0) is None and shaped(SMALL, 3.0) == 3.0
    assert bucket(1000) == bucket(1023) != bucket(1024)
    assert bucket(0) != bucket(0.5) and bucket(None) is None
    assert bucket((0.5, 3.0)) == (bucket(0.5), bucket(3.0))
    from grantlog.engine.plan import cache as mod

    program = grantlog.compile(TEXT)
    r = _reasoner(program, _world("a", 100))
    _order(r)
    stats = r.planner.stats
    assert stats is not None
    kept = PlanCache()
    for i in range(mod.LIMIT + 10):
        kept.plan(("k", i), stats, lambda i=i: i)
    assert len(kept) == mod.LIMIT
    assert kept.plan(("k", mod.LIMIT + 9), stats, lambda: -1) == mod.LIMIT + 9
    assert kept.plan(("k", 0), stats, lambda: -1) == -1  # the oldest went first
