"""Goal-directed lookups: rules compiled for a lookup's key (head constants and repeated
variables checked by the generated code), rules selected by a head constant, membership tests
that stop at the first derivation; each compared with the interpreted plan and with full
materialization."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest
from grantlog.engine.core import ir
from grantlog.engine.plan.codegen import compile_keyed, generate, interpreted, key_binding
from grantlog.engine.plan.demand import DemandPlans
from grantlog.engine.plan.join import plan_bound

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


def _all_virtual(text: str = TEXT) -> grantlog.Program:
    """The program with every derived relation answered on demand."""
    p = grantlog.compile(text)
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
        db = grantlog.Reasoner(p).view()
        fn = compile_keyed(plan, key_terms)(db.F, db.indexes)
        slow = interpreted(plan, key_terms)(db.F, db.indexes)
        for key in itertools.product(_values(), repeat=len(cols)):
            got: dict[ir.Row, int] = {}
            want: dict[ir.Row, int] = {}
            fn(got.setdefault, key)
            slow(want.setdefault, key)
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
    # the last line of run (the function bind returns)
    assert src.splitlines()[-2].strip() == "return", src
    partial = generate(plan_bound(inherit, {"U", "O"}), (key_terms[0], key_terms[2]))
    assert partial.splitlines()[-2].strip() != "return", partial



VIEWS = """
rel member(user, group).
rel grant(group, obj).
rel parent(child, obj).
rel enabled(group).
@writable rel in_group(user, group).   // rows may be written for it (see below)
in_group(U, G) :- member(U, G).
active(U, G) :- member(U, G), enabled(G).
granted(G, O) :- grant(G, O).
granted(G, O) :- parent(O, A), granted(G, A).
allowed(U, read, O) :- in_group(U, G), granted(G, O), not blocked(U, _).
allowed(U, list, O) :- active(U, _), granted(_, O).
blocked(U, X) :- member(U, X), X = banned.
member(alice, eng). member(bob, banned). member(bob, eng). member(dave, ops).
member(erin, eng). member(erin, ops). enabled(ops).
grant(eng, a). parent(b, a).
"""


def test_unfolded_views_answer_like_materialization_and_follow_stored_rows() -> None:
    """`in_group` and `active` are unfolded into `allowed`'s plans (one rule each, not
    recursive, read positively); rows later stored for `in_group` itself re-plan instead of
    being missed."""
    r = grantlog.Reasoner(_all_virtual(VIEWS))
    full = grantlog.Reasoner(grantlog.compile(VIEWS))
    users, ops, objs = ["alice", "bob", "carol", "dave", "erin"], ["read", "list"], "abc"
    for q in itertools.product(users, ops, objs):
        assert bool(r.check(*q)) == bool(full.check(*q)), q
    assert {"in_group", "active"} <= r.planner.unfolded
    assert "blocked" not in r.planner.unfolded and "granted" not in r.planner.unfolded
    assert not r.check("carol", "read", "b")
    r.insert("in_group", [("carol", "eng")])  # a base fact of a derived (virtual) relation,
    # `@writable`
    full.insert("in_group", [("carol", "eng")])
    assert r.check("carol", "read", "b")
    assert "in_group" not in r.planner.unfolded  # it has stored rows now
    for q in itertools.product(users, ops, objs):
        assert bool(r.check(*q)) == bool(full.check(*q)), q
    r.retract("in_group", [("carol", "eng")])
    assert not r.check("carol", "read", "b")


def test_unfolding_renames_apart_and_keeps_anonymous_arguments_joined() -> None:
    """`active(U, _)` unfolds to `member(U, G~n), enabled(G~n)`: the anonymous argument
    becomes one fresh variable, as the view's body uses it twice (bob, in the disabled
    group eng only, may not list; dave and erin, in ops, may)."""
    r = grantlog.Reasoner(_all_virtual(VIEWS))
    assert not r.check("bob", "list", "a")
    assert r.check("dave", "list", "a") and r.check("erin", "list", "b")
    lister = next(x for x in r.program.rules
                  if x.head.rel == "allowed" and x.head.args[1] == ir.Const("list"))
    flat = r.planner.unfold(lister)
    atoms = [lit for lit in flat.body if isinstance(lit, ir.Atom)]
    assert [a.rel for a in atoms] == ["member", "enabled", "granted"], flat
    member, enabled = atoms[0], atoms[1]
    assert member.args[0] == ir.Var("U") and member.args[1] == enabled.args[0]
    assert isinstance(member.args[1], ir.Var) and "~" in member.args[1].name


RECURSIVE = """
rel grant(user, op, obj).
rel parent(child, obj).
allowed(U, read, O) :- grant(U, read, O).
allowed(U, read, O) :- parent(O, A), allowed(U, read, A).
allowed(U, write, O) :- grant(U, write, O).
allowed(U, admin, O) :- allowed(U, write, O), allowed(U, read, O).
grant(u1, read, a). grant(u1, write, b). grant(u2, write, c). grant(u2, read, a).
parent(b, a). parent(c, b). parent(a, c).
"""


def test_rules_that_cannot_recurse_skip_tabling_in_a_recursive_relation() -> None:
    """`allowed` is recursive (read inherits, admin reads allowed), but a `write` lookup
    runs one rule that reads no part of the cycle: it is answered without tabling."""
    p = _all_virtual(RECURSIVE)
    d = DemandPlans(p).calls("allowed", (0, 1, 2))
    assert d.plain == frozenset({"write"})
    r = grantlog.Reasoner(p)
    full = grantlog.Reasoner(grantlog.compile(RECURSIVE))
    for q in itertools.product(["u1", "u2", "u3"], ["read", "write", "admin"], "abcd"):
        assert bool(r.check(*q)) == bool(full.check(*q)), q


def test_negations_of_virtual_relations_wait_for_the_positive_atoms() -> None:
    """In a statistics-ordered plan, `not denied(...)` (a virtual relation: its lookup runs
    rules) is asked after every positive atom, only for bindings that reached it; a negation
    of a stored relation and a comparison still go as soon as they are bound. Answers equal
    full materialization either way."""
    text = """
rel grant(user, obj).
rel deny(user, obj).
rel frozen(obj).
rel parent(child, obj).
denied(U, O) :- deny(U, A), parent(O, A).
allowed(U, O) :- grant(U, O), parent(O, A), not denied(U, O), not frozen(A), A != x.
grant(u, a). grant(u, b). grant(v, a). deny(u, p). parent(a, p). parent(b, q).
frozen(q).
"""
    p = _all_virtual(text)
    rule = next(r for r in p.rules if r.head.rel == "allowed")
    plan = plan_bound(rule, {"U", "O"}, p.virtual, [1, 0])
    kinds = [type(s).__name__ + (f":{s.rel}" if hasattr(s, "rel") else "") for s in plan.steps]
    assert kinds == ["Scan:parent", "NegCheck:frozen", "Filter", "Scan:grant",
                     "NegCheck:denied"], kinds
    greedy = plan_bound(rule, {"U", "O"}, p.virtual)  # no statistics: as soon as bound
    assert type(greedy.steps[0]).__name__ == "NegCheck", greedy.describe()
    materialized = grantlog.Reasoner(grantlog.compile(text))
    on_demand = grantlog.Reasoner(_all_virtual(text))
    for goal in ("allowed(U, O)", "allowed(u, O)", "allowed(u, a)", "allowed(v, a)"):
        assert on_demand.query(goal) == materialized.query(goal), goal
    assert {b["O"] for b in on_demand.query("allowed(u, O)")} == set()
    assert {b["O"] for b in on_demand.query("allowed(v, O)")} == {"a"}


def test_lookup_functions_read_unique_and_ordinary_indexes() -> None:
    """A stored index with one row per key keeps the row bare (engine/eval/database.py
    ``UniqueIndex``); generated lookup functions read it without its ``get``, and a view
    made after the index became ordinary reads that one."""
    from grantlog.engine.core.index import UniqueIndex

    text = ("rel parent(c, p).\nrel label(o, l).\n@demand rel up(c, l).\n"
            "up(C, L) :- parent(C, P), label(P, L).\n"
            "parent(a, b). parent(d, b). label(b, x).\n")
    r = grantlog.Reasoner(grantlog.compile(text))
    assert r.query("up(a, L)") == [{"L": "x"}]
    indexes = r.database().indexes
    assert type(indexes[("parent", (0,))]) is UniqueIndex
    r.insert("parent", [("a", "c")])
    r.insert("label", [("c", "y"), ("b", "z")])
    assert type(r.database().indexes[("parent", (0,))]) is not UniqueIndex
    assert r.query("up(a, L)") == [{"L": "x"}, {"L": "y"}, {"L": "z"}]
    assert r.query("up(d, L)") == [{"L": "x"}, {"L": "z"}]


class _Counting:
    """A stored index (its ``get``) that counts its reads."""

    def __init__(self, index: object) -> None:
        self.index, self.reads = index, 0

    def get(self, key: object, default: object = None) -> object:
        self.reads += 1
        return self.index.get(key, default)  # type: ignore[attr-defined]


def test_lookup_functions_read_an_invariant_bucket_once_and_a_lookup_once() -> None:
    """``denied(U, P, O) :- anc(A, O), holds(U, R), grant(R, P, A, deny), anc(A2, O), ...``
    read in this order: the roles of ``U`` are read once per key (not once per ancestor), and
    only when a row gets there; the second read of ``anc(_, O)`` reuses the first. Answers
    equal the interpreted plan's."""
    text = ("rel holds(u, r).\nrel grant(r, p, o, c).\nrel parent(c, p).\nrel top(o).\n"
            "@demand rel anc(a, o).\n"
            "anc(O, O) :- parent(O, _).\nanc(O, O) :- parent(_, O).\n"
            "anc(A, O) :- parent(O, P), anc(A, P).\n"
            "denied: denied(U, P, O) :- anc(A, O), holds(U, R), grant(R, P, A, deny), "
            "anc(T, O), top(T).\n"
            "parent(t, s). parent(s, c). parent(c, m). top(m).\n"
            "holds(u1, r1). holds(u1, r2). holds(u2, r3).\n"
            "grant(r2, read, c, deny). grant(r3, read, s, allow).\n")
    p = grantlog.compile(text)
    p.virtual = p.virtual | {"denied"}
    rule = next(r for r in p.rules if r.name == "denied")
    key = tuple(rule.head.args)
    order = [0, 1, 2, 3, 4]
    plan = plan_bound(rule, {"U", "P", "O"}, p.virtual, order)
    src = generate(plan, key, p.virtual)
    reads = [line for line in src.splitlines() if "(_k" in line and "an" in line]
    assert len(reads) == 1, src  # one call of anc's answer for two atoms
    r = grantlog.Reasoner(p)
    view = r.view()
    counting = _Counting(view.indexes[("holds", (0,))])

    class Indexes:
        def __getitem__(self, k: tuple[str, tuple[int, ...]]) -> object:
            return counting if k == ("holds", (0,)) else view.indexes[k]

    fn = compile_keyed(plan, key, p.virtual)(view.F, Indexes())
    slow = interpreted(plan, key)(view.F, view.indexes)
    values = ["u1", "u2", "u3", "read", "write", "t", "s", "c", "m", "x"]
    for k in itertools.product(values, repeat=3):
        got: dict[ir.Row, int] = {}
        want: dict[ir.Row, int] = {}
        before = counting.reads
        fn(got.setdefault, k)
        slow(want.setdefault, k)
        assert got == want, k
        assert counting.reads - before <= 1, (k, src)
    assert counting.reads > 0
    assert r.ask('denied(u1, read, t)') and not r.ask('denied(u2, read, t)')


@pytest.mark.parametrize("model", ["cdap_entity", "cdap_parent", "gravitino", "onehouse",
                                   "three_tier"])
def test_prepare_builds_every_index_checks_read(model: str) -> None:
    """After ``prepare`` no check builds an index (a server's first checks do not pay for
    them), and the decisions are those of a reasoner that was not prepared."""
    root = Path(__file__).resolve().parent.parent
    program = grantlog.compile(paths=[root / "rules" / f"{model}.gl",
                                      root / "examples" / model / "facts.gl"])
    prepared, plain = grantlog.Reasoner(program), grantlog.Reasoner(program)
    prepared.prepare()
    built = set(prepared.database().indexes)
    values = sorted({v for rows in plain.all_rows().values() for row in rows for v in row
                     if isinstance(v, str)})
    ops = sorted({row[1] for row in plain.rows(program.decision)} |
                 {v for v in values if v.islower() and "_" in v})[:40]
    subjects = [*sorted({row[0] for row in plain.rows(program.decision)})[:10], "nobody"]
    resources = sorted({row[2] for row in plain.rows(program.decision)})[:15]
    assert ops and subjects and resources
    for s, o, r in itertools.product(subjects, ops, resources):
        assert prepared.check(s, o, r) == plain.check(s, o, r)
    assert set(prepared.database().indexes) == built
    for s, o in itertools.product(subjects, ops):  # nor a filter's partial evaluation
        try:
            prepared.filter(s, o)
        except grantlog.GrantlogError as err:
            assert err.diagnostics[0].code == "filter-unsupported"
    assert set(prepared.database().indexes) == built
