"""Delta variants that bind the same shared variables share one plan (issue 26, item 3).

A star ``p(X) :- e(X, Y1), ..., e(X, Yn)``: every delta read binds ``X`` (its ``Yi`` matters
to no other literal), so :class:`Variants` plans the body once with ``X`` bound (a template)
and each variant is its delta read and the template without its own literal's step. Here:
those plans are step for step the plans made from nothing (stars with comparisons,
negations, constants and assignments around them, and generated bodies where many atoms
share their variables), whatever order the variants are asked in; and the planning work of
every variant of a 1,600-literal star stays linear (scores and atoms read, counted).
"""

from __future__ import annotations

import random

import pytest
from grantlog.engine.plan.join import Scan, Steps, Variants, plan_variant
from test_plan_variants import Work, assert_variants_agree, delta_positions

import grantlog


def star_body(rnd: random.Random, n: int) -> str:
    """A star over ``X`` with extras: atoms sharing a second variable, constants, a
    comparison and a negation on the centre, an assignment feeding an atom."""
    lits: list[str] = ["e(X, Y0)"]
    ys = [0]  # the Yi some atom binds
    for i in range(1, n):
        r = rnd.random()
        if r < 0.1:
            lits.append('X != "z"')
        elif r < 0.2:
            lits.append(f"not q(X, Y{rnd.choice(ys)})")
        elif r < 0.3:
            lits.append(f"t(X, W, Y{i})")  # W shared by these
            ys.append(i)
        elif r < 0.35:
            lits.append(f'e(X, "k{rnd.randrange(2)}")')
        elif r < 0.4:
            lits.append(f"V{i} = X, f(V{i}, Y{i})")
            ys.append(i)
        else:
            lits.append(f"e(X, Y{i})")
            ys.append(i)
    rnd.shuffle(lits)
    return ("rel e(a: string, b: string). rel f(a: string, b: string). "
            "rel t(a: string, b: string, c: string). rel q(a: string, b: string).\n"
            f"p(X) :- {', '.join(lits)}.\n")


def test_star_variants_are_the_plans_from_nothing() -> None:
    rnd = random.Random(29)
    compared = 0
    for _ in range(30):
        program = grantlog.compile(star_body(rnd, rnd.randrange(2, 40)))
        for rule in program.rules:
            compared += assert_variants_agree(rule, rnd)
    assert compared > 300


def test_plain_star_variants_share_the_template() -> None:
    n = 50
    program = grantlog.compile("p(X) :- " + ", ".join(f"e(X, Y{i})" for i in range(n)) + ".")
    rule = program.rules[0]
    variants = Variants(rule)
    plans = [variants.plan(i) for i in range(n)]
    assert all(isinstance(p.steps, Steps) and p.steps.planned == 0 for p in plans)
    for i in reversed(range(n)):
        steps = tuple(plans[i].steps)
        assert steps == plan_variant(rule, i).steps
        assert [s.literal for s in steps] == [i, *(j for j in range(n) if j != i)]
        # the delta read binds X and Yi, every other atom is a lookup on X
        assert [s.key_cols for s in steps[1:] if isinstance(s, Scan)] == [(0,)] * (n - 1)


def test_generated_bodies_read_in_any_order_twice() -> None:
    rnd = random.Random(31)
    for _ in range(20):
        program = grantlog.compile(star_body(rnd, rnd.randrange(2, 25)))
        rule = program.rules[0]
        variants = Variants(rule)
        positions = delta_positions(rule) * 2
        rnd.shuffle(positions)
        for i in positions:
            assert tuple(variants.plan(i).steps) == plan_variant(rule, i).steps


def test_every_variant_of_a_1600_literal_star_in_linear_work(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # every variant planned to its last step: 1,600 plans of 1,600 steps, the steps copied
    # from one template (it was 2.56M scans and as many scores)
    n = 1600
    program = grantlog.compile("p(X) :- " + ", ".join(f"e(X, Y{i})" for i in range(n)) + ".")
    rule = program.rules[0]
    work = Work(monkeypatch)
    variants = Variants(rule)
    total = sum(len(tuple(variants.plan(i).steps)) for i in range(n))
    assert total == n * n
    assert work.scans < 4 * n and work.total < 20 * n, (work.scores, work.scans)


def test_a_long_recursive_star_derives_what_a_short_one_does() -> None:
    def text(n: int) -> str:
        # one `r` row per X: the search is one path (two rows per X would be 2^n of them)
        return ('e("a", "b").\ne("b", "c").\nr(X, Y) :- e(X, Y).\n'
                "r(X, Y0) :- " + ", ".join(f"r(X, Y{i})" for i in range(n)) + ".\n")
    rows = grantlog.Reasoner(grantlog.compile(text(2))).rows("r")
    assert grantlog.Reasoner(grantlog.compile(text(300))).rows("r") == rows
    assert_variants_agree(grantlog.compile(text(30)).rules[1], random.Random(3))
