"""Cold start (issue 26, item 5): the planner's statistics kept with a store's facts
(engine/plan/kept.py, grantlog/store/planstats.py), read on open so the first plan needs no
pass over the rows; the indexes the last reasoner read built again on the first read; bulk
writes into the database's indexes and a bulk transaction's net change at C speed
(engine/eval/database.py). Statistics are only a cost model: a store with deliberately wrong
ones answers exactly."""

from __future__ import annotations

import json
import sys
from operator import itemgetter
from pathlib import Path
from typing import Any

import pytest
from grantlog.engine.core import ir
from grantlog.engine.core.index import UniqueIndex, build_index
from grantlog.engine.eval import database
from grantlog.engine.eval.database import Database, net_change
from grantlog.engine.plan import kept
from grantlog.engine.plan.stats import Statistics
from hypothesis import given, settings
from hypothesis import strategies as st

import grantlog
from grantlog.cli import main
from grantlog.store import open_store, planstats, warm

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))
import gravitino_workload as gw  # noqa: E402


def _questions(program: ir.Program) -> list[tuple[ir.Rule, set[str]]]:
    """Every rule body with no head variable bound, all bound, and each one bound."""
    out = []
    for rule in program.rules:
        names = [t.name for t in rule.head.args if isinstance(t, ir.Var)]
        for bound in [set(), set(names), *({n} for n in names)]:
            out.append((rule, bound))
    return out


def _orders(s: Statistics, questions: list[tuple[ir.Rule, set[str]]]) -> list[list[int]]:
    return [s.order(r.body, set(b)) for r, b in questions]


@pytest.fixture(scope="module")
def measured(gravitino_3000: tuple) -> tuple[ir.Program, Any, dict[str, Any], list[Any]]:
    """The shipped model's 3,000-table database, its statistics measured by every planning
    question, exported and sent through JSON (as a store keeps them)."""
    program, db = gravitino_3000  # tests/conftest.py
    s = Statistics(program, db.full)
    questions = _questions(program)
    orders = _orders(s, questions)
    data = kept.export(s)
    assert data is not None
    return program, db, json.loads(json.dumps(data)), orders


def test_kept_statistics_plan_as_measured_without_a_pass_over_the_rows(
        measured: tuple) -> None:
    program, db, data, orders = measured
    s = kept.statistics(program, db.full, None, data)
    assert _orders(s, _questions(program)) == orders
    assert (s.measured, s.scans, s.walked) == (0, 0, 0)


def test_kept_statistics_of_relations_that_changed_size_are_measured_again(
        measured: tuple) -> None:
    program, db, data, orders = measured
    grown = {**data, "sizes": {r: 10 * n + 10 * kept.SLACK for r, n in data["sizes"].items()}}
    s = kept.statistics(program, db.full, None, grown)
    assert kept.take(Statistics(program, db.full), grown) == 0
    assert _orders(s, _questions(program)) == orders  # measured on the rows, as without
    assert s.measured > 0


MALFORMED: list[Any] = [
    None, [], "x", {}, {"version": 99}, {"version": kept.VERSION},
    {"version": kept.VERSION, "sizes": []},
    {"version": kept.VERSION, "sizes": {"nope": 3}, "distinct": [["nope", 0, 2]]},
]


@pytest.mark.parametrize("bad", range(len(MALFORMED) + 1))
def test_malformed_kept_statistics_are_skipped(measured: tuple, bad: int) -> None:
    """Entries of the wrong shape, arity, column or type are not taken; the rest are."""
    program, db, data, orders = measured
    if bad < len(MALFORMED):
        blob = MALFORMED[bad]
    else:  # every kind of entry damaged, beside the good ones
        sizes = data["sizes"]
        rel = next(r for r in sizes if program.relations[r].arity == 2)
        blob = {**data, "distinct": [*data["distinct"], [rel, 7, 1], [rel, "0", 2], [rel, 0, -1],
                                     [rel, 0], "x"],
                "weighted": [*data["weighted"], [rel, [5], [], 1.0], [rel, [0], [[0]], 1.0],
                             [rel, [0], [], "big"]],
                "matching": [*data["matching"], [rel, [], [["a", "b", "c"]]],
                             [rel, [], [[1.5, "b"]]]],
                "edges": [*data["edges"], [rel, [["a"]]]],
                "reach": [*data["reach"], [f"{rel}/sideways", "a", 1], [f"{rel}/up", "a", -1]],
                "indexes": [[rel, [9]], [rel, []], ["nope", [0]]]}
    s = kept.statistics(program, db.full, db.index, blob)  # no exception
    got = _orders(s, _questions(program))
    assert all(sorted(o) == sorted(w) for o, w in zip(got, orders, strict=True))
    if bad == len(MALFORMED):
        assert got == orders and s.measured == 0  # the good entries were all taken


# -- kept with a store --------------------------------------------------------------------------


def _world(n: int = 300) -> tuple[ir.Program, Any, list[tuple[str, str, str]]]:
    program = grantlog.compile(paths=[str(ROOT / "rules" / "gravitino.gl")])
    w = gw.generate(n, seed=5)
    questions = gw.Sampler(w, seed=6).many(60)
    return program, w, questions


def _load(url: str, program: ir.Program, w: Any) -> None:
    s = open_store(url, program)
    with s.writing() as wr:
        for rel, rows in w.facts.items():
            wr.load(rel, rows)
    s.close()


def _answers(r: Any, questions: list[tuple[str, str, str]]) -> tuple[list[bool], list[Any]]:
    checks = [r.check(*q).allowed for q in questions]
    lists = [sorted(r.list(u, op)) for u, op, _ in questions[:10]]
    return checks, lists


def _kept(url: str, program: ir.Program) -> dict[str, Any] | None:
    s = open_store(url, program)
    try:
        return planstats.read(s)
    finally:
        s.close()


def test_a_store_keeps_the_statistics_and_the_next_reasoner_plans_from_them(
        store_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(kept, "PREWARM", 1)  # a small world's indexes count as big
    program, w, questions = _world()
    _load(store_url, program, w)
    assert _kept(store_url, program) is None
    memory = grantlog.Reasoner(program)
    with memory.transaction() as tx:
        for rel, rows in w.facts.items():
            tx.insert(rel, rows)
    expected = _answers(memory, questions)

    first = grantlog.Reasoner(program, store=store_url, follow=False)
    assert _answers(first, questions) == expected
    built = set(first.database().indexes)
    assert first.planner.stats is not None and first.planner.stats.measured > 0
    first.close()  # keeps what its plans measured and the indexes it built
    data = _kept(store_url, program)
    assert data is not None and data["distinct"] and data["indexes"]
    assert {(r, tuple(c)) for r, c in data["indexes"]} == built

    again = grantlog.Reasoner(program, store=store_url, follow=False)
    assert again.check(*questions[0]).allowed == expected[0][0]
    s = again.planner.stats
    assert s is not None and s.prewarmed == built  # built on the first read, from the list
    assert _answers(again, questions) == expected
    assert (s.measured, s.scans, s.walked) == (0, 0, 0)  # no pass over the rows
    again.close()
    assert _kept(store_url, program) == data  # nothing new measured: not written again


def test_a_store_with_wrong_statistics_answers_exactly(store_url: str) -> None:
    program, w, questions = _world()
    _load(store_url, program, w)
    r = grantlog.Reasoner(program, store=store_url, follow=False)
    expected = _answers(r, questions)
    r.close()
    data = _kept(store_url, program)
    assert data is not None
    wrong = {**data,
             "distinct": [[rel, c, 1 if i % 2 else 10**9]
                          for i, (rel, c, _) in enumerate(data["distinct"])],
             "weighted": [[rel, cols, where, 1e9 if i % 2 else 1e-9]
                          for i, (rel, cols, where, _) in enumerate(data["weighted"])],
             "matching": [[rel, consts, [["nobody"] * len(row) for row in rows]]
                          for rel, consts, rows in data["matching"]],
             "reach": [[key, node, 10**6 if i % 2 else 0]
                       for i, (key, node, _) in enumerate(data["reach"])]}
    s = open_store(store_url, program)
    planstats.write(s, wrong)
    s.close()
    again = grantlog.Reasoner(program, store=store_url, follow=False)
    assert _answers(again, questions) == expected
    st_ = again.planner.stats
    assert st_ is not None  # the wrong ones were what it planned with (other plans may ask
    rel, c, _ = data["distinct"][0]  # what they do not hold: measured then)
    assert st_.distinct(rel, c) == 10**9
    again.close()


def test_statistics_go_stale_after_many_written_rows(
        store_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(planstats, "ANALYZE_AFTER", 5)
    program, w, questions = _world(100)
    _load(store_url, program, w)
    r = grantlog.Reasoner(program, store=store_url, follow=False)
    r.check(*questions[0])
    with r.transaction() as tx:
        tx.insert("member", [("newcomer", "g0")])
    r.close()
    assert _kept(store_url, program) is not None  # one row written since: still fresh
    r = grantlog.Reasoner(program, store=store_url, follow=False)
    with r.transaction() as tx:
        tx.insert("member", [(f"u{i}", "g0") for i in range(5)])
    r.close()
    assert _kept(store_url, program) is None  # 5 rows since: measured again on next open
    r = grantlog.Reasoner(program, store=store_url, follow=False)
    r.check(*questions[0])
    assert r.planner.stats is not None and r.planner.stats.measured > 0
    r.close()
    assert _kept(store_url, program) is not None  # and kept again


def test_statistics_survive_compaction_until_the_tables_drift(
        store_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Past the log's horizon, what was written since is told by the tables' sizes."""
    monkeypatch.setattr(planstats, "ANALYZE_AFTER", 5)
    program, w, questions = _world(100)
    _load(store_url, program, w)
    r = grantlog.Reasoner(program, store=store_url, follow=False)
    r.check(*questions[0])
    with r.transaction() as tx:
        tx.insert("member", [("newcomer", "g0")])
    r.close()
    s = open_store(store_url, program)
    s.compact(0)
    s.close()
    data = _kept(store_url, program)
    assert data is not None and "member" in data["sizes"]
    r = grantlog.Reasoner(program, store=store_url, follow=False)
    with r.transaction() as tx:
        tx.insert("member", [(f"u{i}", "g0") for i in range(5)])
    r.close()
    s = open_store(store_url, program)
    s.compact(0)
    s.close()
    assert _kept(store_url, program) is None


def test_store_load_measures_the_statistics_of_a_big_load(
        store_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    program, w, _ = _world(100)
    facts = tmp_path / "facts.gl"
    facts.write_text("".join(f"{rel}({', '.join(json.dumps(v) for v in row)}).\n"
                             for rel, rows in w.facts.items() for row in rows))
    monkeypatch.setattr(warm, "MEASURE_AFTER", 10**9)
    rules = str(ROOT / "rules" / "gravitino.gl")
    assert main(["store", "load", store_url, str(facts), "--rules", rules]) == 0
    assert _kept(store_url, program) is None  # a small load: measured by the first reader
    monkeypatch.setattr(warm, "MEASURE_AFTER", 1)
    extra = tmp_path / "more.gl"
    extra.write_text('member("late", "g0").\n')
    assert main(["store", "load", store_url, str(extra), "--rules", rules]) == 0
    capsys.readouterr()
    data = _kept(store_url, program)
    assert data is not None and data["distinct"]


# -- the database's bulk paths --------------------------------------------------------------


rows_st = st.lists(st.tuples(st.integers(0, 6), st.sampled_from("abc")), unique=True,
                   max_size=40)


@settings(max_examples=150, deadline=None)
@given(rows_st, rows_st, st.sampled_from([(0,), (1,), (0, 1)]))
def test_bulk_adds_keep_every_index_as_one_built_from_scratch(
        before: list[tuple[int, str]], more: list[tuple[int, str]],
        cols: tuple[int, ...]) -> None:
    """Rows added in bulk (unique keys at C speed, a key twice or an old key row by row,
    other indexes merged from the batch's own) give the index a build over all rows gives."""
    added = [r for r in more if r not in set(before)]
    saved = database.BULK
    database.BULK = 1
    try:
        db = Database(["r"])
        db.add("r", before, 0)
        ix0 = db.index("r", cols)
        db.add("r", added, 1)
    finally:
        database.BULK = saved
    ix = db.index("r", cols)
    ref = build_index(dict.fromkeys([*before, *added]), itemgetter(*cols))
    assert (type(ix) is UniqueIndex) == (type(ref) is UniqueIndex)
    assert {k: set(ix.get(k)) for k in ref} == {k: set(ref.get(k)) for k in ref}
    assert len(ix) == len(ref)
    if type(ref) is UniqueIndex and type(ix0) is UniqueIndex:
        assert ix is ix0  # stayed unique: filled in place


@settings(max_examples=150, deadline=None)
@given(rows_st, st.dictionaries(st.tuples(st.integers(0, 6), st.sampled_from("abc")),
                                st.booleans(), max_size=30))
def test_the_net_change_of_a_transaction_is_the_row_by_row_one(
        stored: list[tuple[int, str]], ops: dict[tuple[int, str], bool]) -> None:
    have = set(stored)
    ins, dels = net_change({"r": ops}, lambda rel: have)
    assert ins.get("r", set()) == {r for r, p in ops.items() if p and r not in have}
    assert dels.get("r", set()) == {r for r, p in ops.items() if not p and r in have}
