"""``list(..., within=X)`` at the edges of the hierarchy (issue 26), on the shipped model and the
three models of benchmarks/models/ (their own relation names and shapes): a node with nothing
below it (an empty schema, an empty catalog), a leaf, an untyped node between a schema and its
tables, a node that gains and loses its only table, and a ``within`` that is no node of the
hierarchy (a user, the operation, a group of twotrees' other hierarchy, a number). And, on
random graphs, whether a type's objects nest (what the filter's level lift asks first).

Every answer is compared with the whole listing restricted to the node's subtree as the
reasoner's own closure relation (the hierarchy role ``closure``) states it, and with ``check``
on every object of the subtree; the walk answers (the old path, deciding the subtree kind by
kind, fails the test if taken).
"""

from __future__ import annotations

import functools
import sys
from pathlib import Path
from typing import Any

import pytest
from grantlog.engine.answer import listing
from grantlog.engine.core.hierarchy_roles import hierarchy_roles
from hypothesis import example, given, settings
from hypothesis import strategies as st

import grantlog

ROOT = Path(__file__).resolve().parent.parent
MODELS = ("shipped", "renamed", "unary", "twotrees")
#: each model's name of the shared world's types (unary: a relation each)
KINDS = {"metalake": "platform", "catalog": "catalog", "schema": "schema", "table": "table"}


def _worlds() -> Any:
    sys.path[:0] = [str(ROOT / "benchmarks" / "models"), str(ROOT / "benchmarks")]
    try:
        import worlds
    finally:
        del sys.path[:2]
    return worlds


def _node(model: str, parent: str, child: str, kind: str | None,
          ) -> dict[str, list[tuple[str, ...]]]:
    """``model``'s facts putting ``child`` under ``parent`` with the type ``kind`` (one of
    the shared world's; None: untyped)."""
    if model in ("shipped", "renamed"):
        names = _worlds().RENAMES if model == "renamed" else {}
        edge, typ = names.get("contains", "contains"), names.get("entity", "entity")
        out = {edge: [(parent, child)]}
        if kind is not None:
            out[typ] = [(child, kind)]
        return out
    if model == "unary":
        out = {"parent": [(child, parent)]}
        if kind is not None:
            out[KINDS[kind]] = [(child,)]
        return out
    out = {"encloses": [(parent, child)]}
    if kind is not None:
        out["resource"] = [(child, KINDS[kind])]
    return out


def _merge(*parts: dict[str, list[tuple[str, ...]]]) -> dict[str, list[tuple[str, ...]]]:
    out: dict[str, list[tuple[str, ...]]] = {}
    for p in parts:
        for rel, rows in p.items():
            out.setdefault(rel, []).extend(rows)
    return out


@functools.cache
def _base(seed: int = 6) -> tuple[Any, dict[str, int]]:
    return _worlds().workload(300, seed, big_schema_tables=30, n_users=30, n_groups=5,
                              n_roles=10, n_grants=200)


@functools.cache
def _loaded(model: str) -> tuple[grantlog.Reasoner, Any, dict[str, str]]:
    """A reasoner over ``model``'s world with the edge cases put in: an empty catalog, an
    empty schema in a catalog with tables, an untyped folder in a schema holding one table
    (shared by the tests: one that writes puts the facts back). Returns the reasoner, the
    world and those objects by name."""
    w, probes = _base()
    world = _worlds().translate(model, w, probes)
    r = grantlog.Reasoner(grantlog.compile(paths=[str(world.rules)]))
    cat = w.parent[w.schemas[0]]
    s = w.schemas[1]
    named = {"empty_catalog": "m1.zz_empty_catalog", "empty_schema": f"{cat}.zz_empty",
             "folder": f"{s}.zz_folder", "in_folder": f"{s}.zz_folder.t", "schema": s,
             "catalog": cat}
    extra = _merge(_node(model, "m1", named["empty_catalog"], "catalog"),
                   _node(model, cat, named["empty_schema"], "schema"),
                   _node(model, s, named["folder"], None),
                   _node(model, named["folder"], named["in_folder"], "table"))
    with r.transaction() as tx:
        for rel, rows in _merge(world.facts, extra).items():
            if rows:
                tx.insert(rel, rows)
    return r, world, named


def _under(r: grantlog.Reasoner, x: Any) -> set[Any]:
    """``x``'s subtree as the model's closure relation states it (``closure(x, Y)``, or
    ``closure(Y, x)`` in a model whose closure reads upward)."""
    roles = hierarchy_roles(r.program)
    closure = roles.closure
    assert closure is not None, roles.why
    rows = _rows(r, closure, r.revision)
    top = 0 if ("m1", "m1.zz_empty_catalog") in rows else 1  # the ancestor's column
    return {row[1 - top] for row in rows if row[top] == x}


@functools.lru_cache(maxsize=8)
def _rows(r: grantlog.Reasoner, rel: str, revision: int) -> frozenset[tuple[Any, ...]]:
    return frozenset(r.rows(rel))


@pytest.fixture
def no_fallback(monkeypatch: pytest.MonkeyPatch) -> None:
    """The old path (the subtree decided kind by kind) fails the test if taken."""
    def fail(*_: Any, **__: Any) -> Any:
        raise AssertionError("`within=` left the hierarchy's walk")
    monkeypatch.setattr(listing, "kinds", fail)


def _within(r: grantlog.Reasoner, u: str, op: str, x: Any, t: str | None = None) -> list[Any]:
    """``list(within=x)``, checked to be the walk's answer, the whole listing restricted to
    ``x``'s subtree and ``check``'s verdict on each object of that subtree."""
    assert listing.list_filtered(r, u, op, t, x) is not None
    got = list(r.list(u, op, type=t, within=x))
    under = _under(r, x)
    assert got == [y for y in r.list(u, op, type=t) if y in under], (u, x, t)
    if t is None:
        assert got == sorted(y for y in under if r.check(u, op, y).allowed), (u, x)
    return got


@pytest.mark.parametrize("model", MODELS)
def test_nodes_with_nothing_below(model: str, no_fallback: None) -> None:
    """An empty catalog and an empty schema (typed nodes, no children) list nothing for the
    user allowed everywhere, with and without ``type=``, and warn of nothing (they are
    known nodes)."""
    r, world, named = _loaded(model)
    for x in (named["empty_catalog"], named["empty_schema"]):
        assert _within(r, "probe_all", world.load, x) == []
        assert _within(r, "probe_all", world.load, x, "table") == []
        assert r.list("probe_all", world.load, within=x).warnings == ()


@pytest.mark.parametrize("model", MODELS)
def test_a_leaf(model: str, no_fallback: None) -> None:
    """A table lists itself for a user allowed on it and nothing for one who is not; a
    leaf of another type (an empty schema, asked with ``type="table"``) lists nothing."""
    r, world, named = _loaded(model)
    op = world.load
    small = list(r.list("probe_small", op))
    assert len(small) == 3
    leaf = small[1]
    assert _within(r, "probe_small", op, leaf) == [leaf]
    assert _within(r, "probe_all", op, leaf) == [leaf]
    other = next(t for t in world.workload.tables if t not in small)
    assert _within(r, "probe_small", op, other) == []
    assert _within(r, "nobody_at_all", op, leaf) == []
    assert _within(r, "probe_all", op, named["empty_schema"], "table") == []


@pytest.mark.parametrize("model", MODELS)
def test_an_untyped_node_between(model: str, no_fallback: None) -> None:
    """An untyped folder in a schema, holding a table: ``within`` the folder lists that
    table (the folder itself is no resource), ``within`` its schema lists the table too,
    and the whole listing has it."""
    r, world, named = _loaded(model)
    op = world.load
    folder, table = named["folder"], named["in_folder"]
    assert _within(r, "probe_all", op, folder) == [table]
    assert table in _within(r, "probe_all", op, named["schema"])
    assert folder not in list(r.list("probe_all", op))
    assert _within(r, "probe_all", op, named["catalog"])  # the catalog's tables


@pytest.mark.parametrize("model", MODELS)
def test_a_node_gains_and_loses_its_table(model: str, no_fallback: None) -> None:
    """The empty schema gains a table (listed ``within`` it, its catalog and the root) and
    loses it again (nothing listed): the walk reads the hierarchy as it stands."""
    r, world, named = _loaded(model)
    op = world.load
    schema = named["empty_schema"]
    new = _node(model, schema, f"{schema}.t_new", "table")
    with r.transaction() as tx:
        for rel, rows in new.items():
            tx.insert(rel, rows)
    assert _within(r, "probe_all", op, schema) == [f"{schema}.t_new"]
    assert f"{schema}.t_new" in _within(r, "probe_all", op, named["catalog"])
    assert f"{schema}.t_new" in list(r.list("probe_all", op, within="m1"))
    with r.transaction() as tx:
        for rel, rows in new.items():
            tx.retract(rel, rows)
    assert _within(r, "probe_all", op, schema) == []
    assert f"{schema}.t_new" not in list(r.list("probe_all", op, within="m1"))


@pytest.mark.parametrize("model", MODELS)
def test_within_what_is_no_node(model: str, no_fallback: None) -> None:
    """A ``within`` that names no node of the hierarchy (a user, the operation, a group of
    twotrees' hierarchy of groups, a number) lists nothing and says the constant is not a
    resource (``strict``: raised)."""
    r, world, _ = _loaded(model)
    op = world.load
    for x in ("probe_all", op, "dept00", 7):
        assert _within(r, "probe_all", op, x) == []
        got = r.list("probe_all", op, within=x)
        assert [d.code for d in got.warnings] == ["unknown-constant"], (x, got.warnings)
        assert f"`{x}`" in got.warnings[0].message
        with pytest.raises(grantlog.GrantlogError):
            r.list("probe_all", op, within=x, strict=True)


# -- whether a type's objects nest (engine/answer/hierarchy.py ``unnested``) ---------------


@settings(max_examples=150, deadline=None)
@example(edges=[(0, 6), (6, 0), (6, 1)], types=["a"] * 6 + ["b", "a"])  # a cycle through o0
@given(edges=st.lists(st.tuples(st.integers(0, 7), st.integers(0, 7)), max_size=14),
       types=st.lists(st.sampled_from(["a", "b", None]), min_size=8, max_size=8))
def test_unnested_is_its_definition(edges: list[tuple[int, int]],
                                    types: list[str | None]) -> None:
    """On random graphs (several parents, cycles, untyped objects): a type is unnested
    exactly when no object of it has one of it among its ancestors (itself aside), with the
    ancestors found already clear of it shared between objects (not those of an object that
    is its own ancestor: the example)."""
    from grantlog.engine.answer.hierarchy import Hierarchy, unnested

    name = [f"o{i}" for i in range(8)]
    facts = "".join(f'contains("{name[p]}", "{name[c]}").\n' for p, c in sorted(set(edges)))
    facts += "".join(f'entity("{name[i]}", {t}).\n' for i, t in enumerate(types) if t)
    r = grantlog.Reasoner(grantlog.compile('import "prelude.gl".\n' + facts, paths=[],
                                           filename="world.gl"))
    h = Hierarchy(r.view())
    parents = {name[c]: [name[p] for p, c2 in edges if c2 == c] for c in range(8)}

    def ancestors(x: str) -> set[str]:
        seen, todo = {x}, list(parents[x])
        while todo:
            p = todo.pop()
            if p not in seen:
                seen.add(p)
                todo += parents[p]
        return seen - {x}

    for t in ("a", "b"):
        mine = [name[i] for i, k in enumerate(types) if k == t]
        assert unnested(t, h) == (not any(types[int(p[1:])] == t
                                          for x in mine for p in ancestors(x))), t
