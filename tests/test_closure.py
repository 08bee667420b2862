"""Transitive closures answered by a graph search (engine/eval/demand.py ``DemandPlans.closure``):
which rule sets qualify, and, on random graphs with cycles and self-loops, lookups on either
column and on both that equal materialization, with the rule recorded per row."""

from __future__ import annotations

import itertools

from grantlog.engine.eval.closure import Closure
from grantlog.engine.plan.demand import DemandPlans
from hypothesis import given, settings
from hypothesis import strategies as st

import grantlog

LEFT = """
rel edge(a, b).
@demand rel reach(a, b).
base: reach(X, Y) :- edge(X, Y).
step: reach(X, Y) :- reach(X, Z), edge(Z, Y).
"""
RIGHT = """
rel edge(a, b).
@demand rel reach(a, b).
step: reach(X, Y) :- edge(X, Z), reach(Z, Y).
base: reach(X, Y) :- edge(X, Y).
"""
NODES = ["a", "b", "c", "d", "e"]


def _closure(text: str) -> Closure | None:
    p = grantlog.compile(text)
    return DemandPlans(p).closure("reach")


def test_left_and_right_linear_closures_qualify() -> None:
    for text in (LEFT, RIGHT):
        got = _closure(text)
        p = grantlog.compile(text)
        names = {r.index: r.name for r in p.rules}
        assert got is not None and got.edge == "edge"
        assert (names[got.exit], names[got.step]) == ("base", "step")


def test_other_recursions_do_not_qualify() -> None:
    head = "rel edge(a, b).\nrel other(a, b).\n@demand rel reach(a, b).\n"
    base = "reach(X, Y) :- edge(X, Y).\n"
    for step in (
        "reach(X, Y) :- reach(X, Z), edge(Y, Z).",  # the edge walked backwards
        "reach(X, Y) :- reach(Z, X), edge(Z, Y).",  # not a path
        "reach(X, Y) :- reach(X, Z), other(Z, Y).",  # another edge relation
        "reach(X, Y) :- reach(X, Z), edge(Z, Y), X != Y.",  # an extra literal
        "reach(X, Y) :- reach(X, X), edge(X, Y).",  # a repeated variable
        "reach(X, Y) :- reach(X, Z), reach(Z, Y).",  # non-linear
    ):
        assert _closure(head + base + step + "\n") is None, step
    step = "reach(X, Y) :- reach(X, Z), edge(Z, Y).\n"
    assert _closure(head + "reach(X, Y) :- edge(Y, X).\n" + step) is None  # reversed exit
    assert _closure(head + "reach(X, a) :- edge(X, a).\n" + step) is None  # a constant
    assert _closure(head + base + step + "reach(X, Y) :- other(X, Y).\n") is None  # 3 rules
    # the edge relation itself answered on demand
    derived = ("rel link(a, b).\n@demand rel edge(a, b).\n@demand rel reach(a, b).\n"
               "edge(X, Y) :- link(X, Y).\n" + base + step)
    assert _closure(derived) is None


def _facts(edges: list[tuple[str, str]]) -> str:
    return "".join(f"edge({x}, {y}).\n" for x, y in edges)


def _rules_of(r: grantlog.Reasoner, rows: dict[tuple[object, ...], int]) -> dict[
        tuple[object, ...], str]:
    names = {x.index: x.name for x in r.program.rules}
    return {row: names[rid] for row, rid in rows.items()}


@settings(max_examples=60, deadline=None)
@given(edges=st.lists(st.tuples(st.sampled_from(NODES), st.sampled_from(NODES)), max_size=9),
       right=st.booleans(), stored=st.booleans())
def test_closure_lookups_match_materialization(edges: list[tuple[str, str]], right: bool,
                                               stored: bool) -> None:
    text = (RIGHT if right else LEFT) + _facts(edges)
    if stored:  # rows stored in the closure relation (`@writable`): the generic tabled
        # evaluation
        text = text.replace("@demand rel reach", "@demand @writable rel reach") + "reach(e, a).\n"
    materialized = grantlog.Reasoner(grantlog.compile(text.replace("@demand ", "")))
    on_demand = grantlog.Reasoner(grantlog.compile(text))
    assert "reach" in on_demand.program.virtual
    for x, y in itertools.product([*NODES, "X"], [*NODES, "Y"]):
        goal = f"reach({x}, {y})"
        assert on_demand.query(goal) == materialized.query(goal), goal
    direct = set(edges)
    ctx = on_demand.view()
    for y in NODES:
        got = ctx.demand("reach", (1,), (y,))
        if not stored:
            assert ctx.lookup_of("reach", (1,)).closure is not None
            # rows over a direct edge were derived by the base rule, the others by the step
            assert _rules_of(on_demand, got) == {
                row: "base" if row in direct else "step" for row in got}
        for x in NODES:
            point = ctx.demand("reach", (0, 1), (x, y))
            assert set(point) == ({(x, y)} & set(got))


def test_a_check_through_a_closure_explains_and_follows_updates() -> None:
    r = grantlog.Reasoner(grantlog.compile(LEFT + "edge(a, b). edge(b, c). edge(c, d).\n"))
    assert r.ask("reach(a, d)")
    proof = r.explain("reach(a, d)")
    assert proof.holds
    r.retract("edge", [("b", "c")])
    assert not r.ask("reach(a, d)") and r.ask("reach(c, d)")
    r.insert("edge", [("d", "a"), ("b", "c")])  # a cycle through a
    assert r.ask("reach(a, a)") and r.ask("reach(c, b)") and not r.ask("reach(a, e)")


@settings(max_examples=60, deadline=None)
@given(up=st.dictionaries(st.sampled_from(NODES), st.sampled_from(NODES), max_size=5),
       right=st.booleans(), forward=st.booleans())
def test_walks_of_a_unique_index_follow_a_chain(up: dict[str, str], right: bool,
                                                forward: bool) -> None:
    """Every node with one edge at most towards its ancestors (a forest, or a cycle, or a
    self-loop: ``up`` maps a node to the one it leads to): the index the walk reads is
    unique, and the walk follows a chain (engine/eval/closure.py ``walker``). Rows, and the rule
    recorded for each, equal the breadth-first walk's and materialization's."""
    from grantlog.engine.core.index import UniqueIndex
    from grantlog.engine.eval.closure import walk, walker

    # forward: edge(X, Y) from X to up[X], walked from the first column; else edge(up[Y], Y)
    # walked back from the second
    edges = [(x, y) for x, y in up.items()] if forward else [(y, x) for x, y in up.items()]
    text = (RIGHT if right else LEFT) + _facts(edges)
    materialized = grantlog.Reasoner(grantlog.compile(text.replace("@demand ", "")))
    on_demand = grantlog.Reasoner(grantlog.compile(text))
    ctx = on_demand.view()
    cols = (0,) if forward else (1,)
    lk = ctx.lookup_of("reach", cols)
    assert lk.closure is not None
    index = ctx.base_index("edge", cols)
    if edges:
        assert type(index) is UniqueIndex
    direct = set(edges)
    for n in NODES:
        got = ctx.demand("reach", cols, (n,))
        assert got == walk(lk.closure, index, n, forward)
        assert got == walker(lk.closure, index, forward)(n)
        goal = f"reach({n}, Y)" if forward else f"reach(X, {n})"
        assert on_demand.query(goal) == materialized.query(goal), goal
        assert _rules_of(on_demand, got) == {
            row: "base" if row in direct else "step" for row in got}
