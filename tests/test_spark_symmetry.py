"""Interchangeable values on Spark (spark_bridge/symmetry.py): one representative per class
of values with equal signatures, the answers expanded, the same answers as without it.

The analysis on IR from small rule texts (what it keeps, what it refuses: two members in a
head or a negation, `!=` between siblings, an order comparison); on Spark, the shipped
Gravitino model's example world (plus bare tables, so that classes exist) against the in-memory
engine, generated worlds of a small hierarchy program (hypothesis, few examples), a refused
program and a constant that must not be collapsed. All on the shared Spark session
(tests/conftest.py).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from conftest import within
from grantlog.spark_bridge import symmetry as sym
from grantlog.spark_bridge.symmetry import TOP, M, analyse, constants
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import grantlog
from grantlog import spark_bridge as sb

ROOT = Path(__file__).resolve().parent.parent
RULES = ROOT / "rules" / "gravitino.gl"
FACTS = ROOT / "examples" / "gravitino" / "facts.gl"

TREE = """
rel c(parent: string, child: string).
rel tag(obj: string, t: string).
rel user_in(u: string, p: string).
anc(P, C) :- c(P, C).
anc(A, C) :- anc(A, P), c(P, C).
sees(U, X) :- user_in(U, P), anc(P, X).
hidden(U, X) :- sees(U, X), tag(X, secret).
ok(U, X) :- sees(U, X), not hidden(U, X).
refl(X, X) :- c(P, X).
"""
LEAF = {"c": {(TOP, M)}}  # a leaf: one parent, nothing else


def _refusal(extra: str, shape: dict[str, set[Any]] | None = None) -> str | None:
    return analyse(grantlog.compile(TREE + extra), shape or LEAF).refused


def test_the_analysis_keeps_a_hierarchy_and_finds_the_columns_members_reach() -> None:
    v = analyse(grantlog.compile(TREE), LEAF)
    assert v.refused is None
    cols = v.columns()
    assert cols["ok"] == {1} and cols["anc"] == {1} and cols["sees"] == {1}
    assert "user_in" not in cols  # a leaf is never a parent: `anc(M, _)` is not derived
    # a constant in the body the member's rows do not have: that rule never sees a member
    assert _refusal("odd(X, Y) :- c(X, Y), tag(Y, z), X != Y, c(Y, q).") is None


@pytest.mark.parametrize(("extra", "why"), [
    ("sib(X, Y) :- c(P, X), c(P, Y), X != Y.", "relates two members"),
    ("pair(X, Y) :- c(P, X), c(P, Y).", "head `pair(X, Y)` names two members"),
    ("alone(X) :- c(P, X), c(P, Y), not same(X, Y).\nsame(X, X) :- c(_, X).",
     "names two members"),
    ("late(X) :- c(P, X), X > m.", "orders a member"),
])
def test_the_analysis_refuses_what_could_tell_members_apart(extra: str, why: str) -> None:
    got = _refusal(extra)
    assert got is not None and why in got, got


def test_constants_of_the_program_and_its_facts_are_never_members() -> None:
    p = grantlog.compile(TREE + 'p(X) :- c(X, "k1"), X != z.\nc(a, b).\n')
    assert {"secret", "k1", "z", "a", "b"} <= constants(p)


# -- on Spark ---------------------------------------------------------------------------------


def _frames(spark: Any, program: grantlog.Program, facts: dict[str, set[tuple[Any, ...]]]
            ) -> dict[str, Any]:
    return {rel: spark.createDataFrame(
        sorted(rows), ", ".join(f"`{c}` string" for c in program.relations[rel].columns))
        for rel, rows in facts.items() if rows}


def _in_memory(program: grantlog.Program, facts: dict[str, set[tuple[Any, ...]]]
               ) -> grantlog.Reasoner:
    r = grantlog.Reasoner(program)
    with r.transaction() as tx:
        for rel, rows in facts.items():
            tx.insert(rel, sorted(rows))
    return r


def _run(spark: Any, program: grantlog.Program, facts: dict[str, set[tuple[Any, ...]]],
         **kw: Any) -> Any:
    # the strata on the driver (local.py), the collapse and the expansion on Spark
    return within(120, lambda: sb.run(program, spark, _frames(spark, program, facts),
                                      symmetry=True, driver_rows=10_000, **kw))


def _summary(res: Any) -> str | None:
    return next((p for p in res.plans if p.startswith("symmetry:")), None)


def test_gravitino_example_world_with_bare_tables(spark: Any) -> None:
    rules = grantlog.compile(paths=[str(RULES)])
    world = grantlog.compile(paths=[str(RULES), str(FACTS)])
    facts: dict[str, set[tuple[Any, ...]]] = {}
    for f in world.facts:  # the example's facts as inputs (rule-file facts are constants)
        if f.rel not in {g.rel for g in rules.facts}:
            facts.setdefault(f.rel, set()).add(f.row)
    for i in range(6):  # tables with no facts of their own: one class per schema
        for schema in ("m1.lakehouse.sales", "m1.lakehouse.finance"):
            facts["entity"].add((f"{schema}.bare{i}", "table"))
            facts["contains"].add((schema, f"{schema}.bare{i}"))
    res = _run(spark, rules, facts, goal="allowed(U, load_table, T)")
    got = {tuple(r) for r in res.relations["allowed"].collect()}
    expected = {r for r in _in_memory(rules, facts).rows("allowed") if r[1] == "load_table"}
    assert got == expected and any("bare" in r[2] for r in expected)
    summary = _summary(res)
    assert summary is not None and "run for" in summary, res.plans


def _world(leaves: list[tuple[int, int]], tags: list[int], users: list[tuple[int, int]]
           ) -> dict[str, set[tuple[Any, ...]]]:
    c = {("root", f"p{i}") for i in range(3)} | {(f"p{p}", f"t{t}") for t, p in leaves}
    return {"c": c, "tag": {(f"t{t}", "secret") for t in tags},
            "user_in": {(f"u{u}", "root" if p == 3 else f"p{p}") for u, p in users}}


@settings(max_examples=2, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(st.lists(st.tuples(st.integers(0, 11), st.integers(0, 2)), min_size=4, max_size=12),
       st.lists(st.integers(0, 11), max_size=3),
       st.lists(st.tuples(st.integers(0, 3), st.integers(0, 3)), min_size=1, max_size=5))
def test_generated_worlds_give_the_same_answers(spark: Any, leaves: list[tuple[int, int]],
                                                tags: list[int],
                                                users: list[tuple[int, int]]) -> None:
    program = grantlog.compile(TREE)
    facts = _world(leaves, tags, users)
    res = _run(spark, program, facts)
    mem = _in_memory(program, facts)
    for rel in ("anc", "sees", "hidden", "ok", "refl"):
        assert {tuple(r) for r in res.relations[rel].collect()} == set(mem.rows(rel)), rel


def test_refused_program_and_a_constant_member_keep_their_answers(spark: Any) -> None:
    # siblings told apart by `!=`: the leaves' shape is refused, nothing is collapsed
    program = grantlog.compile(TREE + "sib(X, Y) :- c(P, X), c(P, Y), X != Y.\n")
    facts = _world([(0, 0), (1, 0), (2, 0), (3, 1)], [], [(0, 0)])
    res = _run(spark, program, facts)
    assert _summary(res) is None
    assert {tuple(r) for r in res.relations["sib"].collect()} == set(
        _in_memory(program, facts).rows("sib"))
    # `t1` is a constant of the program: it stays itself; t0 and t2 still collapse
    program = grantlog.compile(TREE + "picked(U) :- ok(U, t1).\n")
    res = _run(spark, program, facts)
    assert (summary := _summary(res)) is not None and "1 class of 2 values" in summary, summary
    mem = _in_memory(program, facts)
    for rel in ("picked", "ok"):
        assert {tuple(r) for r in res.relations[rel].collect()} == set(mem.rows(rel)), rel


def test_off_by_default_on_small_inputs_and_with_reasons(spark: Any) -> None:
    program = grantlog.compile(TREE + "allowed(U, read, X) :- ok(U, X).\n")
    facts = _world([(0, 0), (1, 0), (2, 0)], [], [(0, 0)])
    inputs = _frames(spark, program, facts)
    assert sym.input_bytes(inputs) < sym.MIN_BYTES  # `symmetry=None` leaves these alone
    res = sb.run(program, spark, inputs, symmetry=True, with_reasons=True)
    assert _summary(res) is None
    assert len(res.relations["allowed"].collect()) == 3


def test_values_holding_separators_keep_their_own_signatures(spark: Any) -> None:
    # joined with a separator, these two rows would read alike once v1 and v2 are blanked
    program = grantlog.compile("rel r(a: string, b: string, c: string).\n"
                               "hit(X) :- r(X, p, Y).\n")
    facts: dict[str, set[tuple[Any, ...]]] = {
        "r": {("v1", "p\x1f1q", "s"), ("v2", "p", "q\x1f1s")}}
    res = _run(spark, program, facts)
    assert _summary(res) is None
    assert {tuple(r) for r in res.relations["hit"].collect()} == {("v2",)}
