"""Data filters (``Reasoner.filter``): the decision partially evaluated with the resource
unknown decides every resource as ``check`` does — on the shipped models with their example
facts and on worlds generated from them — and its SQL (sqlglot) run in real SQLite and
PostgreSQL databases returns exactly the resources ``check`` allows. Where a model's rule says
something of the resource a filter cannot, the filter is refused naming the rule."""

from __future__ import annotations

import functools
import itertools
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from conftest import examples
from grantlog.engine.answer.residual import Residual
from grantlog.engine.core import ir
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import grantlog
from grantlog.filters import Layout, select_sql, to_sql

ROOT = Path(__file__).resolve().parent.parent
MODELS = ["gravitino", "cdap_entity", "cdap_parent", "onehouse", "three_tier"]
#: the pairs whose filter is refused, and the rule each names: cdap_entity's "ADMIN on every
#: descendant" reads the resource on both sides of the hierarchy; onehouse's notifications
#: derive a decision from another decision on the same resource (recursive over it)
REFUSED = {"cdap_entity": "missing_admin_below", "onehouse": "notifications"}


def _program(model: str, facts: str | None = None) -> grantlog.Program:
    paths = [ROOT / "rules" / f"{model}.gl"]
    if facts is None:
        paths.append(ROOT / "examples" / model / "facts.gl")
        return grantlog.compile(paths=paths)
    return grantlog.compile(facts, paths=paths, filename="world.gl")


def _questions(r: grantlog.Reasoner) -> tuple[list[Any], list[Any], list[Any]]:
    rows = r.rows(r.program.decision)
    subjects = sorted({x[0] for x in rows} | {"nobody"}, key=ir.value_key)
    ops = sorted({x[1] for x in rows}, key=ir.value_key)
    values = sorted({v for rs in r.all_rows().values() for row in rs for v in row},
                    key=ir.value_key)
    return subjects, ops, values


Allowed = Callable[[Any, Any], frozenset[Any]]


def _checked(r: grantlog.Reasoner, values: list[Any]) -> Allowed:
    """``(s, o) ->`` the values ``r.check(s, o, x)`` allows, one check per value."""
    return lambda s, o: frozenset(x for x in values if r.check(s, o, x).allowed)


@functools.cache
def _allowed(model: str) -> tuple[tuple[list[Any], list[Any], list[Any]],
                                  dict[tuple[Any, Any], frozenset[Any]]]:
    """The example world's questions and what one ``check`` per (subject, operation, value)
    allows, on a reasoner of its own: asked once per run, not once by each test comparing the
    filters, listings and SQL of the same world against the same checks (they were most of
    this file's time)."""
    r = grantlog.Reasoner(_program(model))
    subjects, ops, values = questions = _questions(r)
    checked = _checked(r, values)
    return questions, {(s, o): checked(s, o) for s, o in itertools.product(subjects, ops)}


def _example(model: str) -> tuple[list[Any], list[Any], list[Any], Allowed]:
    """The example world's subjects, operations, values and checks (:func:`_allowed`)."""
    (subjects, ops, values), allowed = _allowed(model)
    return subjects, ops, values, lambda s, o: allowed[s, o]


def _agree(r: grantlog.Reasoner, subjects: list[Any], ops: list[Any], values: list[Any],
           model: str, allowed: Allowed | None = None) -> int:
    refused = 0
    allowed = allowed or _checked(r, values)
    for s, o in itertools.product(subjects, ops):
        try:
            f = r.filter(s, o)
        except grantlog.GrantlogError as err:
            d = err.diagnostics[0]
            assert d.code == "filter-unsupported" and f"`{REFUSED[model]}`" in d.message
            refused += 1
            continue
        yes = allowed(s, o)
        for x in values:
            assert f.holds(x) == (x in yes), (s, o, x, f.to_dict())
    return refused


@pytest.mark.parametrize("model", MODELS)
def test_filters_decide_every_resource_as_check_does(model: str) -> None:
    r = grantlog.Reasoner(_program(model))
    subjects, ops, values, allowed = _example(model)
    assert (subjects, ops, values) == _questions(r)
    refused = _agree(r, subjects, ops, values, model, allowed)
    assert (refused > 0) == (model in REFUSED)
    assert refused < len(subjects) * len(ops) / 10  # the rest are filtered


def _world(model: str) -> st.SearchStrategy[str]:
    """Worlds made from the model's example facts: a subset of them, and new facts that
    recombine the values each column holds."""
    base = _program(model)
    r = grantlog.Reasoner(base)
    stored = {rel: sorted(rows, key=ir.row_key) for rel, rows in r.base_facts().items()
              if rel not in base.derived and rows}
    own = {(f.rel, f.row) for f in base.facts if "examples" in str(f.span)}
    facts = sorted(own, key=lambda x: (x[0], ir.row_key(x[1])))

    @st.composite
    def world(draw: st.DrawFn) -> str:
        keep = draw(st.lists(st.booleans(), min_size=len(facts), max_size=len(facts)))
        chosen = [f for f, k in zip(facts, keep, strict=True) if k]
        for _ in range(draw(st.integers(0, 6))):
            rel = draw(st.sampled_from(sorted({rel for rel, _ in facts})))
            cols = list(zip(*stored[rel], strict=True))
            chosen.append((rel, tuple(draw(st.sampled_from(sorted(set(c), key=ir.value_key)))
                                      for c in cols)))
        return "".join(f"{ir.show_atom(rel, row)}.\n" for rel, row in chosen)

    return world()


@pytest.mark.parametrize("model", ["gravitino", "cdap_parent", "three_tier"])
@settings(max_examples=examples(6, 15), deadline=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_filters_on_generated_worlds(model: str, data: st.DataObject) -> None:
    r, subjects, ops, values = _drawn(model, data, 3, 4)
    _agree(r, subjects, ops, values, model)


def _drawn(model: str, data: st.DataObject, n_subjects: int, n_ops: int,
           ) -> tuple[grantlog.Reasoner, list[Any], list[Any], list[Any]]:
    """A generated world's reasoner, some of its subjects and operations, and its values."""
    facts = data.draw(_world(model), label="world")
    r = grantlog.Reasoner(_program(model, facts))
    subjects, ops, values = _questions(r)
    subjects = data.draw(st.lists(st.sampled_from(subjects), min_size=1,
                                  max_size=n_subjects, unique=True), label="subjects")
    if ops:
        ops = data.draw(st.lists(st.sampled_from(ops), min_size=1, max_size=n_ops,
                                 unique=True), label="operations")
    return r, subjects, ops, values


#: the path's separator: one no id holds (gravitino's roles, policies and jobs hold "/")
SEP = "|"


def _objects(r: grantlog.Reasoner) -> list[tuple[Any, Any, Any, str]]:
    """The example world's resources as a catalog table: (id, type, parent, path), a row per
    type of an object that has several (generated worlds give some two), and a row with no
    type for a node of the hierarchy that is no entity (the parent layout's recursive query
    goes through it)."""
    types: dict[Any, set[Any]] = {}
    for x, t in r.rows("entity"):
        types.setdefault(x, set()).add(t)
    parent = {c: p for p, c in r.rows("contains")}
    for p, c in r.rows("contains"):
        for x in (p, c):
            types.setdefault(x, {None})
    out = []
    for x in sorted(types, key=ir.value_key):
        chain, node = [x], x
        while node in parent and len(chain) < 100:
            node = parent[node]
            chain.append(node)
        out += [(x, t, parent.get(x), SEP + SEP.join(reversed(chain)) + SEP)
                for t in sorted(types[x], key=lambda v: ir.value_key(v) if v else ())]
    return out


LAYOUTS = [Layout("objects", "id", "type", "parent", "path", path_separator=SEP),
           Layout("objects", "id", "type", "parent")]


def _sql_agrees(run: Any, r: grantlog.Reasoner, model: str) -> int:
    objects = _objects(r)
    subjects, ops, _, allowed = _example(model)
    compared = 0
    for s, o in itertools.product(subjects, ops):
        try:
            f = r.filter(s, o)
        except grantlog.GrantlogError:
            continue
        want = {x for x, *_ in objects if x in allowed(s, o)}
        for lay in LAYOUTS:
            got = set(run(select_sql(f, lay, run.dialect)))
            assert got == want, (model, s, o, lay, select_sql(f, lay, run.dialect))
            compared += 1
    return compared


@pytest.mark.parametrize("model", MODELS)
def test_the_sql_runs_in_sqlite_and_returns_what_check_allows(model: str,
                                                             tmp_path: Path) -> None:
    r = grantlog.Reasoner(_program(model))
    db = sqlite3.connect(tmp_path / "catalog.db")
    db.execute("CREATE TABLE objects (id TEXT, type TEXT, parent TEXT, path TEXT)")
    db.executemany("INSERT INTO objects VALUES (?, ?, ?, ?)", _objects(r))

    def run(sql: str) -> list[Any]:
        return [row[0] for row in db.execute(sql)]

    run.dialect = "sqlite"  # type: ignore[attr-defined]
    assert _sql_agrees(run, r, model) > 0


@pytest.mark.parametrize("model", MODELS)
def test_the_sql_runs_in_postgresql_and_returns_what_check_allows(model: str,
                                                                 pg_server: Any) -> None:
    import psycopg

    r = grantlog.Reasoner(_program(model))
    with psycopg.connect(pg_server.schema_url(), autocommit=True) as conn:
        conn.execute("CREATE TABLE objects (id TEXT, type TEXT, parent TEXT, path TEXT)")
        with conn.cursor() as cur:
            cur.executemany("INSERT INTO objects VALUES (%s, %s, %s, %s)", _objects(r))

        def run(sql: str) -> list[Any]:
            return [row[0] for row in conn.execute(sql)]  # type: ignore[call-overload]

        run.dialect = "postgres"  # type: ignore[attr-defined]
        assert _sql_agrees(run, r, model) > 0


def test_layouts_that_cannot_express_a_filter_are_refused(tmp_path: Path) -> None:
    r = grantlog.Reasoner(_program("gravitino"))
    f = r.filter("alice", "load_table", "table")
    for lay, dialect, why in ((Layout("t", "id"), "postgres", "type"),
                              (Layout("t", "id", "type"), "postgres", "neither a `path`"),
                              (Layout("t", "id", "type", "parent"), "spark", "recursive")):
        with pytest.raises(grantlog.GrantlogError) as err:
            to_sql(f, lay, dialect)
        assert err.value.diagnostics[0].code == "filter-layout"
        assert why in err.value.diagnostics[0].message
    lay = Layout("t", "id", "type", "parent", "path")
    # in a tree the path starts with the ids down to the object: a prefix (an index finds it)
    # (every name quoted; LIKE escapes with `!`: no backslash in any literal)
    prefix = "LIKE '/m1/m1.lakehouse/m1.lakehouse.sales/%' ESCAPE '!'"
    assert '"path" ' + prefix in to_sql(f, lay, "trino")
    assert "`path` " + prefix in to_sql(f, lay, "spark")
    assert '"path" ' + prefix in to_sql(f, lay, "postgres")
    weird = Residual("u", "o", ("under", "a_b%*!"), 0, None, None, None,
                     {"a_b%*!": ("r", "a_b%*!")})
    assert "LIKE '/r/a!_b!%*!!/%' ESCAPE '!'" in to_sql(weird, lay, "postgres")
    assert "GLOB '/r/a_b%[*]!/*'" in to_sql(weird, lay, "sqlite")  # LIKE ignores case there
    db = sqlite3.connect(":memory:")  # ids that differ only in case are different ids
    db.execute("CREATE TABLE t (id text, type text, parent text, path text)")
    db.executemany("INSERT INTO t VALUES (?, 'table', NULL, ?)",
                   [("x", "/r/a/x/"), ("y", "/r/A/y/"), ("z", "/r/a_b%*/z/"), ("w", "/r/aXb%*/w/")])
    for obj, want in (("a", ["x"]), ("a_b%*", ["z"])):
        under = Residual("u", "o", ("under", obj), 0, None, None, None, {obj: ("r", obj)})
        got = sorted(row[0] for row in db.execute(select_sql(under, lay, "sqlite")))
        assert got == want, (obj, got)
    f.chains = {}  # where the chain is not known: the id anywhere in the path
    assert "STRPOS(\"path\", '/m1.lakehouse.sales/') > 0" in to_sql(f, lay, "trino")
    assert "LOCATE('/m1.lakehouse.sales/', `path`) > 0" in to_sql(f, lay, "spark")
    assert "POSITION('/m1.lakehouse.sales/' IN \"path\") > 0" in to_sql(f, lay, "postgres")
    toml = tmp_path / "layout.toml"
    toml.write_text('table = "catalog"\nid = "oid"\ntype = "kind"\npath = "p"\n')
    assert Layout.load(toml) == Layout("catalog", "oid", "kind", None, "p")
    toml.write_text('table = "catalog"\ncolour = "x"\n')
    with pytest.raises(grantlog.GrantlogError) as err:
        Layout.load(toml)
    assert err.value.diagnostics[0].code == "bad-layout" and "colour" in str(err.value)


def test_the_filter_command(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import json

    from grantlog.cli import main

    args = ["filter", "--model", "gravitino", "--facts",
            str(ROOT / "examples" / "gravitino" / "facts.gl"), "alice", "load_table",
            "--type", "table"]
    assert main(args) == 0
    got = json.loads(capsys.readouterr().out)
    assert got["condition"]["and"][0] == {"type": "table"}
    layout = tmp_path / "layout.toml"
    layout.write_text('table = "objects"\nid = "id"\ntype = "type"\npath = "path"\n')
    assert main([*args, "--sql", "sqlite", "--layout", str(layout)]) == 0
    sql = capsys.readouterr().out
    assert sql.startswith('SELECT "id" FROM "objects" WHERE "type" = \'table\' AND ')
    assert main([*args, "--sql", "sqlite"]) == 2
    assert "--sql needs --layout" in capsys.readouterr().err


def _lists_agree(r: grantlog.Reasoner, subjects: list[Any], ops: list[Any],
                 values: list[Any], checked: Allowed | None = None) -> None:
    types = sorted({row[1] for row in r.rows("entity")}, key=ir.value_key)
    checked = checked or _checked(r, values)
    for s, o in itertools.product(subjects, ops):
        yes = checked(s, o)
        allowed = [x for x in values if x in yes]
        assert list(r.list(s, o)) == sorted(allowed, key=ir.value_key), (s, o)
        for t in types[:3]:
            want = [x for x in allowed if r.ask(f"entity({ir.show_value(x)}, "
                                                f"{ir.show_value(t)})")]
            assert list(r.list(s, o, type=t)) == sorted(want, key=ir.value_key), (s, o, t)


@pytest.mark.parametrize("model", MODELS)
def test_list_equals_one_check_per_resource(model: str) -> None:
    """``list`` walks down from what the filter admits where it can; its answers are those of
    one check per value, with and without a type."""
    r = grantlog.Reasoner(_program(model))
    subjects, ops, values, allowed = _example(model)
    assert (subjects, ops, values) == _questions(r)
    _lists_agree(r, subjects, ops, values, allowed)


@pytest.mark.parametrize("model", ["gravitino", "cdap_parent", "three_tier", "onehouse"])
@settings(max_examples=examples(5, 10), deadline=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_list_on_generated_worlds(model: str, data: st.DataObject) -> None:
    r, subjects, ops, values = _drawn(model, data, 2, 3)
    _lists_agree(r, subjects, ops, values)


@pytest.mark.parametrize("model", MODELS)
def test_the_column_on_spark_keeps_what_check_allows(model: str, spark: Any) -> None:
    """The filter as a PySpark Column over a DataFrame of the example world's resources (a
    sample of each model's pairs: a Spark job each)."""
    from grantlog.spark_bridge.filters import to_column

    r = grantlog.Reasoner(_program(model))
    objects = _objects(r)
    df = spark.createDataFrame(objects, "id string, type string, parent string, path string")
    df.cache()
    subjects, ops, _, allowed = _example(model)
    pairs = list(itertools.product(subjects, ops))
    compared = 0
    layout = LAYOUTS[0]
    for s, o in pairs[:: max(1, len(pairs) // 12)]:
        try:
            f = r.filter(s, o)
        except grantlog.GrantlogError:
            continue
        got = {row.id for row in df.where(to_column(f, layout)).select("id").collect()}
        assert got == {x for x, *_ in objects if x in allowed(s, o)}, (s, o)
        compared += 1
    assert compared > 0
    if model == "gravitino":  # the hierarchy needs the path column on Spark
        with pytest.raises(grantlog.GrantlogError) as err:
            to_column(r.filter("alice", "load_table", "table"),
                      Layout("t", "id", "type", "parent"))
        assert err.value.diagnostics[0].code == "filter-layout"


def _conds(values: list[str], types: list[str]) -> st.SearchStrategy[Any]:
    leaf = st.one_of(
        st.tuples(st.sampled_from(["is", "under", "parent"]), st.sampled_from(values)),
        st.tuples(st.just("type"), st.sampled_from(types)),
        st.builds(lambda vs: ("in", frozenset(vs)),
                  st.lists(st.sampled_from(values), min_size=2, max_size=3)))
    return st.recursive(leaf, lambda inner: st.one_of(
        st.builds(lambda ps: ("and", tuple(ps)), st.lists(inner, min_size=2, max_size=3)),
        st.builds(lambda ps: ("or", tuple(ps)), st.lists(inner, min_size=2, max_size=4)),
        st.builds(lambda p: ("not", p), inner)), max_leaves=8)


@settings(max_examples=200, deadline=None)
@given(data=st.data())
def test_the_walk_down_admits_what_the_condition_does(data: st.DataObject) -> None:
    """``enumerate_admitted`` (by type below the nodes a condition does not name, in a tree;
    node by node in a graph) against the condition decided for every object, over random
    hierarchies: trees and graphs, untyped nodes, parents with one child."""
    from grantlog.engine.answer.conditions import compile_cond
    from grantlog.engine.answer.hierarchy import Hierarchy, enumerate_admitted

    n = data.draw(st.integers(1, 30), label="nodes")
    nodes = [f"n{i}" for i in range(n)]
    dag = data.draw(st.booleans(), label="graph")
    edges = set()
    for i in range(1, n):  # parents among the last few nodes: deep trees
        ps = data.draw(st.lists(st.integers(max(0, i - 4), i - 1), min_size=0,
                                max_size=2 if dag else 1, unique=True),
                       label=f"parents of n{i}")
        edges |= {(nodes[p], nodes[i]) for p in ps}
    kinds = ["a", "b", "c"]
    typed = {x: t for x in nodes
             if (t := data.draw(st.sampled_from([*kinds, None]), label=f"type of {x}"))}
    few = data.draw(st.lists(st.sampled_from(nodes), min_size=1, max_size=3, unique=True),
                    label="named")  # most subtrees name nothing: decided by type
    rest = data.draw(_conds([*few, "elsewhere"], [*kinds, "d"]), label="condition")
    bound = data.draw(st.lists(st.tuples(st.sampled_from(["under", "under", "is"]),
                                         st.sampled_from(nodes[:3])), min_size=1, max_size=2),
                      label="where to look")
    cond = ("and", (("or", tuple(bound)), rest))  # bounded: seeds to walk from
    facts = "".join(f'contains("{p}", "{c}").\n' for p, c in sorted(edges)) + "".join(
        f'entity("{x}", {t}).\n' for x, t in sorted(typed.items()))
    r = grantlog.Reasoner(grantlog.compile(
        'import "prelude.gl".\n' + facts, paths=[], filename="world.gl"))
    h = Hierarchy(r.view())
    assert h.tree == (not dag or all(
        sum(1 for e in edges if e[1] == x) <= 1 for x in nodes))
    got = enumerate_admitted(cond, h)
    test = compile_cond(cond)
    want = {x for x in [*nodes, "elsewhere"]
            if test(x, h.above(x), h.types(x), h.parents(x))}
    assert got is not None
    assert len(got) == len(set(got))
    assert set(got) == want


TREE = """contains(m, c1). contains(c1, s1). contains(c1, s2). contains(s1, t1). contains(s1, t2).
contains(s1, v1). contains(s2, t3). contains(s2, u). contains(u, t4).
entity(m, metalake). entity(c1, catalog). entity(s1, schema). entity(s2, schema).
entity(t1, table). entity(t2, table). entity(t3, table). entity(t4, table). entity(v1, view).
"""


@pytest.mark.parametrize(("cond", "want"), [
    # s1 names nothing below it: its children are decided as "a child of s1", by type
    (("and", (("under", "m"), ("not", ("parent", "s1")))),
     {"m", "c1", "s1", "s2", "t3", "u", "t4"}),
    # below s2 only the grandchild t4 passes: decided as "deeper than a child", by type
    (("and", (("under", "c1"), ("type", "table"), ("not", ("parent", "s2")),
              ("not", ("parent", "s1")))), {"t4"}),
    # u has no type: it is not under itself
    (("and", (("under", "m"), ("not", ("not", ("under", "u"))))), {"t4"}),
    (("and", (("or", (("is", "t1"), ("under", "s2"))), ("type", "table"))), {"t1", "t3", "t4"}),
])
def test_the_walk_down_on_a_tree(cond: Any, want: set[str]) -> None:
    from grantlog.engine.answer.conditions import compile_cond
    from grantlog.engine.answer.hierarchy import Hierarchy, enumerate_admitted

    r = grantlog.Reasoner(grantlog.compile('import "prelude.gl".\n' + TREE, paths=[],
                                           filename="tree.gl"))
    h = Hierarchy(r.view())
    assert h.tree
    got = enumerate_admitted(cond, h)
    test = compile_cond(cond)
    nodes = {v for row in r.rows("contains") for v in row}
    assert {x for x in nodes if test(x, h.above(x), h.types(x), h.parents(x))} == want
    assert got is not None and sorted(got) == sorted(want)


def _column_agrees(spark: Any, r: grantlog.Reasoner, pairs: list[tuple[Any, Any]]) -> int:
    """Each pair's filter as a Column over the world's resources keeps what check allows."""
    from grantlog.spark_bridge.filters import to_column

    objects = _objects(r)
    if not objects:
        return 0
    df = spark.createDataFrame(objects, "id string, type string, parent string, path string")
    compared = 0
    for s, o in pairs:
        try:
            f = r.filter(s, o)
        except grantlog.GrantlogError:
            continue
        got = {row.id for row in df.where(to_column(f, LAYOUTS[0])).select("id").collect()}
        assert got == {x for x, *_ in objects if r.check(s, o, x).allowed}, (s, o, f.to_dict())
        compared += 1
    return compared


@pytest.mark.parametrize("model", MODELS)
@settings(max_examples=4, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_the_column_on_generated_worlds(model: str, data: st.DataObject, spark: Any) -> None:
    """On Spark, over generated worlds: one Spark job per pair drawn (4 worlds a model; the
    pairs cdap_entity and onehouse refuse are skipped, the refusals tested above)."""
    r, subjects, ops, _ = _drawn(model, data, 2, 2)
    _column_agrees(spark, r, list(itertools.product(subjects, ops)))


def test_filters_in_bulk_on_spark(tmp_path: Path, spark: Any) -> None:
    """``grantlog spark run --filters``: every subject's filter computed in Spark tasks and
    written as Parquet, each equal to the in-memory filter, and turned back into a Column
    (``from_json``) keeps exactly what ``list`` answers."""
    import json

    from grantlog.engine.answer.conditions import from_json
    from grantlog.spark_bridge.cli import main
    from grantlog.spark_bridge.filters import to_column

    rules = [str(ROOT / "rules" / "gravitino.gl"), str(ROOT / "examples" / "gravitino" /
                                                        "facts.gl")]
    out = tmp_path / "out"
    assert main(["run", "--rules", *rules, "--output", str(out), "--filters", "load_table",
                 "--type", "table", "--subjects-from", "metalake_user",
                 "--subject", "nobody"]) == 0
    rows = spark.read.parquet(str(out / "filters")).collect()
    r = grantlog.Reasoner(_program("gravitino"))
    users = {u for u, _ in r.rows("metalake_user")} | {"nobody"}
    assert {row.subject for row in rows} == users and len(rows) == len(users)
    objects = spark.createDataFrame(_objects(r), "id string, type string, parent string, "
                                    "path string")
    for row in rows:
        assert row.error is None and row.operation == "load_table" and row.type == "table"
        want = r.filter(row.subject, "load_table", "table")
        assert json.loads(row.condition) == json.loads(json.dumps(want.to_dict()["condition"],
                                                                  sort_keys=True))
        kept = objects.where(to_column(from_json(json.loads(row.condition)), LAYOUTS[0]))
        assert sorted(x.id for x in kept.select("id").collect()) == \
            list(r.list(row.subject, "load_table", type="table"))
    # a decision that cannot be filtered is a row with the reason, not a failed job
    rules = [str(ROOT / "rules" / "onehouse.gl"), str(ROOT / "examples" / "onehouse" /
                                                       "facts.gl")]
    onehouse = grantlog.Reasoner(_program("onehouse"))
    op = next(o for s, o in itertools.product(*_questions(onehouse)[:2])
              if _refused(onehouse, s, o))
    assert main(["run", "--rules", *rules, "--output", str(out), "--filters", str(op),
                 "--subject", "nobody", "--subject", "alice"]) == 0
    errors = [row.error for row in spark.read.parquet(str(out / "filters")).collect()]
    assert any(e and "filter-unsupported" in e for e in errors)
    # options that need --filters, and --filters without subjects
    assert main(["run", "--rules", *rules, "--output", str(out), "--subject", "x"]) == 2
    assert main(["run", "--rules", *rules, "--output", str(out), "--filters", "x"]) == 2
    assert main(["run", "--rules", *rules, "--output", str(out), "--filters", "x",
                 "--subjects-from", "no_such"]) == 2


def _refused(r: grantlog.Reasoner, s: Any, o: Any) -> bool:
    try:
        r.filter(s, o)
    except grantlog.GrantlogError:
        return True
    return False


def test_simplifications_on_a_tree() -> None:
    """Roll-up and absorption (engine/answer/residual.py ``rollup``) keep the condition's meaning:
    every object of the tree is decided the same before and after."""
    from grantlog.engine.answer.conditions import compile_cond
    from grantlog.engine.answer.hierarchy import Hierarchy, rollup

    r = grantlog.Reasoner(grantlog.compile('import "prelude.gl".\n' + TREE, paths=[],
                                           filename="tree.gl"))
    both = ("or", (("under", "s1"), ("under", "s2")))
    cases = [
        # every child of c1 named, the resource a table: c1 (a catalog) is not admitted;
        # and c1 is m's only child
        (("and", (("type", "table"), both)), ("and", (("type", "table"), ("under", "m")))),
        (("and", (("type", "catalog"), both)), ("and", (("type", "catalog"), both))),
        (both, both),  # without the type, c1 itself would be: kept
        (("and", (("under", "m"), ("under", "s1"))), ("under", "s1")),
        (("and", (("or", (("under", "s1"), ("is", "t3"))), ("under", "s1"))), ("under", "s1")),
        (("and", (("under", "s1"), ("not", ("under", "m")))),
         ("and", (("under", "s1"), ("not", ("under", "m"))))),
    ]
    h = Hierarchy(r.view())
    nodes = sorted({v for row in r.rows("contains") for v in row})
    for cond, want in cases:
        got = rollup(cond, h)
        assert got == want, (cond, got)
        before, after = compile_cond(cond), compile_cond(got)
        for x in nodes:
            args = (x, h.above(x), h.types(x), h.parents(x))
            assert before(*args) == after(*args), (cond, x)


@pytest.mark.parametrize("model", ["gravitino", "cdap_entity"])
def test_list_pages_with_a_cursor(model: str) -> None:
    """``list(..., after=, limit=)``: the pages of a listing, each after the last value of the
    one before, put together are the listing (through the filter, and without one)."""
    r = grantlog.Reasoner(_program(model))
    subjects, ops, _ = _questions(r)
    paged = 0
    for i, (s, o) in enumerate(itertools.product(subjects, ops)):
        whole = r.list(s, o)
        for size in ((1, 2, 5)[i % 3],):  # each size on a third of the questions
            pages: list[Any] = []
            page = r.list(s, o, limit=size)
            while page:
                assert len(page) <= size and page.revision == whole.revision
                pages += page
                page = r.list(s, o, after=page[-1], limit=size)
            assert pages == list(whole), (s, o, size)
        paged += len(whole) > 2
        assert list(r.list(s, o, after=whole[-1] if whole else None)) == []
    assert paged > 0
    with pytest.raises(grantlog.GrantlogError):
        r.list(subjects[0], ops[0], limit=-1)


@pytest.mark.parametrize("model", MODELS)
@settings(max_examples=5, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_the_sql_on_generated_worlds(model: str, data: st.DataObject, pg_server: Any) -> None:
    """Over generated worlds, the SQL of every filter drawn, with both layouts, run in
    SQLite and in PostgreSQL returns exactly the catalog's objects ``list`` answers."""
    import psycopg

    r, subjects, ops, _ = _drawn(model, data, 3, 3)
    objects = _objects(r)
    ids = {x for x, *_ in objects}
    lite = sqlite3.connect(":memory:")
    lite.execute("CREATE TABLE objects (id TEXT, type TEXT, parent TEXT, path TEXT)")
    lite.executemany("INSERT INTO objects VALUES (?, ?, ?, ?)", objects)
    with psycopg.connect(pg_server.schema_url(), autocommit=True) as pg:
        pg.execute("CREATE TABLE objects (id TEXT, type TEXT, parent TEXT, path TEXT)")
        with pg.cursor() as cur:
            cur.executemany("INSERT INTO objects VALUES (%s, %s, %s, %s)", objects)
        for s, o in itertools.product(subjects, ops):
            try:
                f = r.filter(s, o)
            except grantlog.GrantlogError as err:
                assert err.diagnostics[0].code == "filter-unsupported"
                continue
            want = set(r.list(s, o)) & ids
            for lay in LAYOUTS:
                assert {row[0] for row in lite.execute(select_sql(f, lay, "sqlite"))} == want
                got = {row[0] for row in pg.execute(select_sql(f, lay, "postgres"))}  # type: ignore[call-overload]
                assert got == want, (s, o, lay, f.to_dict())
