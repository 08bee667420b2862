"""Spark without a goal (issue #26, items 7 and 4): the Gravitino example's goal-less run with
reasons terminates and equals the in-memory engine, each reason names a rule of `allowed` and
the premise that decided (never the type literal `entity(T, table)`), and `grantlog spark run`
reports progress per stratum on stderr only when asked or on a terminal.

All on the shared Spark session (tests/conftest.py), never a second one.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from conftest import within
from grantlog.engine.compile.restrict import restrict

import grantlog

pytest.importorskip("pyspark", reason="pyspark is not installed (pip install 'grantlog[spark]')")

from grantlog.spark_bridge.cli import main as spark_cli
from grantlog.spark_bridge.local import LOCAL_ROWS
from grantlog.spark_bridge.reasons import reason_literal

from grantlog import spark_bridge as sb

ROOT = Path(__file__).resolve().parent.parent
RULES = ROOT / "rules" / "gravitino.gl"
FACTS = ROOT / "examples" / "gravitino" / "facts.gl"


def test_reason_literal_skips_types_and_prefers_the_subjects_grant() -> None:
    program = grantlog.compile(paths=[str(RULES)])
    by_name = {r.name: r for r in program.rules}
    chosen = {name: str(by_name[name].body[reason_literal(program, by_name[name]) or 0])
              for name in ("alter_table", "load_table", "load_metalake", "create_table",
                           "can_load")}
    assert chosen == {"alter_table": "authorized(U, modify_table, T)",
                      "load_table": "reads_table(U, T)",
                      "load_metalake": "metalake_user(U, M)",
                      "create_table": "authorized(U, create_table, S)",
                      "can_load": "allowed(U, Op, O)"}


def test_goalless_run_with_reasons_on_the_gravitino_example(spark: Any) -> None:
    # the CLI's default: 96 facts are below the local-rows threshold, so the run is the
    # in-memory engine's on the driver (spark_bridge/local.py; on Spark: minutes, the
    # `allowed` stratum of ~100 rules, tests/test_spark_reasons.py's slow test)
    program = grantlog.compile(paths=[str(RULES), str(FACTS)])
    expected = grantlog.Reasoner(program).rows("allowed")
    rules = {r.name for r in program.rules if r.head.rel == "allowed"}
    part = restrict(program, ["allowed"])  # what `spark run -r allowed` evaluates
    res = within(60, lambda: sb.run(part, spark, with_reasons=True, local_rows=LOCAL_ROWS))
    assert {s.strategy for s in res.strata} == {"in-memory"}
    rows = res.relations["allowed"].collect()
    assert {tuple(r)[:3] for r in rows} == expected
    assert len(rows) == len(expected)  # one reason per row
    for r in rows:
        assert r["rule"] in rules, r
        assert r["reason_rel"] != "entity" and not r["reason_row"].startswith("entity("), r
        assert r["reason_rel"] not in program.derived, r  # a stored fact: the grant
    got = {tuple(r)[:3]: r["reason_row"] for r in rows}
    assert got[("alice", "load_table", "m1.lakehouse.sales.orders")] == (
        'privilege("m1/role/analyst", select_table, "m1.lakehouse.sales", allow)')


def test_cli_progress_only_when_asked_or_on_a_terminal(
        spark: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rules = tmp_path / "p.gl"
    rules.write_text("e(a, b). e(b, c). e(c, d). unused(x).\n"
                     "p(X, Y) :- e(X, Y). p(X, Z) :- p(X, Y), e(Y, Z).\n"
                     "q(X) :- unused(X).\n", encoding="utf-8")
    out = tmp_path / "out"
    # capsys' stderr is not a terminal: quiet by default
    assert spark_cli(["run", str(rules), "-o", str(out), "-r", "p"]) == 0
    err = capsys.readouterr().err
    assert "stratum" not in err and "done in" not in err, err
    assert spark.read.parquet(str(out / "p")).count() == 6
    assert spark_cli(["run", str(rules), "-o", str(out), "-r", "p", "--progress",
                      "--local-rows", "0"]) == 0  # on Spark, whatever the size
    err = capsys.readouterr().err
    # a line per stratum with its relations and time; only `p`'s cone is evaluated
    assert "stratum 0 [p]" in err and " s\n" in err and "[q]" not in err, err
    assert spark_cli(["run", str(rules), "-o", str(out), "-r", "p", "-q"]) == 0
    assert "stratum" not in capsys.readouterr().err
    with pytest.raises(SystemExit):  # one or the other
        spark_cli(["run", str(rules), "-o", str(out), "-q", "--progress"])
