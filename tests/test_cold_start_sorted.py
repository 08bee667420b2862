"""Cold start from Python lists, the first listing (issue 26, item 5): a bulk load's columns of
repeated keys that come nearly sorted (a parent's children, an object's type) are indexed by
a ``SortedIndex`` over the rows sorted there (engine/core/index.py ``nearly_sorted``,
engine/eval/database.py ``Database._sort``), which the first listing reads a level at a time
as after a store's open.

* ``nearly_sorted`` gives the stable sort of the rows or nothing (key-like columns, rows far
  from sorted, values that do not compare).
* The listings (and checks) of a reasoner loaded from lists with the sorted path taken equal
  those of one that builds hash indexes only (from scratch: the final facts in one
  transaction) and those of a reasoner over a store holding the same facts, on the shipped
  model and two own models (benchmarks/models/), with the rows given in the hierarchy's
  order or shuffled, and rows retracted and inserted before the first listing.
* A bulk add into a relation holding a sorted index goes into its hash index, and the
  statistics count a closure from a sorted index's rows as from the relation's.
"""

from __future__ import annotations

import random
import sys
from operator import itemgetter
from pathlib import Path
from typing import Any

import pytest
from grantlog.engine.answer import reasoner as reasoner_mod
from grantlog.engine.core import index as core_index
from grantlog.engine.core.hierarchy_roles import hierarchy_roles
from grantlog.engine.core.index import Fanout, SortedIndex, build_index, nearly_sorted
from grantlog.engine.eval import database as database_mod
from grantlog.engine.eval.database import BULK, Database
from hypothesis import given, settings
from hypothesis import strategies as st

import grantlog
from grantlog.store import open_store

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))
sys.path.insert(0, str(ROOT / "benchmarks" / "models"))

import gravitino_workload as gw  # noqa: E402
import worlds  # noqa: E402

#: a small world: a few hundred tables, few principals
SIZES = {"n_users": 10, "n_groups": 4, "n_roles": 10, "n_grants": 60}
MODELS = ("shipped", "unary", "twotrees")


_programs: dict[str, Any] = {}


def _program(model: str) -> Any:
    got = _programs.get(model)
    if got is None:
        got = _programs[model] = worlds.translate(model, *worlds.workload(40, 1, **SIZES)
                                                  ).program()
    return got


_keys = st.sampled_from(["a", "b", "c", "d"])


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(_keys, st.integers(0, 50)), unique=True, max_size=60),
       st.integers(0, 1), st.booleans())
def test_nearly_sorted_is_the_stable_sort_or_none(rows: list[Any], col: int,
                                                  ordered: bool) -> None:
    if ordered:  # as a hierarchy's rows come: grouped by the key
        rows = sorted(rows, key=itemgetter(0))
    for given_as in (rows, dict.fromkeys(rows)):
        got = nearly_sorted(given_as, col)
        keys = [r[col] for r in rows]
        if got is not None:
            assert got == sorted(rows, key=itemgetter(col))
            assert len(set(keys)) < len(keys)  # a column of repeated keys only
        elif ordered and col == 0 and len(set(keys)) < len(keys):
            pytest.fail("rows sorted on a column of repeated keys: sorted")
    assert nearly_sorted([(1, "x"), ("y", "x"), (1, "z")], 0) is None  # do not compare


def test_nearly_sorted_leaves_key_like_and_shuffled_columns() -> None:
    rows = [(f"p{i // 50:04d}", f"c{i:06d}") for i in range(20_000)]
    assert nearly_sorted(rows, 0) == rows  # a parent's children, in order
    assert nearly_sorted(rows, 1) is None  # a child's one parent: key-like
    mixed = rows[:]
    random.Random(1).shuffle(mixed)
    assert nearly_sorted(mixed, 0) is None  # far from sorted: no sort of a million
    a_few = rows[:]  # a few out of place: still sorted
    for i in range(0, len(a_few) - 1, 997):
        a_few[i], a_few[i + 1] = a_few[i + 1], a_few[i]
    assert nearly_sorted(a_few, 0) == sorted(a_few, key=itemgetter(0))


def _world(model: str, n: int, seed: int, shuffle: bool) -> Any:
    w, probes = worlds.workload(n, seed, **SIZES)
    world = worlds.translate(model, w, probes)
    facts = {rel: list(rows) for rel, rows in world.facts.items()}
    if shuffle:
        rng = random.Random(seed)
        for rows in facts.values():
            rng.shuffle(rows)
    return world, facts


def _writes(facts: dict[str, list[Any]], seed: int) -> list[tuple[str, str, Any]]:
    """Retractions (some rows of every relation of more than ten rows) and an insert of a
    row copied from each, before the first listing."""
    rng = random.Random(seed)
    out: list[tuple[str, str, Any]] = []
    for rel, rows in sorted(facts.items()):
        if len(rows) > 10:
            out += [("retract", rel, row) for row in rng.sample(rows, 3)]
    return out


def _load(program: Any, facts: dict[str, list[Any]], sort_min: int,
          writes: list[tuple[str, str, Any]]) -> Any:
    was = database_mod.SORT_MIN, reasoner_mod.BULK_MIN
    database_mod.SORT_MIN = sort_min
    reasoner_mod.BULK_MIN = 1  # a small world's load through the bulk path, as at scale
    try:
        r = grantlog.Reasoner(program)
        with r.transaction() as tx:
            for rel, rows in facts.items():
                tx.insert(rel, rows)
        if writes:
            with r.transaction() as tx:
                for op, rel, row in writes:
                    getattr(tx, op)(rel, [row])
    finally:
        database_mod.SORT_MIN, reasoner_mod.BULK_MIN = was
    return r


def _answers(r: Any, world: Any, checks: list[tuple[str, str, str]]) -> Any:
    first = [r.check(u, world.load, t).allowed for u, _, t in checks]
    users = [*worlds.PROBES, *sorted({u for u, _, _ in checks})]
    return first, [sorted(r.list(u, world.load, type="table")) for u in users]


def _final(facts: dict[str, list[Any]], writes: list[tuple[str, str, Any]]) -> Any:
    out = {rel: dict.fromkeys(rows) for rel, rows in facts.items()}
    for op, rel, row in writes:
        if op == "retract":
            out[rel].pop(row, None)
        else:
            out[rel][row] = None
    return {rel: list(rows) for rel, rows in out.items()}


def _rows(r: Any) -> dict[str, set[Any]]:
    return {rel: set(rows) for rel, rows in r.database().full.items()}


def _sorted_on(r: Any) -> set[tuple[str, tuple[int, ...]]]:
    return {k for k, ix in r.database().indexes.items() if type(ix) is SortedIndex}


@settings(max_examples=12, deadline=None)
@given(st.sampled_from(MODELS), st.integers(1, 50), st.booleans(), st.booleans())
def test_first_listings_from_sorted_indexes_equal_from_scratch(
        model: str, seed: int, shuffle: bool, written: bool) -> None:
    """The sorted path (SORT_MIN lowered to the world's size) against hash indexes only,
    loaded with the final facts at once: the first answers, then after more writes."""
    world, facts = _world(model, 300, seed, shuffle)
    program = _program(model)
    writes = _writes(facts, seed) if written else []
    checks = gw.Sampler(world.workload, seed=seed).many(12, "load_table")
    fast = _load(program, facts, 16, writes)
    scratch = _load(program, _final(facts, writes), 1 << 40, [])
    roles = hierarchy_roles(program)
    walked = (roles.edge, (roles.down[0],))  # the children's column
    if shuffle:
        assert walked not in _sorted_on(fast)
    else:
        assert walked in _sorted_on(fast)
    assert not _sorted_on(scratch)
    assert _answers(fast, world, checks) == _answers(scratch, world, checks)
    more = _writes(facts, seed + 1)[:4] + [("insert", rel, row) for _, rel, row in writes[:4]]
    for r in (fast, scratch):
        with r.transaction() as tx:
            for op, rel, row in more:
                getattr(tx, op)(rel, [row])
    assert _answers(fast, world, checks) == _answers(scratch, world, checks)
    assert _rows(fast) == _rows(scratch)


@pytest.mark.parametrize("model", MODELS)
def test_first_listings_from_lists_equal_from_a_store(model: str, tmp_path: Path) -> None:
    """The same facts (in the hierarchy's order, some retracted before the first listing)
    from lists on the sorted path and from a SQLite store: the same answers."""
    world, facts = _world(model, 400, 7, False)
    program = _program(model)
    writes = _writes(facts, 7)
    url = f"sqlite:///{tmp_path / 'facts.db'}"
    st_ = open_store(url, program, create=True)
    with st_.writing() as wr:
        for rel, rows in _final(facts, writes).items():
            wr.load(rel, rows)
    st_.close()
    checks = gw.Sampler(world.workload, seed=8).many(12, "load_table")
    fast = _load(program, facts, 16, writes)
    stored = grantlog.Reasoner(program, store=url, follow=False)
    try:
        assert _sorted_on(fast)
        assert _answers(fast, world, checks) == _answers(stored, world, checks)
    finally:
        stored.close()


def test_a_bulk_add_goes_into_the_hash_index_of_a_sorted_one(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(database_mod, "SORT_MIN", 16)
    rows = [(f"p{i // 7:03d}", f"c{i:05d}") for i in range(200)]
    db = Database(["e"])
    db.add("e", rows, 0)
    ix = db.indexes[("e", (0,))]
    assert type(ix) is SortedIndex and ("e", (1,)) not in db.indexes
    got = ix.unwritten()
    assert got is not None
    assert got[0] == rows and got[1] == [r[0] for r in rows]
    for a, b in ((0, 1), (1, 0)):  # the statistics' closure counts: the same from the sorted
        by_rows, by_sorted = Fanout(rows, a, b), Fanout(got[0], a, b, got[1] if a == 0 else None)
        for node in {r[a] for r in rows} | {"nope"}:
            assert by_rows.count(node) == by_sorted.count(node) if by_rows.has(node) else True
            assert list(by_rows.kids(node)) == list(by_sorted.kids(node))
    more = [(f"q{i % 300:03d}", f"d{i:05d}") for i in range(BULK)]
    db.add("e", more, 0)
    ix = db.indexes[("e", (0,))]
    assert type(ix) is not SortedIndex
    want = build_index(db.full["e"], itemgetter(0))
    assert {k: list(v) for k, v in ix.items()} == {k: list(v) for k, v in want.items()}
    db.remove("e", rows[:50])
    db.add("e", [("p000", "new")], 0)
    want = build_index(db.full["e"], itemgetter(0))
    assert {k: sorted(v) for k, v in db.index("e", (0,)).items()} == {
        k: sorted(v) for k, v in want.items()}


def test_the_sort_is_for_bulk_loads_of_base_rows_only(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(database_mod, "SORT_MIN", 16)
    rows = [(f"p{i // 7:03d}", f"c{i:05d}") for i in range(200)]
    db = Database(["e", "d"])
    db.add("d", rows, 3)  # derived rows: no sort
    db.add("e", rows[:10], 0)  # too few
    db.add("e", rows[10:], 0)  # not the relation's first rows
    assert not db.indexes
    assert core_index.SORT_MIN > 16  # (the module's own value left alone)
