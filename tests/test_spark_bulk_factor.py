"""Spark bulk (issue 26, item 6): a rule's pair of small atoms linked by a variable nothing
else reads (a principal's roles and the roles' grants) is joined once, de-duplicated, and the
rest of the rule joins that instead of every path through the link (spark_bridge/planner.py
``factor``, spark_bridge/factoring.py ``factored``). Found from the rule's structure and the
relations' sizes, never from their names: an own model with other names gets the same plan.

Also: ``grantlog spark run --local-rows -1`` (and ``run(local_rows=-1)``) is ``bad-argument``.

The Spark tests use the shared session (tests/conftest.py), never a second one.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from grantlog.engine.core import ir
from grantlog.grammar.diagnostics import GrantlogError
from grantlog.spark_bridge import planner

import grantlog

pytest.importorskip("pyspark", reason="pyspark is not installed (pip install 'grantlog[spark]')")

from grantlog.spark_bridge.cli import main as spark_cli

from grantlog import spark_bridge as sb

#: an own model: principals hold badges, a badge carries
#: permits on nodes of a tree, a permit reaches every node below; `reads`: who reads a leaf
MODEL = """
rel tree_edge(up: string, down: string).
rel node(n: string).
rel kind(n: string, k: string).
rel badge_of(who: string, badge: string).
rel permit(badge: string, right: string, at: string).
rel below(up: string, down: string).
rel may(who: string, right: string, n: string).
rel reads(who: string, n: string).

below(X, X) :- node(X).
below(U, D) :- below(U, M), tree_edge(M, D).
may(W, R, N) :- node(N), badge_of(W, B), permit(B, R, A), below(A, N).
reads(W, N) :- kind(N, leaf), may(W, read, N).
"""


def _rule(text: str) -> ir.Rule:
    return grantlog.compile(MODEL + text).rules[-1]


def test_factor_finds_the_pair_linked_by_a_variable_read_nowhere_else() -> None:
    program = grantlog.compile(MODEL)
    rule = next(r for r in program.rules if r.head.rel == "may")
    parts = planner.factor(rule, lambda rel: rel in {"badge_of", "permit"})
    assert len(parts) == 1
    (part,) = parts
    assert [lit.rel for lit in part.rule.body if isinstance(lit, ir.Atom)] == [
        "badge_of", "permit"]
    assert part.links == ("B",)
    assert [str(t) for t in part.rule.head.args] == ["W", "R", "A"]
    rewritten = planner.with_parts(rule, {"pair": part})
    assert [lit.rel for lit in rewritten.body if isinstance(lit, ir.Atom)] == [
        "node", "pair", "below"]
    # the same pair in another rule (other variable names) has the same key
    other = grantlog.compile(
        MODEL + "q(X, Y, Z) :- node(Z), badge_of(X, K), permit(K, Y, Z).").rules[-1]
    (again,) = planner.factor(other, lambda rel: rel in {"badge_of", "permit"})
    assert again.key == part.key


def test_factor_leaves_what_the_demand_reaches_or_what_is_read_elsewhere() -> None:
    rule = _rule("seen(W, B) :- badge_of(W, B), permit(B, R, A), node(A).")
    # B is in the head: no link to drop; A (read by permit and node only) is one
    assert [p.links for p in planner.factor(rule, lambda rel: True)] == [("A",)]
    rule = _rule("rel asked(w: string). q(W, A) :- asked(W), badge_of(W, B), permit(B, R, A).")
    # badge_of shares W with the seed: joined from the seed's few bindings instead
    assert planner.factor(rule, lambda rel: True, seeds={"asked"}) == []
    assert planner.factor(rule, lambda rel: True) != []
    # a large relation is never pre-joined
    rule = _rule("q(W, A) :- badge_of(W, B), permit(B, R, A), node(A).")
    assert planner.factor(rule, lambda rel: rel != "permit") == []
    # a link holding few distinct values (filled from constants) is a cross product
    rule = _rule("k(x, one). k(y, one). q(A, B) :- k(A, C), k(B, C).")
    low = planner.low_columns(grantlog.compile(MODEL + "k(x, one). k(y, one). "
                                               "q(A, B) :- k(A, C), k(B, C)."))
    assert planner.factor(rule, lambda rel: True, low=low) == []


def _world() -> dict[str, list[tuple[str, ...]]]:
    nodes = ["r"] + [f"r.{i}" for i in range(4)] + [f"r.{i}.{j}" for i in range(4)
                                                     for j in range(6)]
    edges = [(n.rsplit(".", 1)[0], n) for n in nodes if "." in n]
    people = [f"p{i}" for i in range(30)]
    badges = [f"b{i}" for i in range(12)]
    badge_of = [(p, badges[(i * k) % 12]) for i, p in enumerate(people) for k in (1, 5)]
    permit = [(b, right, nodes[(7 * i + 3 * k) % len(nodes)])
              for i, b in enumerate(badges) for k in range(5) for right in ("read", "write")
              if (i + k) % 2 or right == "read"]
    kind = [(n, "leaf" if n.count(".") == 2 else "inner") for n in nodes]
    return {"tree_edge": edges, "node": [(n,) for n in nodes], "kind": kind,
            "badge_of": badge_of, "permit": permit}


def test_the_own_model_bulk_run_reads_the_pair_once_and_answers_as_in_memory(
        spark: Any) -> None:
    program = grantlog.compile(MODEL)
    facts = _world()
    inputs = {rel: spark.createDataFrame(
        rows, ", ".join(f"`{c}` string" for c in program.relations[rel].columns))
        for rel, rows in facts.items()}
    # every reader × leaf: the demand binds the leaf (and the right), not the reader
    # on Spark (driver_rows=0): this world is small enough for the driver (local.py)
    res = sb.run(program, spark, inputs, goal="reads(W, N)", driver_rows=0)
    got = {tuple(r) for r in res.relations["reads"].collect()}
    mem = grantlog.Reasoner(program)
    with mem.transaction() as tx:
        for rel, rows in facts.items():
            tx.insert(rel, rows)
    expected = set(mem.rows("reads"))
    assert len(expected) > 50 and got == expected
    # the pair badge_of ⋈ permit (linked by the badge) was joined on its own ...
    pairs = [p for p in res.plans if "__part" in p.split(":")[0]]
    assert len(pairs) == 1, res.plans
    pair, how = pairs[0].split(": ", 1)
    assert "badge_of" in how and "permit" in how, pairs
    # ... and `may` read it in their place; `below` stays joined from the demand's nodes
    readers = [p.split(": ", 1)[1] for p in res.plans
               if pair in p and not p.startswith(pair)]
    assert readers and all("badge_of" not in p and "permit" not in p and "below" in p
                           for p in readers), res.plans


def test_negative_local_rows_is_a_bad_argument(tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    rules = tmp_path / "p.gl"
    rules.write_text("e(a, b).\np(X, Y) :- e(X, Y).\n", encoding="utf-8")
    assert spark_cli(["run", str(rules), "-o", str(tmp_path / "out"),
                      "--local-rows", "-1"]) == 2
    err = capsys.readouterr().err
    assert "error[bad-argument]" in err and "`--local-rows` must be at least 0" in err, err
    assert not (tmp_path / "out").exists()
    with pytest.raises(GrantlogError) as got:
        sb.run(grantlog.compile(rules.read_text()), None, local_rows=-1)
    assert got.value.diagnostics[0].code == "bad-argument"
    assert "`local_rows`" in got.value.diagnostics[0].message
