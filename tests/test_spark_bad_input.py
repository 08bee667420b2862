"""Malformed rows of Spark file inputs: `bad-fact` at file:line (exit 2 from `grantlog spark
run`), as the in-memory loaders report them, never a Python traceback or a Java stack trace.

Uses the one session-scoped `spark` fixture of tests/conftest.py; the CLI runs in-process and
reuses that session (`getOrCreate`), as tests/test_spark_bridge.py's CLI test does.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import grantlog

pytest.importorskip("pyspark", reason="pyspark is not installed (pip install 'grantlog[spark]')")

from grantlog.spark_bridge.cli import main as spark_cli

from grantlog import spark_bridge as sb

POLICY = """
rel member(user: string, group: string).
rel grant(group: string, op: string, resource: string).
rel quota(user: string, n: int).
member(carol, eng).
allowed(U, Op, R) :- member(U, G), grant(G, Op, R).
big(U, N) :- quota(U, N), N >= 10.
"""


def _where(err: grantlog.GrantlogError) -> list[tuple[str, str, int]]:
    return [(d.code, Path(d.span.file).name, d.span.line) for d in err.diagnostics]


def test_csv_rows_with_missing_extra_or_non_integer_values(spark: Any, tmp_path: Path) -> None:
    program = grantlog.compile(POLICY)
    (tmp_path / "grant.csv").write_text(
        "group,op,resource\neng,read,t1\neng,write\neng,read,t2\neng,read,t3,extra\n",
        encoding="utf-8")
    (tmp_path / "quota.csv").write_text("user,n\nalice,10\nbob,ten\n", encoding="utf-8")
    with pytest.raises(grantlog.GrantlogError) as info:
        sb.read_inputs(spark, program, {"grant": {"path": str(tmp_path / "grant.csv")},
                                        "quota": {"path": str(tmp_path / "quota.csv")}})
    err = info.value
    assert _where(err) == [("bad-fact", "grant.csv", 3), ("bad-fact", "grant.csv", 5),
                           ("bad-fact", "quota.csv", 3)]
    text = str(err)
    assert f"{tmp_path / 'grant.csv'}:3:1: error[bad-fact]: `grant` takes 3 values, got 2" \
        in text
    assert "`grant` takes 3 values, got 4" in text
    assert "column `n` of `quota` holds integers, got `ten`" in text


def test_the_same_row_twice_and_headerless_files_get_their_own_lines(
        spark: Any, tmp_path: Path) -> None:
    program = grantlog.compile(POLICY)
    (tmp_path / "m.csv").write_text("a,b\nbad\nc,d\nbad\n", encoding="utf-8")
    with pytest.raises(grantlog.GrantlogError) as info:
        sb.read_inputs(spark, program, {"member": {"path": str(tmp_path / "m.csv"),
                                                   "columns": ["user", "group"]}})
    assert _where(info.value) == [("bad-fact", "m.csv", 2), ("bad-fact", "m.csv", 4)]


def test_a_directory_of_files_names_the_file_and_caps_the_count(
        spark: Any, tmp_path: Path) -> None:
    program = grantlog.compile(POLICY)
    d = tmp_path / "grants"
    d.mkdir()
    (d / "part-1.csv").write_text("group,op,resource\neng,read,t1\n", encoding="utf-8")
    (d / "part-2.csv").write_text("group,op,resource\n" + "x\n" * 25, encoding="utf-8")
    with pytest.raises(grantlog.GrantlogError) as info:
        sb.read_inputs(spark, program, [sb.InputSpec("grant", str(d), "csv")])
    got = _where(info.value)
    assert got[:20] == [("bad-fact", "part-2.csv", n) for n in range(2, 22)]
    assert got[20][0] == "too-many-errors"


def test_json_lines_that_are_not_json(spark: Any, tmp_path: Path) -> None:
    program = grantlog.compile(POLICY)
    (tmp_path / "member.jsonl").write_text(
        '{"user": "a", "group": "g"}\nnot json\n{"user": "c", "group": "g"}\n', encoding="utf-8")
    with pytest.raises(grantlog.GrantlogError) as info:
        sb.read_inputs(spark, program, {"member": {"path": str(tmp_path / "member.jsonl")}})
    assert _where(info.value) == [("bad-fact", "member.jsonl", 2)]
    assert "not JSON: `not json`" in str(info.value)


def test_good_files_pass(spark: Any, tmp_path: Path) -> None:
    program = grantlog.compile(POLICY)
    (tmp_path / "grant.csv").write_text('group,op,resource\neng,read,"t,1"\n', encoding="utf-8")
    (tmp_path / "quota.csv").write_text("user,n\nalice,10\n", encoding="utf-8")
    inputs = sb.read_inputs(spark, program, {"grant": {"path": str(tmp_path / "grant.csv")},
                                             "quota": {"path": str(tmp_path / "quota.csv")}})
    assert {tuple(r) for r in inputs["grant"].collect()} == {("eng", "read", "t,1")}
    assert {tuple(r) for r in inputs["quota"].collect()} == {("alice", 10)}


def test_wrong_columns_of_parquet_and_json_are_bad_input(spark: Any, tmp_path: Path) -> None:
    program = grantlog.compile(POLICY)
    spark.createDataFrame([("a", "b")], "user string, team string").write.parquet(
        str(tmp_path / "member.parquet"))
    (tmp_path / "quota.jsonl").write_text('{"user": "a"}\n', encoding="utf-8")
    with pytest.raises(grantlog.GrantlogError) as info:
        sb.read_inputs(spark, program, {"member": {"path": str(tmp_path / "member.parquet")},
                                        "quota": {"path": str(tmp_path / "quota.jsonl")}})
    assert {d.code for d in info.value.diagnostics} == {"bad-input"}
    text = str(info.value)
    assert "no column `group`" in text and "quota.jsonl" in text


def test_cli_reports_bad_fact_with_exit_2_and_no_stack(
        spark: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rules = tmp_path / "policy.gl"
    rules.write_text(POLICY, encoding="utf-8")
    (tmp_path / "grant.csv").write_text("group,op,resource\neng,read,t1\neng,write\n",
                                        encoding="utf-8")
    sc = spark.sparkContext
    sc.setJobGroup("spark-bad-input-cli", "the CLI on a malformed CSV")
    try:
        code = spark_cli(["run", "--rules", str(rules), "--input",
                          f"grant={tmp_path}/grant.csv", "--output", str(tmp_path / "out")])
    finally:
        sc.setLocalProperty("spark.jobGroup.id", None)
    err = capsys.readouterr().err
    assert code == 2, err
    # the JVM writes its log to its own stderr, which capsys cannot see: no job failed, so no
    # task's stack trace was logged (the bad row was found by a job that succeeded)
    jobs = [sc.statusTracker().getJobInfo(j) for j in
            sc.statusTracker().getJobIdsForGroup("spark-bad-input-cli")]
    assert jobs and all(j is None or j.status != "FAILED" for j in jobs)
    assert f"{tmp_path}/grant.csv:3:1: error[bad-fact]: `grant` takes 3 values, got 2" in err
    assert "Traceback" not in err and "\tat " not in err and "Exception" not in err
    assert not (tmp_path / "out").exists()


def test_cli_names_a_relation_a_goal_run_did_not_compute(
        spark: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`-r` with `--goal` names a relation outside the goal's rewritten program (or, after the
    exceptions rewrite, any but the goal): a coded error, not a KeyError's traceback"""
    rules = tmp_path / "policy.gl"
    rules.write_text(POLICY, encoding="utf-8")
    (tmp_path / "grant.csv").write_text("group,op,resource\neng,read,t1\n", encoding="utf-8")
    code = spark_cli(["run", "--rules", str(rules), "--input", f"grant={tmp_path}/grant.csv",
                      "--goal", "allowed(U, read, R)", "-r", "big",
                      "--output", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert code == 2, err
    assert "error[not-computed]: `big` is not among this run's results" in err
    assert "Traceback" not in err and not (tmp_path / "out").exists()
