"""A rule's first loop filtered by a later scan's index at C speed (engine/core/lazy_index.py
``semijoin``, ``ready``; engine/plan/codegen.py), and a stratum's new rows kept in the order
they were made (engine/eval/seminaive.py).

The filter only runs for loops of :data:`~engine.core.lazy_index.SEMI` rows or more, which
the generated programs of the property tests never reach: here the threshold is lowered to
0, so that every loop of every rule, from-scratch and incremental, is filtered, and the
answers are compared with the naive oracle and with compiling from scratch.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from unittest.mock import patch

import naive
import strategies as gen
from grantlog.engine.core import lazy_index
from grantlog.engine.core.index import UniqueIndex
from grantlog.engine.core.lazy_index import LazyIndex, ready, semijoin
from grantlog.engine.plan.codegen import generate
from grantlog.engine.plan.join import plan_rule
from hypothesis import given, note
from hypothesis import strategies as st

import grantlog


@contextmanager
def every_loop_filtered() -> Iterator[None]:
    with patch.object(lazy_index, "SEMI", 0):
        yield


@given(prog=gen.programs())
def test_every_loop_filtered_matches_naive_evaluation(prog: gen.Program) -> None:
    text = prog.text()
    note(text)
    expected = naive.naive_eval_text(text)
    with every_loop_filtered():
        r = grantlog.Reasoner(grantlog.compile(text))
        for rel in prog.arity:
            assert r.rows(rel) == expected.get(rel, set()), f"relation {rel}"


@given(data=st.data())
def test_every_loop_filtered_updates_match_static_compilation(data: st.DataObject) -> None:
    prog = data.draw(gen.programs(), label="program")
    ops = data.draw(gen.updates(prog), label="updates")
    note(prog.text())
    with every_loop_filtered():
        r = grantlog.Reasoner(grantlog.compile(prog.text()))
        current = {rel: set(rows) for rel, rows in prog.facts.items()}
        for op in ops:
            gen.apply_op(r, op, current)
        got = {name: r.rows(name) for name in prog.arity}
    static = grantlog.Reasoner(grantlog.compile(prog.text(current)))
    for name in prog.arity:
        assert got[name] == static.rows(name), f"relation {name} after {ops}"


def _source(text: str, head: str) -> list[str]:
    program = grantlog.compile(text)
    rec = frozenset({head})
    return [generate(p) for rule in program.rules if rule.head.rel == head
            for p in plan_rule(rule, rec)]


def test_the_first_loop_is_filtered_by_the_index_a_later_scan_reads() -> None:
    text = """
    rel edge(a: string, b: string).
    path(X, Y) :- edge(X, Y).
    path(X, Z) :- path(X, Y), edge(Y, Z).
    """
    (delta,) = [s for s in _source(text, "path") if "D['path']" in s]
    # the delta's rows whose Y is a key of edge's index on its first column
    assert "for v0, v1 in _semijoin(d0, ix0, (1,)):" in delta
    assert "ix0 = _ready(ix0, len(d0))" in delta


def test_a_membership_test_filters_by_the_relation_itself() -> None:
    text = """
    rel a(x: string, y: string).
    rel b(x: string, y: string).
    both(X, Y) :- a(X, Y), b(Y, X).
    """
    (src,) = _source(text, "both")
    assert "_semijoin(f0, f1, (1, 0))" in src


def test_no_filter_where_no_later_scan_is_keyed_by_the_first_one_alone() -> None:
    text = """
    rel a(x: string).
    rel b(x: string, y: string).
    p(X, Y) :- a(X), b(Z, Y), Z = Y.
    """
    (src,) = _source(text, "p")
    assert "_semijoin" not in src


def test_semijoin_keeps_the_rows_that_find_a_key() -> None:
    rows = {(f"u{i}", f"r{i % 7}") for i in range(1000)}
    index = {"r1": (("r1", "x"),), "r3": {("r3", "y"): None, ("r3", "z"): None}}
    with patch.object(lazy_index, "SEMI", 0):
        got = list(semijoin(rows, index, (1,)))
        assert sorted(got) == sorted(r for r in rows if r[1] in ("r1", "r3"))
        unique = UniqueIndex({("u5", "r5"): ("u5", "r5", "t")})
        assert list(semijoin(rows, unique, (0, 1))) == [("u5", "r5")]
        full = {("r2", "u9"): 0}
        assert list(semijoin(rows, full, (1, 0))) == [("u9", "r2")]
        # a one-shot iterator, or a container that is not a dict: the rows as they are
        once = iter(sorted(rows))
        assert semijoin(once, index, (1,)) is once
        assert semijoin(rows, LazyIndex(sorted(rows), (1,)), (1,)) is rows
    assert len(rows) >= lazy_index.SEMI  # at the default threshold too
    assert sorted(semijoin(rows, index, (1,))) == sorted(got)


def test_a_short_loop_is_not_filtered() -> None:
    rows = {("a", "b")}
    assert semijoin(rows, {"b": (("b", "c"),)}, (1,)) is rows


def test_ready_hashes_a_lazy_index_a_long_loop_reads() -> None:
    rows = [(f"k{i % 5000}", f"v{i}") for i in range(20000)]
    few, many = LazyIndex(list(rows), (0,)), LazyIndex(list(rows), (0,))
    assert ready(few, 100) is few and few.hash is None  # a short loop: kept lazy
    # a quarter of the rows or more: the hash index, read in its place
    assert ready(many, 5000) is many.hash and many.hash is not None
    assert many.hash["k7"] == {r: None for r in rows if r[0] == "k7"}
    assert ready(few, 1000) is few and few.hash is None  # 1,000 reads of 20,000 rows: lazy
    plain = {"k": (("k", "v"),)}
    assert ready(plain, 10**6) is plain


def test_new_rows_are_kept_in_the_order_they_were_made() -> None:
    names = [f"n{(i * 7919) % 1000:03}" for i in range(40)]
    facts = "".join(f'q("{n}").\n' for n in names)
    # p materialized: evaluated by the semi-naive rounds (a virtual relation is a set)
    r = grantlog.Reasoner(grantlog.compile(
        'rel q(x: string).\n@materialize rel p(x: string).\np(X) :- q(X).\n' + facts))
    views = r.all_views()
    assert list(views["p"]) == [(n,) for n in names]
    assert {k: set(v) for k, v in views.items()} == r.all_rows()


def test_filtered_joins_match_a_python_closure() -> None:
    # a key at each column: the delta of reach joins link on its second column (its first
    # holds the seeds' names, never a link's), and the membership test reads a row backwards
    import random

    rnd = random.Random(7)
    links = {(f"n{rnd.randrange(120)}", f"n{rnd.randrange(120)}") for _ in range(200)}
    seeds = {(f"s{i}", f"n{rnd.randrange(120)}") for i in range(60)}
    text = "rel link(a: string, b: string).\nrel seed(a: string, b: string).\n" + "".join(
        f'link("{a}", "{b}").\n' for a, b in sorted(links)) + "".join(
        f'seed("{a}", "{b}").\n' for a, b in sorted(seeds)) + """
    reach(X, Y) :- seed(X, Y).
    reach(X, Z) :- reach(X, Y), link(Y, Z).
    back(X, Y) :- link(X, Y), link(Y, X).
    """
    reach = set()
    for s, n in seeds:
        todo, seen = [n], {n}
        while todo:
            y = todo.pop()
            for a, b in links:
                if a == y and b not in seen:
                    seen.add(b)
                    todo.append(b)
        reach |= {(s, y) for y in seen}
    for semi in (0, 10**9):
        with patch.object(lazy_index, "SEMI", semi):
            r = grantlog.Reasoner(grantlog.compile(text))
            assert r.rows("reach") == reach
            assert r.rows("back") == {(x, y) for x, y in links if (y, x) in links}
