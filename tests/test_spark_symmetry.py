"""Interchangeable values on Spark (spark_bridge/symmetry.py): one representative per class
of values with equal signatures, the answers expanded, the same answers as without it.

The analysis on IR from small rule texts (what it keeps, what it refuses: two members in a
head or a negation, `!=` between siblings, an order comparison); on Spark, the shipped
Gravitino model's example world (plus bare tables, so that classes exist) against the in-memory
engine, generated worlds of a small hierarchy program (hypothesis, few examples), a refused
program and a constant that must not be collapsed. With reasons: the same rows and reasons as
without the rewrite (Gravitino, slow; classes whose representatives' names are prefixes of
other values, and inside a quoted one), and a premise naming a member its head does not
refused. All on the shared Spark session (tests/conftest.py).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from conftest import within
from grantlog.spark_bridge import symmetry as sym
from grantlog.spark_bridge.encoding import show
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
    kw = {"symmetry": True, "driver_rows": 10_000, **kw}
    return within(120, lambda: sb.run(program, spark, _frames(spark, program, facts), **kw))


def _summary(res: Any) -> str | None:
    return next((p for p in res.plans if p.startswith("symmetry:")), None)


def _gravitino() -> tuple[grantlog.Program, dict[str, set[tuple[Any, ...]]]]:
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
    return rules, facts


def test_gravitino_example_world_with_bare_tables(spark: Any) -> None:
    rules, facts = _gravitino()
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


def _rows(res: Any, rel: str) -> list[tuple[Any, ...]]:
    return sorted((tuple(r) for r in res.relations[rel].collect()), key=repr)


@pytest.mark.slow  # two runs with reasons: ≈ 55 s wall at load 5 (the fast one: below)
def test_gravitino_with_reasons_the_same_rows_and_reasons_as_without(spark: Any) -> None:
    rules, facts = _gravitino()
    goal = "allowed(U, load_table, T)"
    on = _run(spark, rules, facts, goal=goal, with_reasons=True)
    off = _run(spark, rules, facts, goal=goal, with_reasons=True, symmetry=False)
    assert (summary := _summary(on)) is not None and "run for" in summary, on.plans
    assert _summary(off) is None
    got = _rows(on, "allowed")
    assert got == _rows(off, "allowed")
    assert any("bare" in r[2] and r[5] for r in got)  # members, with their reasons


def test_reasons_of_members_name_the_member_and_nothing_else(spark: Any) -> None:
    # {t1, t2} and {t10, t11} are classes (representatives t1, t10): a reason over t1 and t10
    # becomes one over t2 and t11, and `t1` inside `t10` or inside the quoted note stays
    program = grantlog.compile("rel link(o: string, p: string, note: string).\n"
                               "allowed(X, read, P) :- link(X, P, N).\n"
                               "allowed(X, see, P) :- link(P, X, N).\n")
    note = "x, t1, t1)"
    facts: dict[str, set[tuple[Any, ...]]] = {"link": {
        (x, p, note) for x in ("t1", "t2") for p in ("t10", "t11")}}
    on = _run(spark, program, facts, with_reasons=True)
    off = _run(spark, program, facts, with_reasons=True, symmetry=False)
    assert (summary := _summary(on)) is not None and "2 classes of 4 values" in summary, summary
    got = _rows(on, "allowed")
    assert got == _rows(off, "allowed")
    reasons = {r[:3]: r[4:] for r in got}
    assert reasons["t2", "read", "t11"] == ("link", 'link(t2, t11, "x, t1, t1)")'), got
    assert reasons["t11", "see", "t2"] == ("link", 'link(t2, t11, "x, t1, t1)")'), got
    assert len(got) == 8


def test_with_reasons_a_premise_naming_another_member_is_refused(spark: Any) -> None:
    # the reason of `allowed(P, has, child)` names a child the row does not: the least child
    # by its text would differ from the representative's, so leaves are not collapsed
    program = grantlog.compile(TREE + "allowed(P, has, child) :- c(P, X).\n")
    assert analyse(program, LEAF).refused is None
    why = analyse(program, LEAF, sym.premises_of(program)).refused
    assert why is not None and "names a member its head does not" in why, why
    facts = _world([(0, 0), (1, 0), (2, 0)], [], [(0, 0)])
    on = _run(spark, program, facts, with_reasons=True)
    assert _summary(on) is None
    assert _rows(on, "allowed") == _rows(
        _run(spark, program, facts, with_reasons=True, symmetry=False), "allowed")


def test_off_by_default_on_small_inputs(spark: Any) -> None:
    program = grantlog.compile(TREE + "allowed(U, read, X) :- ok(U, X).\n")
    facts = _world([(0, 0), (1, 0), (2, 0)], [], [(0, 0)])
    inputs = _frames(spark, program, facts)
    assert sym.input_bytes(inputs) < sym.MIN_BYTES  # `symmetry=None` leaves these alone
    res = sb.run(program, spark, inputs, with_reasons=True)
    assert _summary(res) is None
    assert len(res.relations["allowed"].collect()) == 3


def test_on_by_default_on_large_inputs(spark: Any, tmp_path: Path) -> None:
    # inputs read from a CSV file of more than MIN_BYTES: Spark's estimate is the file's size
    # (it was 0 for every input, so `symmetry=None` never collapsed anything), and the run
    # keeps one representative per class of interchangeable tables
    program = grantlog.compile(TREE + "allowed(U, read, X) :- ok(U, X).\n")
    facts = _world([(0, 0), (1, 0), (2, 0)], [], [(0, 0)])
    inputs = _frames(spark, program, facts)
    assert sym.input_bytes(inputs) == 0  # rows made in Python: Spark has no estimate
    csv = tmp_path / "c.csv"
    rows = sorted(facts["c"]) + [(f"s{i % 7}", f"leaf{i:07d}_" + "x" * 40)
                                 for i in range(24_000)]
    csv.write_text("".join(f"{a},{b}\n" for a, b in rows), encoding="utf-8")
    assert csv.stat().st_size > sym.MIN_BYTES
    inputs["c"] = spark.read.csv(str(csv)).toDF(*inputs["c"].columns)
    assert sym.input_bytes(inputs) >= csv.stat().st_size
    res = sb.run(program, spark, inputs)
    assert _summary(res) is not None, res.plans
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


def test_reason_arguments_are_read_by_the_fact_syntax() -> None:
    # the pattern expand_reasons reads a premise's k-th argument with (Java's regex on Spark;
    # the same syntax here), over every form shown_col writes
    values: list[Any] = [0, -12, 7, "t1", "t10", "a, b", 'q"t)', "x\\y", "n\nl\t", "not", "Up",
                         "", ")", "t1, t10", "\\"]
    row = "link(" + ", ".join(show(v) for v in values) + ")"
    for k, v in enumerate(values):
        m = re.match(rf"^[^(]*\((?:{sym.ARG}, ){{{k}}}({sym.ARG})", row)
        assert m is not None and m.group(1) == show(v), (k, v)
