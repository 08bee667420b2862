"""Trino's and Polaris's OPA requests that the first mappings answered wrong (issue 24, items
11-14), replayed against a live `grantlog serve` with request bodies built as the plugins' own
sources build them, and read back as the plugins read the answers.

Sources (the shapes below follow them field by field):

* Trino, plugin/trino-opa/src/main/java/io/trino/plugin/opa/:
  - ``OpaBatchAccessControl.filterColumns``: ONE request per table whose ``filterResources``
    holds ONE item, ``OpaQueryInputResource{table: TrinoTable{catalogName, schemaName,
    tableName, columns}}``; ``OpaHttpClient.parallelBatchFilterFromOpa`` reads the answer's
    ``result`` indexes as positions in that column list (``.map(orderedItems::get)``).
  - ``OpaAccessControl.checkCanRenameTable`` / ``checkCanRenameSchema`` send ``resource`` and
    ``targetResource`` (``OpaHighLevelClient.queryOpaWithSourceAndTargetResource``).
  - ``OpaAccessControl.canExecuteFunction``, ``canCreateViewWithExecuteFunction``,
    ``checkCanExecuteProcedure``, ``checkCanCreateFunction``, ``checkCanDropFunction``,
    ``checkCanShowCreateFunction`` and ``OpaBatchAccessControl.filterFunctions`` send
    ``{function: TrinoFunction}``; ``schema/TrinoFunction`` is ``{@JsonUnwrapped TrinoSchema
    catalogSchema, functionName}``, so ``{"catalogName", "schemaName", "functionName"}``.
  - ``checkCanSetCatalogSessionProperty`` sends ``{catalogSessionProperty:
    TrinoCatalogSessionProperty{catalogName, propertyName}}``.
  - ``schema/TrinoIdentity`` is ``{user, groups}`` in ``context.identity``.
  - core/trino-main/.../metadata/FunctionResolver.java ``canExecuteFunction`` returns true for
    ``isBuiltinFunctionName`` (catalog ``system``, schema ``builtin``) without asking the access
    control: Trino never asks about built-in functions.
* Polaris, extensions/auth/opa/src/main/java/org/apache/polaris/extension/auth/opa/
  ``OpaPolarisAuthorizer``: ``buildOpaAuthorizationInput`` -> ``{actor: {principal, roles},
  action, resource: {targets, secondaries}, context: {request_id, realm}}`` (model/Resource:
  ``targets``/``secondaries`` are ``@JsonInclude(NON_EMPTY)``, left out when empty;
  model/ResourceEntity: ``{type, name, parents}``, ``parents`` NON_NULL, so ``[]`` for a
  catalog). ``buildResourceEntity(PolarisResolvedPathWrapper)``: the leaf and every entity
  before it on the resolved path as ``parents`` (the root container's path is [ROOT]; a
  catalog's may start with it); ``buildResourceEntity(PolarisSecurable)``: the path segments,
  never ROOT (polaris-core .../auth/PolarisSecurable.java); runtime/service
  .../catalog/common/PolarisSecurableMapper.java: one NAMESPACE segment per namespace level.
  ``CatalogHandler.authorizeRenameTableLikeOperationOrThrow``: target = the source table,
  secondary = the destination namespace (resolved path) or table (securable).
  ``PolarisAdminService.authorizeBasicRootOperationOrThrow`` (CREATE_CATALOG, LIST_CATALOGS):
  a ``TargetlessAuthorizationIntent``, or the root container as target.
  The first release (commit 577b32a, "Implement OpaPolarisAuthorizer") left ``parents`` out
  when empty.
"""

from __future__ import annotations

import tomllib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from httpserver import serve, stop
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_opa import assert_refused

import grantlog
from grantlog.service.opa import HERE, KINDS, Mapping

ROOT = Path(__file__).resolve().parent.parent
RULES = str(ROOT / "rules" / "gravitino_data.gl")

# m1 > lakehouse (owner olivia) > sales > orders, customers; > udfs (functions); > eng.raw (a
# two-level Polaris namespace, one Gravitino schema) > events; m1 > finance > ledger > entries,
# where alice has no rights. alice (analyst, writer) reads sales and may create and alter
# tables there; mia owns m1; gina is in group eng, which holds the analyst role; dave is a
# user of m1 with no role; erin is not a user of m1.
FACTS = """
entity(m1, metalake).
entity("m1.lakehouse", catalog).
entity("m1.lakehouse.sales", schema).
entity("m1.lakehouse.sales.orders", table).
entity("m1.lakehouse.sales.customers", table).
entity("m1.lakehouse.udfs", schema).
entity("m1.lakehouse.eng.raw", schema).
entity("m1.lakehouse.eng.raw.events", table).
entity("m1.finance", catalog).
entity("m1.finance.ledger", schema).
entity("m1.finance.ledger.entries", table).
contains(m1, "m1.lakehouse").
contains(m1, "m1.finance").
contains("m1.lakehouse", "m1.lakehouse.sales").
contains("m1.lakehouse", "m1.lakehouse.udfs").
contains("m1.lakehouse", "m1.lakehouse.eng.raw").
contains("m1.lakehouse.sales", "m1.lakehouse.sales.orders").
contains("m1.lakehouse.sales", "m1.lakehouse.sales.customers").
contains("m1.lakehouse.eng.raw", "m1.lakehouse.eng.raw.events").
contains("m1.finance", "m1.finance.ledger").
contains("m1.finance.ledger", "m1.finance.ledger.entries").
entity(analyst, role).
entity(writer, role).
metalake_user(alice, m1).
metalake_user(olivia, m1).
metalake_user(dave, m1).
metalake_user(gina, m1).
metalake_user(hank, m1).
metalake_user(mia, m1).
owner(m1, mia).
owner("m1.lakehouse", olivia).
role_of(alice, analyst).
role_of(alice, writer).
member(gina, eng).
role_of(eng, analyst).
privilege(analyst, use_catalog, "m1.lakehouse", allow).
privilege(analyst, use_schema, "m1.lakehouse.sales", allow).
privilege(analyst, use_schema, "m1.lakehouse.udfs", allow).
privilege(analyst, use_schema, "m1.lakehouse.eng.raw", allow).
privilege(analyst, select_table, "m1.lakehouse", allow).
privilege(writer, create_table, "m1.lakehouse.sales", allow).
privilege(writer, modify_table, "m1.lakehouse.sales", allow).
"""

ORDERS = {"catalogName": "lakehouse", "schemaName": "sales", "tableName": "orders"}
ENTRIES = {"catalogName": "finance", "schemaName": "ledger", "tableName": "entries"}


# -- request bodies ----------------------------------------------------------------------------

def trino(user: str, operation: str, resource: dict[str, Any] | None = None,
          filter_resources: list[dict[str, Any]] | None = None,
          target: dict[str, Any] | None = None, groups: list[str] | None = None,
          ) -> dict[str, Any]:
    """``OpaHttpClient`` posts ``{"input": OpaQueryInput{context, action}}``;
    ``OpaQueryInputAction`` is NON_NULL ``{operation, resource, filterResources,
    targetResource}``."""
    action: dict[str, Any] = {"operation": operation}
    if resource is not None:
        action["resource"] = resource
    if filter_resources is not None:
        action["filterResources"] = filter_resources
    if target is not None:
        action["targetResource"] = target
    return {"input": {"context": {"identity": {"user": user, "groups": groups or []},
                                  "softwareStack": {"trinoVersion": "476"}},
                      "action": action}}


def function(catalog: str, schema: str, name: str) -> dict[str, Any]:
    """``OpaQueryInputResource{function: TrinoFunction.fromTrinoFunction(...)}``."""
    return {"function": {"catalogName": catalog, "schemaName": schema, "functionName": name}}


def polaris(principal: str, action: str, targets: list[dict[str, Any]] | None = None,
            secondaries: list[dict[str, Any]] | None = None,
            roles: list[str] | None = None) -> dict[str, Any]:
    """``OpaPolarisAuthorizer.buildOpaAuthorizationInput`` wrapped in ``OpaRequest``; empty
    ``targets`` / ``secondaries`` are left out (NON_EMPTY)."""
    resource: dict[str, Any] = {}
    if targets:
        resource["targets"] = targets
    if secondaries:
        resource["secondaries"] = secondaries
    return {"input": {"actor": {"principal": principal, "roles": roles or []},
                      "action": action, "resource": resource,
                      "context": {"request_id": "6f1c2a3e-0000-4000-8000-000000000001",
                                  "realm": "default-realm"}}}


def entity(*path: tuple[str, str]) -> dict[str, Any]:
    """``buildResourceEntity``: the last (type, name) of the path is the leaf, the ones before
    it its ``parents`` (in order, ``[]`` when none)."""
    *parents, (type_, name) = path
    return {"type": type_, "name": name,
            "parents": [{"type": t, "name": n} for t, n in parents]}


def table_like(catalog: str, namespace: list[str], name: str) -> dict[str, Any]:
    """``PolarisSecurableMapper.tableLike``: CATALOG, one NAMESPACE per level, TABLE_LIKE."""
    return entity(("CATALOG", catalog), *(("NAMESPACE", lv) for lv in namespace),
                  ("TABLE_LIKE", name))


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    tmp = tmp_path_factory.mktemp("opa_platforms")
    facts = tmp / "facts.gl"
    facts.write_text(FACTS)
    # the shipped mappings, each also served under a second name with [groups] on
    trinog = tmp / "trinog.toml"
    trinog.write_text((HERE / "trino.toml").read_text().replace('"trino/', '"trinog/')
                      .replace('name = "trino"', 'name = "trinog"')
                      + '\n[groups]\ninput = "context.identity.groups"\nid = "{name}"\n'
                        'store = "member({subject}, G)"\ncounts = "role_of({group}, _)"\n')
    polarisg = tmp / "polarisg.toml"
    polarisg.write_text((HERE / "polaris.toml").read_text().replace('"polaris', '"polarisg')
                        .replace('name = "polaris"', 'name = "polarisg"')
                        + '\n[groups]\ninput = "actor.roles"\nid = "{name}"\n'
                          'store = "holds({subject}, R)"\n'
                          'counts = "privilege({group}, _, _, _)"\n')
    proc, url = serve(tmp, RULES, str(facts), "--opa", "trino", "--opa", "polaris",
                      "--opa", str(trinog), "--opa", str(polarisg))
    program = grantlog.compile(paths=[RULES, str(facts)])
    with httpx.Client(base_url=url, timeout=30) as client:
        yield {"client": client, "reasoner": grantlog.Reasoner(program)}
    stop(proc)


def post(server: dict[str, Any], path: str, body: dict[str, Any]) -> Any:
    got = server["client"].post(f"/v1/data/{path}", json=body)
    assert got.status_code == 200, got.text
    return got.json()


def allow(server: dict[str, Any], body: dict[str, Any], path: str = "trino/allow") -> bool:
    result = post(server, path, body)["result"]
    if isinstance(result, dict):  # Polaris reads result.allow
        result = result["allow"]
    assert isinstance(result, bool)
    return result


def check(server: dict[str, Any], user: str, operation: str, resource: str) -> bool:
    return bool(server["reasoner"].check(user, operation, resource).allowed)


# -- 11. FilterColumns: the indexes are positions in the one item's column list ----------------

def test_trino_filter_columns_answers_positions_in_the_column_list(
        server: dict[str, Any]) -> None:
    columns = ["id", "region", "amount"]
    body = trino("alice", "FilterColumns", None, [{"table": ORDERS | {"columns": columns}}])
    got = post(server, "trino/batch", body)["result"]
    # the plugin maps each index through the column list (OpaHttpClient: orderedItems::get)
    assert [columns[i] for i in got] == columns
    assert check(server, "alice", "load_table", "m1.lakehouse.sales.orders")
    # a table the user may not load: no column
    body = trino("alice", "FilterColumns", None, [{"table": ENTRIES | {"columns": ["x", "y"]}}])
    assert post(server, "trino/batch", body)["result"] == []
    body = trino("dave", "FilterColumns", None, [{"table": ORDERS | {"columns": columns}}])
    assert post(server, "trino/batch", body)["result"] == []
    # the unbatched plugin (OpaAccessControl.filterColumns) asks one column at a time
    one = trino("alice", "FilterColumns", {"table": ORDERS | {"columns": ["region"]}})
    assert allow(server, one) is True


# -- 12. Polaris catalog-level targets ---------------------------------------------------------

def test_polaris_catalog_targets_are_decided_on_the_catalog(server: dict[str, Any]) -> None:
    catalog_forms = [entity(("CATALOG", "lakehouse")),                    # PolarisSecurable
                     entity(("ROOT", "root"), ("CATALOG", "lakehouse")),  # resolved path
                     {"type": "CATALOG", "name": "lakehouse"}]            # first release
    for target in catalog_forms:
        for action, op in [("GET_CATALOG", "load_catalog"), ("LIST_NAMESPACES", "list_schema"),
                           ("CREATE_NAMESPACE", "create_schema"),
                           ("UPDATE_CATALOG", "alter_catalog")]:
            for user in ("olivia", "alice", "dave"):
                want = check(server, user, op, "m1.lakehouse")
                assert allow(server, polaris(user, action, [target]), "polaris") is want, (
                    target, action, user)
    # the catalog's owner gets it (the defect: denied); alice may use it, dave may not
    get = polaris("olivia", "GET_CATALOG", [entity(("CATALOG", "lakehouse"))])
    assert allow(server, get, "polaris") is True
    assert allow(server, polaris("alice", "GET_CATALOG", [entity(("CATALOG", "lakehouse"))]),
                 "polaris") is True
    assert allow(server, polaris("dave", "GET_CATALOG", [entity(("CATALOG", "lakehouse"))]),
                 "polaris") is False
    # CREATE_CATALOG and LIST_CATALOGS: targetless, or the root container as target
    for targets in (None, [entity(("ROOT", "root"))]):
        for user in ("mia", "olivia", "dave", "erin"):
            assert allow(server, polaris(user, "LIST_CATALOGS", targets), "polaris") is check(
                server, user, "list_catalog", "m1")
            assert allow(server, polaris(user, "CREATE_CATALOG", targets), "polaris") is check(
                server, user, "create_catalog", "m1")
    assert check(server, "mia", "create_catalog", "m1")
    assert not check(server, "olivia", "create_catalog", "m1")  # owns a catalog, not m1
    # a namespace under the catalog, in both forms
    sales = [entity(("CATALOG", "lakehouse"), ("NAMESPACE", "sales")),
             entity(("ROOT", "root"), ("CATALOG", "lakehouse"), ("NAMESPACE", "sales"))]
    for target in sales:
        assert allow(server, polaris("alice", "LOAD_NAMESPACE_METADATA", [target]),
                     "polaris") is True
        assert allow(server, polaris("dave", "LOAD_NAMESPACE_METADATA", [target]),
                     "polaris") is False


# -- 13. secondaries are decided too -----------------------------------------------------------

def test_polaris_rename_decides_the_destination(server: dict[str, Any]) -> None:
    src = table_like("lakehouse", ["sales"], "orders")
    # CatalogHandler: the destination's namespace (resolved path) or the table (securable)
    inside = [entity(("CATALOG", "lakehouse"), ("NAMESPACE", "sales")),
              table_like("lakehouse", ["sales"], "orders_v2")]
    outside = [entity(("CATALOG", "finance"), ("NAMESPACE", "ledger")),
               table_like("finance", ["ledger"], "orders")]
    assert check(server, "alice", "alter_table", "m1.lakehouse.sales.orders")
    assert check(server, "alice", "create_table", "m1.lakehouse.sales")
    assert not check(server, "alice", "create_table", "m1.finance.ledger")
    for dst in inside:
        assert allow(server, polaris("alice", "RENAME_TABLE", [src], [dst]), "polaris") is True
    for dst in outside:
        body = post(server, "polaris", polaris("alice", "RENAME_TABLE", [src], [dst]))
        assert body["result"]["allow"] is False, dst
        assert "create_table m1.finance.ledger" in body["result"]["reason"]
    # an operation whose secondaries the mapping does not decide is denied, saying so
    role = entity(("CATALOG", "lakehouse"), ("CATALOG_ROLE", "readers"))
    body = post(server, "polaris", polaris("olivia", "LOAD_TABLE", [src], [role]))
    assert body["result"]["allow"] is False and "secondar" in body["result"]["reason"]


def test_trino_rename_decides_the_target_resource(server: dict[str, Any]) -> None:
    src = {"table": ORDERS}
    ok = {"table": ORDERS | {"tableName": "orders_v2"}}
    away = {"table": ENTRIES | {"tableName": "orders"}}
    assert allow(server, trino("alice", "RenameTable", src, target=ok)) is True
    body = post(server, "trino/allow", trino("alice", "RenameTable", src, target=away))
    assert body["result"] is False and "create_table m1.finance.ledger" in body["reason"]
    schema = {"schema": {"catalogName": "lakehouse", "schemaName": "sales"}}
    renamed = {"schema": {"catalogName": "lakehouse", "schemaName": "sales2"}}
    assert allow(server, trino("olivia", "RenameSchema", schema, target=renamed)) is True
    assert allow(server, trino("alice", "RenameSchema", schema, target=renamed)) is False


# -- 14. functions, procedures, the catalog session property -----------------------------------

def test_trino_functions_and_procedures(server: dict[str, Any]) -> None:
    builtin = function("system", "builtin", "abs")
    udf = function("lakehouse", "udfs", "mask_email")
    passthrough = function("lakehouse", "system", "query")
    # built-in functions: whoever may run queries (Trino itself never asks)
    for user in ("alice", "dave", "erin"):
        want = check(server, user, "load_metalake", "m1")
        for op in ("ExecuteFunction", "CreateViewWithExecuteFunction", "ShowCreateFunction"):
            assert allow(server, trino(user, op, builtin)) is want, (user, op)
    # a function of a schema: who may load the schema
    for user in ("alice", "dave", "olivia"):
        want = check(server, user, "load_schema", "m1.lakehouse.udfs")
        assert allow(server, trino(user, "ExecuteFunction", udf)) is want, user
    # a connector's own functions (schema `system`: pass-through queries): the catalog's owners
    for user in ("alice", "olivia"):
        want = check(server, user, "alter_catalog", "m1.lakehouse")
        assert allow(server, trino(user, "ExecuteFunction", passthrough)) is want, user
    assert allow(server, trino("olivia", "ExecuteFunction", passthrough)) is True
    assert allow(server, trino("alice", "ExecuteFunction", passthrough)) is False
    # FilterFunctions (OpaBatchAccessControl.filterFunctions): the indexes of those allowed
    listed = [udf, builtin, passthrough, function("finance", "ledger", "f")]
    assert post(server, "trino/batch", trino("alice", "FilterFunctions", None, listed))[
        "result"] == [0, 1]
    # procedures change the catalog: its owners
    proc = function("lakehouse", "system", "rollback_to_snapshot")
    assert allow(server, trino("olivia", "ExecuteProcedure", proc)) is True
    assert allow(server, trino("alice", "ExecuteProcedure", proc)) is False
    # creating and dropping a function changes its schema: its owners
    for op in ("CreateFunction", "DropFunction"):
        assert allow(server, trino("olivia", op, udf)) is True
        assert allow(server, trino("alice", op, udf)) is False
    # ALTER TABLE ... EXECUTE sends the table and the procedure's name: decided on the table
    tp = trino("alice", "ExecuteTableProcedure", {"table": ORDERS, "function":
                                                  {"functionName": "optimize"}})
    assert allow(server, tp) is check(server, "alice", "modify_table",
                                      "m1.lakehouse.sales.orders")
    # SET SESSION lakehouse.x: who may use the catalog
    prop = {"catalogSessionProperty": {"catalogName": "lakehouse", "propertyName": "x"}}
    assert allow(server, trino("alice", "SetCatalogSessionProperty", prop)) is True
    assert allow(server, trino("dave", "SetCatalogSessionProperty", prop)) is False


def test_polaris_multi_level_namespaces(server: dict[str, Any]) -> None:
    events = table_like("lakehouse", ["eng", "raw"], "events")
    assert allow(server, polaris("alice", "LOAD_TABLE", [events]), "polaris") is check(
        server, "alice", "load_table", "m1.lakehouse.eng.raw.events") is True
    assert allow(server, polaris("dave", "LOAD_TABLE", [events]), "polaris") is False
    raw = entity(("CATALOG", "lakehouse"), ("NAMESPACE", "eng"), ("NAMESPACE", "raw"))
    assert allow(server, polaris("alice", "LOAD_NAMESPACE_METADATA", [raw]), "polaris") is True
    # listing or creating under a namespace: the catalog's condition and the parent loadable
    assert allow(server, polaris("alice", "LIST_NAMESPACES", [raw]), "polaris") is True
    assert allow(server, polaris("dave", "LIST_NAMESPACES", [raw]), "polaris") is False
    assert allow(server, polaris("olivia", "CREATE_NAMESPACE", [raw]), "polaris") is True
    assert allow(server, polaris("alice", "CREATE_NAMESPACE", [raw]), "polaris") is False
    # a level holding the separator would make two namespaces one id: denied, saying so
    dotted = table_like("lakehouse", ["eng.raw"], "events")
    body = post(server, "polaris", polaris("alice", "LOAD_TABLE", [dotted]))
    assert body["result"]["allow"] is False and "separator" in body["result"]["reason"]
    body = post(server, "trino/allow", trino("alice", "SelectFromColumns", {"table": ORDERS | {
        "tableName": "orders.x"}}))
    assert body["result"] is False and "separator" in body["reason"]


def test_groups_and_roles_when_the_mapping_says_so(server: dict[str, Any]) -> None:
    sel = {"table": ORDERS | {"columns": ["id"]}}
    # the shipped mappings leave the platform's groups aside: the store decides
    assert allow(server, trino("gina", "SelectFromColumns", sel, groups=[])) is True
    assert allow(server, trino("hank", "SelectFromColumns", sel, groups=["eng"])) is False
    # with [groups]: the platform's groups must agree with the store's on the groups that
    # hold a role; then the store decides
    assert allow(server, trino("gina", "SelectFromColumns", sel, groups=["eng", "staff"]),
                 "trinog/allow") is True
    for user, groups, says in [("gina", [], "only the store: eng"),
                               ("hank", ["eng"], "only the platform: eng")]:
        body = post(server, "trinog/allow", trino(user, "SelectFromColumns", sel,
                                                    groups=groups))
        assert body["result"] is False and says in body["reason"], body
    # a disagreement leaves nothing visible: batches empty, rows filtered out, columns masked
    batch = trino("hank", "FilterTables", None, [{"table": ORDERS}], groups=["eng"])
    assert post(server, "trinog/batch", batch)["result"] == []
    rows = trino("gina", "GetRowFilters", {"table": ORDERS}, groups=[])
    assert post(server, "trinog/rowFilters", rows)["result"] == [{"expression": "FALSE"}]
    # Polaris: actor.roles are the principal roles activated for the request
    orders = table_like("lakehouse", ["sales"], "orders")
    assert allow(server, polaris("alice", "LOAD_TABLE", [orders], roles=["analyst", "writer"]),
                 "polarisg") is True
    body = post(server, "polarisg", polaris("alice", "LOAD_TABLE", [orders], roles=["analyst"]))
    assert body["result"]["allow"] is False and "only the store: writer" in body[
        "result"]["reason"]
    assert allow(server, polaris("alice", "LOAD_TABLE", [orders], roles=["analyst"]),
                 "polaris") is True  # the shipped mapping: roles aside


# -- the mapping language's new parts are checked when the mapping loads -----------------------

BASE = "[input]\nsubject='s'\noperation='o'\n[endpoints]\nx='allow'\n"


@pytest.mark.parametrize("text, says", [
    (BASE + "[operations]\nA=[]\n", "operations.A"),
    (BASE + "[operations]\nA={operation='x', id=['a'], on=['b']}\n", "both"),
    (BASE + "[operations]\nA={operation='x', nope=1}\n", "nope"),
    (BASE + "[operations]\nA=[{when='a[', operation='x'}]\n", "JMESPath"),
    (BASE + "[operations]\nA={allow=true, on=['a']}\n", "allow"),
    (BASE + "[secondaries]\nA=1\n", "secondaries.A"),
    (BASE + "[groups]\ninput='g'\n", "[groups]"),
    (BASE + "[groups]\ninput='g'\nid='{nope}'\nstore='m({subject}, G)'\ncounts='r({group})'\n",
     "{nope}"),
    (BASE + "[groups]\ninput='g'\nid='{name}'\nstore='m(G)'\ncounts='r({group})'\n",
     "{subject}"),
])
def test_bad_mappings_name_the_new_keys(tmp_path: Path, text: str, says: str) -> None:
    assert_refused(tmp_path, text, says)


def test_shipped_mappings_name_only_operations_the_model_has() -> None:
    """Every operation an entry of a shipped mapping decides is one of the Gravitino model's
    (an unknown one would deny without saying why)."""
    program = grantlog.compile(paths=[RULES])
    ops = {row[0] for row in grantlog.Reasoner(program).rows("api")}

    def used(entries: list[Any]) -> set[str]:
        out = set()
        for e in entries:
            if e.operation is not None:
                out.add(e.operation)
            out |= used(e.also)
        return out

    for name in ("trino", "polaris"):
        m = Mapping.load(name)
        named = set().union(*(used(c) for c in [*m.ops.values(), *m.secondaries.values()]))
        assert named and named <= ops, (name, named - ops)


# -- any input: an answer in the plugin's shape, never an exception ----------------------------

NAMES = st.sampled_from(["lakehouse", "sales", "orders", "system", "builtin", "eng.raw", "",
                         "ROOT", "CATALOG", "NAMESPACE", "TABLE_LIKE", "alice", "eng"])
JSON = st.recursive(st.none() | st.booleans() | st.integers(-3, 3) | NAMES,
                    lambda inner: st.lists(inner, max_size=3)
                    | st.dictionaries(st.sampled_from(
                        ["table", "catalogName", "schemaName", "tableName", "columns", "function",
                         "functionName", "catalog", "name", "type", "parents", "targets",
                         "secondaries", "catalogSessionProperty", "column", "columnName"]),
                        inner, max_size=4), max_leaves=12)


TRINO_DOCS = st.one_of(
    st.fixed_dictionaries({"table": st.fixed_dictionaries(
        {"catalogName": NAMES, "schemaName": NAMES, "tableName": NAMES},
        optional={"columns": st.lists(NAMES, max_size=4) | JSON})}),
    st.fixed_dictionaries({"function": st.fixed_dictionaries(
        {"functionName": NAMES}, optional={"catalogName": NAMES, "schemaName": NAMES})}),
    st.fixed_dictionaries({"schema": st.fixed_dictionaries({"catalogName": NAMES,
                                                           "schemaName": NAMES})}),
    st.fixed_dictionaries({"catalog": st.fixed_dictionaries({"name": NAMES})}),
    st.fixed_dictionaries({"catalogSessionProperty": st.fixed_dictionaries(
        {"catalogName": NAMES, "propertyName": NAMES})}),
    JSON)
TYPES = st.sampled_from(["ROOT", "CATALOG", "NAMESPACE", "TABLE_LIKE", "CATALOG_ROLE", "x"])
POLARIS_DOCS = st.one_of(
    st.fixed_dictionaries({"type": TYPES, "name": NAMES}, optional={"parents": st.lists(
        st.fixed_dictionaries({"type": TYPES, "name": NAMES}), max_size=4) | JSON}),
    JSON)


@st.composite
def inputs(draw: st.DrawFn) -> dict[str, Any]:
    """Trino's and Polaris's bodies (their shapes as above), with any part of them replaced by
    any JSON now and then; either mapping gets either shape."""
    ops = sorted({*Mapping.load("trino").ops, *Mapping.load("polaris").ops})
    op = draw(st.sampled_from(ops) | NAMES)
    user = draw(st.sampled_from(["alice", "gina", "olivia", "dave"]) | JSON)
    groups = draw(st.lists(st.sampled_from(["eng", "staff", "analyst", "writer"])) | JSON)
    if draw(st.booleans()):
        docs = draw(st.lists(TRINO_DOCS, max_size=3) | JSON)
        return {"context": {"identity": {"user": user, "groups": groups}},
                "action": {"operation": op, "resource": draw(TRINO_DOCS),
                           "filterResources": docs, "targetResource": draw(TRINO_DOCS)}}
    targets = draw(st.lists(POLARIS_DOCS, max_size=3) | JSON)
    return {"actor": {"principal": user, "roles": groups}, "action": op,
            "resource": {"targets": targets,
                         "secondaries": draw(st.lists(POLARIS_DOCS, max_size=2) | JSON)}}


_FIXED: list[Any] = []


def _fixed() -> tuple[Any, list[Mapping]]:
    if not _FIXED:
        program = grantlog.compile(FACTS, paths=[RULES])
        groups = [Mapping(tomllib.loads((HERE / f"{n}.toml").read_text()) | {"groups": g}, n)
                  for n, g in (
            ("trino", {"input": "context.identity.groups", "id": "{name}",
                       "store": "member({subject}, G)", "counts": "role_of({group}, _)"}),
            ("polaris", {"input": "actor.roles", "id": "{name}", "store": "holds({subject}, R)",
                         "counts": "privilege({group}, _, _, _)"}))]
        _FIXED.extend([grantlog.Reasoner(program),
                       [Mapping.load("trino"), Mapping.load("polaris"), *groups]])
    return _FIXED[0], _FIXED[1]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(inp=inputs(), kind=st.sampled_from(KINDS))
def test_any_input_gets_an_answer_in_the_plugins_shape(inp: dict[str, Any], kind: str) -> None:
    reasoner, mappings = _fixed()
    for m in mappings:
        ans = m.answer(kind, inp, reasoner)
        if kind == "allow":
            assert isinstance(ans.result, bool)
            assert ans.result or ans.reason
        elif kind == "allow_object":
            assert isinstance(ans.result["allow"], bool)
        elif kind == "batch":
            assert isinstance(ans.result, list) and all(isinstance(i, int) for i in ans.result)
            assert ans.result == sorted(set(ans.result))
        elif kind == "row_filters":
            assert isinstance(ans.result, list)
        elif kind == "column_mask":
            assert ans.result is None or isinstance(ans.result["expression"], str)
        else:
            assert isinstance(ans.result, list)
