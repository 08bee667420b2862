"""The hierarchy is declared (``@hierarchy(edge|type|closure|strict)``) or recognised from the
rules' shape, never known by name: the Gravitino model with every prelude relation renamed gives
the same decisions, listings, filters and ``prepare()`` lookups, through the same fast paths;
a model declaring nothing but with the same shape is recognised; the declarations are checked
at compile time."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from grantlog.engine.answer import filter as filters
from grantlog.engine.answer import listing
from grantlog.engine.core.hierarchy_roles import HierarchyRoles, hierarchy_roles

import grantlog
from grantlog.filters import Layout, to_sql

ROOT = Path(__file__).resolve().parent.parent
RENAMES = {"contains": "inside", "entity": "kind_of", "ancestor_or_self": "at_or_below",
           "ancestor": "above", "member": "in_group", "role_of": "granted_role",
           "holds": "has_role"}
BACK = {new: old for old, new in RENAMES.items()}
LAYOUTS = [Layout("objects", "id", "kind", parent="parent_id"),
           Layout("objects", "id", "kind", parent="parent_id", path="path", path_separator="|")]


def _renamed(text: str, renames: dict[str, str]) -> str:
    """``text`` with each relation renamed where it is used: the name, whole, before ``(``
    (a constant is never followed by one)."""
    for old, new in renames.items():
        text = re.sub(rf"\b{old}(?=\s*\()", new, text)
    return text


def _unrenamed(x: Any) -> Any:
    """A value, row or JSON-like answer with the renamed relations' names put back."""
    if isinstance(x, str):
        return re.sub(r"\b(" + "|".join(BACK) + r")\b", lambda m: BACK[m.group(1)], x)
    if isinstance(x, dict):
        return {_unrenamed(k): _unrenamed(v) for k, v in x.items()}
    if isinstance(x, list | tuple):
        return type(x)(_unrenamed(v) for v in x)
    return x


def _unplaced(x: Any) -> Any:
    """A JSON-like value with rule positions (``(file.gl:12)``) blanked."""
    if isinstance(x, str):
        return re.sub(r"\(\S+\.gl:\d+\)", "(rule)", x)
    if isinstance(x, dict):
        return {k: _unplaced(v) for k, v in x.items()}
    if isinstance(x, list | tuple):
        return [_unplaced(v) for v in x]
    return x


def _model(tmp_path: Path, renames: dict[str, str], strip: bool = False) -> grantlog.Reasoner:
    """The Gravitino model and its example facts, relations renamed (``strip``: the prelude's
    ``@hierarchy`` annotations removed too, so that the roles must be recognised)."""
    for name in ("gravitino.gl", "prelude.gl"):
        text = _renamed((ROOT / "rules" / name).read_text(), renames)
        if strip:
            text = re.sub(r"@hierarchy\(\w+\) ", "", text)
        (tmp_path / name).write_text(text)
    facts = tmp_path / "facts.gl"
    facts.write_text(_renamed((ROOT / "examples/gravitino/facts.gl").read_text(), renames))
    r = grantlog.Reasoner(grantlog.compile(paths=[tmp_path / "gravitino.gl"]))
    r.load([str(facts)])
    return r


def _sql(res: Any, lay: Layout) -> str:
    """The residual as SQL over ``lay``, or the code of the error that refuses it."""
    try:
        return to_sql(res, lay, "postgres")
    except grantlog.GrantlogError as err:
        return "error: " + ",".join(d.code for d in err.diagnostics)


@pytest.fixture(scope="module")
def models(tmp_path_factory: pytest.TempPathFactory) -> dict[str, grantlog.Reasoner]:
    return {kind: _model(tmp_path_factory.mktemp(kind), renames, strip)
            for kind, renames, strip in (("original", {}, False),
                                         ("renamed", RENAMES, False),
                                         ("recognised", RENAMES, True))}


def _grid(r: grantlog.Reasoner) -> tuple[list[str], list[str], list[str], list[str]]:
    """Subjects, operations, resources and types of the example facts."""
    subjects = sorted({row[0] for row in r.rows("member")} | {"admin", "maria", "sam",
                                                              "nobody"})
    ops = sorted({row[1] for row in r.rows("allowed")})
    resources = sorted({row[0] for row in r.rows("entity")})
    types = sorted({row[1] for row in r.rows("entity")})
    return subjects, ops, resources, types


def test_the_roles_are_found_declared_or_recognised(models: dict[str, grantlog.Reasoner]) -> None:
    assert hierarchy_roles(models["original"].program) == HierarchyRoles(
        "contains", "entity", "ancestor_or_self", "ancestor", walkable=True, source="declared")
    assert hierarchy_roles(models["renamed"].program) == HierarchyRoles(
        "inside", "kind_of", "at_or_below", "above", walkable=True, source="declared")
    assert hierarchy_roles(models["recognised"].program) == HierarchyRoles(
        "inside", "kind_of", "at_or_below", "above", walkable=True, source="recognised")


@pytest.mark.parametrize("kind", ["renamed", "recognised"])
def test_renamed_model_answers_alike(models: dict[str, grantlog.Reasoner], kind: str) -> None:
    orig, other = models["original"], models[kind]
    subjects, ops, resources, types = _grid(orig)
    assert len(ops) > 5 and len(resources) > 10 and len(types) > 3
    checked = 0
    for s in subjects:
        for op in ops:
            for res in resources:
                a, b = orig.check(s, op, res), other.check(s, op, res)
                assert (a.allowed, a.reasons) == (b.allowed, _unrenamed(b.reasons)), (s, op, res)
                checked += a.allowed
        for op in ops[::4]:  # listings cost more: a quarter of the operations
            assert orig.list(s, op) == other.list(s, op), (s, op)
            for t in ("table", "schema", "fileset"):
                assert orig.list(s, op, type=t) == other.list(s, op, type=t), (s, op, t)
            for within in ("m1", "m1.lakehouse.sales"):
                assert orig.list(s, op, type="table", within=within) == \
                    other.list(s, op, type="table", within=within), (s, op, within)
                assert orig.list(s, op, within=within) == other.list(s, op, within=within)
    assert checked > 50, "the grid must hold allowed decisions"
    for op in ops:
        for res in resources[::3]:
            assert orig.who(op, res) == other.who(op, res), (op, res)


@pytest.mark.parametrize("kind", ["renamed", "recognised"])
def test_renamed_model_filters_alike_through_the_same_paths(
        models: dict[str, grantlog.Reasoner], kind: str) -> None:
    orig, other = models["original"], models[kind]
    subjects, ops, resources, _ = _grid(orig)
    fast = 0
    for s in subjects:
        for op in ops[::2]:
            try:
                a = orig.filter(s, op)
            except grantlog.GrantlogError as err:
                with pytest.raises(grantlog.GrantlogError) as other_err:
                    other.filter(s, op)
                assert [d.code for d in err.diagnostics] == \
                    [d.code for d in other_err.value.diagnostics]
                continue
            b = other.filter(s, op)
            assert a.to_dict() == _unrenamed(b.to_dict()), (s, op)
            assert a.chains == b.chains
            for lay in LAYOUTS:
                assert _sql(a, lay) == _sql(b, lay), (s, op)
            assert [a.holds(x) for x in resources] == [b.holds(x) for x in resources]
            # the same path: listing through the filter's walk, or neither
            fa = listing.list_filtered(orig, s, op, "table")
            fb = listing.list_filtered(other, s, op, "table")
            assert (fa is None) == (fb is None), (s, op)
            if fa is not None and fb is not None:
                fast += 1
                assert sorted(fa[0]) == sorted(fb[0])
    assert fast > 10, "the listings must go through the hierarchy's walk"


@pytest.mark.parametrize("kind", ["renamed", "recognised"])
def test_prepare_reads_the_same_indexes(models: dict[str, grantlog.Reasoner], kind: str) -> None:
    orig, other = models["original"], models[kind]
    orig.prepare()
    other.prepare()
    a = sorted(filters.filter_lookups(orig, orig.view(), "allowed"))
    b = sorted(_unrenamed(list(filters.filter_lookups(other, other.view(), "allowed"))))
    assert a == b
    assert ("contains", (0,)) in a and ("entity", (1,)) in a



@pytest.mark.parametrize("kind", ["renamed", "recognised"])
def test_renamed_model_plans_alike(models: dict[str, grantlog.Reasoner], kind: str) -> None:
    """`grantlog plan` of the model's typical decision: the same join order, lookups, indexes,
    demand strategies, closures and statistics, once the names are put back (the rule files'
    own names and line numbers aside: they are the temporary copies'; sections keyed by
    relation compare as mappings, as their order is the names' order)."""
    from grantlog.engine.answer.plan import describe

    def plan(r: grantlog.Reasoner) -> Any:
        goal = 'allowed("alice", "load_table", "m1.lakehouse.sales.orders")'
        d = _unrenamed(describe(r, goal).to_dict())
        d["indexes"] = sorted(map(repr, d["indexes"]))
        return _unplaced(d)

    orig = plan(models["original"])
    assert plan(models[kind]) == orig
    assert "on demand: closure walk" in orig["relations"].values(), "walked in both"


PARENT_OF = """
rel kind(object: string, type: string).
rel parent_of(parent: string, child: string).
rel grant(user: string, object: string).
below_strict(A, C) :- parent_of(A, P), below_strict(P, C).
below_strict(P, C) :- parent_of(P, C).
below(X, X) :- kind(X, _).
below(A, X) :- below_strict(A, X).
allowed(U, read, O) :- grant(U, A), below(A, O), kind(O, table).
"""


def _facts(r: grantlog.Reasoner, names: dict[str, str]) -> grantlog.Reasoner:
    with r.transaction() as tx:
        tx.insert(names["kind"], [("c", "catalog"), ("s1", "schema"), ("s2", "schema"),
                                  ("t1", "table"), ("t2", "table"), ("t3", "table")])
        tx.insert(names["parent_of"], [("c", "s1"), ("c", "s2"), ("s1", "t1"), ("s1", "t2"),
                                       ("s2", "t3")])
        tx.insert("grant", [("ann", "s1"), ("bob", "c"), ("cid", "t3")])
    return r


def test_an_undeclared_hierarchy_is_recognised_by_its_shape() -> None:
    p = grantlog.compile(PARENT_OF)
    assert hierarchy_roles(p) == HierarchyRoles("parent_of", "kind", "below", "below_strict",
                                                walkable=True, source="recognised")
    r = _facts(grantlog.Reasoner(p), {"kind": "kind", "parent_of": "parent_of"})
    assert r.list("ann", "read") == ["t1", "t2"]
    assert r.list("bob", "read", type="table", within="s2") == ["t3"]
    assert listing.list_filtered(r, "bob", "read", None) is not None
    assert [x for x in ("t1", "t2", "t3", "s1") if r.filter("ann", "read").holds(x)] == \
        ["t1", "t2"]


def test_a_model_without_the_shape_has_no_walk_and_names_the_role() -> None:
    p = grantlog.compile("rel kind(object: string, type: string).\n"
                         "allowed(U, read, O) :- kind(O, table), kind(U, user).\n")
    assert hierarchy_roles(p) == HierarchyRoles()
    r = grantlog.Reasoner(p)
    with pytest.raises(grantlog.GrantlogError, match=r"@hierarchy\(type\)"):
        r.list("u", "read", type="table")
    with pytest.raises(grantlog.GrantlogError, match=r"@hierarchy\(closure\)"):
        r.list("u", "read", within="s")
    # declared, the type role is enough for type=
    p = grantlog.compile("@hierarchy(type) rel kind(object: string, type: string).\n"
                         "allowed(U, read, O) :- kind(O, table), kind(U, user).\n")
    r = grantlog.Reasoner(p)
    r.insert("kind", [("u", "user"), ("t", "table"), ("v", "view")])
    assert r.list("u", "read", type="table") == ["t"]
    assert hierarchy_roles(p).walkable is False


@pytest.mark.parametrize("text, code, message", [
    ("@hierarchy(tree) rel e(a: string, b: string).", "bad-annotation",
     "`@hierarchy(tree)`: `@hierarchy` takes one of `edge`, `type`, `closure`, `strict`"),
    ("@hierarchy rel e(a: string, b: string).", "bad-annotation", "`@hierarchy` takes one of"),
    ("@demand(edge) rel e(a: string, b: string).\ne(a, b) :- f(a, b).\n", "bad-annotation",
     "`@demand` takes no argument"),
    ("@hierarchy(edge) rel e(a: string, b: string, c: string).", "hierarchy-role",
     "`@hierarchy(edge)` relation `e` has 3 columns; a hierarchy role is binary"),
    ("@hierarchy(edge) rel e(a: string, b: string).\n"
     "@hierarchy(edge) rel f(a: string, b: string).", "hierarchy-role",
     "`@hierarchy(edge)` is declared twice: on `e` and on `f`"),
    ("@hierarchy(edge) @hierarchy(type) rel e(a: string, b: string).", "hierarchy-role",
     "`e` is declared `@hierarchy(edge)` and `@hierarchy(type)`"),
    ("@hierarchy(edge) rel e(a: string, b: string).\n"
     "@hierarchy(type) rel t(a: string, b: string).\n"
     "@hierarchy(closure) rel c(a: string, b: string).\n"
     "c(X, X) :- t(X, _).\nc(A, B) :- e(A, B).\n", "hierarchy-role",
     "`@hierarchy(closure)` relation `c` is not the reflexive-transitive closure"),
    ("@hierarchy(edge) rel e(a: string, b: string).\ne(A, B) :- f(A, B).\n",
     "hierarchy-role", "`@hierarchy(edge)` relation `e` is derived by rules"),
    ("@hierarchy(closure) rel c(a: string, b: string).\n", "hierarchy-role",
     "`@hierarchy(closure)` relation `c` has no rules"),
])
def test_declarations_are_checked(text: str, code: str, message: str) -> None:
    with pytest.raises(grantlog.GrantlogError) as err:
        grantlog.compile(text, filename="h.gl")
    d = err.value.diagnostics[0]
    assert (d.code, d.span.file) == (code, "h.gl") and d.span.line >= 1 and d.span.col >= 1
    assert message in d.message, d.message


def test_the_closure_declared_fills_in_the_other_roles() -> None:
    p = grantlog.compile("@hierarchy(closure) rel below(anc: string, obj: string).\n"
                         + PARENT_OF)
    assert hierarchy_roles(p) == HierarchyRoles("parent_of", "kind", "below", "below_strict",
                                                walkable=True, source="declared")
