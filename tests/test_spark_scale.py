"""Spark at scale: the demand rewrite (engine/plan/magic.py) and reasons through recursion.

* The rewrite preserves answers: on hypothesis-generated programs, goals and ``where``
  conditions, and on the shipped Gravitino model over a small generated workload, the
  rewritten program's answer relation (evaluated by the in-memory engine, the fast oracle)
  equals the goal's answers in the original program. No Spark needed.
* On Spark (the session-scoped ``spark`` fixture of tests/conftest.py): a goal with ``where``
  gives the in-memory engine's rows; ``--with-reasons`` works in recursive strata, and every
  reason names a rule that derives the row from a base fact that exists (checked with the
  in-memory engine); the CLI's ``--goal`` / ``--where``.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest
import strategies as gen
from grantlog.engine.core import ir
from grantlog.engine.plan.magic import default_restricted, demand
from grantlog.rules import model_path
from hypothesis import HealthCheck, assume, given, note, settings
from hypothesis import strategies as st
from test_cases import parse_row

import grantlog

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))

import gravitino_workload as gw  # noqa: E402

# ---------------------------------------------------------------------------------------------
# the rewrite, with the in-memory engine as the oracle


def _goal_rows(program: grantlog.Program, goal: ir.Atom, where: str | None) -> set[ir.Row]:
    """The goal relation's rows matching ``goal`` and ``where``, by the original program."""

    def name(t: ir.Var) -> str:  # the rewrite names anonymous variables `Goal?N`
        return t.name.replace("Goal?", "Anon_")

    text = ir.show_atom(goal.rel, tuple(ir.Var(name(t)) if isinstance(t, ir.Var) else t
                                        for t in goal.args))
    if where:
        text = f"{text}, {where}"
    return {tuple(b[name(t)] if isinstance(t, ir.Var) else t.value for t in goal.args)
            for b in grantlog.Reasoner(program).query(text)}


def _rewritten_rows(program: grantlog.Program, goal: str, where: str | None,
                    restrict: Any = None, keep: Any = ()) -> tuple[set[ir.Row], Any]:
    d = demand(program, goal, where, restrict=restrict, keep=keep)
    return grantlog.Reasoner(d.program).rows(d.answer), d


@st.composite
def _goals(draw: st.DrawFn, prog: gen.Program) -> tuple[str, str | None]:
    rel = draw(st.sampled_from(prog.relations))
    args = []
    for _ in range(rel.arity):
        kind = draw(st.sampled_from(["X", "Y", "_", "const", "X"]))
        args.append(gen.show(draw(st.sampled_from(prog.domain))) if kind == "const" else kind)
    goal = f"{rel.name}({', '.join(args)})" if args else rel.name
    named = sorted({a for a in args if a in ("X", "Y")})
    where = None
    if named and draw(st.booleans()):
        other = draw(st.sampled_from(prog.relations))
        if other.arity and draw(st.booleans()):
            wargs = [draw(st.sampled_from([*named, "_"])) for _ in range(other.arity)]
            neg = "not " if draw(st.integers(0, 3)) == 0 else ""
            where = f"{neg}{other.name}({', '.join(wargs)})"
        else:
            v = draw(st.sampled_from(prog.domain))
            where = f"{draw(st.sampled_from(named))} {draw(st.sampled_from(gen.OPS))} {gen.show(v)}"
    return goal, where


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), prog=gen.programs(max_rels=4, max_rules=6),
       everything=st.booleans())
def test_rewrite_preserves_answers_on_generated_programs(
        data: st.DataObject, prog: gen.Program, everything: bool) -> None:
    program = grantlog.compile(prog.text())
    goal, where = data.draw(_goals(prog))
    note(f"{prog.text()}\ngoal: {goal}\nwhere: {where}")
    try:
        got, d = _rewritten_rows(program, goal, where,
                                 program.derived if everything else None)
    except grantlog.GrantlogError:  # an unsafe `where` (a variable of a negation only)
        assume(False)
        raise
    note(d.describe())
    assert got == _goal_rows(program, d.goal, where)


def _small_workload(n: int = 120) -> gw.Workload:
    return gw.generate(n, n_users=40, n_groups=8, n_roles=20, n_grants=600)


def _facts_text(w: gw.Workload) -> str:
    from grantlog.spark_bridge.encoding import show

    return "\n".join(f"{rel}({', '.join(map(show, row))})."
                     for rel, rows in w.facts.items() for row in rows)


def test_rewrite_of_the_gravitino_model_is_small_and_exact() -> None:
    path = model_path("gravitino")
    assert path is not None
    w = _small_workload()
    program = grantlog.compile(_facts_text(w), paths=[path])
    cat = w.catalogs[0]
    goal, where = "allowed(U, load_table, T)", f'catalog_of(T, "{cat}")'
    got, d = _rewritten_rows(program, goal, where, keep={"ancestor"})  # as Spark does
    assert got and got == _goal_rows(program, d.goal, where)
    assert _rewritten_rows(program, goal, where)[0] == got  # the default: as analysed
    # only the load_table rule of `allowed`; nothing of `listed`; stratified, and the
    # hierarchy closure computed in full by its own two rules
    rels = {d.origin.get(r, r) for r in d.program.relations}
    assert "listed" not in rels and "allowed_with" not in rels
    assert [r.name for r in d.program.rules if r.head.rel == d.goal_relation] == ["load_table"]
    assert len(d.program.rules) < len(program.rules) // 2
    assert "ancestor_or_self" not in default_restricted(program, {"ancestor"})
    # every recursive stratum of the rewrite is one of the original's (no spurious cycles)
    assert [st.relations for st in d.program.strata if st.recursive] == [
        st.relations for st in program.strata
        if st.recursive and set(st.relations) <= set(d.program.relations)]


@pytest.mark.parametrize("model", ["cdap_parent", "cdap_entity", "three_tier", "onehouse",
                                   "gravitino"])
def test_rewrite_of_every_model_on_its_examples(model: str) -> None:
    path = model_path(model)
    assert path is not None
    program = grantlog.compile(paths=[path, ROOT / "examples" / model / "facts.gl"])
    dec = program.decision
    rows = grantlog.Reasoner(program).rows(dec)
    ops = sorted({r[1] for r in rows}, key=repr)[:4]
    for goal in [f"{dec}(S, O, R)"] + [f"{dec}(S, {ir.show_value(op)}, R)" for op in ops]:
        for everything in (False, True):
            got, d = _rewritten_rows(program, goal, None,
                                     program.derived if everything else None)
            assert got == _goal_rows(program, d.goal, None), (goal, everything)


def test_bad_goals_are_diagnosed() -> None:
    program = grantlog.compile("p(X) :- e(X). e(1).")
    for goal, where, code in [("p(X), e(X)", None, "bad-goal"), ("q(X)", None,
                              "unknown-relation"), ("p(X)", "nope(X)", "unknown-relation"),
                              ("p(X, Y)", None, "arity-mismatch")]:
        with pytest.raises(grantlog.GrantlogError) as info:
            demand(program, goal, where)
        assert info.value.diagnostics[0].code == code, (goal, where)


# ---------------------------------------------------------------------------------------------
# reasons, checked with the in-memory engine


def check_reason(program: grantlog.Program, reasoner: grantlog.Reasoner, rel: str,
                 row: ir.Row, rule_name: str | None, reason_rel: str | None,
                 reason_row: str | None) -> None:
    """``rule_name`` is a rule of ``rel`` and ``reason_row`` the grant that decided: a stored
    fact (of ``reason_rel``) that holds, and one of the in-memory engine's proof of
    ``rel(row)`` where that proof starts with the same rule (of several derivations, Spark
    keeps the least rule by name, the prover the shallowest; tests/test_spark_reasons.py
    holds every decision of the Gravitino example to the proof)."""
    assert rule_name is not None, f"no reason for {rel}{row}"
    assert reason_rel is not None and reason_row is not None
    assert any(r.name == rule_name for r in program.rules_for(rel)), f"no rule {rule_name}"
    frel, fvals = parse_row(reason_row + ".")
    assert frel == reason_rel and frel not in program.derived, reason_row
    assert reasoner.ask(ir.show_atom(frel, fvals)), f"reason fact {reason_row} is false"
    proof = reasoner.explain(ir.show_atom(rel, row)).proof
    assert proof is not None and proof.rule is not None
    if proof.rule.name == rule_name:
        facts = {n.text for n in proof.walk() if n.kind == "fact"}
        assert reason_row in facts, f"{reason_row} is not in the proof of {rel}{row}: {facts}"


# ---------------------------------------------------------------------------------------------
# Spark


pytest.importorskip("pyspark", reason="pyspark is not installed (pip install 'grantlog[spark]')")

from grantlog import spark_bridge as sb  # noqa: E402


def _inputs(spark: Any, program: grantlog.Program, w: gw.Workload) -> dict[str, Any]:
    return {rel: spark.createDataFrame(
        [tuple(r) for r in rows],
        ", ".join(f"`{c}` string" for c in program.relations[rel].columns))
        for rel, rows in w.facts.items()}


def test_goal_on_spark_equals_memory_with_reasons(spark: Any) -> None:
    path = model_path("gravitino")
    assert path is not None
    w = _small_workload(60)
    program = grantlog.compile(paths=[path])
    cat = w.catalogs[0]
    goal, where = "allowed(U, load_table, T)", f'catalog_of(T, "{cat}")'
    lines: list[str] = []
    res = sb.run(program, spark, _inputs(spark, program, w), goal=goal, where=where,
                 with_reasons=True, progress=lines.append)
    assert res.demand is not None and any(line.startswith("demand:") for line in lines)
    df = res.relations["allowed"]
    assert df.columns == ["subject", "operation", "resource", "rule", "reason_rel",
                          "reason_row"]
    rows = [tuple(r) for r in df.collect()]
    full = grantlog.compile(_facts_text(w), paths=[path])
    expected = _goal_rows(full, res.demand.goal, where)
    assert expected and {r[:3] for r in rows} == expected and len(rows) == len(expected)
    mem = grantlog.Reasoner(full)
    for r in rows[:: max(1, len(rows) // 25)]:
        check_reason(full, mem, "allowed", r[:3], *r[3:])
    # the hierarchy closure is still computed by path doubling, in full
    [anc] = [s for s in res.strata if s.relations == ("ancestor",)]
    assert anc.strategy in ("doubling", "graphframes") and anc.iterations <= 4


RECURSIVE = """
rel contains(parent: string, child: string).
rel grant(user: string, op: string, object: string).
rel ancestor(a: string, o: string).
/// derived, and given a fact below (a reason that is a fact of the decision relation)
@writable rel allowed(user: string, op: string, object: string).
ancestor(A, O) :- contains(A, O).
ancestor(A, O) :- ancestor(A, P), contains(P, O).
/// A grant on an object or an ancestor.
granted: allowed(U, Op, O) :- grant(U, Op, A), ancestor(A, O).
/// A grant on the object itself.
direct: allowed(U, Op, O) :- grant(U, Op, O).
/// Listing a container needs reading something in it (through `allowed` itself).
list_by_child: allowed(U, list, P) :- contains(P, C), allowed(U, read, C).
/// Reading is implied by listing every parent up the tree (a second recursive path).
read_up: allowed(U, read, C) :- allowed(U, list, P), contains(P, C), grant(U, follow, P).
contains(m, c1). contains(c1, s1). contains(s1, t1). contains(s1, t2). contains(c1, s2).
contains(s2, t3). contains(m, c2). contains(c2, s3). contains(s3, t4).
grant(alice, read, t1). grant(bob, read, s2). grant(carol, list, c2).
grant(carol, follow, c2). grant(carol, follow, s3). grant(dave, read, m).
allowed(erin, read, t9).
"""


def test_reasons_through_recursion(spark: Any) -> None:
    program = grantlog.compile(RECURSIVE)
    [st] = [s for s in program.strata if "allowed" in s.relations]
    assert st.recursive
    res = sb.run(program, spark, with_reasons=True)
    rows = [tuple(r) for r in res.relations["allowed"].collect()]
    mem = grantlog.Reasoner(program)
    assert {r[:3] for r in rows} == mem.rows("allowed") and len(rows) == len(mem.rows("allowed"))
    for r in rows:
        if r[:3] == ("erin", "read", "t9"):  # only a fact: no reason
            assert r[3:] == (None, None, None)
            continue
        check_reason(program, mem, "allowed", r[:3], *r[3:])
    by_row = {r[:3]: r[3:] for r in rows}
    # least height: carol lists c2 from her grant (round 1), not through a child
    assert by_row[("carol", "list", "c2")][0] == "direct"
    assert by_row[("alice", "list", "s1")][0] == "list_by_child"


def test_cli_goal_and_where(spark: Any, tmp_path: Path,
                            capsys: pytest.CaptureFixture[str]) -> None:
    from grantlog.spark_bridge.cli import main as spark_cli

    rules = tmp_path / "policy.gl"
    rules.write_text(RECURSIVE, encoding="utf-8")
    out = tmp_path / "out"
    code = spark_cli(["run", "--rules", str(rules), "--output", str(out),
                      "--goal", "allowed(U, read, O)", "--where", "ancestor(c1, O)",
                      "--with-reasons", "--explain-plan", "--progress",
                      "--conf", "spark.sql.shuffle.partitions=2"])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    assert "demand: `allowed(U, read, O)`" in captured.err
    assert "rewritten goal:" in captured.out
    got = {tuple(r)[:3] for r in spark.read.parquet(str(out / "allowed")).collect()}
    program = grantlog.compile(RECURSIVE)
    d = demand(program, "allowed(U, read, O)", "ancestor(c1, O)")
    assert got == _goal_rows(program, d.goal, "ancestor(c1, O)")
    assert got and all(o in {"s1", "s2", "t1", "t2", "t3"} for _, _, o in got)
    code = spark_cli(["run", "--rules", str(rules), "--output", str(out),
                      "--where", "ancestor(c1, O)"])
    assert code == 2 and "needs `--goal`" in capsys.readouterr().err
