"""Spark bulk (issue 26, item 6): small strata on the driver (spark_bridge/local.py).

A stratum whose inputs are all held on the driver (at most ``driver_rows`` rows in all) is
evaluated there by the in-memory engine's semi-naive evaluation (``local.Driver``), not as
Spark jobs; its rows stay there and become a local relation when Spark reads them. Checked:

* every case of the case corpus (tests/cases/*.gl), whole program on the driver, derives the
  in-memory engine's rows (recursion, negation, comparisons, integers, anonymous and repeated
  variables, zero-arity relations);
* the bulk goal on a small Gravitino world with a threshold that leaves some strata on Spark
  and puts others on the driver (each side reading the other's relations) answers as in
  memory, in a third fewer Spark jobs than all on Spark (122);
* a small program whose strata go back and forth between the two (a relation made on the
  driver read by Spark strata, a Spark relation read back, strata past the cap after driver
  strata, recursion, negation, facts and inputs of derived relations, zero-arity relations)
  derives the in-memory engine's rows, with and without symmetry (the expansion of relations
  held on the driver, made when read);
* a lazy relation read once by a rule that only joins small relations is read without its
  own ``distinct`` (one shuffle, not two), and a rule keeping every variable of its body gets
  none (``planner.unique``).

The Spark tests use the shared session (tests/conftest.py), never a second one.
"""

from __future__ import annotations

import sys
import uuid
from pathlib import Path
from typing import Any

import pytest
from grantlog.rules import model_path

import grantlog

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))

import gravitino_workload as gw  # noqa: E402

pytest.importorskip("pyspark", reason="pyspark is not installed (pip install 'grantlog[spark]')")

from grantlog.spark_bridge import planner  # noqa: E402

from grantlog import spark_bridge as sb  # noqa: E402

CASES = sorted((ROOT / "tests" / "cases").glob("*.gl"))


def _memory(program: grantlog.Program) -> dict[str, set[Any]]:
    mem = grantlog.Reasoner(program)
    return {rel: set(mem.rows(rel)) for rel in program.relations}


def test_the_case_corpus_on_the_driver_derives_the_in_memory_rows(spark: Any) -> None:
    checked = 0
    for path in CASES:
        text = path.read_text(encoding="utf-8")
        try:
            program = grantlog.compile(text, filename=str(path),
                                       strict="// strict" in text)
            expected = _memory(program)
        except grantlog.GrantlogError:
            continue  # a case about an error the in-memory engine reports
        res = sb.run(program, spark, driver_rows=10_000)
        assert all(s.strategy == "driver" for s in res.strata), (path.name, res.strata)
        got = sb.collect(res.relations, sorted(program.relations))
        for rel in program.relations:
            assert got[rel] == expected[rel], (path.name, rel)
        checked += 1
    assert checked >= 20


def _jobs(spark: Any, run: Any) -> tuple[Any, int]:
    sc = spark.sparkContext
    group = f"bulk-driver-{uuid.uuid4().hex}"
    sc.setJobGroup(group, "test")
    try:
        out = run()
    finally:
        sc.setLocalProperty("spark.jobGroup.id", None)
        sc.setLocalProperty("spark.job.description", None)
    return out, len(sc.statusTracker().getJobIdsForGroup(group))


def test_the_bulk_goal_with_some_strata_on_the_driver_answers_as_in_memory(
        spark: Any) -> None:
    path = model_path("gravitino")
    assert path is not None
    program = grantlog.compile(paths=[path])
    w = gw.generate(60, n_users=40, n_groups=8, n_roles=20, n_grants=600)
    inputs = {rel: spark.createDataFrame(
        [tuple(r) for r in rows],
        ", ".join(f"`{c}` string" for c in program.relations[rel].columns))
        for rel, rows in w.facts.items()}
    mem = grantlog.Reasoner(program)
    with mem.transaction() as tx:
        for rel, rows in w.facts.items():
            tx.insert(rel, [tuple(r) for r in rows])
    expected = {r for r in mem.rows("allowed") if r[1] == "load_table"}

    def bulk(n: int) -> Any:
        res = sb.run(program, spark, inputs, goal="allowed(U, load_table, T)",
                     driver_rows=n)
        return res, {tuple(r) for r in res.relations["allowed"].collect()}

    # 5,000 rows held in all (971 inputs): the hierarchy, grants, demand and the per-user
    # strata on the driver; the per-table authorizations on Spark (past the cap)
    (res, got), mixed = _jobs(spark, lambda: bulk(5000))
    assert len(expected) > 100 and got == expected
    on = {s.relations[0] for s in res.strata if s.strategy == "driver"}
    off = {s.relations[0] for s in res.strata if s.strategy != "driver"}
    assert len(on) >= 10 and len(off) >= 3, (on, off)
    # a Spark stratum's small result is read back: later strata over it run on the driver
    assert any(p.endswith("(on the driver)") and "authorized__bbb" in p for p in res.plans)
    # all on Spark (bulk(0)) this run takes 122 jobs (tests/test_spark_bulk.py checks its
    # answers): the driver's strata must save at least a third of them
    assert mixed <= 81, mixed


# a program whose strata go back and forth between the driver and Spark at a small cap (the
# rows held in all): `anc` (recursive, with facts) on the driver; `sees` (with a fact and an
# input row) past the cap, on Spark, reading `anc` made on the driver; `hidden` made on Spark,
# small, read back to the driver for `any_hidden`; `deep` on the driver after Spark strata;
# `reach` (recursive, with a fact) past the cap; zero-arity relations on both sides
MIXED = """
rel c(parent: string, child: string).
rel tag(obj: string, t: string).
rel user_in(u: string, p: string).
rel link(a: string, b: string).
@writable rel anc(a: string, b: string).
@writable rel sees(u: string, x: string).
@writable rel reach(a: string, b: string).
anc(P, C) :- c(P, C).
anc(A, C) :- anc(A, P), c(P, C).
anc(x0, x1).
sees(U, X) :- user_in(U, P), anc(P, X).
sees(nobody, x1).
hidden(U, X) :- sees(U, X), tag(X, secret).
ok(U, X) :- sees(U, X), not hidden(U, X).
any_hidden :- hidden(_, _).
warn(U) :- hidden(U, _), user_in(U, _).
deep(X) :- anc(root, X), not tag(X, secret).
has_deep :- deep(_).
reach(X, Y) :- link(X, Y).
reach(X, Z) :- reach(X, Y), link(Y, Z).
reach(n0, n0).
"""


def _mixed_world() -> dict[str, set[tuple[str, ...]]]:
    users = [("u0", "root"), ("u1", "p0"), ("u2", "p1"), ("u3", "p2"), ("u4", "p0"),
             ("u4", "p1"), ("u5", "p1"), ("u5", "p2"), ("u6", "p0"), ("u6", "p2"),
             ("u7", "root")]
    return {"c": {("root", f"p{i}") for i in range(3)}
            | {(f"p{i % 3}", f"t{i}") for i in range(9)},
            "tag": {("t1", "secret"), ("t4", "secret")}, "user_in": set(users),
            "sees": {("u9", "t2")},  # a binary tree of links, three levels deep
            "link": {(f"n{i // 2}", f"n{i}") for i in range(2, 16)} | {("n0", "n1")}}


@pytest.mark.parametrize(("symmetry", "cap", "driver"), [
    (False, 100, {"anc", "any_hidden", "warn", "deep", "has_deep"}),
    # over representatives: `warn` passes the cap after driver strata (no room left)
    (True, 60, {"anc", "any_hidden", "deep", "has_deep"})])
def test_strata_going_back_and_forth_between_driver_and_spark_answer_as_in_memory(
        spark: Any, symmetry: bool, cap: int, driver: set[str]) -> None:
    program = grantlog.compile(MIXED)
    facts = _mixed_world()
    inputs = {rel: spark.createDataFrame(
        sorted(rows), ", ".join(f"`{c}` string" for c in program.relations[rel].columns))
        for rel, rows in facts.items()}
    mem = grantlog.Reasoner(program)
    with mem.transaction() as tx:
        for rel, rows in facts.items():
            tx.insert(rel, sorted(rows))
    res = sb.run(program, spark, inputs, driver_rows=cap, symmetry=symmetry)
    got = sb.collect(res.relations, sorted(program.relations))
    for rel in program.relations:
        assert got[rel] == set(mem.rows(rel)), rel
    where = {s.relations[0]: s.strategy for s in res.strata}
    assert {r for r, s in where.items() if s == "driver"} == driver, where
    assert where["hidden"] == "rules+checkpoint", where  # on Spark, then read back
    assert ("symmetry: " in " ".join(res.plans)) == symmetry


def test_a_rule_keeping_every_body_variable_needs_no_distinct() -> None:
    program = grantlog.compile("""
        rel e(a: string, b: string). rel k(a: string). rel p(a: string, b: string).
        rel q(a: string). rel r(a: string, t: string, b: string).
        p(X, Y) :- k(X), e(X, Y).
        q(X) :- k(X), e(X, _).
        r(X, t, Y) :- e(X, Y), k(Y).
    """)
    unique = [all(planner.unique(p) for p in planner.plans(rule)) for rule in program.rules]
    assert unique == [True, False, True]


def test_a_negative_driver_rows_is_a_bad_argument(tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    from grantlog.grammar.diagnostics import GrantlogError
    from grantlog.spark_bridge.cli import main as spark_cli

    rules = tmp_path / "p.gl"
    rules.write_text("e(a, b).\np(X, Y) :- e(X, Y).\n", encoding="utf-8")
    assert spark_cli(["run", str(rules), "-o", str(tmp_path / "out"),
                      "--driver-rows", "-1"]) == 2
    err = capsys.readouterr().err
    assert "error[bad-argument]" in err and "`--driver-rows` must be at least 0" in err, err
    with pytest.raises(GrantlogError) as got:
        sb.run(grantlog.compile(rules.read_text()), None, driver_rows=-1)
    assert got.value.diagnostics[0].code == "bad-argument"
