"""Every fast path reads the model's structure, not its names (issue 26, item 1): models
written from scratch — an edge stored child first (``parent(child, parent)``) with the closure
over it reversed, a closure seeded from unary type relations (``table(X)``) or from one
``node(X)``, the closure written as one relation, types as unary relations, two hierarchies in
one model — are recognised (or declared with ``@hierarchy(parent)`` / unary
``@hierarchy(type)``), answer ``list`` (with and without ``type=``/``within=``), ``who``,
filters (conditions and SQL) and levels exactly as a from-scratch evaluation does
(tests/naive.py), and go through the hierarchy's walk: each test fails if the model falls off
it."""

from __future__ import annotations

import itertools
import json
import sqlite3
import sys
from pathlib import Path
from typing import Any

import pytest
from grantlog.engine.answer import filter as filters
from grantlog.engine.answer import listing
from grantlog.engine.answer.conditions import mentioned
from grantlog.engine.answer.plan import describe, fast_paths
from grantlog.engine.core.analyses import closures
from grantlog.engine.core.hierarchy_roles import hierarchy_roles

import grantlog
from grantlog.cli import main
from grantlog.filters import Layout, select_sql
from tests.naive import naive_eval_text

ROOT = Path(__file__).resolve().parent.parent

# -- the models ----------------------------------------------------------------------------
#: shared by every model: grants and denies on objects reach what lies below them; a level
#: ("the schema at or above the table") is usable by a user granted `use` on it

FLIPPED = """
rel kind(object: string, type: string).
rel up(child: string, parent: string).
rel grant(user: string, object: string).
rel deny(user: string, object: string).
rel use(user: string, object: string).
above(A, X) :- up(X, A).
above(A, X) :- above(A, P), up(X, P).
at(X, X) :- kind(X, _).
at(A, X) :- above(A, X).
denied(U, O) :- deny(U, A), at(A, O).
usable(U, X) :- kind(S, schema), at(S, X), ok(U, S).
ok(U, S) :- use(U, A), at(A, S).
allowed(U, read, O) :- grant(U, A), at(A, O), kind(O, table), usable(U, O), not denied(U, O).
allowed(U, list, O) :- grant(U, A), above(A, O).
"""

UNARY = """
rel catalog(x: string).
rel schema(x: string).
rel table(x: string).
rel parent(child: string, parent: string).
rel grant(user: string, object: string).
rel deny(user: string, object: string).
rel use(user: string, object: string).
anc(X, X) :- catalog(X).
anc(X, X) :- schema(X).
anc(X, X) :- table(X).
anc(A, X) :- parent(X, A).
anc(A, X) :- anc(A, P), parent(X, P).
denied(U, O) :- deny(U, A), anc(A, O).
usable(U, X) :- schema(S), anc(S, X), ok(U, S).
ok(U, S) :- use(U, A), anc(A, S).
allowed(U, read, T) :- table(T), grant(U, A), anc(A, T), usable(U, T), not denied(U, T).
allowed(U, list, S) :- schema(S), grant(U, A), anc(A, S).
"""

#: one unary seed (`node`), types binary; the right-linear step over the reversed edge
NODE = """
rel node(x: string).
rel kind(object: string, type: string).
rel parent(child: string, parent: string).
rel grant(user: string, object: string).
rel deny(user: string, object: string).
rel use(user: string, object: string).
anc(X, X) :- kind(X, _).
anc(A, X) :- strict(A, X).
strict(A, X) :- parent(X, A).
strict(A, X) :- parent(P, A), strict(P, X).
denied(U, O) :- deny(U, A), anc(A, O).
usable(U, X) :- kind(S, schema), anc(S, X), ok(U, S).
ok(U, S) :- use(U, A), anc(A, S).
allowed(U, read, T) :- kind(T, table), grant(U, A), anc(A, T), usable(U, T), not denied(U, T).
allowed(U, list, S) :- kind(S, schema), grant(U, A), anc(A, S).
"""

#: resources nested in resources, groups nested in groups: both closures have the whole
#: shape; the resources' reaches the decision's resource column
TWO = """
rel catalog(x: string).
rel schema(x: string).
rel table(x: string).
rel group(g: string).
rel parent(child: string, parent: string).
rel subgroup(child: string, parent: string).
rel in_group(user: string, group: string).
rel grant(group: string, object: string).
rel deny(group: string, object: string).
rel use(group: string, object: string).
anc(X, X) :- catalog(X).
anc(X, X) :- schema(X).
anc(X, X) :- table(X).
anc(A, X) :- parent(X, A).
anc(A, X) :- anc(A, P), parent(X, P).
gin(G, G) :- group(G).
gin(A, G) :- subgroup(G, A).
gin(A, G) :- gin(A, P), subgroup(G, P).
member(U, A) :- in_group(U, G), gin(A, G).
denied(U, O) :- member(U, G), deny(G, A), anc(A, O).
usable(U, X) :- schema(S), anc(S, X), ok(U, S).
ok(U, S) :- member(U, G), use(G, A), anc(A, S).
allowed(U, read, T) :- table(T), member(U, G), grant(G, A), anc(A, T), usable(U, T),
    not denied(U, T).
allowed(U, list, S) :- schema(S), member(U, G), grant(G, A), anc(A, S).
"""

#: the declared forms of UNARY: a child-to-parent edge and unary types
DECLARED = """
@hierarchy(type) rel catalog(x: string).
@hierarchy(type) rel schema(x: string).
@hierarchy(type) rel table(x: string).
@hierarchy(parent) rel parent(child: string, parent: string).
@hierarchy(closure) rel anc(a: string, x: string).
""" + UNARY.split("rel parent(child: string, parent: string).\n", 1)[1]

CATALOGS = ("c1", "c2")
SCHEMAS = {"c1": ("c1.s1", "c1.s2"), "c2": ("c2.s3",)}
TABLES = {"c1.s1": ("c1.s1.t1", "c1.s1.t2", "c1.s1.t3"), "c1.s2": ("c1.s2.t4",),
          "c2.s3": ("c2.s3.t5", "c2.s3.t6")}
#: tables directly under a catalog: no schema above them
LOOSE = {"c1": ("c1.x",)}
USERS = ("ann", "bob", "cid", "dee", "eve", "fay", "nobody")
GRANTS = [("ann", "c1"), ("bob", "c1.s1"), ("bob", "c2.s3.t5"), ("cid", "m"),
          ("dee", "c1.s1.t2"), ("dee", "c2"), ("eve", "c1.s2"), ("fay", "c1")]
DENIES = [("cid", "c1.s2"), ("ann", "c1.s1.t1"), ("dee", "c2.s3.t6")]
USES = [("ann", "c1.s1"), ("ann", "c1.s2"), ("bob", "c1.s1"), ("cid", "c1.s1"),
        ("cid", "c1.s2"), ("cid", "c2.s3"), ("dee", "c1.s1"), ("dee", "c2.s3"),
        ("eve", "c1.s2"), ("fay", "c1")]


def _objects() -> dict[str, str]:
    out = {"m": "platform"}
    out |= {c: "catalog" for c in CATALOGS}
    out |= {s: "schema" for ss in SCHEMAS.values() for s in ss}
    out |= {t: "table" for ts in [*TABLES.values(), *LOOSE.values()] for t in ts}
    return out


def _parents() -> list[tuple[str, str]]:
    """(child, parent) rows."""
    return ([(c, "m") for c in CATALOGS] + [(s, c) for c, ss in SCHEMAS.items() for s in ss]
            + [(t, s) for s, ts in [*TABLES.items(), *LOOSE.items()] for t in ts])


def _facts(model: str) -> dict[str, list[tuple[str, ...]]]:
    objs = _objects()
    typed = {x: t for x, t in objs.items() if t != "platform"}  # the platform: untyped
    out: dict[str, list[tuple[str, ...]]] = {"grant": [], "deny": [], "use": []}
    if model in ("flipped", "node"):
        out["kind"] = sorted(typed.items())
        out["up" if model == "flipped" else "parent"] = _parents()
        if model == "node":
            out["node"] = [(x,) for x in sorted(objs)]
    else:
        for x, t in typed.items():
            out.setdefault(t, []).append((x,))
        out["parent"] = _parents()
    if model == "two":  # each user in a group of their own, nested in `all`
        out["group"] = [(f"g_{u}",) for u in USERS] + [("all",), ("top",)]
        out["in_group"] = [(u, f"g_{u}") for u in USERS]
        out["subgroup"] = [(f"g_{u}", "all") for u in USERS] + [("all", "top")]
        for rel, rows in (("grant", GRANTS), ("deny", DENIES), ("use", USES)):
            out[rel] = [(f"g_{u}", o) for u, o in rows]
        out["grant"].append(("top", "c2.s3.t6"))  # every user, through two nestings
    else:
        out["grant"], out["deny"], out["use"] = list(GRANTS), list(DENIES), list(USES)
    return out


MODELS = {"flipped": FLIPPED, "unary": UNARY, "node": NODE, "two": TWO, "declared": UNARY}


def _text(model: str) -> str:
    return DECLARED if model == "declared" else MODELS[model]


def _reasoner(model: str) -> grantlog.Reasoner:
    r = grantlog.Reasoner(grantlog.compile(_text(model)))
    with r.transaction() as tx:
        for rel, rows in _facts("unary" if model == "declared" else model).items():
            if rows:
                tx.insert(rel, rows)
    return r


def _naive(model: str) -> dict[str, set[tuple[Any, ...]]]:
    lines = [f"{rel}({', '.join(repr(v).replace(chr(39), chr(34)) for v in row)})."
             for rel, rows in _facts("unary" if model == "declared" else model).items()
             for row in rows]
    return naive_eval_text(_text(model).replace("@hierarchy(type) ", "")
                           .replace("@hierarchy(parent) ", "")
                           .replace("@hierarchy(closure) ", "") + "\n".join(lines))


@pytest.fixture(scope="module")
def worlds() -> dict[str, tuple[grantlog.Reasoner, dict[str, set[tuple[Any, ...]]]]]:
    return {m: (_reasoner(m), _naive(m)) for m in MODELS}


def _closure_rel(model: str) -> str:
    return "at" if model == "flipped" else "anc"


def _has_type(model: str, db: dict[str, set[tuple[Any, ...]]], x: str, t: str) -> bool:
    if model in ("flipped", "node"):
        return (x, t) in db.get("kind", set())
    return (x,) in db.get(t, set())


# -- the roles ----------------------------------------------------------------------------


def test_the_roles_are_recognised_from_each_shape() -> None:
    def roles(model: str) -> tuple[Any, ...]:
        h = hierarchy_roles(grantlog.compile(_text(model)))
        return (h.edge, h.upward, h.type, h.kinds, h.closure, h.strict, h.walkable, h.source)

    assert roles("flipped") == ("up", True, "kind", (), "at", "above", True, "recognised")
    assert roles("unary") == ("parent", True, None, ("catalog", "schema", "table"), "anc",
                              None, True, "recognised")
    assert roles("node") == ("parent", True, "kind", (), "anc", "strict", True, "recognised")
    assert roles("declared") == ("parent", True, None, ("catalog", "schema", "table"), "anc",
                                 None, True, "declared")
    two = hierarchy_roles(grantlog.compile(TWO))
    assert (two.edge, two.closure, two.walkable) == ("parent", "anc", True)
    assert [(o.edge, o.closure, o.kinds) for o in two.others] == [("subgroup", "gin",
                                                                    ("group",))]


def test_the_closure_over_a_reversed_edge_is_walked() -> None:
    """Each linear and the non-linear step over `parent(child, parent)`: recognised as the
    closure of the reversed edge, answered by a walk (`grantlog plan` says so), and equal to
    the naive evaluation."""
    facts = "\n".join(f'parent("{c}", "{p}").' for c, p in _parents())
    facts += "\n" + "\n".join(f'table("{t}").' for ts in TABLES.values() for t in ts)
    seeded = "anc(X, X) :- table(X).\n"
    for step in ("anc(A, X) :- anc(A, P), parent(X, P).",
                 "anc(A, X) :- parent(P, A), anc(P, X).",
                 "anc(A, X) :- anc(A, P), anc(P, X).",
                 seeded + "anc(A, X) :- anc(A, P), parent(X, P).",
                 seeded + "anc(A, X) :- parent(P, A), anc(P, X)."):
        text = ("rel parent(child: string, parent: string).\nrel table(x: string).\n"
                "@demand rel anc(a: string, x: string).\n"
                f"anc(A, X) :- parent(X, A).\n{step}\n")
        p = grantlog.compile(text)
        c = closures(p)["anc"]
        assert c.flipped and c.edge == "parent"
        assert [s for _, s in c.seeds] == (["table"] if seeded in step else [])
        r = grantlog.Reasoner(p)
        r.insert("parent", _parents())
        r.insert("table", [(t,) for ts in TABLES.values() for t in ts])
        db = naive_eval_text(text.replace("@demand ", "") + facts)
        for x in _objects():
            assert {b["X"] for b in r.query(f'anc("{x}", X)')} == \
                {row[1] for row in db["anc"] if row[0] == x}, (step, x)
            assert {b["A"] for b in r.query(f'anc(A, "{x}")')} == \
                {row[0] for row in db["anc"] if row[1] == x}, (step, x)
        if "anc(A, P), anc(P, X)" not in step:
            plan = describe(r, 'anc("c1", X)')
            assert dict(plan.relations)["anc"] == "on demand: closure walk"
            assert [lk.how for lk in plan.lookups] == ["walk over parent(1)"]
        if seeded in step:  # a seeded row is explained by its seed rule
            assert r.ask('anc("c1.s1.t1", "c1.s1.t1")') and not r.ask('anc("c1", "c1")')
            assert "table" in str(r.explain('anc("c1.s1.t1", "c1.s1.t1")'))


MODEL_NAMES = sorted(MODELS)


@pytest.mark.parametrize("model", MODEL_NAMES)
def test_list_and_who_agree_with_the_naive_evaluation(worlds: Any, model: str) -> None:
    r, db = worlds[model]
    allowed = db["allowed"]
    closure = db[_closure_rel(model)]
    objs = sorted(_objects())
    for user, op in itertools.product(USERS, ("read", "list")):
        want = sorted(x for u, o, x in allowed if (u, o) == (user, op))
        assert r.list(user, op) == want, (model, user, op)
        for t in ("table", "schema"):
            assert r.list(user, op, type=t) == [x for x in want if _has_type(model, db, x, t)]
        for within in ("c1", "c1.s1", "m"):
            assert r.list(user, op, within=within) == \
                [x for x in want if (within, x) in closure], (model, user, op, within)
            assert r.list(user, op, type="table", within=within) == \
                [x for x in want if (within, x) in closure and _has_type(model, db, x,
                                                                           "table")]
    for op, x in itertools.product(("read", "list"), objs):
        assert r.who(op, x) == sorted(u for u, o, y in allowed if (o, y) == (op, x))


@pytest.mark.parametrize("model", MODEL_NAMES)
def test_listing_goes_through_the_hierarchy_walk(worlds: Any, model: str) -> None:
    r, _ = worlds[model]
    walked = 0
    for user in USERS:
        for t in (None, "table"):
            got = listing.list_filtered(r, user, "read", t)
            assert got is not None, (model, user, t)
            walked += bool(got[0])
            assert sorted(got[0]) == r.list(user, "read", type=t)
    assert walked >= 4


def _layout_rows(model: str) -> list[tuple[str, str | None, str | None, str]]:
    """(id, kind, parent, path) of every object."""
    parent = dict(_parents())
    out = []
    for x, t in sorted(_objects().items()):
        chain = [x]
        while chain[-1] in parent:
            chain.append(parent[chain[-1]])
        out.append((x, None if t == "platform" else t, parent.get(x),
                    "|" + "|".join(reversed(chain)) + "|"))
    return out


@pytest.mark.parametrize("model", MODEL_NAMES)
def test_filters_agree_in_conditions_and_in_sql(worlds: Any, model: str) -> None:
    r, db = worlds[model]
    allowed = db["allowed"]
    sql = sqlite3.connect(":memory:")
    sql.execute("CREATE TABLE objects (id text, kind text, parent_id text, path text)")
    sql.executemany("INSERT INTO objects VALUES (?, ?, ?, ?)", _layout_rows(model))
    layouts = [Layout("objects", "id", "kind", parent="parent_id"),
               Layout("objects", "id", "kind", path="path", path_separator="|")]
    objs = sorted(_objects())
    for user, op in itertools.product(USERS, ("read", "list")):
        want = {x for u, o, x in allowed if (u, o) == (user, op)}
        f = r.filter(user, op)
        assert {x for x in objs if f.holds(x)} == want, (model, user, op, f)
        for t in ("table", "schema"):
            ft = r.filter(user, op, type=t)
            typed = {x for x in want if _has_type(model, db, x, t)}
            for lay in layouts:
                got = {row[0] for row in sql.execute(select_sql(ft, lay, "sqlite"))}
                assert got == typed, (model, user, op, t, lay, ft)


@pytest.mark.parametrize("model", MODEL_NAMES)
def test_levels_are_lifted_in_place(worlds: Any, model: str) -> None:
    """`schema(S), anc(S, X), ok(U, S)` (the schema at or above X, in the rule's body) is
    lifted like a level relation: USE on a catalog gives "under the catalog" (and not the
    table under it without a schema), not one term per schema of it decided one by one."""
    r, db = worlds[model]
    f = r.filter("fay", "read")
    assert not {"c1.s1", "c1.s2"} & mentioned(f.cond), f.cond
    assert "c1" in mentioned(f.cond)
    assert {x for x in _objects() if f.holds(x)} == \
        {x for u, o, x in db["allowed"] if (u, o) == ("fay", "read")} != set()


@pytest.mark.parametrize("model", MODEL_NAMES)
def test_prepare_builds_the_walks_indexes(worlds: Any, model: str) -> None:
    r, _ = worlds[model]
    r.prepare()
    got = set(filters.filter_lookups(r, r.view(), "allowed"))
    edge = {"flipped": "up", "node": "parent"}.get(model, "parent")
    assert {(edge, (0,)), (edge, (1,))} <= got
    if model == "two":
        assert ("subgroup", (0,)) in got and ("subgroup", (1,)) in got
    if model in ("unary", "declared", "two"):
        assert ("table", (0,)) in got and ("table", (1,)) not in got


def test_a_type_named_by_a_unary_relation(worlds: Any) -> None:
    r, _ = worlds["unary"]
    assert r.list("ann", "read", type="tables") == []
    got = r.list("ann", "read", type="tabel")
    assert got == [] and "did you mean `table`" in (got.warnings[0].help or "")
    with pytest.raises(grantlog.GrantlogError, match="tabel"):
        r.list("ann", "read", type="tabel", strict=True)
    assert r.filter("ann", "read", type="table").to_dict()["condition"]["and"][0] == \
        {"type": "table"}


def test_plan_says_which_hierarchy_is_walked_or_why_none() -> None:
    assert fast_paths(grantlog.compile(UNARY)) == (
        "list, filters, levels: walk the hierarchy `anc` over `parent` (child, parent), "
        "types `catalog`, `schema`, `table`",)
    two = fast_paths(grantlog.compile(TWO))
    assert two[1] == ("closure walk (prepare builds its indexes): `gin` over `subgroup` "
                      "(child, parent), types `group`")
    third = UNARY + "anc(A, X) :- grant(A, X).\n"
    (line,) = fast_paths(grantlog.compile(third))
    assert line.startswith("list: no walkable hierarchy: `anc` has 3 rules besides its "
                           "reflexive ones"), line


def test_the_cli_plan_says_why_there_is_no_walk(tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    f = tmp_path / "m.gl"
    f.write_text(UNARY.replace("anc(X, X) :- table(X).\n", "anc(X, X) :- table(X).\n"
                               "anc(X, X) :- grant(X, _).\n"))
    assert main(["plan", str(f), "allowed(ann, read, T)"]) == 0
    out = capsys.readouterr().out
    assert "fast paths:\n  list: no walkable hierarchy: `anc` is seeded from a binary " \
        "relation and from others" in out, out
    assert main(["plan", "--json", str(f), "allowed(ann, read, T)"]) == 0
    got = json.loads(capsys.readouterr().out)
    assert got["fast_paths"][0].startswith("list: no walkable hierarchy"), got


@pytest.mark.parametrize("text, message", [
    ("@hierarchy(edge) rel parent(child: string, parent: string).\n"
     "@hierarchy(closure) rel anc(a: string, x: string).\nrel table(x: string).\n"
     "anc(X, X) :- table(X).\nanc(A, X) :- parent(X, A).\n"
     "anc(A, X) :- anc(A, P), parent(X, P).\n",
     "`@hierarchy(edge)` relation `parent` is read child to parent by the closure `anc`"),
    ("@hierarchy(parent) rel e(parent: string, child: string).\n"
     "@hierarchy(closure) rel anc(a: string, x: string).\nrel table(x: string).\n"
     "anc(X, X) :- table(X).\nanc(A, X) :- e(A, X).\nanc(A, X) :- anc(A, P), e(P, X).\n",
     "`@hierarchy(parent)` relation `e` is read parent to child by the closure `anc`"),
    ("@hierarchy(type) rel table(x: string).\n@hierarchy(type) rel view(x: string).\n"
     "@hierarchy(closure) rel anc(a: string, x: string).\nrel parent(c: string, p: string).\n"
     "anc(X, X) :- table(X).\nanc(A, X) :- parent(X, A).\n"
     "anc(A, X) :- anc(A, P), parent(X, P).\n",
     "`@hierarchy(type)` is `table`, `view`, but the closure `anc` is seeded from `table`"),
    ("@hierarchy(edge) rel e(a: string, b: string).\n"
     "@hierarchy(parent) rel f(a: string, b: string).\n",
     "`@hierarchy(edge)` and `@hierarchy(parent)` are both declared: on `e` and on `f`"),
    ("@hierarchy(type) rel kind(a: string, b: string).\n@hierarchy(type) rel table(x: string).\n",
     "`@hierarchy(type)` is declared twice: on `kind` and on `table`"),
    ("@hierarchy(edge) rel e(a: string).\n",
     "`@hierarchy(edge)` relation `e` has 1 column; a hierarchy role is binary"),
])
def test_the_new_declarations_are_checked(text: str, message: str) -> None:
    with pytest.raises(grantlog.GrantlogError) as err:
        grantlog.compile(text, filename="h.gl")
    d = err.value.diagnostics[0]
    assert (d.code, d.span.file) == ("hierarchy-role", "h.gl") and d.span.line >= 1
    assert message in d.message, d.message


def test_an_incremental_change_of_a_unary_type_is_seen(worlds: Any) -> None:
    r = _reasoner("unary")
    before = r.list("cid", "read")
    with r.transaction() as tx:
        tx.insert("table", [("c1.s1.t9",)])
        tx.insert("parent", [("c1.s1.t9", "c1.s1")])
    assert r.list("cid", "read") == sorted([*before, "c1.s1.t9"])
    assert listing.list_filtered(r, "cid", "read", None) is not None
    r.retract("table", [("c1.s1.t9",)])
    assert r.list("cid", "read") == before


# -- the benchmark models of benchmarks/models/ (issue 26), on a small generated world -----


def _bench_world(model: str) -> Any:
    sys.path[:0] = [str(ROOT / "benchmarks" / "models"), str(ROOT / "benchmarks")]
    try:
        import worlds
    finally:
        del sys.path[:2]
    return worlds.generate(model, 240, n_users=30, n_groups=5, n_roles=10, n_grants=200)


@pytest.mark.parametrize("model, op", [("unary", "load_table"), ("twotrees", "read_table"),
                                       ("renamed", "load_table")])
def test_the_benchmark_models_list_through_the_walk(model: str, op: str) -> None:
    """Each own model of benchmarks/models/: `list` (and `type=`/`within=`) through the
    hierarchy's walk, equal to a check of every object; filters equal to the checks."""
    path = ROOT / "benchmarks" / "models" / f"{model}.gl"
    if not path.exists():
        pytest.skip(f"{path.name} not written yet")
    world = _bench_world(model)
    r = grantlog.Reasoner(grantlog.compile(paths=[path]))
    with r.transaction() as tx:
        for rel, rows in world.facts.items():
            if rows:
                tx.insert(rel, rows)
    roles = hierarchy_roles(r.program)
    assert roles.walkable, roles.why
    w = world.workload
    kinds = dict(w.facts["entity"])
    objs = sorted(x for x, t in kinds.items() if t in ("catalog", "schema", "table"))
    schema = next(s for s in w.schemas if w.schema_tables[s])
    users = sorted(w.users)[::3] + list(world.probes)
    walked = 0
    for u in users:
        want = [x for x in objs if r.check(u, op, x).allowed]
        fast = listing.list_filtered(r, u, op, None)
        assert fast is not None, (model, u)
        walked += bool(fast[0])
        assert r.list(u, op) == sorted(fast[0]) == want, (model, u)
        assert r.list(u, op, type="table") == [x for x in want if kinds[x] == "table"]
        assert r.list(u, op, within=schema) == [x for x in want if x.startswith(schema + ".")]
        f = r.filter(u, op)
        assert [x for x in objs if f.holds(x)] == want, (model, u, f)
    assert walked >= 3, "the probes' listings hold tables"


def test_the_pydatalog_backend_lists_by_a_unary_type() -> None:
    """The independent oracle reads the same roles: `type="table"` is the relation `table`."""
    pytest.importorskip("pyDatalog")
    from grantlog.engine.backends.pydatalog import PyDatalogReasoner

    p = PyDatalogReasoner(grantlog.compile(UNARY))
    m = _reasoner("unary")
    for rel, rows in _facts("unary").items():
        if rows:
            p.insert(rel, rows)
    for user in USERS:
        assert p.list(user, "read", type="table") == m.list(user, "read", type="table")
        assert p.list(user, "list", type="schema") == m.list(user, "list", type="schema")
        assert p.list(user, "read", within="c1") == m.list(user, "read", within="c1")


def test_an_object_of_two_unary_kinds_is_listed_under_each() -> None:
    """Types as unary relations where a table is also a schema: the walk cannot take one type
    per object (kinds_get finds the overlap), and every typed listing equals the naive one."""
    facts = _facts("unary")
    facts["schema"] = [*facts["schema"], ("c1.s1.t1",), ("c2.s3.t5",)]
    r = grantlog.Reasoner(grantlog.compile(UNARY))
    with r.transaction() as tx:
        for rel, rows in facts.items():
            tx.insert(rel, rows)
    lines = [f"{rel}({', '.join(repr(v).replace(chr(39), chr(34)) for v in row)})."
             for rel, rows in facts.items() for row in rows]
    db = naive_eval_text(UNARY.replace("@hierarchy(type) ", "").replace(
        "@hierarchy(parent) ", "").replace("@hierarchy(closure) ", "") + "\n".join(lines))
    checked = 0
    for user, op in itertools.product(USERS, ("read", "list")):
        want = sorted(x for u, o, x in db["allowed"] if (u, o) == (user, op))
        for t in ("table", "schema"):
            got = r.list(user, op, type=t)
            assert got == [x for x in want if (x,) in db[t]], (user, op, t)
            checked += "c1.s1.t1" in got or "c2.s3.t5" in got
    assert checked >= 2  # the objects of two kinds are in some answers
