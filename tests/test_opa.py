"""OPA's Data API (grantlog/service/opa/, POST /v1/data/...): request bodies as Trino's and
Apache Polaris's OPA plugins send them, replayed against a live `grantlog serve`, answered as
the plugins parse them; row filters and column masks executed in real SQLite and PostgreSQL.

The request bodies follow the plugins' sources:

* Trino, plugin/trino-opa/src/main/java/io/trino/plugin/opa/: ``OpaHttpClient`` posts
  ``{"input": OpaQueryInput}``; ``schema/OpaQueryInput`` is ``{context, action}``;
  ``schema/OpaQueryContext`` ``{identity: TrinoIdentity{user, groups}, softwareStack:
  {trinoVersion}}``; ``schema/OpaQueryInputAction`` ``{operation, resource | filterResources,
  targetResource, grantee}``; ``schema/OpaQueryInputResource`` ``{catalog: {name}, schema:
  TrinoSchema{catalogName, schemaName}, table: TrinoTable{catalogName, schemaName, tableName,
  columns}, column: TrinoColumn{catalogName, schemaName, tableName, columnName, columnType}}``
  (NON_NULL). Answers: ``schema/OpaQueryResult`` ``{decision_id, result: boolean}``,
  ``OpaBatchQueryResult`` ``{result: [index]}``, ``OpaRowFiltersQueryResult`` ``{result:
  [OpaViewExpression{expression, identity?}]}``, ``OpaColumnMaskQueryResult`` ``{result:
  OpaViewExpression | null}``, ``OpaBatchColumnMaskQueryResult`` ``{result: [{index,
  viewExpression}]}``. Operation names from ``OpaAccessControl`` / ``OpaBatchAccessControl``
  (``SelectFromColumns``, ``FilterTables``, ``GetRowFilters``, ``GetColumnMask``, ...).
* Polaris, extensions/auth/opa/src/main/java/org/apache/polaris/extension/auth/opa/
  ``OpaPolarisAuthorizer.buildOpaInputJson``: ``{"input": {actor: {principal, roles}, action:
  <PolarisAuthorizableOperation name>, resource: {targets: [{type, name, parents: [{type,
  name}]}], secondaries?}, context: {request_id}}}``; the answer is read as
  ``result.allow`` (``respNode.path("result").path("allow").asBoolean(false)``).

No Trino server can be installed from the package registries this project builds from (PyPI,
Debian, npm hold Trino's clients only), so no end-to-end test with a real Trino runs here.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from conftest import LONG
from grantlog.grammar.diagnostics import GrantlogError
from httpserver import serve, stop
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import grantlog
from grantlog.filters import apply_mask, mask_sql, row_filter_sql, strongest_mask
from grantlog.service.opa import Mapping

ROOT = Path(__file__).resolve().parent.parent
RULES = str(ROOT / "rules" / "gravitino_data.gl")
FACTS = str(ROOT / "examples" / "gravitino_data" / "facts.gl")
ORDERS = {"catalogName": "lakehouse", "schemaName": "sales", "tableName": "orders"}
CUSTOMERS = {"catalogName": "lakehouse", "schemaName": "sales", "tableName": "customers"}


def trino(user: str, operation: str, resource: dict[str, Any] | None = None,
          filter_resources: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """A Trino OPA plugin request body (see the module's docstring for the sources)."""
    action: dict[str, Any] = {"operation": operation}
    if resource is not None:
        action["resource"] = resource
    if filter_resources is not None:
        action["filterResources"] = filter_resources
    return {"input": {"context": {"identity": {"user": user, "groups": []},
                                  "softwareStack": {"trinoVersion": "476"}},
                      "action": action}}


def column(table: dict[str, str], name: str, type_: str = "varchar") -> dict[str, Any]:
    return {"column": table | {"columnName": name, "columnType": type_}}


def polaris(principal: str, action: str, *targets: dict[str, Any]) -> dict[str, Any]:
    """A Polaris OPA authorizer request body."""
    return {"input": {"actor": {"principal": principal, "roles": ["analyst"]},
                      "action": action, "resource": {"targets": list(targets)},
                      "context": {"request_id": "6f1c2a3e-0000-4000-8000-000000000001"}}}


def polaris_table(catalog: str, namespace: str, name: str) -> dict[str, Any]:
    return {"type": "TABLE_LIKE", "name": name,
            "parents": [{"type": "CATALOG", "name": catalog},
                        {"type": "NAMESPACE", "name": namespace}]}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    tmp = tmp_path_factory.mktemp("opa")
    log = tmp / "decisions.jsonl"
    proc, url = serve(tmp, RULES, FACTS, "--opa", "trino", "--opa", "polaris",
                      "--decision-log", str(log))
    program = grantlog.compile(paths=[RULES, FACTS])
    with httpx.Client(base_url=url, timeout=30) as client:
        yield {"client": client, "reasoner": grantlog.Reasoner(program), "log": log}
    stop(proc)


def post(server: dict[str, Any], path: str, body: dict[str, Any]) -> dict[str, Any]:
    got = server["client"].post(f"/v1/data/{path}", json=body)
    assert got.status_code == 200, got.text
    out: dict[str, Any] = got.json()
    return out


def test_trino_allow_as_the_plugin_parses_it(server: dict[str, Any]) -> None:
    r = server["reasoner"]
    cases = [("alice", "SelectFromColumns", {"table": ORDERS | {"columns": ["id", "region"]}},
              ("select_table", "m1.lakehouse.sales.orders")),
             ("dave", "SelectFromColumns", {"table": ORDERS}, ("select_table",
                                                                "m1.lakehouse.sales.orders")),
             ("alice", "DropTable", {"table": ORDERS}, ("drop_table",
                                                        "m1.lakehouse.sales.orders")),
             ("alice", "AccessCatalog", {"catalog": {"name": "lakehouse"}},
              ("load_catalog", "m1.lakehouse")),
             ("alice", "ShowTables", {"schema": {"catalogName": "lakehouse",
                                                 "schemaName": "sales"}},
              ("list_table", "m1.lakehouse.sales")),
             ("alice", "CreateTable", {"table": {"catalogName": "lakehouse", "schemaName":
                                                 "sales", "tableName": "new",
                                                 "properties": {}}},
              ("create_table", "m1.lakehouse.sales")),
             ("alice", "ExecuteQuery", None, ("load_metalake", "m1")),
             ("dave", "ExecuteQuery", None, ("load_metalake", "m1"))]
    seen = set()
    for user, op, res, (gop, gres) in cases:
        body = post(server, "trino/allow", trino(user, op, res))
        want = r.check(user, gop, gres).allowed
        seen.add(want)
        assert body["result"] is want, (user, op)
        assert isinstance(body["decision_id"], str)
        assert ("reason" in body) is (not want)
        if not want:
            assert f"{user} may not {gop} {gres}" in body["reason"]
    assert seen == {True, False}
    # the session property needs no decision; an impersonation is denied by the mapping
    assert post(server, "trino/allow", trino("dave", "SetSystemSessionProperty",
                                             {"systemSessionProperty": {"name": "x"}}))[
        "result"] is True
    body = post(server, "trino/allow", trino("alice", "ImpersonateUser", {"user": {"user": "b"}}))
    assert body["result"] is False and "denies" in body["reason"]


def test_trino_batch_answers_the_allowed_indexes(server: dict[str, Any]) -> None:
    tables = [{"table": ORDERS}, {"table": CUSTOMERS | {"tableName": "missing"}},
              {"table": CUSTOMERS}]
    assert post(server, "trino/batch", trino("alice", "FilterTables", None, tables))[
        "result"] == [0, 2]
    assert post(server, "trino/batch", trino("dave", "FilterTables", None, tables))[
        "result"] == []
    catalogs = [{"catalog": {"name": "lakehouse"}}, {"catalog": {"name": "system"}}]
    assert post(server, "trino/batch", trino("alice", "FilterCatalogs", None, catalogs))[
        "result"] == [0]


def test_trino_row_filters_and_masks(server: dict[str, Any]) -> None:
    body = post(server, "trino/rowFilters", trino("alice", "GetRowFilters", {"table": ORDERS}))
    assert body["result"] == [{"expression": "\"region\" = 'emea'"}]
    assert post(server, "trino/rowFilters", trino("bob", "GetRowFilters", {"table": ORDERS}))[
        "result"] == []  # READ_ALL_ROWS: no filter
    carol = post(server, "trino/rowFilters", trino("carol", "GetRowFilters", {"table": ORDERS}))
    assert carol["result"] == [{"expression": "FALSE"}]  # no region: no row
    one = post(server, "trino/columnMask", trino("alice", "GetColumnMask",
                                                 column(CUSTOMERS, "email")))
    assert one["result"] == {"expression": "'****'"}
    assert post(server, "trino/columnMask", trino("bob", "GetColumnMask",
                                                  column(CUSTOMERS, "email")))["result"] is None
    cols = [column(CUSTOMERS, "name"), column(CUSTOMERS, "email"), column(CUSTOMERS, "card"),
            column(CUSTOMERS, "card", "integer")]
    batch = post(server, "trino/batchColumnMasks", trino("alice", "GetColumnMask", None, cols))
    assert [x["index"] for x in batch["result"]] == [1, 2, 3]
    assert batch["result"][0]["viewExpression"] == {"expression": "'****'"}
    assert "SUBSTR(\"card\", -4)" in batch["result"][1]["viewExpression"]["expression"]
    assert batch["result"][2]["viewExpression"] == {"expression": "NULL"}


def test_polaris_allow_as_the_authorizer_reads_it(server: dict[str, Any]) -> None:
    r = server["reasoner"]
    orders = polaris_table("lakehouse", "sales", "orders")
    for user, action, gop in [("alice", "LOAD_TABLE", "load_table"),
                              ("dave", "LOAD_TABLE", "load_table"),
                              ("alice", "DROP_TABLE_WITH_PURGE", "drop_table"),
                              ("bob", "LOAD_TABLE_WITH_READ_DELEGATION", "select_table")]:
        body = post(server, "polaris", polaris(user, action, orders))
        want = r.check(user, gop, "m1.lakehouse.sales.orders").allowed
        assert body["result"]["allow"] is want
        assert ("reason" in body["result"]) is (not want)
        assert post(server, "polaris/allow", polaris(user, action, orders))["result"] is want
    # several targets: all must be allowed; the root is the metalake
    both = polaris("alice", "LOAD_TABLE", orders, polaris_table("lakehouse", "sales", "nope"))
    assert post(server, "polaris", both)["result"]["allow"] is False
    root = polaris("alice", "LIST_CATALOGS", {"type": "ROOT", "name": "root"})
    assert post(server, "polaris", root)["result"]["allow"] is r.check(
        "alice", "list_catalog", "m1").allowed


def test_bad_requests_and_unmapped_input(server: dict[str, Any]) -> None:
    c = server["client"]
    got = c.post("/v1/data/nowhere/allow", json={"input": {}})
    assert got.status_code == 404 and "trino/allow" in got.json()["error"]["message"]
    got = c.post("/v1/data/trino/allow", json={"inputs": {}})
    assert got.status_code == 422 and got.json()["error"]["code"] == "bad-request"
    body = post(server, "trino/allow", trino("alice", "DoSomethingNew", {"table": ORDERS}))
    assert body["result"] is False and "does not map the operation" in body["reason"]
    body = post(server, "trino/allow", {"input": {"action": {"operation": "SelectFromColumns"}}})
    assert body["result"] is False and "no subject" in body["reason"]
    body = post(server, "trino/rowFilters", trino("alice", "GetRowFilters", {"catalog": {}}))
    assert body["result"] == [{"expression": "FALSE"}]  # fail closed: no row


def test_every_request_is_in_the_decision_log(server: dict[str, Any]) -> None:
    post(server, "trino/allow", trino("alice", "SelectFromColumns", {"table": ORDERS}))
    post(server, "trino/rowFilters", trino("alice", "GetRowFilters", {"table": ORDERS}))
    lines = [json.loads(x) for x in server["log"].read_text().splitlines()]
    sel = [e for e in lines if e["endpoint"] == "opa:trino/allow"
           and e["input"].get("operation") == "select_table"]
    assert sel and sel[-1]["input"]["subject"] == "alice" and sel[-1]["result"]["allowed"]
    rf = [e for e in lines if e["endpoint"] == "opa:trino/rowFilters"]
    assert rf and rf[-1]["input"]["condition"] == {"cell": ["region", "emea"]}


def assert_refused(tmp_path: Path, text: str, says: str) -> None:
    """The mapping file ``text`` is refused (``bad-mapping``), saying ``says``."""
    f = tmp_path / "m.toml"
    f.write_text(text)
    with pytest.raises(GrantlogError) as err:
        Mapping.load(str(f))
    assert err.value.diagnostics[0].code == "bad-mapping"
    assert says in err.value.diagnostics[0].message


def test_bad_mappings_are_refused_with_the_reason(tmp_path: Path) -> None:
    for text, says in [("name = 1\n[input]\nsubject = 'a'\n", "operation"),
                       ("[input]\nsubject='a'\noperation='b'\n[endpoints]\nx = 'nope'\n",
                        "endpoints"),
                       ("[input]\nsubject='a['\noperation='b'\n", "JMESPath"),
                       ("[input]\nsubject='a'\noperation='b'\n[endpoints]\nx='allow'\n"
                        "[[resource]]\nwhen='t'\nid=['{nowhere}']\n", "[vars]")]:
        assert_refused(tmp_path, text, says)
    with pytest.raises(GrantlogError, match="shipped: polaris, trino"):
        Mapping.load("oracle")


# ---------------------------------------------------------------------------------------------
# row filters and masks over generated worlds, in real databases

COLUMNS = ("region", "dept", "email", "card")
VALUES = ("emea", "amer", "apac", "fin", "ops", "a1234567", "bob@x.io")


@st.composite
def worlds(draw: st.DrawFn) -> dict[str, Any]:
    users = ["u0", "u1", "u2"]
    facts: dict[str, list[tuple[str, ...]]] = {
        "user_attribute": draw(st.lists(st.tuples(st.sampled_from(users),
                                                  st.sampled_from(["region", "dept"]),
                                                  st.sampled_from(VALUES[:5])),
                                        max_size=6)),
        "row_policy": [("m1.c1.s1.t1", c, a) for c, a in draw(st.lists(st.sampled_from(
            [("region", "region"), ("dept", "dept"), ("region", "dept")]), max_size=2,
            unique=True))],
        "column_tag": [("m1.c1.s1.t1", c, t) for c, t in draw(st.lists(st.tuples(
            st.sampled_from(COLUMNS), st.sampled_from(["pii", "payment", "secret"])),
            max_size=3))],
        "mask_policy": [("pii", "redact"), ("payment", "last4"), ("secret", "nullify")],
        "privilege": [(f"r_{u}", p, o, c) for u, p, o, c in draw(st.lists(st.tuples(
            st.sampled_from(users), st.sampled_from(["select_table", "read_all_rows",
                                                     "unmask"]),
            st.sampled_from(["m1.c1", "m1.c1.s1", "m1.c1.s1.t1"]),
            st.sampled_from(["allow", "allow", "deny"])), max_size=6))],
        "owner": draw(st.lists(st.tuples(st.sampled_from(["m1.c1.s1", "m1.c1.s1.t1"]),
                                         st.sampled_from(users)), max_size=1)),
    }
    rows = draw(st.lists(st.fixed_dictionaries({c: st.sampled_from(VALUES) for c in COLUMNS}),
                         min_size=1, max_size=8))
    return {"facts": facts, "rows": rows, "users": users}


def _reasoner(world: dict[str, Any]) -> grantlog.Reasoner:
    r = grantlog.Reasoner(_program())
    with r.transaction() as tx:
        tx.insert("entity", [("m1", "metalake"), ("m1.c1", "catalog"), ("m1.c1.s1", "schema"),
                             ("m1.c1.s1.t1", "table")]
                  + [(f"r_{u}", "role") for u in world["users"]])
        tx.insert("contains", [("m1", "m1.c1"), ("m1.c1", "m1.c1.s1"),
                               ("m1.c1.s1", "m1.c1.s1.t1")])
        tx.insert("metalake_user", [(u, "m1") for u in world["users"]])
        tx.insert("role_of", [(u, f"r_{u}") for u in world["users"]])
        # everyone may load the catalog and the schema: SELECT_TABLE decides
        tx.insert("privilege", [(f"r_{u}", p, o, "allow") for u in world["users"]
                                for p, o in (("use_catalog", "m1.c1"),
                                             ("use_schema", "m1.c1.s1"))])
        for rel, rows in world["facts"].items():
            tx.insert(rel, rows)
    return r


_PROGRAM: list[Any] = []


def _program() -> Any:
    if not _PROGRAM:
        _PROGRAM.append(grantlog.compile(paths=[RULES]))
    return _PROGRAM[0]


@settings(max_examples=40 if LONG else 12, deadline=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(world=worlds())
def test_row_filters_and_masks_in_sqlite_and_postgres(world: dict[str, Any],
                                                      pg_server: Any) -> None:
    import psycopg

    r = _reasoner(world)
    table = "m1.c1.s1.t1"
    # the oracle: the same rules with the rows as facts
    oracle = _reasoner(world)
    with oracle.transaction() as tx:
        tx.insert("row", [(table, f"row{i}") for i in range(len(world["rows"]))])
        tx.insert("cell", [(f"row{i}", c, v) for i, row in enumerate(world["rows"])
                           for c, v in row.items()])
    lite = sqlite3.connect(":memory:")
    with psycopg.connect(pg_server.schema_url(), autocommit=True) as pg:
        for db in (lite, pg):
            db.execute("DROP TABLE IF EXISTS t1")
            db.execute("CREATE TABLE t1 (rid integer, region text, dept text, email text, "
                       "card text)")
        for i, row in enumerate(world["rows"]):
            vals = (i, *(row[c] for c in COLUMNS))
            lite.execute("INSERT INTO t1 VALUES (?, ?, ?, ?, ?)", vals)
            pg.execute("INSERT INTO t1 VALUES (%s, %s, %s, %s, %s)", vals)
        for u in world["users"]:
            want = sorted(int(b["R"][3:]) for b in oracle.query(
                f'row_visible({u}, "{table}", R)'))
            f = r.row_filter(u, table)
            assert [i for i, row in enumerate(world["rows"]) if f.holds(row)] == want
            masks = {}
            for c in COLUMNS:
                m = strongest_mask(b["M"] for b in r.query(
                    f'column_mask({u}, "{table}", {c}, M)'))
                masks[c] = m
            want_values = [tuple(apply_mask(masks[c], row[c]) if masks[c] else row[c]
                                 for c in COLUMNS) for i, row in enumerate(world["rows"])
                           if i in want]
            for db, dialect in ((lite, "sqlite"), (pg, "postgres")):
                cols = ", ".join(mask_sql(masks[c], c, dialect) if masks[c] else f'"{c}"'
                                 for c in COLUMNS)
                sql = f"SELECT rid, {cols} FROM t1 WHERE {row_filter_sql(f, dialect)} " \
                      "ORDER BY rid"
                got = db.execute(sql).fetchall()
                assert [g[0] for g in got] == want, (dialect, sql)
                assert [tuple(g[1:]) for g in got] == want_values, (dialect, sql)
