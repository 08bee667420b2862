"""Cold start from Python lists, the first listing (issue 26, item 5): the index of a big
relation whose keys repeat is built for the keys read only (engine/core/lazy_index.py
``LazyIndex``: a key's rows found by a scan at C speed, the hash index built after a few
scans), a walk asks a sorted index whether it has more keys than a bound without counting
them all (engine/core/index.py ``more_keys``), and a tree's levels are found unnested a
level at a time (engine/answer/hierarchy.py ``unnested``).

* A database whose big indexes are lazy reads and writes as one whose indexes are built at
  once: every key's bucket (the same rows in the same order), after reads, inserts,
  retractions and bulk adds, with few scans allowed or many, on one column and several.
* The listings and checks of a reasoner loaded from lists on the lazy path (rows given in
  the hierarchy's order or shuffled, some retracted before the first listing) equal those
  of one loaded with every index built at once (from scratch: the final facts at once) and
  of one over a SQLite store, on the shipped model and the own models of
  benchmarks/models/, then again after more writes.
* ``more_keys`` answers as ``len``; ``unnested`` on a tree answers as the walk one object
  at a time, with nested types and cycles.
"""

from __future__ import annotations

import random
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from operator import itemgetter
from pathlib import Path
from typing import Any

import pytest
from grantlog.engine.answer import reasoner as reasoner_mod
from grantlog.engine.answer.hierarchy import Hierarchy, unnested
from grantlog.engine.core import lazy_index as lazy_mod
from grantlog.engine.core.index import SortedIndex, build_index, more_keys
from grantlog.engine.core.lazy_index import LazyIndex
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
MODELS = ("shipped", "renamed", "unary", "twotrees")

# ---- the index itself, against one built at once ------------------------------------------

_values = st.sampled_from(["a", "b", "c", "d", "e", 1, 2])
_rows = st.tuples(_values, _values, st.sampled_from(["x", "y", "z"]))
_ops = st.lists(st.one_of(
    st.tuples(st.just("read"), st.tuples(_values, _values, st.sampled_from(["x", "y", "z"]))),
    st.tuples(st.just("add"), st.lists(_rows, max_size=6)),
    st.tuples(st.just("remove"), st.integers(0, 5)),
    st.tuples(st.just("bulk"), st.just(0))), max_size=25)


def _bucket(ix: Any, k: Any) -> list[Any] | None:
    got = ix.get(k)
    return None if got is None else list(got)


@settings(max_examples=150, deadline=None)
@given(st.lists(_rows, min_size=2, max_size=60, unique=True), _ops,
       st.sampled_from([(0,), (1,), (2,), (0, 1), (1, 2), (0, 2, 1)]), st.integers(0, 9))
def test_a_lazy_index_reads_and_writes_as_one_built_at_once(
        rows: list[Any], ops: list[Any], cols: tuple[int, ...], scans: int) -> None:
    was = database_mod.LAZY_MIN, lazy_mod.SCANS
    database_mod.LAZY_MIN, lazy_mod.SCANS = 2, scans
    try:
        lazy, built = Database(["r"]), Database(["r"])
        database_mod.LAZY_MIN = 1 << 40
        for db in (lazy, built):
            db.add("r", rows, 0)
        database_mod.LAZY_MIN = 2
        ix = lazy.index("r", cols)
        database_mod.LAZY_MIN = 1 << 40
        assert type(built.index("r", cols)) is not LazyIndex
        repeated = len({itemgetter(*cols)(r) for r in rows}) < len(rows)
        assert (type(ix) is LazyIndex) == repeated
        keys = [itemgetter(*cols)(r) for r in rows]
        rng = random.Random(len(ops))
        extra = 0
        for op, arg in ops:
            present = list(lazy.full["r"])
            if op == "read":
                for key in (itemgetter(*cols)(arg), rng.choice(keys)):
                    assert _bucket(lazy.index("r", cols), key) == _bucket(
                        built.index("r", cols), key)
                    assert (key in lazy.index("r", cols)) == (key in built.index("r", cols))
            elif op == "add":
                new = [r for r in dict.fromkeys(arg) if r not in lazy.full["r"]]
                for db in (lazy, built):
                    db.add("r", new, 0)
            elif op == "remove" and present:
                gone = rng.sample(present, min(arg, len(present)))
                for db in (lazy, built):
                    db.remove("r", gone)
            elif op == "bulk":  # many rows at once: into the hash index
                extra += 1
                new = [(f"n{extra}", i % 7, f"w{i}") for i in range(BULK)]
                for db in (lazy, built):
                    db.add("r", new, 0)
        want = build_index(built.full["r"], itemgetter(*cols))
        for k in {*keys, *want.keys(), "nope", ("nope", 1)}:
            assert _bucket(lazy.index("r", cols), k) == _bucket(built.index("r", cols), k)
            if want.get(k) is not None:  # (a unique index keeps the row itself: get)
                assert sorted(map(repr, lazy.index("r", cols).get(k))) == sorted(
                    map(repr, want.get(k)))
        got = lazy.index("r", cols)
        assert {k: list(v) for k, v in got.items()} == {
            k: list(v) for k, v in built.index("r", cols).items()}
        assert len(got) == len(want)
    finally:
        database_mod.LAZY_MIN, lazy_mod.SCANS = was


def test_a_lazy_index_scans_a_few_keys_then_builds_its_hash_index(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(database_mod, "LAZY_MIN", 100)
    rows = [(f"o{i:04d}", f"u{i % 37:02d}", "own") for i in range(2000)]
    many = [(f"p{i:04d}", "big", "own") for i in range(300)]  # past one list.index a row
    db = Database(["owner"])
    db.add("owner", rows + many, 0)
    ix = db.index("owner", (1,))
    assert type(ix) is LazyIndex and ix.hash is None
    assert list(ix.get("big")) == many
    assert list(ix.get("u05")) == [r for r in rows if r[1] == "u05"]
    assert ix.get("nobody") is None and "nobody" not in ix
    pair = db.index("owner", (1, 2))  # the scan reads the column of more values: the user
    assert type(pair) is LazyIndex
    assert list(pair.get(("u05", "own"))) == [r for r in rows if r[1] == "u05"]
    assert pair.get(("u05", "other")) is None and pair.get("u05") is None
    for i in range(lazy_mod.SCANS):
        ix.get(f"u{i + 10:02d}")
    assert ix.hash is not None  # scanned enough: built, and the database takes it
    assert type(db.index("owner", (1,))) is dict
    assert db.hashed >= 1
    unique = Database(["e"])
    unique.add("e", [(f"c{i}", "t") for i in range(200)], 0)
    assert type(unique.index("e", (0,))) is not LazyIndex  # one row a key: built at C speed
    assert lazy_mod.LAZY_MIN > 100  # (the module's own value left alone)


# ---- a bound on a sorted index's keys; a tree's unnested levels -----------------------------


@settings(max_examples=100, deadline=None)
@given(st.lists(st.integers(0, 40), max_size=300), st.integers(0, 60))
def test_more_keys_answers_as_len(keys: list[int], m: int) -> None:
    rows = sorted(((k, i) for i, k in enumerate(keys)), key=itemgetter(0))
    ix = SortedIndex(rows, 0)
    assert more_keys(ix, m) == (len(set(keys)) > m)
    assert len(ix) == len(set(keys))
    assert more_keys(build_index(dict.fromkeys(rows), itemgetter(0)), m) == (
        len(set(keys)) > m)


TREE_PROGRAM = """
import "prelude.gl".
rel grant(user: string, object: string).
allowed(U, read, T) :- grant(U, A), ancestor_or_self(A, T), entity(T, tbl).
"""


@settings(max_examples=80, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 30), st.sampled_from(["cat", "sch", "tbl"])),
                min_size=1, max_size=30, unique_by=itemgetter(0)),
       st.lists(st.tuples(st.integers(0, 30), st.integers(0, 30)), max_size=30,
                unique_by=itemgetter(1)))
def test_unnested_on_a_tree_answers_as_the_walk(types: list[Any], edges: list[Any]) -> None:
    r = grantlog.Reasoner(_tree_program())
    with r.transaction() as tx:
        tx.insert("entity", [(f"n{x}", t) for x, t in types])
        tx.insert("contains", [(f"n{p}", f"n{c}") for p, c in edges])  # one parent each
    h = Hierarchy(r.view())
    assert h.tree
    walked = Hierarchy(r.view())
    walked.tree = False  # the walk one object at a time
    for t in ("cat", "sch", "tbl", "none"):
        assert unnested(t, h) == unnested(t, walked), t


def test_unnested_sees_nesting_and_cycles() -> None:
    r = grantlog.Reasoner(_tree_program())
    with r.transaction() as tx:
        tx.insert("entity", [("c", "cat"), ("s1", "sch"), ("s2", "sch"), ("t", "tbl"),
                             ("x", "cat"), ("y", "cat")])
        tx.insert("contains", [("c", "s1"), ("s1", "s2"), ("s2", "t"),  # a schema in one
                               ("x", "y"), ("y", "x")])  # a cycle through two catalogs
    h = Hierarchy(r.view())
    assert h.tree
    assert not unnested("sch", h) and not unnested("cat", h)
    assert unnested("tbl", h)
    with r.transaction() as tx:
        tx.retract("contains", [("s1", "s2")])
        tx.retract("entity", [("y", "cat")])
    h = Hierarchy(r.view())
    assert unnested("sch", h) and unnested("cat", h)  # x above itself only
    assert unnested("tbl", h)


_trees: list[Any] = []


def _tree_program() -> Any:
    if not _trees:
        _trees.append(grantlog.compile(TREE_PROGRAM))
    return _trees[0]


# ---- the first listings from lists on the lazy path ----------------------------------------

_programs: dict[str, Any] = {}


def _program(model: str) -> Any:
    got = _programs.get(model)
    if got is None:
        got = _programs[model] = worlds.translate(model, *worlds.workload(40, 1, **SIZES)
                                                  ).program()
    return got


def _world(model: str, n: int, seed: int, shuffle: bool) -> Any:
    w, probes = worlds.workload(n, seed, **SIZES)
    world = worlds.translate(model, w, probes)
    facts = {rel: list(rows) for rel, rows in world.facts.items()}
    if shuffle:  # not in the hierarchy's order: no sorted index, lazy ones instead
        rng = random.Random(seed)
        for rows in facts.values():
            rng.shuffle(rows)
    return world, facts


def _retractions(facts: dict[str, list[Any]], seed: int) -> list[tuple[str, str, Any]]:
    rng = random.Random(seed)
    out: list[tuple[str, str, Any]] = []
    for rel, rows in sorted(facts.items()):
        if len(rows) > 10:
            out += [("retract", rel, row) for row in rng.sample(rows, 3)]
    return out


@contextmanager
def _path(lazy: bool) -> Iterator[None]:
    """Indexes made lazily (and sorted at a load) from 16 rows (``lazy``), or never."""
    was = database_mod.LAZY_MIN, database_mod.SORT_MIN, reasoner_mod.BULK_MIN
    database_mod.LAZY_MIN = 16 if lazy else 1 << 40
    database_mod.SORT_MIN = 16 if lazy else 1 << 40
    reasoner_mod.BULK_MIN = 1  # a small world's load through the bulk path, as at scale
    try:
        yield
    finally:
        database_mod.LAZY_MIN, database_mod.SORT_MIN, reasoner_mod.BULK_MIN = was


def _load(program: Any, facts: dict[str, list[Any]], lazy: bool,
          writes: list[tuple[str, str, Any]]) -> Any:
    with _path(lazy):
        r = grantlog.Reasoner(program)
        with r.transaction() as tx:
            for rel, rows in facts.items():
                tx.insert(rel, rows)
        _write(r, lazy, writes)
    return r


def _write(r: Any, lazy: bool, writes: list[tuple[str, str, Any]]) -> None:
    if writes:
        with _path(lazy), r.transaction() as tx:
            for op, rel, row in writes:
                getattr(tx, op)(rel, [row])


def _final(facts: dict[str, list[Any]], writes: list[tuple[str, str, Any]]) -> Any:
    out = {rel: dict.fromkeys(rows) for rel, rows in facts.items()}
    for op, rel, row in writes:
        if op == "retract":
            out[rel].pop(row, None)
        else:
            out[rel][row] = None
    return {rel: list(rows) for rel, rows in out.items()}


def _answers(r: Any, world: Any, checks: list[tuple[str, str, str]], lazy: bool = False,
             seen: bool = False) -> Any:
    """The listings first (each user's first listing, then the checks), as the bench asks
    them after a load; ``lazy``: on the lazy path (``seen``: some index read was lazy)."""
    users = [*worlds.PROBES, *sorted({u for u, _, _ in checks})]
    with _path(lazy):
        lists = [sorted(r.list(u, world.load, type="table")) for u in users]
        if seen:
            assert any(type(ix) is LazyIndex for ix in r.database().indexes.values())
        return lists, [r.check(u, world.load, t).allowed for u, _, t in checks]


@settings(max_examples=12, deadline=None)
@given(st.sampled_from(MODELS), st.integers(1, 50), st.booleans(), st.booleans(),
       st.sampled_from([2, 1 << 30]))
def test_first_listings_on_the_lazy_path_equal_from_scratch(
        model: str, seed: int, shuffle: bool, written: bool, scans: int) -> None:
    """Lazy indexes (LAZY_MIN and SORT_MIN lowered to the world's size; a few scans
    before the hash index is built, or no end of them) against indexes built at once,
    loaded with the final facts at once: the first answers, then after more writes, and
    the rows of every relation."""
    world, facts = _world(model, 300, seed, shuffle)
    program = _program(model)
    writes = _retractions(facts, seed) if written else []
    checks = gw.Sampler(world.workload, seed=seed).many(12, "load_table")
    was = lazy_mod.SCANS
    lazy_mod.SCANS = scans
    try:
        fast = _load(program, facts, True, writes)
        scratch = _load(program, _final(facts, writes), False, [])
        assert not any(type(ix) is LazyIndex for ix in scratch.database().indexes.values())
        assert _answers(fast, world, checks, True, scans > 100) == _answers(scratch, world,
                                                                             checks)
        more = _retractions(facts, seed + 1)[:4] + [("insert", rel, row)
                                                     for _, rel, row in writes[:4]]
        _write(fast, True, more)
        _write(scratch, False, more)
        assert _answers(fast, world, checks, True) == _answers(scratch, world, checks)
    finally:
        lazy_mod.SCANS = was
    assert {rel: set(rows) for rel, rows in fast.database().full.items()} == {
        rel: set(rows) for rel, rows in scratch.database().full.items()}


@pytest.mark.parametrize("model", MODELS)
def test_first_listings_on_the_lazy_path_equal_from_a_store(model: str,
                                                            tmp_path: Path) -> None:
    """The same facts (shuffled, some retracted before the first listing) from lists on the
    lazy path and from a SQLite store: the same answers."""
    world, facts = _world(model, 400, 7, True)
    program = _program(model)
    writes = _retractions(facts, 7)
    url = f"sqlite:///{tmp_path / 'facts.db'}"
    st_ = open_store(url, program, create=True)
    with st_.writing() as wr:
        for rel, rows in _final(facts, writes).items():
            wr.load(rel, rows)
    st_.close()
    checks = gw.Sampler(world.workload, seed=8).many(12, "load_table")
    was = lazy_mod.SCANS
    lazy_mod.SCANS = 1 << 30  # no hash index built unless iterated
    stored = grantlog.Reasoner(program, store=url, follow=False)
    try:
        fast = _load(program, facts, True, writes)
        assert _answers(fast, world, checks, True, True) == _answers(stored, world, checks)
    finally:
        lazy_mod.SCANS = was
        stored.close()
