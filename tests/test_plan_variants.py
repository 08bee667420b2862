"""Delta variants planned together and as they are read (issue 26, item 3).

:class:`Variants` plans the delta variants of one body from what they share (the atoms'
scores with nothing bound, sorted once; the readers of each variable) and :class:`Steps`
plans each only as far as evaluation reads it. Here: every variant is step for step the plan
:func:`plan_variant` makes from nothing (the shipped models and generated bodies), read
in any order; and the planning *work* (scores and scans, counted, not timed) of a
1,600-literal recursive body, whose every variant semi-naive evaluation runs, and of an
insert into a long materialized body, stays linear in the body's length.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest
from grantlog.engine.core import ir
from grantlog.engine.plan import join
from grantlog.engine.plan.join import Steps, Variants, plan_rule, plan_variant
from naive import naive_eval_text

import grantlog

RULES = Path(__file__).resolve().parents[1] / "rules"


def delta_positions(rule: ir.Rule) -> list[int]:
    return [i for i, lit in enumerate(rule.body) if not isinstance(lit, ir.Cmp)]


def random_body(rnd: random.Random, n: int) -> str:
    """A rule of ``n`` literals: binary and ternary atoms of several relations, constants,
    repeated variables, comparisons (some ``X = Y`` assignments), negations."""
    nvars = max(2, n // 2)
    seen = [0]
    lits: list[str] = []
    for i in range(n):
        r = rnd.random()
        if i and r < 0.1:
            a, b = rnd.choice(seen), rnd.randrange(nvars)
            if rnd.random() < 0.5:
                seen.append(b)
                lits.append(f"X{b} = X{a}")
            else:
                lits.append(f"X{a} != \"c\"")
        elif i and r < 0.2:
            lits.append(f"not q(X{rnd.choice(seen)}, _)")
        elif r < 0.6:
            a, b = rnd.choice(seen), rnd.randrange(nvars)
            seen.append(b)
            lits.append(f"{rnd.choice('ef')}(X{a}, X{b})")
        else:
            a, b = rnd.choice(seen), rnd.randrange(nvars)
            c = f'"k{rnd.randrange(3)}"' if rnd.random() < 0.3 else f"X{a}"
            seen.append(b)
            lits.append(f"t(X{a}, X{b}, {c})")
    return ("rel e(a: string, b: string). rel f(a: string, b: string). "
            "rel t(a: string, b: string, c: string). rel q(a: string, b: string).\n"
            f"p(X0) :- {', '.join(lits)}.\n")


def assert_variants_agree(rule: ir.Rule, rnd: random.Random) -> int:
    variants = Variants(rule)
    positions = delta_positions(rule)
    rnd.shuffle(positions)
    for i in positions:
        expected = plan_variant(rule, i)
        lazy = variants.plan(i)
        assert isinstance(lazy.steps, Steps)
        for j in range(rnd.randrange(len(lazy.steps) + 1)):  # a prefix first, then the rest
            assert lazy.steps[j] == expected.steps[j], (str(rule), i, j)
        assert tuple(lazy.steps) == expected.steps, (str(rule), i)
        assert lazy.steps.planned == len(expected.steps)
    return len(positions)


def test_variants_of_the_shipped_models_are_the_plans_from_nothing() -> None:
    rnd = random.Random(5)
    compared = 0
    for path in sorted(RULES.glob("*.gl")):
        program = grantlog.compile(None, paths=[str(path)])
        for rule in program.rules:
            compared += assert_variants_agree(rule, rnd)
    assert compared > 500


def test_variants_of_generated_bodies_are_the_plans_from_nothing() -> None:
    rnd = random.Random(17)
    compared = 0
    for _ in range(40):
        program = grantlog.compile(random_body(rnd, rnd.randrange(1, 40)))
        for rule in program.rules:
            compared += assert_variants_agree(rule, rnd)
    assert compared > 300


def test_plan_rule_plans_recursive_variants_lazily() -> None:
    program = grantlog.compile("r(X, Y) :- e(X, Y).\nr(X, Z) :- r(X, Y), e(Y, W), r(W, Z).")
    rule = program.rules[1]
    plans = plan_rule(rule, frozenset({"r"}))
    assert [p.delta_literal for p in plans] == [0, 2]
    assert all(isinstance(p.steps, Steps) and p.steps.planned == 0 for p in plans)
    for p in plans:
        assert tuple(p.steps) == plan_variant(rule, p.delta_literal or 0).steps
        assert p.steps.planned == len(p.steps) == 3


class Work:
    """The planner's work, counted: scores asked of the policy and atoms read (the policy
    sees each one just before it is read: ``taking``)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.scores = self.scans = 0
        score, taking = join.Policy.score, join.Policy.taking

        def counted_score(policy: join.Policy, *args: Any) -> Any:
            self.scores += 1
            return score(policy, *args)

        def counted_taking(policy: join.Policy, *args: Any) -> None:
            self.scans += 1
            taking(policy, *args)

        monkeypatch.setattr(join.Policy, "score", counted_score)
        monkeypatch.setattr(join.Policy, "taking", counted_taking)

    @property
    def total(self) -> int:
        return self.scores + self.scans


def long_recursive(n: int) -> str:
    return ('e("a", "b").\ne("b", "c").\nr(X, Y) :- e(X, Y).\n'
            f"r(X0, X{n}) :- " + ", ".join(f"r(X{i}, X{i + 1})" for i in range(n)) + ".\n")


def test_every_variant_of_a_1600_literal_recursive_body_in_linear_work(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # semi-naive evaluation runs all 1,600 delta variants in its first round: planned in
    # full, 1,600 plans of 1,600 steps (2.56M scans); each stops at its second step here
    n = 1600
    work = Work(monkeypatch)
    r = grantlog.Reasoner(grantlog.compile(long_recursive(n)))
    assert r.rows("r") == {("a", "b"), ("b", "c")}
    assert work.scans < 4 * n and work.total < 20 * n, (work.scores, work.scans)


def test_an_insert_into_a_long_materialized_body_plans_what_it_reads(
        monkeypatch: pytest.MonkeyPatch) -> None:
    n = 1600
    text = ('@materialize rel p(a: string, b: string).\ne("a", "b").\n'
            f"p(X0, X{n}) :- " + ", ".join(f"e(X{i}, X{i + 1})" for i in range(n)) + ".\n")
    r = grantlog.Reasoner(grantlog.compile(text))
    assert r.rows("p") == set()
    work = Work(monkeypatch)
    r.insert("e", [("c", "d")])  # every one of the 1,600 variants reads the new row
    assert r.rows("p") == set()
    assert work.scans < 4 * n and work.total < 20 * n, (work.scores, work.scans)


def test_lazy_variants_derive_what_a_naive_reading_derives() -> None:
    # a loop: every variant runs its whole body
    text = ("@materialize rel p(a: string, b: string).\n"
            "p(X0, X40) :- " + ", ".join(f"e(X{i}, X{i + 1})" for i in range(40)) + ".\n")
    r = grantlog.Reasoner(grantlog.compile(text))
    r.insert("e", [("a", "a"), ("a", "b")])
    assert r.rows("p") == {("a", "a"), ("a", "b")}
    r.retract("e", [("a", "a")])
    assert r.rows("p") == set()
    rec = ('e("a", "b"). e("b", "a"). e("b", "c"). e("c", "d").\nr(X, Y) :- e(X, Y).\n'
           "r(X0, X5) :- " + ", ".join(f"r(X{i}, X{i + 1})" for i in range(5))
           + ", X2 != X3, not e(X0, X5).\n")
    assert grantlog.Reasoner(grantlog.compile(rec)).rows("r") == naive_eval_text(rec)["r"]
