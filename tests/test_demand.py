"""Goal-directed lookups: rules compiled for a lookup's key (head constants and repeated
variables checked by the generated code), rules selected by a head constant, membership tests
that stop at the first derivation; each compared with the interpreted plan and with full
materialization."""

from __future__ import annotations

import itertools

from grantlog.engine import ir
from grantlog.engine.codegen import _interpreted, compile_plan, generate, key_binding
from grantlog.engine.demand import DemandPlans
from grantlog.engine.plan import plan_bound

import grantlog

TEXT = """
rel grant(user, op, obj).
rel parent(child, obj).
rel same(a, b).
allow_read: allowed(U, read, O) :- grant(U, read, O).
allow_write: allowed(U, write, O) :- grant(U, write, O), not frozen(O).
allow_any: allowed(U, P, O) :- grant(U, all, O), op(P).
inherit: allowed(U, P, O) :- parent(O, A), allowed(U, P, A).
frozen(O) :- parent(O, f).
pair(X, X, Y) :- same(X, Y).
op(read). op(write).
grant(u1, read, a). grant(u1, write, b). grant(u2, all, a). grant(u2, write, f).
parent(c, a). parent(d, b). parent(e, f). parent(g, c).
same(a, b). same(c, c).
"""


def _all_virtual() -> grantlog.Program:
    p = grantlog.compile(TEXT)
    p.virtual = frozenset(p.derived)
    p.compiled.clear()
    return p


def _values() -> list[str]:
    return ["u1", "u2", "read", "write", "all", "a", "b", "c", "d", "e", "f", "g"]


def test_point_and_partial_lookups_match_materialization() -> None:
    materialized = grantlog.Reasoner(grantlog.compile(TEXT))
    on_demand = grantlog.Reasoner(_all_virtual())
    vals = _values()
    for u, p, o in itertools.product([*vals[:2], "U"], ["read", "write", "all", "P"],
                                     [*vals[5:], "O"]):
        goal = f"allowed({u}, {p}, {o})"
        assert on_demand.query(goal) == materialized.query(goal), goal
    for x, y in itertools.product(["a", "b", "c", "X"], ["a", "b", "c", "Y"]):
        goal = f"pair({x}, {x}, {y})"
        assert on_demand.query(goal) == materialized.query(goal), goal
        goal = f"pair({x}, {y}, Z)"
        assert on_demand.query(goal) == materialized.query(goal), goal


def test_rules_are_selected_by_the_head_constant() -> None:
    p = _all_virtual()
    plans = DemandPlans(p)
    d = plans.calls("allowed", (0, 1, 2))
    names = {r.index: r.name for r in p.rules}
    assert d.pos == 1  # the operation column: two heads have a constant there
    assert [names[rid] for rid, _ in d.by["read"]] == ["allow_read", "allow_any", "inherit"]
    assert [names[rid] for rid, _ in d.by["write"]] == ["allow_write", "allow_any", "inherit"]
    assert [names[rid] for rid, _ in d.rest] == ["allow_any", "inherit"]
    # no column with constants in two heads: every rule, always
    assert plans.calls("allowed", (0, 2)).pos == -1


def test_keyed_functions_check_constants_and_repeated_variables() -> None:
    p = grantlog.compile(TEXT)
    rules = {r.name: r for r in p.rules}
    pair = next(r for r in p.rules if r.head.rel == "pair")
    for rule, cols in ((rules["allow_read"], (0, 1, 2)), (pair, (0, 1)), (pair, (0, 1, 2))):
        key_terms = tuple(rule.head.args[c] for c in cols)
        bound = {t.name for t in key_terms if isinstance(t, ir.Var)}
        plan = plan_bound(rule, bound)
        src = generate(plan, key_terms)
        assert src.count("return") >= 1, src
        fn, slow = compile_plan(plan, key_terms), _interpreted(plan, key_terms)
        db = grantlog.Reasoner(p).view()
        for key in itertools.product(_values(), repeat=len(cols)):
            got: dict[ir.Row, int] = {}
            want: dict[ir.Row, int] = {}
            fn(db.F, None, db.index, got.setdefault, key)
            slow(db.F, None, db.index, want.setdefault, key)
            assert got == want, (rule.name, key)
            assert set(got.values()) <= {rule.index}
            if got:
                assert key_binding(key_terms, key) is not None


def test_membership_tests_stop_at_the_first_derivation() -> None:
    """A lookup binding every head column can derive one row only: the generated function
    returns after it instead of finishing its loops."""
    p = grantlog.compile(TEXT)
    inherit = next(r for r in p.rules if r.name == "inherit")
    key_terms = tuple(inherit.head.args)
    src = generate(plan_bound(inherit, {"U", "P", "O"}), key_terms)
    assert src.rstrip().endswith("return"), src
    partial = generate(plan_bound(inherit, {"U", "O"}), (key_terms[0], key_terms[2]))
    assert not partial.rstrip().endswith("return"), partial
