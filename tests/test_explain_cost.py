"""The cost of an explanation follows the proof, not the platform (issue 29: "a check answered
and drawn <= 200 ms at 100k tables"; benchmarks/explorer_bench.py measures the time).

Measured without a clock: the rows the why-prover and the why-not search read through the
read's index lookups, on the same question over a small and a ten times larger world (more
tables in the question's schema, so the hierarchy above the table is as deep and the rows a
lookup *down* the tree reads grow tenfold). The proof of a row of the hierarchy's closure
steps up from the table (its parent first), not down from the ancestor; the why-not binds a
literal's variables from the narrowest lookup the statistics know. On the shipped model and
on an own model with other relation names (benchmarks/models/unary.gl).
"""

from __future__ import annotations

from typing import Any

import pytest
from conftest import ROOT
from grantlog.engine.answer import reasoner as reasoner_module
from grantlog.engine.answer.explain.goal import explain_goal
from grantlog.engine.core import ir

import grantlog

SALES = "m1.lakehouse.sales"
KAFKA = "m1.kafka.default"


class _Counting:
    """A read's view (engine/eval/demand.py ``DemandContext``) that counts the rows its
    index lookups hand out; everything else is the view's."""

    def __init__(self, ctx: Any) -> None:
        self.ctx = ctx
        self.read = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self.ctx, name)

    def index(self, rel: str, cols: tuple[int, ...]) -> Any:
        return _CountingIndex(self, self.ctx.index(rel, cols))

    def lookup(self, rel: str, cols: tuple[int, ...], key: Any) -> Any:
        got = self.ctx.lookup(rel, cols, key)
        self.read += len(got)
        return got


class _CountingIndex:
    def __init__(self, owner: _Counting, ix: Any) -> None:
        self.owner, self.ix = owner, ix

    def get(self, k: Any, default: Any = None) -> Any:
        got = self.ix.get(k, default)
        self.owner.read += len(got) if got else 0
        return got


def _read(r: grantlog.Reasoner, goal: str, monkeypatch: pytest.MonkeyPatch) -> tuple[int, str]:
    """The rows the explanation of ``goal`` reads, and its text."""
    seen: list[_Counting] = []

    def counting(text: str, rule: Any, names: Any, ctx: Any, prover: Any,
                 limits: Any = None) -> Any:
        seen.append(_Counting(ctx))
        prover.ctx = seen[-1]
        return explain_goal(text, rule, names, seen[-1], prover, limits)

    with monkeypatch.context() as m:
        m.setattr(reasoner_module, "explain_goal", counting)
        text = r.explain(goal).render()
    assert text == r.explain(goal).render()  # the counting view changes nothing
    return seen[0].read, text


def _gravitino(extra: int) -> grantlog.Reasoner:
    """The Gravitino example with ``extra`` more tables in m1.lakehouse.sales and in
    m1.kafka.default."""
    r = grantlog.Reasoner(grantlog.compile(paths=[ROOT / "rules" / "gravitino.gl",
                                                  ROOT / "examples" / "gravitino" / "facts.gl"]))
    tables = [(s, f"{s}.x{i:05d}") for s in (SALES, KAFKA) for i in range(extra)]
    with r.transaction() as tx:
        tx.insert("entity", [(t, "table") for _, t in tables])
        tx.insert("contains", tables)
    r.prepare()
    return r


def _unary(extra: int) -> grantlog.Reasoner:
    """benchmarks/models/unary.gl: one platform > catalog > schema > ``extra`` + 1 tables;
    alice may read them (grants on the platform), bob is denied by a DENY on the schema, carol
    may read the schema's tables but not the table of its sibling schema ``p.c.s2``."""
    r = grantlog.Reasoner(grantlog.compile(paths=[ROOT / "benchmarks" / "models" /
                                                  "unary.gl"]))
    tables = ["p.c.s.t", *(f"p.c.s.x{i:05d}" for i in range(extra))]
    with r.transaction() as tx:
        tx.insert("platform", [("p",)])
        tx.insert("catalog", [("p.c",)])
        tx.insert("schema", [("p.c.s",), ("p.c.s2",)])
        tx.insert("table", [(t,) for t in [*tables, "p.c.s2.t"]])
        tx.insert("parent", [("p.c", "p"), ("p.c.s", "p.c"), ("p.c.s2", "p.c"),
                             ("p.c.s2.t", "p.c.s2"), *((t, "p.c.s") for t in tables)])
        tx.insert("account", [("alice",), ("bob",), ("carol",)])
        tx.insert("assigned", [("alice", "reader"), ("bob", "reader"), ("bob", "blocked"),
                               ("carol", "sales")])
        tx.insert("permit", [("reader", p, "p") for p in
                             ("use_catalog", "use_schema", "select_table")])
        tx.insert("permit", [("sales", "use_catalog", "p.c"), ("sales", "use_schema", "p"),
                             ("sales", "select_table", "p.c.s")])
        tx.insert("forbid", [("blocked", "select_table", "p.c.s")])
    r.prepare()
    return r


CASES = {
    "gravitino": (_gravitino, [
        ir.show_atom("allowed", ("alice", "load_table", f"{SALES}.orders")),
        ir.show_atom("allowed", ("carol", "load_table", f"{SALES}.customers")),
        ir.show_atom("allowed", ("sam", "drop_table", f"{SALES}.orders")),
        ir.show_atom("allowed", ("nobody", "load_table", f"{SALES}.orders")),
        # alice's grants are on m1.kafka and the sales schema, not above the ledger: the
        # why-not walks up from the ledger, not down the tables below the grants
        ir.show_atom("allowed", ("alice", "load_table", "m1.lakehouse.finance.ledger")),
    ]),
    "unary": (_unary, [
        ir.show_atom("can", ("alice", "load_table", "p.c.s.t")),
        ir.show_atom("can", ("bob", "load_table", "p.c.s.t")),
        ir.show_atom("can", ("alice", "drop_table", "p.c.s.t")),
        ir.show_atom("can", ("carol", "load_table", "p.c.s2.t")),
    ]),
}


@pytest.mark.parametrize("model", sorted(CASES))
def test_explanations_read_as_much_at_ten_times_the_tables(
        model: str, monkeypatch: pytest.MonkeyPatch) -> None:
    make, goals = CASES[model]
    small, large = make(300), make(3000)
    for goal in goals:
        n_small, text_small = _read(small, goal, monkeypatch)
        n_large, text_large = _read(large, goal, monkeypatch)
        assert text_small == text_large, goal  # the same proof on both worlds
        assert n_large <= n_small + 10, (goal, n_small, n_large)
        assert n_large < 300, (goal, n_large)  # not a walk over the schema's tables


def test_both_answers_are_covered() -> None:
    """The goals above hold some ALLOWs and some DENYs of each model."""
    for make, goals in CASES.values():
        r = make(0)
        held = {r.explain(g).holds for g in goals}
        assert held == {True, False}
