"""Filters through a level ("the schema of R", engine/answer/hierarchy.py ``lift``): a rule body
``schema_of(R, S), can_use(U, S)`` is evaluated with ``S`` unknown and lifted to a condition on
``R``, instead of deciding ``can_use`` for every schema. The lift is exact in a tree whose
schemas are never nested; elsewhere (nested schemas, a graph) the filter decides the schemas
one by one as before. Either way a filter admits exactly what ``check`` allows: generated
hierarchies where anything may sit under anything (tables under catalogs, schemas in schemas,
objects with no schema above them)."""

from __future__ import annotations

from typing import Any

from conftest import examples
from grantlog.engine.answer.conditions import mentioned
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import grantlog

PROGRAM = """
import "prelude.gl".
rel grant(user: string, privilege: string, object: string).
rel owner(object: string, user: string).
rel tagged(object: string, tag: string).
rel schema_of(object: string, schema: string).
rel can_use(user: string, schema: string).
rel blocked(user: string, object: string).
rel in_usable(user: string, object: string).
schema_of(O, S) :- entity(S, sch), ancestor_or_self(S, O).
blocked(U, O) :- grant(U, block, A), ancestor_or_self(A, O).
can_use(U, S) :- entity(S, sch), grant(U, use, A), ancestor_or_self(A, S), not blocked(U, S).
can_use(U, S) :- owner(S, U).
in_usable(U, O) :- schema_of(O, S), can_use(U, S).
// lifted: the schema's literals share only U (bound) with the rest
allowed(U, read, T) :- entity(T, tbl), in_usable(U, T), grant(U, read, A), ancestor_or_self(A, T).
allowed(U, own, T) :- schema_of(T, S), owner(S, U), entity(T, tbl).
allowed(U, open, T) :- schema_of(T, S), not blocked(U, S), grant(U, open, T).
// not lifted: G joins the schema's literal to the resource's
allowed(U, cross, T) :- schema_of(T, S), tagged(S, G), tagged(T, G), grant(U, cross, G).
// not lifted: recursive over the schema (the lift gives up; the schemas one by one)
@demand rel reach(user: string, object: string).
reach(U, O) :- grant(U, open, O).
reach(U, O) :- schema_of(O, S), reach(U, S).
allowed(U, via, T) :- entity(T, tbl), reach(U, T).
"""
USERS = ["u1", "u2"]
OPS = ["read", "own", "open", "cross", "via"]


def _program() -> Any:
    if not _P:
        _P.append(grantlog.compile(PROGRAM))
    return _P[0]


_P: list[Any] = []


@st.composite
def worlds(draw: st.DrawFn) -> dict[str, list[tuple[str, ...]]]:
    n = draw(st.integers(2, 12))
    objs = [f"o{i}" for i in range(n)]
    types = {o: draw(st.sampled_from(["root", "cat", "sch", "tbl", "tbl", "sch"]))
             for o in objs}
    # a tree: each object's parent is an earlier one (or none); sometimes a second parent
    contains = []
    for i, o in enumerate(objs[1:], 1):
        if draw(st.integers(0, 5)) > 0:
            contains.append((objs[draw(st.integers(0, i - 1))], o))
    if draw(st.integers(0, 9)) == 0 and n > 2:
        contains.append((objs[0], objs[-1]))  # a graph now and then
    obj = st.sampled_from(objs)
    return {
        "entity": [(o, t) for o, t in types.items()],
        "contains": list(dict.fromkeys(contains)),
        "grant": draw(st.lists(st.tuples(st.sampled_from(USERS), st.sampled_from(
            ["use", "block", "read", "open", "cross"]), obj), max_size=8))
        + draw(st.lists(st.tuples(st.sampled_from(USERS), st.just("cross"),
                                  st.sampled_from(["g1", "g2"])), max_size=2)),
        "owner": draw(st.lists(st.tuples(obj, st.sampled_from(USERS)), max_size=2)),
        "tagged": draw(st.lists(st.tuples(obj, st.sampled_from(["g1", "g2"])), max_size=4)),
    }


def _reasoner(facts: dict[str, list[tuple[str, ...]]]) -> grantlog.Reasoner:
    r = grantlog.Reasoner(_program())
    with r.transaction() as tx:
        for rel, rows in facts.items():
            tx.insert(rel, rows)
    return r


@settings(max_examples=examples(100, 300), deadline=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(worlds())
def test_filters_through_a_level_admit_what_check_allows(
        facts: dict[str, list[tuple[str, ...]]]) -> None:
    r = _reasoner(facts)
    objs = sorted({o for o, _ in facts["entity"]})
    for u in USERS:
        for op in OPS:
            f = r.filter(u, op)
            want = [o for o in objs if r.check(u, op, o).allowed]
            assert [o for o in objs if f.holds(o)] == want, (u, op, f.cond)
            assert sorted(r.list(u, op)) == want, (u, op)


TREE = [("entity", [("m", "root"), ("c1", "cat"), ("c2", "cat"), ("s1", "sch"), ("s2", "sch"),
                    ("s3", "sch"), ("t1", "tbl"), ("t2", "tbl"), ("t3", "tbl"), ("x", "tbl")]),
        ("contains", [("m", "c1"), ("m", "c2"), ("c1", "s1"), ("c1", "s2"), ("c2", "s3"),
                      ("s1", "t1"), ("s2", "t2"), ("s3", "t3"), ("c1", "x")])]


def test_the_lift_names_no_schema_and_leaves_out_what_has_none() -> None:
    """USE on the catalog: the filter is "under c1", not one term per schema of c1 (the
    schemas are not decided one by one); the table x directly under c1 has no schema and
    is not admitted."""
    r = grantlog.Reasoner(_program())
    with r.transaction() as tx:
        for rel, rows in TREE:
            tx.insert(rel, rows)
        tx.insert("grant", [("u1", "use", "c1"), ("u1", "read", "m"), ("u1", "block", "s2")])
        # USE on a table says nothing of its schema: u2 may read nothing
        tx.insert("grant", [("u2", "use", "t1"), ("u2", "read", "m")])
    f = r.filter("u1", "read")
    assert not {"s1", "s2", "s3"} & mentioned(f.cond) - {"s2"}, f.cond
    assert sorted(r.list("u1", "read")) == ["t1"]
    assert [o for o in ("t1", "t2", "t3", "x") if f.holds(o)] == ["t1"]
    f = r.filter("u2", "read")
    assert f.cond == ("false",) and r.list("u2", "read") == []


def test_nested_schemas_are_decided_one_by_one() -> None:
    """A schema inside a schema: its tables have two schemas, and the lift (which needs one)
    is not used; the answers stay those of check."""
    r = grantlog.Reasoner(_program())
    with r.transaction() as tx:
        for rel, rows in TREE:
            tx.insert(rel, rows)
        tx.insert("entity", [("s4", "sch"), ("t4", "tbl")])
        tx.insert("contains", [("s1", "s4"), ("s4", "t4")])
        tx.insert("grant", [("u1", "use", "s1"), ("u1", "read", "m"), ("u1", "block", "s4")])
    want = [o for o in ("t1", "t2", "t3", "t4", "x") if r.check("u1", "read", o).allowed]
    assert want == ["t1", "t4"]  # t4: s4 is blocked but s1 is usable
    assert sorted(r.list("u1", "read")) == want
    f = r.filter("u1", "read")
    assert [o for o in ("t1", "t2", "t3", "t4", "x") if f.holds(o)] == want
    # the hierarchy changed: the lift is back once the nesting is gone
    r.retract("contains", [("s1", "s4")])
    assert sorted(r.list("u1", "read")) == ["t1"]


def test_unions_of_subtrees_meet() -> None:
    """Beside each other, two unions of subtrees become their intersection (the deeper of
    each pair where one holds the other), exactly: the catalogs a user may use beside the
    tables granted to them leave the tables."""
    from grantlog.engine.answer.hierarchy import Hierarchy, rollup

    r = grantlog.Reasoner(_program())
    with r.transaction() as tx:
        for rel, rows in TREE:
            tx.insert(rel, rows)
        tx.insert("contains", [("s3", "loose")])  # a node with no type: under it, not it
    h = Hierarchy(r.view())
    cond = ("and", (("type", "tbl"), ("or", (("under", "c1"), ("under", "loose"))),
                    ("or", (("under", "s1"), ("is", "t3"), ("under", "loose"),
                            ("under", "m")))))
    got = rollup(cond, h)
    assert got == ("and", (("type", "tbl"), ("or", (("under", "c1"), ("under", "loose")))))
    h = Hierarchy(r.view())
    got = rollup(("and", (("type", "tbl"), ("or", (("under", "s1"), ("under", "s3"))),
                          ("or", (("under", "c1"), ("is", "t3"))))), h)
    assert got == ("and", (("type", "tbl"), ("or", (("under", "s1"), ("is", "t3")))))


def test_base_facts_of_a_level_relation_turn_the_lift_off() -> None:
    """A fact given for `schema_of` itself (x, directly under c1, declared in schema s1) is
    an answer the rule does not give: the lift, which reads only the rule, is not used
    (`schema_of` is `@writable` here: writes may give it facts)."""
    r = grantlog.Reasoner(grantlog.compile(
        PROGRAM.replace("rel schema_of(", "@writable rel schema_of(")))
    with r.transaction() as tx:
        for rel, rows in TREE:
            tx.insert(rel, rows)
        tx.insert("grant", [("u1", "use", "s1"), ("u1", "read", "m")])
    assert sorted(r.list("u1", "read")) == ["t1"]
    r.insert("schema_of", [("x", "s1")])
    want = [o for o in ("t1", "t2", "t3", "x") if r.check("u1", "read", o).allowed]
    assert want == ["t1", "x"]
    assert sorted(r.list("u1", "read")) == want
    f = r.filter("u1", "read")
    assert [o for o in ("t1", "t2", "t3", "x") if f.holds(o)] == want
