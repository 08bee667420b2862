"""``list(..., within=X)`` goes through the hierarchy's walk (issue 26): the walk starts at
``X``, with what the subject holds above ``X`` read once on the way up, and answers exactly
the unfiltered listing restricted to ``X``'s subtree (the hierarchy's closure: ``X`` itself
when it has a type, and every object below it). On the shipped model and the three models of
benchmarks/models/, over generated worlds with a user whose grants are denied above, at and
inside the subtrees asked about; with ``type=``; at the root, at a leaf, at a node the user
has no access to and at an unknown node (typo suggestions, as before). Each test fails if
``within=`` falls off the walk (the old path decided the subtree kind by kind).

The whole-platform listing's wide levels (engine/answer/sweep.py) are compared here too: with
the objects to leave out found from the type relation's side, with untyped objects in the
tree and after the hierarchy changes.
"""

from __future__ import annotations

import functools
import sys
from pathlib import Path
from typing import Any

import pytest
from grantlog.engine.answer import listing, sweep
from grantlog.engine.core.hierarchy_roles import hierarchy_roles
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import grantlog

ROOT = Path(__file__).resolve().parent.parent
MODELS = ("shipped", "renamed", "unary", "twotrees")
#: the world of the DENY tests: five catalogs, six schemas, 300 tables
SEED = 4


def _worlds() -> Any:
    sys.path[:0] = [str(ROOT / "benchmarks" / "models"), str(ROOT / "benchmarks")]
    try:
        import worlds
    finally:
        del sys.path[:2]
    return worlds


def _add_denier(w: Any) -> dict[str, str]:
    """A user ``probe_deny`` allowed everything on the metalake (as ``probe_all``) and denied
    at three levels: SELECT_TABLE on a catalog, USE_SCHEMA on a schema of another catalog,
    SELECT_TABLE on one table of a third schema. Returns those objects by name."""
    m = "m1"
    schemas = [s for s in w.schemas if w.schema_tables[s]]
    cat_a = w.parent[schemas[0]]
    rest = [s for s in schemas if w.parent[s] != cat_a]
    s_b = rest[0]
    s_c = next(s for s in rest if s != s_b)
    t_c = w.schema_tables[s_c][0]
    role = f"{m}/role/probe_deny"
    w.facts["entity"].append((role, "role"))
    w.facts["contains"].append((m, role))
    w.facts["metalake_user"].append(("probe_deny", m))
    w.facts["role_of"].append(("probe_deny", role))
    w.facts["privilege"] += [(role, p, m, "allow") for p in
                             ("select_table", "use_schema", "use_catalog")]
    w.facts["privilege"] += [(role, "select_table", cat_a, "deny"),
                             (role, "use_schema", s_b, "deny"),
                             (role, "select_table", t_c, "deny")]
    w.users.append("probe_deny")
    return {"catalog_denied": cat_a, "schema_denied": s_b, "schema_with_denied": s_c,
            "table_denied": t_c, "catalog_of_schema_denied": w.parent[s_b]}


@functools.cache
def _world(seed: int) -> tuple[Any, dict[str, int], dict[str, str]]:
    worlds = _worlds()
    w, probes = worlds.workload(300, seed, big_schema_tables=30, n_users=30, n_groups=5,
                                n_roles=10, n_grants=200)
    return w, probes, _add_denier(w)


@functools.cache
def _loaded(model: str, seed: int = SEED) -> tuple[grantlog.Reasoner, Any]:
    w, probes, _ = _world(seed)
    world = _worlds().translate(model, w, probes)
    r = grantlog.Reasoner(grantlog.compile(paths=[world.rules]))
    with r.transaction() as tx:
        for rel, rows in world.facts.items():
            if rows:
                tx.insert(rel, rows)
    return r, world


@functools.cache
def _subtree_of(seed: int, x: str) -> frozenset[str]:
    return frozenset(_subtree(_world(seed)[0], x))


def _subtree(w: Any, x: str) -> set[str]:
    """The closure's objects under ``x``, from the world's own parent map: ``x`` (when it
    has a type) and every object below it."""
    typed = {o for o, _ in w.facts["entity"]}
    out = {x} if x in typed else set()
    for o in typed:
        p = w.parent.get(o)
        while p is not None:
            if p == x:
                out.add(o)
                break
            p = w.parent.get(p)
    return out


def _places(w: Any, named: dict[str, str], answer: list[str]) -> list[str]:
    """The nodes ``within`` is asked at: the root, every catalog, the schemas with a DENY at
    or inside them and two more, a denied leaf, an allowed leaf, a listed leaf."""
    places = ["m1", *w.catalogs, *named.values(), *w.schemas[:2], w.tables[-1]]
    places += answer[:1] + answer[-1:]
    return list(dict.fromkeys(places))


def _no_fallback(monkeypatch: pytest.MonkeyPatch) -> None:
    """The old path (the subtree decided kind by kind) fails the test if taken."""
    def fail(*_: Any, **__: Any) -> Any:
        raise AssertionError("`within=` left the hierarchy's walk")
    monkeypatch.setattr(listing, "kinds", fail)


@pytest.mark.parametrize("model", MODELS)
def test_within_is_the_listing_restricted_to_the_subtree(
        model: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """For every user of the world (and the probes), at the root, each catalog, schemas with
    and without DENYs, leaves: ``list(within=X)`` and ``list(within=X, type="table")`` are
    the unfiltered listing restricted to X's subtree, through the walk."""
    r, world = _loaded(model)
    w = world.workload
    _, _, named = _world(SEED)
    op = world.load
    roles = hierarchy_roles(r.program)
    assert roles.walkable, roles.why
    _no_fallback(monkeypatch)
    users = [*sorted(w.users)[::8], *world.probes, "probe_deny"]
    types = dict(w.facts["entity"])
    compared = nonempty = 0
    for u in users:
        assert listing.list_filtered(r, u, op, None, "m1") is not None, (model, u)
        whole = list(r.list(u, op))
        tables = list(r.list(u, op, type="table"))
        for x in _places(w, named, whole):
            under = _subtree_of(SEED, x)
            got = list(r.list(u, op, within=x))
            assert got == [y for y in whole if y in under], (model, u, x)
            got_t = list(r.list(u, op, type="table", within=x))
            assert got_t == [y for y in tables if y in under] == \
                [y for y in got if types[y] == "table"], (model, u, x)
            compared += 1
            nonempty += bool(got)
    assert compared > 80 and nonempty > 20, (compared, nonempty)


@pytest.mark.parametrize("model", MODELS)
def test_denies_above_at_and_inside_the_subtree(model: str,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """The user allowed on the metalake and denied on a catalog, a schema's USE and one
    table: the denied catalog lists nothing, nor does the schema denied USE or its
    catalog's part under it, the schema holding the denied table lists all but that table,
    and a denied leaf lists nothing while an allowed leaf lists itself."""
    r, world = _loaded(model)
    w = world.workload
    _, _, named = _world(SEED)
    op = world.load
    _no_fallback(monkeypatch)
    u = "probe_deny"

    def within(x: str) -> list[str]:
        return list(r.list(u, op, within=x))

    assert within(named["catalog_denied"]) == []
    assert within(named["schema_denied"]) == []
    s_c, t_c = named["schema_with_denied"], named["table_denied"]
    assert within(s_c) == sorted(t for t in w.schema_tables[s_c] if t != t_c)
    assert within(t_c) == []
    t_ok = w.schema_tables[s_c][-1]
    assert t_ok != t_c and within(t_ok) == [t_ok]
    cat_b = named["catalog_of_schema_denied"]
    assert within(cat_b) == sorted(
        t for s in w.schemas if w.parent[s] == cat_b and s != named["schema_denied"]
        for t in w.schema_tables[s] if t != t_c)
    # the root: every table but those denied
    denied = _subtree(w, named["catalog_denied"]) | _subtree(w, named["schema_denied"])
    assert within("m1") == sorted(t for t in w.tables if t not in denied and t != t_c)


@pytest.mark.parametrize("model", MODELS)
def test_within_where_the_user_has_no_access_and_at_an_unknown_node(
        model: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """A node the user holds nothing under answers nothing; an unknown node answers nothing
    with the typo's suggestion, as before (``strict``: raised)."""
    r, world = _loaded(model)
    w = world.workload
    op = world.load
    small = list(r.list("probe_small", op))
    assert len(small) == 3
    home = w.parent[w.parent[small[0]]]  # the catalog of the small user's tables
    elsewhere = next(c for c in w.catalogs if c != home)
    _no_fallback(monkeypatch)
    assert list(r.list("probe_small", op, within=elsewhere)) == []
    assert list(r.list("probe_small", op, within=home)) == small
    assert list(r.list("nobody_at_all", op, within=home)) == []
    typo = w.catalogs[0] + "x"
    got = r.list("probe_all", op, within=typo)
    assert list(got) == []
    assert any(d.code == "unknown-constant" and w.catalogs[0] in (d.help or "")
               for d in got.warnings), got.warnings
    with pytest.raises(grantlog.GrantlogError):
        r.list("probe_all", op, within=typo, strict=True)


@pytest.mark.parametrize("model", MODELS)
@settings(max_examples=15, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(data=st.data())
def test_within_on_generated_worlds(model: str, data: st.DataObject) -> None:
    """Hypothesis: a world (seed), a user, a node, a type: ``within=`` equals the listing
    restricted to the subtree, and the walk answered it."""
    seed = data.draw(st.sampled_from([SEED, 3]), label="seed")
    r, world = _loaded(model, seed)
    w = world.workload
    u = data.draw(st.sampled_from(sorted(w.users)), label="user")
    objects = sorted(dict(w.facts["entity"]))
    x = data.draw(st.sampled_from(["m1", *w.catalogs, *w.schemas, *w.tables[::7],
                                   *objects[:5]]), label="within")
    t = data.draw(st.sampled_from([None, "table", "schema"]), label="type")
    op = world.load
    whole = list(r.list(u, op, type=t))
    under = _subtree_of(seed, x)
    assert listing.list_filtered(r, u, op, t, x) is not None
    assert list(r.list(u, op, type=t, within=x)) == [y for y in whole if y in under]


# -- the wide levels of a walk (engine/answer/sweep.py) -------------------------------------


@pytest.mark.parametrize("model", MODELS)
def test_the_whole_listing_leaves_out_few_objects_by_their_type(
        model: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The whole-platform listing decides the tables' level from the few objects of other
    types (and the untyped ones): it equals a check of every object, before and after an
    untyped object and a new table are put in the tree, and after the table goes."""
    r, world = _fresh(model)
    w = world.workload
    op = world.load
    used: list[bool] = []
    real = sweep.Sweep.excluded

    def spy(self: Any, n: int, ok: set[Any], untyped: bool) -> Any:
        got = real(self, n, ok, untyped)
        used.append(got is not None)
        return got
    monkeypatch.setattr(sweep.Sweep, "excluded", spy)

    def every() -> list[str]:
        return sorted(x for x in dict(w.facts["entity"]) | {"m1.untyped": "", new: ""}
                      if r.check("probe_all", op, x).allowed)

    new = w.schemas[0] + ".t_new"
    assert list(r.list("probe_all", op)) == every() == sorted(w.tables)
    assert any(used), "the level was decided from the type relation's side"
    facts = _added(model, w.schemas[0], new)
    with r.transaction() as tx:
        for rel, rows in facts.items():
            tx.insert(rel, rows)
    assert list(r.list("probe_all", op)) == every() == sorted([*w.tables, new])
    with r.transaction() as tx:
        for rel, rows in facts.items():
            tx.retract(rel, [row for row in rows if new in row])
    assert list(r.list("probe_all", op)) == every() == sorted(w.tables)


def _fresh(model: str) -> tuple[grantlog.Reasoner, Any]:
    """A world of its own (the test writes to it)."""
    w, probes = _worlds().workload(240, 4, n_users=30, n_groups=5, n_roles=10, n_grants=200)
    world = _worlds().translate(model, w, probes)
    r = grantlog.Reasoner(grantlog.compile(paths=[world.rules]))
    with r.transaction() as tx:
        for rel, rows in world.facts.items():
            if rows:
                tx.insert(rel, rows)
    return r, world


def _added(model: str, schema: str, new: str) -> dict[str, list[tuple[str, ...]]]:
    """Each model's facts for an untyped object ``m1.untyped`` under ``schema`` and a new
    table ``new`` in it."""
    if model == "shipped":
        return {"contains": [(schema, "m1.untyped"), (schema, new)],
                "entity": [(new, "table")]}
    if model == "renamed":
        names = _worlds().RENAMES
        return {names["contains"]: [(schema, "m1.untyped"), (schema, new)],
                names["entity"]: [(new, "table")]}
    if model == "unary":
        return {"parent": [("m1.untyped", schema), (new, schema)], "table": [(new,)]}
    return {"encloses": [(schema, "m1.untyped"), (schema, new)],
            "resource": [(new, "table")]}


# -- a graph (objects with two parents) and a model of its own -------------------------------

GRAPH = """
rel kind(object: string, type: string).
rel edge(parent: string, child: string).
rel grant(user: string, object: string).
rel deny(user: string, object: string).
below(A, X) :- edge(A, X).
below(A, X) :- below(A, P), edge(P, X).
at(X, X) :- kind(X, _).
at(A, X) :- below(A, X).
denied(U, O) :- deny(U, A), at(A, O).
allowed(U, read, O) :- grant(U, A), at(A, O), kind(O, leaf), not denied(U, O).
allowed(U, list, O) :- grant(U, A), below(A, O).
"""


@settings(max_examples=30, deadline=None)
@given(edges=st.lists(st.tuples(st.integers(0, 9), st.integers(0, 9)), max_size=25),
       grants=st.lists(st.tuples(st.sampled_from("ab"), st.integers(0, 9)), max_size=6),
       denies=st.lists(st.tuples(st.sampled_from("ab"), st.integers(0, 9)), max_size=3),
       x=st.integers(0, 10), op=st.sampled_from(["read", "list"]),
       t=st.sampled_from([None, "leaf", "node"]))
def test_within_in_a_graph(edges: list[tuple[int, int]], grants: list[tuple[str, int]],
                           denies: list[tuple[str, int]], x: int, op: str,
                           t: str | None) -> None:
    """Objects with several parents (the walk decides each object): ``within=`` equals the
    listing restricted to the closure's rows under the node, asked of the closure itself."""
    r = grantlog.Reasoner(grantlog.compile(GRAPH))
    name = [f"o{i}" for i in range(11)]  # o10: named by nothing
    dag = sorted({(name[min(a, b)], name[max(a, b)]) for a, b in edges if a != b})
    with r.transaction() as tx:
        tx.insert("kind", [(n, "leaf" if i % 3 == 0 else "node")
                           for i, n in enumerate(name[:10])])
        if dag:
            tx.insert("edge", dag)
        if grants:
            tx.insert("grant", [(u, name[i]) for u, i in grants])
        if denies:
            tx.insert("deny", [(u, name[i]) for u, i in denies])
    assert hierarchy_roles(r.program).walkable
    under = {row[1] for row in r.rows("at") if row[0] == name[x]}
    for u in "ab":
        whole = list(r.list(u, op, type=t))
        assert listing.list_filtered(r, u, op, t, name[x]) is not None
        assert list(r.list(u, op, type=t, within=name[x])) == [y for y in whole if y in under]
