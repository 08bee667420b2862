"""Planning near-linear in a body's length, and suggestions against an index (issue 26, item 3).

The plans of the shipped models are pinned byte for byte by tests/golden/plan (test_plan.py);
here: a 1,600-literal body plans (``within`` is a hang guard, not a timing assertion), the
incremental greedy choice and placement agree with the full passes they replace on random
inputs, and :class:`Names` suggests what :func:`closest` does for misspellings.
"""

from __future__ import annotations

import random

from conftest import within
from grantlog.engine.core import ir
from grantlog.engine.core.suggest import INDEXED_FROM, Names, closest, did_you_mean
from grantlog.engine.plan.codegen import solve
from grantlog.engine.plan.greedy import greedy, place_ready
from grantlog.engine.plan.join import Waiting, order_body, plan_rule, plan_variant

import grantlog


def chain(n: int) -> str:
    return 'e("a", "b").\n' + f"p(X0, X{n}) :- " + ", ".join(
        f"e(X{i}, X{i + 1})" for i in range(n)) + ".\n"


def test_a_1600_literal_body_plans() -> None:
    program = grantlog.compile(chain(1600))
    rule = next(r for r in program.rules if r.head.rel == "p")
    steps = within(30, lambda: order_body(rule.body))
    assert [s.literal for s in steps] == list(range(1600))  # each joined to the one before
    middle = within(30, lambda: plan_variant(rule, 800))
    assert middle.steps[0].literal == 800 and len(middle.steps) == 1600
    r = within(30, lambda: grantlog.Reasoner(program))
    assert within(30, lambda: r.rows("p")) == set()


def star(n: int) -> str:
    return 'e("a", "b").\n' + "p(X) :- " + ", ".join(f"e(X, Y{i})" for i in range(n)) + ".\n"


def test_a_1600_literal_star_body_evaluates() -> None:
    # every literal matches, so a search nests 1,600 steps deep (it raised
    # `evaluation-too-deep`: the interpreter recursed once per step)
    program = grantlog.compile(star(1600))
    rule = next(r for r in program.rules if r.head.rel == "p")
    plan = within(30, lambda: plan_variant(rule, 0))
    assert len(plan.steps) == 1600
    r = grantlog.Reasoner(program)
    assert within(60, lambda: r.rows("p")) == {("a",)}
    assert within(30, lambda: r.ask('p("a")'))
    # the same search through the interpreter directly: every binding, each its own dict
    small = grantlog.compile(star(3))
    envs = list(solve(plan_rule(small.rules[0])[0], {"e": {("a", "b"): 0, ("a", "c"): 0}},
                      None, lambda rel, cols: {"a": [("a", "b"), ("a", "c")]}, {}))
    assert len(envs) == 8 and len({tuple(sorted(e.items())) for e in envs}) == 8


def test_a_first_load_into_a_long_star_body_runs_one_variant() -> None:
    # `e` is empty before the insert: every derivation reads a new `e` row at the first
    # atom, so one delta variant finds them all (it planned and ran 1,600, each of 1,600 steps)
    text = "@materialize rel p(x: string).\n" + star(1600).split("\n", 1)[1]
    r = grantlog.Reasoner(grantlog.compile(text))
    assert r.rows("p") == set()
    within(30, lambda: r.insert("e", [("a", "b")]))
    assert r.rows("p") == {("a",)}


def test_a_first_load_finds_what_the_variants_find() -> None:
    rules = """@materialize rel a(x: string).
        a(X) :- big(X, Y), small(Y), big(Y, Z), not gone(Z).
        big("p", "q"). big("q", "r"). big("q", "s"). gone("r")."""
    r = grantlog.Reasoner(grantlog.compile(rules))
    assert r.rows("a") == set()
    r.insert("small", [("q",), ("r",)])  # empty before
    expected = grantlog.Reasoner(grantlog.compile(rules + ' small("q"). small("r").'))
    assert r.rows("a") == expected.rows("a") == {("p",)}
    with r.transaction() as tx:  # a first load of `small` and a change of `big` at once
        tx.retract("small", [("q",), ("r",)])
    with r.transaction() as tx:
        tx.insert("small", [("s",)])
        tx.insert("big", [("x", "s"), ("s", "t")])
    fresh = grantlog.Reasoner(grantlog.compile(
        rules + ' small("s"). big("x", "s"). big("s", "t").'))
    assert r.rows("a") == fresh.rows("a") == {("q",), ("x",)}


def test_delta_variants_are_planned_when_first_read() -> None:
    # materialized: the change is maintained through the delta variants (planned then)
    r = grantlog.Reasoner(grantlog.compile(
        "@materialize rel p(a: string, b: string).\n" + chain(200)))
    assert r.rows("p") == set()
    r.insert("e", [("a", "a")])  # a loop: X0 .. X199 = a, X200 = a or b
    assert r.rows("p") == {("a", "a"), ("a", "b")}
    r.retract("e", [("a", "a")])
    assert r.rows("p") == set()


def greedy_order(items: list[frozenset[int]], weights: list[int], incremental: bool,
                 ) -> list[int]:
    """The order :func:`greedy` takes ``items`` in: the score, bound members then weight."""
    bound: set[int] = set()
    order: list[int] = []

    def score(k: int) -> tuple[int, int]:
        return (len(items[k] & bound), weights[k])

    def take(k: int) -> set[int]:
        order.append(k)
        fresh = items[k] - bound
        bound.update(fresh)
        return fresh

    greedy(range(len(items)), score, take, (lambda k: items[k]) if incremental else None)
    return order


def test_incremental_greedy_chooses_as_the_full_pass() -> None:
    rnd = random.Random(7)
    for _ in range(200):
        n = rnd.randrange(1, 30)
        items = [frozenset(rnd.sample(range(12), rnd.randrange(0, 4))) for _ in range(n)]
        weights = [rnd.randrange(3) for _ in range(n)]
        assert greedy_order(items, weights, True) == greedy_order(items, weights, False)


def placed_order(lits: list[tuple[int, ir.Lit]], binds: list[list[str]], incremental: bool,
                 ) -> list[int]:
    """The positions placed, in order, as ``binds`` bind variables in turn (an ``=`` binds
    its free side; ``!=`` and negations need every variable bound)."""
    bound: set[str] = set()
    placed: list[int] = []

    def place(pos: int, lit: ir.Lit) -> list[str] | None:
        if isinstance(lit, ir.Cmp):
            names = [t.name for t in (lit.left, lit.right) if isinstance(t, ir.Var)]
            free = [x for x in names if x not in bound]
            if len(free) > (1 if lit.op == "=" else 0):
                return None
            bound.update(free)
            placed.append(pos)
            return free
        assert isinstance(lit, ir.Neg)
        if not all(t.name in bound for t in lit.atom.args if isinstance(t, ir.Var)):
            return None
        placed.append(pos)
        return []

    waiting = Waiting(lits)
    pending = list(lits)
    for names in binds:
        fresh = [x for x in names if x not in bound]
        bound.update(fresh)
        if incremental:
            waiting.place(place, fresh)
        else:
            place_ready(pending, lambda p, lit: place(p, lit) is not None)
    return placed


def test_waiting_places_as_place_ready() -> None:
    rnd = random.Random(11)
    v = [ir.Var(f"X{i}") for i in range(8)]
    for _ in range(300):
        lits: list[tuple[int, ir.Lit]] = []
        for pos in range(rnd.randrange(1, 12)):
            a, b = rnd.sample(v, 2)
            if rnd.random() < 0.5:
                lits.append((pos, ir.Cmp(rnd.choice(["=", "!="]), a, b)))
            else:
                lits.append((pos, ir.Neg(ir.Atom("q", (a, b)))))
        binds = [rnd.sample([x.name for x in v], rnd.randrange(1, 3)) for _ in range(6)]
        assert placed_order(lits, binds, True) == placed_order(lits, binds, False)


def test_names_suggest_as_closest_over_many_names() -> None:
    rnd = random.Random(3)
    names = [f"perm_{''.join(rnd.choice('abcdefgh') for _ in range(6))}_{i}"
             for i in range(INDEXED_FROM + 500)]
    index = Names(names)
    for name in rnd.sample(names, 60):
        k = rnd.randrange(5, 10)
        wrong = name[:k] + name[k + 1] + name[k] + name[k + 2:]
        if wrong in names:
            continue
        assert index.closest(wrong) == closest(wrong, names)
    # no trigram in common with any name, yet close enough: the length window finds it
    spaced = Names([*names, "abab"])
    assert spaced.closest("baba") == closest("baba", [*names, "abab"])
    assert index.closest("zzzzzzzzzzzzzzzzzzzzzzzz") is None
    assert did_you_mean("load_tabel", Names(["load_table", "read"])) == \
        "did you mean `load_table`?"
    assert Names(["load_table"]).closest("load_table") is None  # never the word itself
