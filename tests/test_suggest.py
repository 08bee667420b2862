"""The why-not's suggested changes (engine/answer/suggest.py, ``Reasoner.suggest``).

The property: every suggestion flips the answer, checked on a reasoner of its own (not the
search's copy): the base facts with the suggestion's insertions and retractions make the goal
hold, and without any one of its facts they do not (no suggestion is larger than needed). On
the five shipped models' examples (rules/*.gl with examples/*/facts.gl, questions drawn from
their constants), on generated worlds of the shipped Gravitino model and the benchmark
models with their own names and shapes (benchmarks/models/worlds.py), and on generated
programs (tests/strategies.py)."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

import pytest
import strategies as gen
from conftest import ROOT, check_golden, examples
from grantlog.engine.answer.suggest import Bounds, Edit, Suggestions, suggest
from grantlog.engine.core import ir
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import grantlog

MODELS = ["cdap_entity", "cdap_parent", "gravitino", "gravitino_data", "onehouse",
          "three_tier"]
#: bounds small enough for many examples, large enough to find something
QUICK = Bounds(size=2, seconds=3.0, candidates=40)


@cache
def _program(model: str) -> grantlog.Program:
    return grantlog.compile(paths=[ROOT / "rules" / f"{model}.gl",
                                   ROOT / "examples" / model / "facts.gl"])


@cache
def _reasoner(model: str) -> grantlog.Reasoner:
    return grantlog.Reasoner(_program(model))


@cache
def _constants(model: str) -> tuple[tuple[ir.Value, ...], ...]:
    """Per column of the decision: the values its rows have, and the base facts' others."""
    r = _reasoner(model)
    rel = r.program.decision
    rows = r.rows(rel)
    base = {v for rows_ in r.base_facts().values() for row in rows_ for v in row}
    cols = []
    for c in range(r.program.relations[rel].arity):
        seen = sorted({row[c] for row in rows}, key=ir.row_key) or sorted(base, key=repr)
        cols.append(tuple(seen))
    return tuple(cols)


def holds_with(r: Any, goal: str, edits: tuple[Edit, ...]) -> bool:
    """Whether ``goal`` holds on reasoner ``r`` with ``edits`` applied (put back after: the
    base facts as they were, which a row also derived by rules does not show in changes)."""
    before = r.base_facts()
    with r.transaction() as tx:
        for e in edits:
            (tx.insert if e.op == "insert" else tx.retract)(e.rel, [e.row])
    try:
        return bool(r.ask(goal))
    finally:
        with r.transaction() as undo:
            for e in edits:
                had = e.row in before.get(e.rel, ())
                if e.op == "insert" and not had:
                    undo.retract(e.rel, [e.row])
                elif e.op == "retract" and had:
                    undo.insert(e.rel, [e.row])
        assert r.base_facts() == before


def verify(r: Any, goal: str, found: Suggestions) -> None:
    """Every suggestion flips ``goal`` on ``r`` (a reasoner the search did not use), and
    none is larger than needed."""
    assert not found.holds
    assert not r.ask(goal)
    for s in found:
        assert s.edits and len(set(s.edits)) == len(s.edits)
        assert holds_with(r, goal, s.edits), f"{s.sentence} does not flip {goal}"
        for i in range(len(s.edits)):
            fewer = s.edits[:i] + s.edits[i + 1:]
            assert not holds_with(r, goal, fewer), f"{s.sentence} without {s.edits[i].fact}"
        assert not r.ask(goal)  # put back
    sizes = [s.size for s in found]
    assert sizes == sorted(sizes)
    sets = [frozenset(s.edits) for s in found]
    assert not any(a < b for a in sets for b in sets), "one suggestion holds another"
    json.dumps(found.to_dict())
    found.render()


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_suggestions_flip_the_shipped_models_examples(data: st.DataObject) -> None:
    model = data.draw(st.sampled_from(MODELS), label="model")
    r = _reasoner(model)
    question = tuple(data.draw(st.sampled_from(col)) for col in _constants(model))
    goal = ir.show_atom(r.program.decision, question)
    assume(not r.ask(goal))
    found = suggest(r, goal, limit=3, bounds=QUICK)
    # checked on a reasoner of its own, over the same files
    verify(grantlog.Reasoner(_program(model)), goal, found)


@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_suggestions_flip_generated_worlds(data: st.DataObject) -> None:
    _, goal, text = gen.program_and_goal(data)
    r = grantlog.Reasoner(grantlog.compile(text))
    if r.ask(goal):
        assert suggest(r, goal).holds
        return
    found = suggest(r, goal, limit=4, bounds=Bounds(size=3, seconds=3.0))
    verify(grantlog.Reasoner(grantlog.compile(text)), goal, found)


@cache
def _world(model: str, seed: int) -> tuple[grantlog.Program, dict[str, list[tuple[str, ...]]]]:
    """A small generated world (benchmarks/models/worlds.py: the Gravitino workload's shape)
    for the shipped model or one of the own models, with its decision's columns' values."""
    import sys

    sys.path[:0] = [str(ROOT / "benchmarks"), str(ROOT / "benchmarks" / "models")]
    import worlds

    w = worlds.generate(model, 40, seed, n_users=8, n_groups=3, n_roles=12, n_grants=60)
    return grantlog.compile(paths=[str(worlds.RULES[model])]), w.facts


@settings(max_examples=examples(6, 24), deadline=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_suggestions_flip_the_models_generated_worlds(data: st.DataObject) -> None:
    """The same property on generated worlds of the shipped Gravitino model and of the
    benchmark models with their own names and shapes (unary types and a parent edge; two
    hierarchies), questions drawn from the world's users, operations and objects."""
    model = data.draw(st.sampled_from(["shipped", "unary", "twotrees", "renamed"]),
                      label="model")
    program, facts = _world(model, data.draw(st.integers(1, 3), label="seed"))

    def fresh() -> grantlog.Reasoner:
        r = grantlog.Reasoner(program)
        with r.transaction() as tx:
            for rel, rows in facts.items():
                tx.insert(rel, rows)
        return r

    r = fresh()
    rows = sorted(r.rows(program.decision), key=ir.row_key)
    assume(rows)
    cols = [sorted({row[c] for row in rows}, key=ir.row_key) for c in range(3)]
    question = tuple(data.draw(st.sampled_from(col)) for col in cols)
    goal = ir.show_atom(program.decision, question)
    assume(not r.ask(goal))
    found = suggest(r, goal, limit=3, bounds=QUICK)
    verify(fresh(), goal, found)


def test_every_example_model_gets_a_suggestion_for_some_denial() -> None:
    """Not vacuous: on each shipped model a denied check gets a checked suggestion."""
    for model in MODELS:
        r = _reasoner(model)
        cols = _constants(model)
        done = False
        for s in cols[0][:4]:
            for o in cols[1][:6]:
                for res in cols[2][:4]:
                    goal = ir.show_atom(r.program.decision, (s, o, res))
                    if r.ask(goal):
                        continue
                    found = suggest(r, goal, limit=2, bounds=QUICK)
                    if len(found):
                        verify(grantlog.Reasoner(_program(model)), goal, found)
                        done = True
                        break
                if done:
                    break
            if done:
                break
        assert done, model


GROUPS = """
member(alice, eng).
member(carol, eng).
grant(ops, read, t2).
grant(eng, read, t1).
deny(carol, read, t1).
allowed(U, O, R) :- member(U, G), grant(G, O, R), not deny(U, O, R).
"""


def test_the_missing_grant_goes_to_a_group_the_subject_is_in() -> None:
    r = grantlog.Reasoner(grantlog.compile(GROUPS))
    found = r.suggest("alice", "write", "t1")
    first = found.suggestions[0]
    assert [(e.op, e.fact) for e in first.edits] == [("insert", "grant(eng, write, t1)")]
    assert first.found == (("eng", "member(alice, eng)"),)
    assert "`eng` as in `member(alice, eng)`" in first.sentence
    # a missing base fact repaired: the failed premise of the rule
    assert any(rp.kind == "missing" and rp.fact == "grant(eng, write, t1)"
               for rp in first.repairs)
    verify(grantlog.Reasoner(grantlog.compile(GROUPS)), found.goal, found)


def test_without_a_group_a_membership_is_suggested_or_a_new_group() -> None:
    r = grantlog.Reasoner(grantlog.compile(GROUPS))
    one = r.suggest("bob", "read", "t2")  # ops has the grant: join it
    assert [e.fact for e in one.suggestions[0].edits] == ["member(bob, ops)"]
    two = r.suggest("bob", "write", "t9", limit=10)  # nobody has it: two facts
    assert two.suggestions and all(s.size == 2 for s in two)
    fresh = [s for s in two if s.fresh]
    assert fresh, two.render()
    s = fresh[0]
    new = s.fresh[0][0]
    assert new.startswith("new_")
    assert {e.fact for e in s.edits} == {f"member(bob, {new})", f"grant({new}, write, t9)"}
    # existing constants first: a suggestion with a fresh one comes after those without
    assert [bool(x.fresh) for x in two] == sorted(bool(x.fresh) for x in two)
    verify(grantlog.Reasoner(grantlog.compile(GROUPS)), two.goal, two)


def test_a_deny_that_decided_gets_a_retraction() -> None:
    r = grantlog.Reasoner(grantlog.compile(GROUPS))
    found = r.suggest("carol", "read", "t1")
    first = found.suggestions[0]
    assert [(e.op, e.fact) for e in first.edits] == [("retract", "deny(carol, read, t1)")]
    assert any(rp.kind == "blocked" and rp.fact == "not deny(carol, read, t1)"
               for rp in first.repairs)
    verify(grantlog.Reasoner(grantlog.compile(GROUPS)), found.goal, found)


TWO_DENIES = """
member(erin, eng).
member(erin, ops).
grant(eng, read, t1).
deny_grant(eng, read, t1).
deny_grant(ops, read, t1).
denied(U, O, R) :- member(U, G), deny_grant(G, O, R).
allowed(U, O, R) :- member(U, G), grant(G, O, R), not denied(U, O, R).
"""


def test_a_deny_derived_two_ways_needs_both_retracted() -> None:
    r = grantlog.Reasoner(grantlog.compile(TWO_DENIES))
    found = r.suggest("erin", "read", "t1", limit=10)
    facts = [{(e.op, e.fact) for e in s.edits} for s in found]
    assert {("retract", "deny_grant(eng, read, t1)"),
            ("retract", "deny_grant(ops, read, t1)")} in facts, found.render()
    # one alone is not enough: no suggestion retracts just one of them
    assert {("retract", "deny_grant(eng, read, t1)")} not in facts
    verify(grantlog.Reasoner(grantlog.compile(TWO_DENIES)), found.goal, found)


def test_the_gravitino_deny_grant_gets_a_retraction() -> None:
    r = _reasoner("gravitino")
    found = r.suggest("carol", "select_table", "m1.lakehouse.sales.customers")
    deny = ("m1/role/pii_blocker", "select_table", "m1.lakehouse.sales.customers", "deny")
    assert any(s.edits == (Edit("retract", "privilege", deny),) for s in found), found.render()
    verify(grantlog.Reasoner(_program("gravitino")), found.goal, found)


def test_a_goal_that_holds_gets_none_and_bounds_say_when_they_cut() -> None:
    r = grantlog.Reasoner(grantlog.compile(GROUPS))
    held = r.suggest("allowed(alice, read, t1)")
    assert held.holds and not held.suggestions and "holds" in held.render()
    cut = suggest(r, "allowed(bob, write, t9)", bounds=Bounds(steps=3))
    assert cut.cut_short == "steps"
    assert "cut short: steps" in cut.render()
    few = suggest(_reasoner("gravitino"), 'allowed(alice, modify_table, '
                  '"m1.lakehouse.sales.orders")', bounds=Bounds(candidates=2))
    assert few.cut_short == "candidates" and few.tried <= 2 + 3  # the last one shrunk
    full = suggest(r, "allowed(bob, write, t9)")
    assert full.cut_short is None and full.to_dict()["cut_short"] is None


def test_goals_with_variables_and_conjunctions() -> None:
    r = grantlog.Reasoner(grantlog.compile(GROUPS))
    goal = "allowed(U, write, t1), member(U, eng)"
    found = r.suggest(goal)
    assert found.suggestions and found.suggestions[0].size == 1
    verify(grantlog.Reasoner(grantlog.compile(GROUPS)), goal, found)


def test_the_api_checks_its_arguments() -> None:
    r = grantlog.Reasoner(grantlog.compile(GROUPS))
    assert r.suggest("alice", "write", "t1").goal == "allowed(alice, write, t1)"
    for args, kw in [(("a", "b"), {}), (("alice", "write", "t1"), {"limit": 0}),
                     ((3,), {}), (("alice", "write", "t1"), {"bounds": 3})]:
        with pytest.raises(grantlog.GrantlogError) as e:
            r.suggest(*args, **kw)
        assert e.value.diagnostics[0].code == "bad-argument"


def test_suggesting_changes_nothing_in_a_store(tmp_path: Path) -> None:
    p = _program("gravitino")
    url = f"sqlite:///{tmp_path / 'facts.db'}"
    with grantlog.Reasoner(p, store=url, create=True) as r:
        with r.transaction() as tx:
            tx.insert("member", [("dora", "contractors")])
        rev = r.revision
        found = r.suggest("dora", "select_table", "m1.lakehouse.sales.customers")
        assert found.suggestions
        assert r.revision == rev and r.store is not None and r.store.head()[0] == rev
        assert ("dora", "contractors") in r.base_facts()["member"]


def test_golden_suggestions_of_three_example_questions() -> None:
    r = _reasoner("gravitino")
    out = []
    for q in [("carol", "select_table", "m1.lakehouse.sales.customers"),
              ("alice", "modify_table", "m1.lakehouse.sales.orders"),
              ("bob", "drop_table", "m1.lakehouse.sales.orders")]:
        found = r.suggest(*q, limit=4, bounds=Bounds(seconds=120))  # no cut by the clock
        verify(grantlog.Reasoner(_program("gravitino")), found.goal, found)
        out.append(found.render())
        out.append(json.dumps(found.to_dict()["suggestions"][:2], indent=2,
                              ensure_ascii=False))
    check_golden("suggest/gravitino.txt", "\n\n".join(out) + "\n")
