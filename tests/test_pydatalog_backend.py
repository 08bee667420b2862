"""The pyDatalog backend (engine/backends/pydatalog.py): API parity with the in-memory reasoner,
every translation that works around a pyDatalog pitfall, isolation of pyDatalog's global state,
and the pitfalls themselves, pinned on pyDatalog alone (so a pyDatalog release that fixes one
shows up here). The differential tests are in tests/test_differential.py.
"""

from __future__ import annotations

import subprocess
import sys
import threading
from collections.abc import Callable
from typing import Any

import pytest
from conftest import within

pytest.importorskip("pyDatalog")

from grantlog.engine.backends.pydatalog import (
    REFUSED,
    UNSUPPORTED,
    PyDatalogReasoner,
)
from grantlog.engine.core.results import Decision
from pyDatalog import Logic, pyEngine

import grantlog


def _both(text: str) -> tuple[grantlog.Reasoner, PyDatalogReasoner]:
    program = grantlog.compile(text)
    return grantlog.Reasoner(program), PyDatalogReasoner(program)


def _same(text: str, *goals: str, seconds: float = 20) -> PyDatalogReasoner:
    """Both backends agree on every relation and on the goals."""
    m, p = _both(text)

    def compare() -> None:
        for rel in m.program.relations:
            assert p.rows(rel) == m.rows(rel), rel
        for g in goals:
            assert p.query(g) == m.query(g), g

    within(seconds, compare)
    return p


# ---------------------------------------------------------------------------------------------
# the API, as the in-memory reasoner answers it

POLICY = """
member(alice, eng). member(bob, ops). member("Carol", eng).
grant(eng, read, t1). grant(eng, read, t2). grant(ops, write, t1).
@hierarchy(type) rel entity(object: string, type: string).
entity(t1, table). entity(t2, view).
allowed(U, Op, R) :- member(U, G), grant(G, Op, R), not banned(U).
rel banned(user: string).
"""


def test_rows_query_ask_check_list_who_like_the_memory_reasoner() -> None:
    m, p = _both(POLICY)
    for rel in m.program.relations:
        assert p.rows(rel) == m.rows(rel)
    for goal in ["allowed(U, read, R)", "allowed(U, Op, t1), Op != read", "member(X, _)",
                 "allowed(alice, read, t1)", "allowed(alice, write, t1)"]:
        assert p.query(goal) == m.query(goal)
        assert p.ask(goal) is m.ask(goal)
    assert p.query("allowed(U, read, R)") == [
        {"U": "Carol", "R": "t1"}, {"U": "Carol", "R": "t2"},
        {"U": "alice", "R": "t1"}, {"U": "alice", "R": "t2"}]
    assert p.check("alice", "read", "t1") == Decision(True, ())
    assert p.check("bob", "read", "t1") == Decision(False, ())
    assert bool(m.check("alice", "read", "t1")) is bool(p.check("alice", "read", "t1"))
    assert p.list("alice", "read") == m.list("alice", "read") == ["t1", "t2"]
    assert p.list("alice", "read", type="view") == m.list("alice", "read", type="view")
    assert p.who("read", "t1") == m.who("read", "t1") == ["Carol", "alice"]
    assert p.all_rows() == m.all_rows()


def test_updates_report_the_same_changes() -> None:
    program = grantlog.compile(POLICY + "\nreach(X, Y) :- grant(X, _, Y).\n"
                               "reach(X, Z) :- reach(X, Y), grant(Y, _, Z).")
    m, p = grantlog.Reasoner(program, watch="allowed"), PyDatalogReasoner(program, watch="allowed")
    steps: list[tuple[str, str, list[tuple[str, ...]]]] = [
        ("insert", "banned", [("alice",)]),
        ("insert", "grant", [("t1", "read", "t9"), ("eng", "read", "t1")]),  # one is there
        ("retract", "member", [("bob", "ops"), ("nobody", "x")]),  # one is not
        ("retract", "banned", [("alice",)]),
    ]
    for kind, rel, rows in steps:
        a = getattr(m, kind)(rel, rows)
        b = getattr(p, kind)(rel, rows)
        assert b.by_relation == a.by_relation, (kind, rel)
        assert b.lines() == a.lines()
        assert set(b.derived) == set(a.derived)
    assert p.all_rows() == m.all_rows()
    assert not p.insert("banned", [])  # nothing to do


def test_transactions_are_atomic_and_can_watch() -> None:
    m, p = _both(POLICY)
    for r in (m, p):
        with pytest.raises(RuntimeError), r.transaction() as tx:
            tx.insert("banned", [("alice",)])
            raise RuntimeError("abort")
        assert r.ask("allowed(alice, read, t1)")
    with m.transaction(watch="all") as a:
        a.insert("member", [("dave", "eng")])
        a.retract("member", [("dave", "eng")])
        a.insert("member", [("erin", "ops")])
    with p.transaction(watch="all") as b:
        b.insert("member", [("dave", "eng")])
        b.retract("member", [("dave", "eng")])  # the last operation on a row wins
        b.insert("member", [("erin", "ops")])
    assert b.changes.by_relation == a.changes.by_relation
    assert b.changes.gained("allowed") == {("erin", "write", "t1")}


@pytest.mark.parametrize(("call", "code"), [
    (lambda r: r.insert("member", [("a",)]), "bad-fact"),
    (lambda r: r.insert("member", [("a", True)]), "bad-fact"),
    (lambda r: r.insert("banned", [(1,)]), "bad-fact"),
    (lambda r: r.insert("membr", [("a", "b")]), "unknown-relation"),
    (lambda r: r.rows("membr"), "unknown-relation"),
    (lambda r: r.query("membr(X)"), "unknown-relation"),
    (lambda r: r.query("member(X)"), "arity-mismatch"),
    (lambda r: r.query("member(X, Y), not banned(Z)"), "unsafe-variable"),
    (lambda r: r.query("member(X, Y), X < Z"), "unsafe-variable"),
])
def test_errors_have_the_memory_reasoners_codes(call: Callable[[Any], Any], code: str) -> None:
    m, p = _both(POLICY)
    for r in (m, p):
        with pytest.raises(grantlog.GrantlogError) as e:
            call(r)
        assert e.value.diagnostics[0].code == code


def test_a_transaction_watching_an_unknown_relation() -> None:
    m, p = _both(POLICY)
    for r in (m, p):
        with pytest.raises(grantlog.GrantlogError) as e, r.transaction(watch="nope") as tx:
            tx.insert("banned", [("alice",)])
        assert e.value.diagnostics[0].code == "unknown-relation"


def test_a_decision_relation_of_the_wrong_arity_and_a_missing_one() -> None:
    p = PyDatalogReasoner(grantlog.compile("allowed(a, b). q(1)."))
    with pytest.raises(grantlog.GrantlogError) as e:
        p.check("a", "b", "c")
    assert e.value.diagnostics[0].code == "arity-mismatch"
    with pytest.raises(grantlog.GrantlogError) as e:
        PyDatalogReasoner(grantlog.compile("q(1).")).who("read", "t1")
    assert e.value.diagnostics[0].code == "unknown-relation"


def test_the_declared_decision_relation() -> None:
    text = "@decision rel may(s, o, r).\nmay(S, read, R) :- owns(S, R).\nowns(ann, t1)."
    p = PyDatalogReasoner(grantlog.compile(text))
    assert p.check("ann", "read", "t1").allowed and not p.check("ann", "write", "t1")


def test_explain_is_refused_as_an_unsupported_feature() -> None:
    p = PyDatalogReasoner(grantlog.compile(POLICY))
    with pytest.raises(grantlog.GrantlogError) as e:
        p.explain("allowed(alice, read, t1)")
    d = e.value.diagnostics[0]
    assert d.code == UNSUPPORTED == "unsupported-feature"
    assert "explanations" in d.message and d.help and "in-memory" in d.help
    assert "explanations" in REFUSED


# ---------------------------------------------------------------------------------------------
# translations around pyDatalog's pitfalls (each one compared with the in-memory engine)


def test_constants_pydatalogs_parser_would_mangle() -> None:
    # pyDatalog's in-line API turns "True" into the boolean True (== 1), "??" into a fresh
    # name and capitalised or `_` strings into variables; the engine-level translation does not
    text = ('s("True"). s(1). s("??"). s("Alice"). s("_x"). s(""). s("1"). s("_pyD_class").\n'
            's(-1). s(-2). s("x, y"). s("é").\n'
            't(X) :- s(X), X != 1.\n')
    p = _same(text, 's("True")', "s(X), X = 1", 's("_pyD_class")', "s(-2)")
    assert p.rows("s") == {("True",), (1,), ("??",), ("Alice",), ("_x",), ("",), ("1",),
                           ("_pyD_class",), (-1,), (-2,), ("x, y",), ("é",)}
    assert len(p.rows("t")) == 11


def test_negation_before_the_literal_that_binds_its_variable() -> None:
    p = _same("q(1). q(2). r(1).\np(X) :- not r(X), q(X).", "not r(X), q(X)")
    assert p.rows("p") == {(2,)}


def test_anonymous_variables_in_negation_mean_for_no_value() -> None:
    _same("e(1, 2). e(2, 3). n(1). n(2). n(3).\n"
          "sink(X) :- n(X), not e(X, _).\nsource(X) :- not e(_, X), n(X).\n"
          "lonely(X) :- n(X), not e(X, _), not e(_, X).",
          "n(X), not e(_, _)", "n(X), not e(X, X)")


def test_equality_binds_in_any_order_and_self_equality_holds() -> None:
    p = _same("q(1). q(2). r(3).\n"
              "t(X) :- X = X, q(X).\ns(X, Y) :- Y = Y, q(X), r(Y).\n"
              "five(X) :- X = 5.\nchain(Z) :- Z = Y, Y = X, q(X).\nback(X) :- 2 = X.\n"
              "same(X, Y) :- q(X), q(Y), X = Y.",
              "X = Y, q(Y)", "q(X), X = 2")
    assert p.rows("t") == {(1,), (2,)}


def test_ordering_between_ints_and_strings() -> None:
    # native pyDatalog raises TypeError on 1 < "a"; grantlog puts every int before every string
    p = _same('v(1). v(-3). v(10). v("a"). v("B"). v("10"). v("").\n'
              "lt(X, Y) :- v(X), v(Y), X < Y.\nle(X, Y) :- v(X), v(Y), X <= Y.\n"
              "gt(X, Y) :- v(X), v(Y), X > Y.\nge(X, Y) :- v(X), v(Y), X >= Y.\n"
              'big(X) :- v(X), X > 2.\nstr(X) :- v(X), X >= "".\nlow(X) :- v(X), "a" > X.',
              "v(X), X < 10", 'v(X), X > "B"', "v(X), v(Y), X < Y, Y < 1")
    assert p.rows("big") == {(10,), ("a",), ("B",), ("10",), ("",)}  # strings after ints
    assert p.rows("str") == {("a",), ("B",), ("10",), ("",)}


def test_typed_columns_compare_natively() -> None:
    _same("rel age(person: string, years: int).\nage(ann, 30). age(bob, 7). age(cy, 30).\n"
          "older(A, B) :- age(A, X), age(B, Y), X > Y.\n"
          "named_before(A, B) :- age(A, _), age(B, _), A < B.\n"
          "adult(A) :- age(A, X), X >= 18, Y = X, Y <= 100.",
          "age(A, X), X < 18")


def test_zero_arity_relations() -> None:
    p = _same("on. off :- not on. z. w :- z, on. x :- never.\nrel never().\n"
              "p(1). q(X) :- p(X), not off. r(X) :- p(X), not never.",
              "on", "off", "w", "x", "p(X), w")
    assert p.rows("on") == {()} and p.rows("off") == set()
    assert p.ask("w") and not p.ask("x") and p.query("on") == [{}]


def test_repeated_variables_and_constants_in_heads_and_bodies() -> None:
    _same("e(1, 1). e(1, 2). e(2, 2). e(2, 3).\nloop(X) :- e(X, X).\n"
          "pair(X, X, a) :- e(X, _).\nfrom_one(Y) :- e(1, Y), not e(Y, Y).",
          "e(X, X)", "pair(X, Y, a), e(Y, X)")


# ---------------------------------------------------------------------------------------------
# recursion: shapes on which pyDatalog loops forever when translated naively


def test_right_linear_recursion_over_a_cycle() -> None:
    p = _same("link(a, b). link(b, c). link(c, a). link(c, d).\n"
              "path(X, Y) :- link(X, Y).\npath(X, Z) :- link(X, Y), path(Y, Z).",
              "path(a, X)", "path(X, a)", "path(d, X)", "path(b, a)")
    assert len(p.rows("path")) == 12


def test_self_loops_through_different_call_patterns() -> None:
    # on an empty database: pyDatalog alternates between r0(_, _) and r0(X, X) forever
    _same("rel r0(a, b).\nr0(X, ab) :- r0(X, X).\nr0(Y, Y) :- r0(_, Y).", "r0(a, X)")
    _same("@writable rel r0(a, b).\nr0(b, b). r0(a, c).\nr0(X, ab) :- r0(X, X).\n"
          "r0(Y, Y) :- r0(_, Y).", "r0(X, X)")


def test_mutual_recursion_of_three_relations_and_padding() -> None:
    p = _same("edge(a, b). edge(b, c). edge(c, a). edge(c, d). edge(d, e).\n"
              "@writable rel r0(n).\n"
              "r0(a). r1(Y) :- r0(X), edge(X, Y). r2(Y, 0) :- r1(X), edge(X, Y).\n"
              "r0(Y) :- r2(X, _), edge(X, Y).\nz :- r2(e, 0). z :- r0(d), z.",
              "r1(X)", "r2(d, N)", "z", "r0(X), not r1(X)")
    assert p.rows("r0") == {("a",), ("d",)}


def test_symmetric_transitive_closure_with_bound_questions() -> None:
    _same("link(a, b). link(b, c). link(d, e). link(e, f). link(f, d).\n"
          "same(X, Y) :- link(X, Y).\nsame(X, Y) :- same(Y, X).\n"
          "same(X, Z) :- same(X, Y), same(Y, Z).",
          "same(c, a)", "same(a, d)", "same(X, d)", "same(f, X), X != f")


def test_invariant_positions_stay_bound_and_negation_over_recursion() -> None:
    # `U` is passed on unchanged by every recursive call: a check binds it all the way down
    text = """
    parent(t1, s1). parent(s1, c1). parent(c1, m1). parent(t2, s1). parent(v1, s2).
    parent(s2, c1).
    grant(alice, read, m1). grant(bob, read, s2). grant(bob, write, c1). deny(bob, read, t2).
    can(U, Op, X) :- grant(U, Op, X).
    can(U, Op, X) :- parent(X, P), can(U, Op, P).
    can(U, list, X) :- can(U, read, X).
    can(U, list, X) :- parent(C, X), can(U, list, C).
    allowed(U, Op, X) :- can(U, Op, X), not deny(U, Op, X).
    hidden(U, X) :- grant(U, _, _), parent(X, _), not can(U, list, X).
    """
    p = _same(text, "allowed(bob, read, X)", "allowed(U, list, m1)", "hidden(bob, X)",
              "can(alice, Op, t2)")
    assert p.check("alice", "read", "t1") and not p.check("bob", "read", "t2")
    assert p.check("bob", "list", "m1")


# ---------------------------------------------------------------------------------------------
# pyDatalog's global state


def test_instances_do_not_share_predicates() -> None:
    a = PyDatalogReasoner(grantlog.compile("p(1). q(X) :- p(X)."))
    b = PyDatalogReasoner(grantlog.compile("p(2). q(X) :- p(X), X > 1."))
    assert a.rows("q") == {(1,)} and b.rows("q") == {(2,)}
    a.insert("p", [(5,)])
    assert a.rows("q") == {(1,), (5,)} and b.rows("q") == {(2,)}


def test_the_host_programs_own_pydatalog_state_is_left_alone() -> None:
    from pyDatalog import pyDatalog

    pyDatalog.clear()
    pyDatalog.assert_fact("host", "kept")
    before = Logic(True)
    p = PyDatalogReasoner(grantlog.compile("host(1). host(2)."))
    assert p.rows("host") == {(1,), (2,)}
    assert Logic(True) is before
    assert pyDatalog.ask("host(X)") == {("kept",)}
    pyDatalog.clear()


def test_threads_each_with_and_without_pydatalog_state() -> None:
    text = "e(1, 2). e(2, 3). e(3, 1).\np(X, Y) :- e(X, Y).\np(X, Z) :- e(X, Y), p(Y, Z)."
    shared = PyDatalogReasoner(grantlog.compile(text))
    expected = grantlog.Reasoner(grantlog.compile(text)).rows("p")
    results: list[bool] = []

    def work(i: int) -> None:
        own = PyDatalogReasoner(grantlog.compile(text + f"\ne({i + 10}, 1)."))
        for _ in range(3):
            results.append(shared.rows("p") == expected)
            results.append((i + 10, 3) in own.rows("p"))

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert len(results) == 24 and all(results)


# ---------------------------------------------------------------------------------------------
# pyDatalog's own behaviour: why the translation does what it does. Each test asks pyDatalog
# directly (no grantlog translation); if a pyDatalog release fixes one, its test fails here and
# the workaround can be reconsidered.


def _raw(build: Callable[[Any, Any, Any], None], query: Any) -> Any:
    """Run ``build(literal, var, const)`` then ``query(...)`` in a private pyDatalog logic."""
    from grantlog.engine.backends.pydatalog import borrowed

    with borrowed(None):
        Logic()

        def lit(p: str, *terms: Any) -> Any:
            return pyEngine.Literal(p, list(terms))

        build(lit, pyEngine.Var, pyEngine.Const)
        return query(lit, pyEngine.Var, pyEngine.Const)


def _facts(lit: Any, c: Any, rel: str, *rows: tuple[Any, ...]) -> None:
    for row in rows:
        pyEngine.assert_(pyEngine.Clause(lit(rel, *[c(v) for v in row]), []))


def test_pydatalog_negation_of_an_unbound_variable_is_wrong() -> None:
    def build(lit: Any, v: Any, c: Any) -> None:
        _facts(lit, c, "q", (1,), (2,))
        _facts(lit, c, "r", (1,))
        pyEngine.assert_(pyEngine.Clause(lit("p", v("X")), [lit("~r", v("X")), lit("q", v("X"))]))

    assert _raw(build, lambda lit, v, c: lit("p", v("X")).ask()) == []  # grantlog: [(2,)]


def test_pydatalog_self_equality_of_an_unbound_variable_fails() -> None:
    def build(lit: Any, v: Any, c: Any) -> None:
        _facts(lit, c, "q", (1,), (2,))
        pyEngine.assert_(pyEngine.Clause(lit("t", v("X")),
                                         [lit("==", v("X"), v("X")), lit("q", v("X"))]))

    assert _raw(build, lambda lit, v, c: lit("t", v("X")).ask()) == []  # grantlog: 1 and 2


def test_pydatalog_cannot_order_an_int_and_a_string() -> None:
    def build(lit: Any, v: Any, c: Any) -> None:
        _facts(lit, c, "v", (1,), ("a",))
        pyEngine.assert_(pyEngine.Clause(lit("lt", v("X"), v("Y")), [
            lit("v", v("X")), lit("v", v("Y")), lit("<", v("X"), v("Y"))]))

    with pytest.raises(TypeError):
        _raw(build, lambda lit, v, c: lit("lt", v("X"), v("Y")).ask())


def test_pydatalogs_parser_turns_the_string_true_into_a_boolean() -> None:
    from pyDatalog import pyDatalog

    pyDatalog.clear()
    pyDatalog.assert_fact("s", "True")
    pyDatalog.assert_fact("s", 1)
    answer = pyDatalog.ask("s(X)")
    assert answer is not None and answer.answers == [(True,)]  # one row: True == 1
    pyDatalog.clear()


def test_pydatalog_loops_forever_on_a_cycle_of_distinct_subgoals() -> None:
    code = ("from pyDatalog import pyDatalog\n"
            "pyDatalog.create_terms('X, Y, Z, r0')\n"
            "r0(X, 'ab') <= r0(X, X)\n"
            "r0(Y, Y) <= r0(Z, Y)\n"
            "print(r0(X, Y).data)\n")
    with pytest.raises(subprocess.TimeoutExpired):  # on an empty database
        subprocess.run([sys.executable, "-c", code], timeout=1.5, capture_output=True)
