"""The Spark backend (spark_bridge/) against the in-memory engine (hypothesis programs, every
shipped model) and its own contracts: input checks, iteration cap, closure strategies, reasons,
the CLI. The case corpus runs on Spark from tests/test_cases.py (its `spark` backend).

The Spark session is the one session-scoped `spark` fixture of tests/conftest.py, shared by the
whole test run (startup takes seconds); it skips with a reason when pyspark or Java is missing.
"""

from __future__ import annotations

import doctest
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import strategies as gen
from conftest import examples
from grantlog.engine.core import ir
from grantlog.rules import models
from hypothesis import given, note, settings

import grantlog

pytest.importorskip("pyspark", reason="pyspark is not installed (pip install 'grantlog[spark]')")

from grantlog.spark_bridge import closure, encoding
from grantlog.spark_bridge.cli import main as spark_cli

from grantlog import spark_bridge as sb

ROOT = Path(__file__).resolve().parent.parent


def _memory_rows(program: grantlog.Program, rels: list[str]) -> dict[str, set[ir.Row]]:
    r = grantlog.Reasoner(program)
    return {rel: r.rows(rel) for rel in rels}


# ---------------------------------------------------------------------------------------------
# no Spark needed


def test_encoding_doctests() -> None:
    assert doctest.testmod(encoding).failed == 0


def test_encoding_orders_like_the_engine() -> None:
    from grantlog.engine.core.terms import compare

    values: list[ir.Value] = [-(2**63), -10, -1, 0, 1, 9, 10, 2**63 - 1, "", "1", "B", "a",
                              "a b", "é"]
    for a in values:
        assert encoding.decode(encoding.encode(a)) == a
        assert encoding.parse_shown(encoding.show(a)) == a
        for b in values:
            assert (encoding.encode(a) < encoding.encode(b)) == compare("<", a, b), (a, b)


def test_import_spark_bridge_does_not_import_pyspark() -> None:
    code = ("import sys, grantlog.spark_bridge, grantlog.spark_bridge.cli; "
            "assert 'pyspark' not in sys.modules")
    subprocess.run([sys.executable, "-c", code], check=True)


@pytest.mark.parametrize(("rules", "kind"), [
    ("p(X, Y) :- e(X, Y). p(X, Z) :- p(X, Y), e(Y, Z).", "left-linear"),
    ("p(X, Y) :- e(X, Y). p(X, Z) :- e(X, Y), p(Y, Z).", "right-linear"),
    ("p(A, B) :- e(A, B). p(A, C) :- p(B, C), p(A, B).", "non-linear"),
    ("p(X, Y) :- e(X, Y). p(X, Z) :- p(X, Y), e(Z, Y).", None),  # not a composition
    ("p(X, Y) :- e(Y, X). p(X, Z) :- p(X, Y), e(Y, Z).", None),  # exit rule reversed
    ("p(X, Y) :- e(X, Y). p(X, Z) :- p(X, Y), f(Y, Z).", None),  # two edge relations
    ("p(X, Y) :- e(X, Y). p(X, Z) :- p(X, Y), e(Y, Z), Z != a.", None),
    ("@writable rel p(x, y). p(X, Y) :- e(X, Y). p(X, Z) :- p(X, Y), e(Y, Z). p(a, b).",
     None),  # facts for p
])
def test_closure_shape(rules: str, kind: str | None) -> None:
    program = grantlog.compile(rules + " e(a, b). f(a, b).")
    st = next(s for s in program.strata if "p" in s.relations)
    shape = closure.closure_shape(program, st)
    assert (shape.kind if shape else None) == kind


def test_input_mapping_and_arguments(tmp_path: Path) -> None:
    spec = sb.parse_input_arg("member=s3a://bucket/m.csv")
    assert (spec.rel, spec.path, spec.format) == ("member", "s3a://bucket/m.csv", "csv")
    spec = sb.parse_input_arg("member=data/m:jsonl")
    assert (spec.path, spec.format) == ("data/m", "json")
    assert sb.parse_input_arg("e=dir").format == "parquet"
    (tmp_path / "map.toml").write_text(
        '[member]\npath = "m.csv"\ncolumns = ["user", "group"]\n', encoding="utf-8")
    [m] = sb.load_mapping(tmp_path / "map.toml")
    assert (m.path, m.format, m.columns) == (str(tmp_path / "m.csv"), "csv", ("user", "group"))
    with pytest.raises(grantlog.GrantlogError) as info:
        sb.parse_input_arg("member")
    assert info.value.diagnostics[0].code == "bad-input"


# ---------------------------------------------------------------------------------------------
# the in-memory engine as the oracle


@settings(max_examples=examples(6, 12), deadline=None, derandomize=True)
@given(prog=gen.programs(max_rels=4, max_rules=5))
def test_generated_programs_match_memory(prog: gen.Program, spark: Any) -> None:
    text = prog.text()
    note(text)
    program = grantlog.compile(text)
    rels = sorted(prog.arity)
    got = sb.collect(sb.evaluate(program, spark), rels)
    assert got == _memory_rows(program, rels)


# the two Gravitino models take 30-40 s each here: the long profile runs them (the goal-directed
# Spark runs of tests/test_spark_scale.py cover them in every profile); three_tier runs in
# tests/test_spark_codegen.py, with Spark's code generation on (off in the tests' session)
@pytest.mark.parametrize("model", [
    pytest.param(m.name, marks=pytest.mark.slow) if m.name.startswith("gravitino") else m.name
    for m in models() if m.name != "three_tier"])
def test_shipped_models_match_memory(model: str, spark: Any) -> None:
    from grantlog.rules import model_path

    path = model_path(model)
    assert path is not None
    program = grantlog.compile(paths=[path, ROOT / "examples" / model / "facts.gl"])
    dec = program.decision
    got = sb.collect(sb.evaluate(program, spark), [dec])[dec]
    expected = _memory_rows(program, [dec])[dec]
    assert got, f"the example facts of {model} allow nothing"
    assert got == expected


# ---------------------------------------------------------------------------------------------
# inputs and outputs

POLICY = """
rel member(user: string, group: string).
rel grant(group: string, op: string, resource: string).
rel quota(user: string, n: int).
rel banned(user: string).
member(carol, eng).
/// Members may use what their group was granted, unless banned.
via_group: allowed(U, Op, R) :- member(U, G), grant(G, Op, R), not banned(U).
/// A direct grant to a user.
direct: allowed(U, Op, R) :- grant(U, Op, R), member(U, _).
big(U, N) :- quota(U, N), N >= 10.
"""


def test_dataframe_inputs_and_typed_outputs(spark: Any) -> None:
    program = grantlog.compile(POLICY)
    inputs = {
        "member": spark.createDataFrame([("alice", "eng"), ("bob", "ops")], "user string, "
                                                                            "`group` string"),
        "grant": spark.createDataFrame([("eng", "read", "t1"), ("ops", "write", "t2")],
                                       "`group` string, op string, resource string"),
        "quota": spark.createDataFrame([("alice", 12), ("bob", 3), ("carol", -20)],
                                       "user string, n long"),
        "banned": spark.createDataFrame([("bob",)], "user string"),
    }
    out = sb.evaluate(program, spark, inputs)
    assert out["allowed"].columns == ["c0", "c1", "c2"]
    assert out["big"].schema["c1"].dataType.simpleString() == "bigint"
    got = sb.collect(out, ["allowed", "big"])
    assert got["allowed"] == {("alice", "read", "t1"), ("carol", "read", "t1")}
    assert got["big"] == {("alice", 12)}
    program2 = grantlog.compile(POLICY + "\n".join(
        f"{r}({', '.join(map(encoding.show, row))})." for r, df in inputs.items()
        for row in df.collect()))
    assert got["allowed"] == _memory_rows(program2, ["allowed"])["allowed"]


def _codes(err: grantlog.GrantlogError) -> list[str]:
    return [d.code for d in err.diagnostics]


def test_input_schema_errors_before_any_job(spark: Any) -> None:
    program = grantlog.compile(POLICY)
    bad = {
        "member": spark.createDataFrame([("a",)], "user string"),                # arity
        "grant": spark.createDataFrame([("a", "b", "c")], "g string, op string, "
                                                          "resource string"),    # column
        "quota": spark.createDataFrame([("a", 1.5)], "user string, n double"),   # type
        "nope": spark.createDataFrame([("a",)], "x string"),                     # relation
    }
    with pytest.raises(grantlog.GrantlogError) as info:
        sb.evaluate(program, spark, bad)
    err = info.value
    assert set(_codes(err)) == {"bad-input"}
    text = str(err)
    assert "input for `member`" in text and "has 1 columns" in text
    assert "no column `group`" in text
    assert "column `n` of the input for `quota`" in text and "expected int" in text
    assert "unknown relation `nope`" in text


def test_file_inputs_and_errors_name_the_file(spark: Any, tmp_path: Path) -> None:
    program = grantlog.compile(POLICY)
    (tmp_path / "member.csv").write_text("user,group\nalice,eng\n", encoding="utf-8")
    (tmp_path / "grant.jsonl").write_text(
        '{"group": "eng", "op": "read", "resource": "t1"}\n', encoding="utf-8")
    (tmp_path / "quota.jsonl").write_text('{"user": "alice", "n": "ten"}\n', encoding="utf-8")
    mapping = {"member": {"path": str(tmp_path / "member.csv")},
               "grant": {"path": str(tmp_path / "grant.jsonl")}}
    inputs = sb.read_inputs(spark, program, mapping)
    got = sb.collect(sb.evaluate(program, spark, inputs), ["allowed"])
    assert got["allowed"] == {("alice", "read", "t1"), ("carol", "read", "t1")}
    with pytest.raises(grantlog.GrantlogError) as info:
        sb.read_inputs(spark, program, {"quota": {"path": str(tmp_path / "quota.jsonl")},
                                        "banned": {"path": str(tmp_path / "missing.parquet")}})
    text = str(info.value)
    assert set(_codes(info.value)) == {"bad-input"}
    assert "quota.jsonl" in text and "expected int" in text
    assert "missing.parquet" in text and "cannot read the input for `banned`" in text


def test_with_reasons(spark: Any) -> None:
    program = grantlog.compile(POLICY + "grant(eng, read, t1). grant(carol, read, t1).")
    out = sb.evaluate(program, spark, with_reasons=True)
    df = out["allowed"]
    assert df.columns == ["c0", "c1", "c2", "rule", "reason_rel", "reason_row"]
    rows = {tuple(r) for r in df.collect()}
    # two derivations (via_group from the group's grant, direct from carol's): one row,
    # with the least (rule, reason_rel, reason_row)
    assert rows == {("carol", "read", "t1", "direct", "grant", "grant(carol, read, t1)")}
    only_group = grantlog.compile(POLICY + "grant(eng, read, t1).")
    [row] = sb.evaluate(only_group, spark, with_reasons=True)["allowed"].collect()
    # the grant that decided, not the membership that led to it (spark_bridge/reasons.py)
    assert tuple(row) == ("carol", "read", "t1", "via_group", "grant", "grant(eng, read, t1)")


# ---------------------------------------------------------------------------------------------
# recursion: semi-naive, doubling, GraphFrames, the cap


def _chain(n: int) -> str:
    return "".join(f"e({i}, {i + 1}). " for i in range(n)) + "e(3, 1). "


TC = "p(X, Y) :- e(X, Y). p(X, Z) :- p(X, Y), e(Y, Z).\n"


def test_doubling_and_semi_naive_agree_with_memory(spark: Any) -> None:
    program = grantlog.compile(TC + _chain(12))
    expected = _memory_rows(program, ["p"])["p"]
    lines: list[str] = []
    res = sb.run(program, spark, closure="doubling", progress=lines.append)
    [rep] = [r for r in res.strata if r.relations == ("p",)]
    assert rep.strategy == "doubling"
    assert rep.iterations <= 6  # 1 + ceil(log2(12)) + 1 rounds, not 12
    assert rep.rows == len(expected)
    assert any("doubling round" in line for line in lines)
    assert sb.collect(res.relations, ["p"])["p"] == expected
    small = grantlog.compile(TC + _chain(5))
    res2 = sb.run(small, spark, closure="semi-naive")
    assert [r.strategy for r in res2.strata if r.relations == ("p",)] == ["semi-naive"]
    assert sb.collect(res2.relations, ["p"])["p"] == _memory_rows(small, ["p"])["p"]


def test_graphframes_closure(spark: Any) -> None:
    ok, why = closure.graphframes_status(spark)
    if not ok:
        pytest.skip(why)
    program = grantlog.compile(TC + _chain(6))
    res = sb.run(program, spark, closure="graphframes")
    assert [r.strategy for r in res.strata if r.relations == ("p",)] == ["graphframes"]
    assert sb.collect(res.relations, ["p"])["p"] == _memory_rows(program, ["p"])["p"]


def test_graphframes_absent_is_reported_not_crashed(spark: Any) -> None:
    ok, why = closure.graphframes_status(spark)
    if ok:
        pytest.skip("GraphFrames is on the classpath here")
    assert "GraphFrames" in why or "graphframes" in why
    program = grantlog.compile(TC + _chain(2))
    with pytest.raises(grantlog.GrantlogError) as info:
        sb.run(program, spark, closure="graphframes")
    assert _codes(info.value) == ["spark-unsupported"]
    vertices, edges = closure.graph_model({"e": sb.evaluate(program, spark)["e"]})
    assert edges.columns == ["src", "dst", "relationship"] and vertices.columns == ["id"]


def test_iteration_cap_names_the_stratum(spark: Any) -> None:
    program = grantlog.compile(
        "reach(X) :- start(X). reach(Y) :- reach(X), e(X, Y). start(0). " + _chain(6))
    with pytest.raises(grantlog.GrantlogError) as info:
        sb.evaluate(program, spark, max_iterations=3)
    assert _codes(info.value) == ["iteration-limit"]
    assert "`reach`" in str(info.value) and "3 iterations" in str(info.value)


# ---------------------------------------------------------------------------------------------
# the CLI


def test_cli_run_writes_parquet(spark: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
                                ) -> None:
    rules = tmp_path / "policy.gl"
    rules.write_text(POLICY + TC + _chain(3), encoding="utf-8")
    (tmp_path / "grant.csv").write_text("group,op,resource\neng,read,t1\n", encoding="utf-8")
    mapping = tmp_path / "inputs.json"
    mapping.write_text(json.dumps({"member": {"path": "m.csv", "columns": ["user", "group"]}}),
                       encoding="utf-8")
    (tmp_path / "m.csv").write_text("dave,eng\n", encoding="utf-8")
    out = tmp_path / "out"
    code = spark_cli(["run", "--rules", str(rules), "--input", f"grant={tmp_path}/grant.csv",
                      "--inputs", str(mapping), "--output", str(out), "-r", "allowed", "-r", "p",
                      "--with-reasons", "--explain-plan", "--progress", "--local-rows", "0",
                      "--driver-rows", "0"])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    assert "stratum" in captured.err and "doubling round" in captured.err
    assert "plan via_group:" in captured.out
    allowed = {tuple(r)[:3] for r in spark.read.parquet(str(out / "allowed")).collect()}
    assert allowed == {("carol", "read", "t1"), ("dave", "read", "t1")}
    assert spark.read.parquet(str(out / "p")).count() == 12
    code = spark_cli(["run", "--rules", str(rules), "--input", f"quota={tmp_path}/grant.csv",
                      "--output", str(out)])
    assert code == 2
    assert "bad-input" in capsys.readouterr().err
