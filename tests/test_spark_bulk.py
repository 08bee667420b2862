"""Spark bulk: every user × table (a goal with no ``where``) stays in proportion to its answer.

The goal ``allowed(U, load_table, T)`` over a small generated Gravitino world: Spark's rows are
the in-memory engine's, and no stratum of the rewritten program materializes much more than
the answer (issue 26, item 6: the cross product of every principal × every resource × every
privilege, or a stratum computed for privileges nobody asked about, would show here as a
stratum many times the answer). The bound is read from the evaluator's per-stratum report.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest
from grantlog.rules import model_path

import grantlog

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))

import gravitino_workload as gw  # noqa: E402

pytest.importorskip("pyspark", reason="pyspark is not installed (pip install 'grantlog[spark]')")


from grantlog import spark_bridge as sb  # noqa: E402

#: no stratum may hold more rows than this many times the goal's answer (the authorization
#: stratum holds one row per user, table and asked privilege: two privileges decide load_table)
BOUND = 3


def _world() -> gw.Workload:
    # few users and roles, many grants: each user reaches most tables through several roles
    # and several ancestors, so paths are many times the decisions
    return gw.generate(60, n_users=40, n_groups=8, n_roles=20, n_grants=600)


def _inputs(spark: Any, program: grantlog.Program, w: gw.Workload) -> dict[str, Any]:
    return {rel: spark.createDataFrame(
        [tuple(r) for r in rows],
        ", ".join(f"`{c}` string" for c in program.relations[rel].columns))
        for rel, rows in w.facts.items()}


def test_every_user_and_table_is_in_proportion_to_the_answer(spark: Any) -> None:
    path = model_path("gravitino")
    assert path is not None
    program = grantlog.compile(paths=[path])
    w = _world()
    res = sb.run(program, spark, _inputs(spark, program, w), goal="allowed(U, load_table, T)")
    got = {tuple(r) for r in res.relations["allowed"].collect()}
    mem = grantlog.Reasoner(program)
    with mem.transaction() as tx:
        for rel, rows in w.facts.items():
            tx.insert(rel, [tuple(r) for r in rows])
    expected = {r for r in mem.rows("allowed") if r[1] == "load_table"}
    assert len(expected) > 100 and got == expected
    largest = max(res.strata, key=lambda s: s.rows or 0)
    assert largest.rows is not None
    assert largest.rows <= BOUND * len(expected), (largest.relations, largest.rows,
                                                   len(expected))
