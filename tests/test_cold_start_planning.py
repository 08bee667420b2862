"""Cold start (issue 26, item 5): the planner's statistics read the database's own indexes (the
ones the evaluator's walks and the listings read) instead of building copies of a million-row
hierarchy; the exhaustive join order searches the permutations depth first, sharing prefixes
and dropping those already dearer than the best order, and chooses what trying every
permutation chooses; an index is built as one row at a time would build it."""

from __future__ import annotations

import itertools
import sys
from pathlib import Path

import pytest
from grantlog.engine.core import ir
from grantlog.engine.core.index import UniqueIndex, build_index
from grantlog.engine.eval.database import Database
from grantlog.engine.plan.stats import SAMPLE, Statistics
from hypothesis import given, settings
from hypothesis import strategies as st

import grantlog

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))

import gravitino_workload as gw  # noqa: E402


@pytest.fixture(scope="module")
def loaded(gravitino_3000: tuple) -> tuple[ir.Program, Database]:
    return gravitino_3000  # tests/conftest.py


def _questions(program: ir.Program) -> list[tuple[ir.Rule, set[str]]]:
    out = []
    for rule in program.rules:
        names = [t.name for t in rule.head.args if isinstance(t, ir.Var)]
        for bound in [set(), set(names), *({n} for n in names)]:
            out.append((rule, bound))
    return out


def _every_permutation(s: Statistics, body: tuple[ir.Lit, ...], bound: set[str],
                       goal: bool) -> list[int]:
    """The first cheapest order among all permutations, each costed from scratch."""
    atoms = [i for i, lit in enumerate(body) if isinstance(lit, ir.Atom)]
    best: tuple[list[int], float] | None = None
    for perm in itertools.permutations(atoms):
        _, work = s.cost(body, perm, bound, goal)
        if best is None or work < best[1]:
            best = (list(perm), work)
    return best[0] if best is not None else []


def test_the_depth_first_order_is_the_one_every_permutation_gives(loaded: tuple) -> None:
    program, db = loaded
    s = Statistics(program, db.full, db.index)
    asked = 0
    for rule, bound in _questions(program):
        atoms = sum(isinstance(lit, ir.Atom) for lit in rule.body)
        if not 3 <= atoms <= 6:
            continue
        for goal in (False, True):
            every = _every_permutation(s, rule.body, bound, goal)  # warms the estimates
            before = s.steps
            assert s.order(rule.body, bound, goal) == every, (str(rule), bound, goal)
            # the search shares prefixes: fewer steps than costing each permutation
            assert s.steps - before < atoms * len(list(itertools.permutations(range(atoms))))
            asked += 1
    assert asked > 50


def _fresh(program: ir.Program, full: dict) -> Database:
    db = Database(program.relations)
    for rel, rows in full.items():
        if rel not in program.derived:
            db.add(rel, list(rows), 0)
    return db


def test_statistics_read_the_databases_indexes(loaded: tuple) -> None:
    """The closure's counts come from the database's indexes on the edge (the ones the
    evaluator's walks read, and the listings'): built once, shared, no copy of the
    hierarchy; a relation up to SAMPLE rows is read through its grouped rows, no index."""
    program, loaded_db = loaded
    db = _fresh(program, loaded_db.full)
    s = Statistics(program, db.full, db.index)
    for rule, bound in _questions(program):
        s.order(rule.body, bound)
    assert s.walked > 0
    assert set(db.indexes) == {("contains", (0,)), ("contains", (1,))}
    assert s.scans == 2


def _reach_by_paths(edges: set[tuple[int, int]], start: int, down: bool) -> int:
    """Nodes reached from ``start`` over acyclic edges, counted once per path (the
    estimate's reading of a DAG)."""
    nxt: dict[int, list[int]] = {}
    for a, b in edges:
        x, y = (a, b) if down else (b, a)
        nxt.setdefault(x, []).append(y)

    def count(node: int) -> int:
        return sum(1 + count(k) for k in nxt.get(node, ()))

    return count(start)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 12), st.integers(0, 12)), max_size=40),
       st.integers(0, 12), st.booleans())
def test_closure_counts_from_the_index_on_acyclic_edges(
        pairs: list[tuple[int, int]], start: int, down: bool) -> None:
    """A walk down from ``start`` (the closure looked up on its first column) or up (on its
    second) is estimated to reach what it reaches, counted once per path."""
    edges = {(a, b) for a, b in pairs if a < b}  # acyclic: parents below children
    program = grantlog.compile(
        "rel edge(parent: int, child: int).\n@demand rel reach(a: int, b: int).\n"
        "reach(X, Y) :- edge(X, Y).\nreach(X, Z) :- reach(X, Y), edge(Y, Z).\n")
    assert "reach" in program.virtual
    full = {"edge": dict.fromkeys(sorted(edges), 0)}
    db = Database(["edge"])
    db.add("edge", list(full["edge"]), 0)
    col = 0 if down else 1
    for s in (Statistics(program, full), Statistics(program, db.full, db.index)):
        rows, _ = s.estimate("reach", (col,), 2, given=((col, (start,)),))
        assert rows == _reach_by_paths(edges, start, down)


def _reference_index(rows: list[tuple[object, ...]], cols: tuple[int, ...]) -> dict:
    """An index built a row at a time (the layout engine/core/index.py describes)."""
    ix: dict[object, object] = {}
    for row in rows:
        k = row[cols[0]] if len(cols) == 1 else tuple(row[c] for c in cols)
        b = ix.get(k)
        if b is None:
            ix[k] = (row,)
        elif isinstance(b, tuple):
            ix[k] = {b[0]: None, row: None}
        else:
            b[row] = None  # type: ignore[index]
    return ix


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 5), st.sampled_from("abc"), st.integers(0, 50)),
                unique=True, max_size=60),
       st.sampled_from([(0,), (1,), (2,), (0, 1), (1, 2)]))
def test_an_index_is_built_as_one_row_at_a_time_would_build_it(
        rows: list[tuple[int, str, int]], cols: tuple[int, ...]) -> None:
    from operator import itemgetter
    ix = build_index(dict.fromkeys(rows, 0), itemgetter(*cols))
    ref = _reference_index(list(rows), cols)
    assert list(ix) == list(ref)
    assert all(list(ix.get(k)) == list(v) for k, v in ref.items())  # type: ignore[arg-type]
    unique = all(isinstance(v, tuple) for v in ref.values())
    assert (type(ix) is UniqueIndex) == unique
    if not unique:
        assert all(type(ix[k]) is type(v) for k, v in ref.items())


def test_a_rare_constant_of_a_big_relation_is_found_in_its_index() -> None:
    """Beyond SAMPLE rows, the one metalake among the objects is missed by the sample and
    found in the relation's column by a scan at C speed (no index built that the first
    answer may not read: engine/core/index.py ``first_holding``), the rows the index
    gives, with a database or without one; the same rows, so the same plans."""
    program = grantlog.compile(paths=[str(ROOT / "rules" / "gravitino.gl")])
    w = gw.generate(30_000, seed=3)
    db = Database(program.relations)
    for rel, rows in w.facts.items():
        db.add(rel, rows, 0)
    assert len(db.full["entity"]) > SAMPLE
    shared, alone = Statistics(program, db.full, db.index), Statistics(program, db.full)
    questions = _questions(program)
    assert [shared.order(r.body, b) for r, b in questions] == [
        alone.order(r.body, b) for r, b in questions]
    assert ("entity", (1,)) not in db.indexes
    want = list(build_index(db.full["entity"], lambda row: row[1])["metalake"])
    assert shared.first_rows("entity", ((1, "metalake"),)) == want[:256]
