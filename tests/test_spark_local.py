"""Small goal-less Spark runs on the driver (spark_bridge/local.py, issue #26 item 7): below the
``local_rows`` threshold the in-memory engine evaluates the program and every relation comes
back as a DataFrame with Spark's columns and kinds; the rows are the Spark evaluator's, the
reasons name the grant of the in-memory proof; above the threshold or with a goal the run
stays on Spark.

All on the shared Spark session (tests/conftest.py), never a second one.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from conftest import within
from test_spark_reasons import EXPECTED, MODEL, check_grants

import grantlog

pytest.importorskip("pyspark", reason="pyspark is not installed (pip install 'grantlog[spark]')")

from grantlog.spark_bridge.cli import main as spark_cli

from grantlog import spark_bridge as sb

ROOT = Path(__file__).resolve().parent.parent

#: integers, strings that look like integers, `any` columns, a zero-arity relation, negation
KINDS = """
rel quota(user: string, n: int).
rel tag(obj, label).
rel member(user: string, group: string).
big(U) :- quota(U, N), N > 10.
small(U, N) :- quota(U, N), not big(U).
labelled(O, L) :- tag(O, L), L != 7.
grouped(U, G, N) :- member(U, G), quota(U, N).
some_big :- big(_).
quota(ann, 12). quota(bob, -3). tag(t1, 7). tag(t1, "7"). tag(t2, x).
"""

#: one stratum: cheap on Spark too
PLAIN = """
rel member(user: string, group: string).
@writable rel in_group(c0: string, c1: string).
in_group(U, G) :- member(U, G).
member(bob, eng). member(dee, ops).
"""


def test_small_run_has_sparks_columns_and_the_engines_rows(spark: Any) -> None:
    program = grantlog.compile(KINDS)
    members = spark.createDataFrame([("ann", "eng"), ("cy", "ops"), ("bob", "eng")],
                                    "`user` string, `group` string")
    quotas = spark.createDataFrame([("cy", 40), ("dee", 0)], "`user` string, `n` bigint")
    res = within(60, lambda: sb.run(program, spark, {"member": members, "quota": quotas},
                                    local_rows=1_000))
    assert {s.strategy for s in res.strata} == {"in-memory"}
    assert sorted(res.relations) == sorted(program.relations)
    # the columns as on Spark (the same decoding, evaluator.py's `external`): declared names,
    # integers as longs, an undeclared column's values in fact syntax with its kind
    assert res.relations["grouped"].schema.simpleString() == (
        "struct<c0:string,c1:string,c2:bigint>")
    assert res.relations["member"].schema.simpleString() == "struct<user:string,group:string>"
    label = res.relations["labelled"].schema.fields[1]
    assert label.metadata == {"grantlog_kind": "any"} and res.kinds["tag"][1] == "any"
    mem = grantlog.Reasoner(program)
    with mem.transaction() as tx:
        tx.insert("member", [("ann", "eng"), ("cy", "ops"), ("bob", "eng")])
        tx.insert("quota", [("cy", 40), ("dee", 0)])
    got = sb.collect(res.relations)
    assert got == {rel: mem.rows(rel) for rel in program.relations}
    assert got["labelled"] == {("t1", "7"), ("t2", "x")}  # 7 and "7" stay apart
    assert got["small"] == {("bob", -3), ("dee", 0)} and got["some_big"] == {()}
    assert all(s.rows is not None for s in res.strata)


def test_reasons_in_memory_name_the_grant_of_the_proof(spark: Any) -> None:
    program = grantlog.compile(MODEL)
    res = within(60, lambda: sb.run(program, spark, with_reasons=True, local_rows=1_000))
    assert {s.strategy for s in res.strata} == {"in-memory"}
    assert [f.name for f in res.relations["allowed"].schema.fields][-3:] == [
        "rule", "reason_rel", "reason_row"]
    rows = [tuple(r) for r in res.relations["allowed"].collect()]
    check_grants(program, rows)  # a rule of `allowed`, a stored fact of the memory proof
    got = {r[:3]: r[5] for r in rows}
    assert {k: got.get(k) for k in EXPECTED} == EXPECTED


def test_a_decision_fact_has_no_reason(spark: Any) -> None:
    program = grantlog.compile("rel grant(u: string, o: string).\n"
                               "@writable rel allowed(u: string, op: string, o: string).\n"
                               "allowed(U, read, O) :- grant(U, O).\n"
                               "allowed(root, read, everything).\ngrant(ann, t1).\n")
    res = sb.run(program, spark, with_reasons=True, local_rows=100)
    got = {tuple(r)[:3]: tuple(r)[3:] for r in res.relations["allowed"].collect()}
    assert got == {("ann", "read", "t1"): (program.rules[0].name, "grant", "grant(ann, t1)"),
                   ("root", "read", "everything"): (None, None, None)}


def _in_memory(res: Any) -> bool:
    return {s.strategy for s in res.strata} == {"in-memory"}


def test_the_threshold_a_goal_and_derived_inputs_keep_spark(spark: Any) -> None:
    program = grantlog.compile(PLAIN)  # 2 facts in the rule text
    members = spark.createDataFrame([("ann", "eng"), ("cy", "ops")],
                                    "`user` string, `group` string")
    want = {("ann", "eng"), ("cy", "ops"), ("bob", "eng"), ("dee", "ops")}
    for limit, local in ((4, True), (3, False), (0, False)):  # facts + input rows <= limit
        res = sb.run(program, spark, {"member": members}, local_rows=limit)
        assert _in_memory(res) == local, limit
        assert sb.rows(res.relations["in_group"]) == want
    assert _in_memory(sb.run(program, spark, local_rows=2))
    assert not _in_memory(sb.run(program, spark, local_rows=1))
    # rows given for a (writable) derived relation join what its rules derive, both ways
    extra = spark.createDataFrame([("eve", "sec")], "`c0` string, `c1` string")
    for limit, local in ((1_000, True), (0, False)):
        res = sb.run(program, spark, {"in_group": extra}, local_rows=limit)
        assert _in_memory(res) == local
        assert sb.rows(res.relations["in_group"]) == {("bob", "eng"), ("dee", "ops"),
                                                      ("eve", "sec")}
    goal = sb.run(program, spark, goal="in_group(U, eng)", local_rows=1_000)
    assert not _in_memory(goal)
    assert sb.rows(goal.relations["in_group"]) == {("bob", "eng")}


def test_cli_runs_small_inputs_in_memory_unless_told(
        spark: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rules = tmp_path / "p.gl"
    rules.write_text("e(a, b). e(b, c). e(c, d).\n"
                     "p(X, Y) :- e(X, Y). p(X, Z) :- p(X, Y), e(Y, Z).\n", encoding="utf-8")
    out = tmp_path / "out"
    assert spark_cli(["run", str(rules), "-o", str(out), "-r", "p", "--progress"]) == 0
    err = capsys.readouterr().err
    assert "in memory: " in err and "semi-naive" not in err, err
    assert spark.read.parquet(str(out / "p")).count() == 6
    assert spark_cli(["run", str(rules), "-o", str(out), "-r", "p", "--progress",
                      "--local-rows", "2"]) == 0  # 3 facts: over the threshold
    err = capsys.readouterr().err
    assert "in memory: " not in err and "stratum 0 [p]" in err, err
    assert spark.read.parquet(str(out / "p")).count() == 6
