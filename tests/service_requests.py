"""Requests for tests/test_service_fuzz.py: hostile values, the endpoints' request bodies
(valid first, then damaged by tests/strategies.py's mutations), ``Authorization`` headers with
the token each validly carries, and other headers."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import strategies as gen
from hypothesis import strategies as st

ROOT = Path(__file__).resolve().parent.parent
RULES = str(ROOT / "rules" / "gravitino_data.gl")
READ = "reader-token-0123456789"
WRITE = "writer-token-0123456789"
ADMIN = "admin-token-0123456789x"
#: bodies over this many bytes are refused (the server's --max-body)
MAX_BODY = 200_000

# -- hostile values ----------------------------------------------------------------------------

PEOPLE = ("alice", "bob", "carol", "dave", "analyst", "auditor")
OBJECTS = ("m1", "m1.lakehouse", "m1.lakehouse.sales", "m1.lakehouse.sales.orders",
           "m1.lakehouse.sales.customers")
OPERATIONS = ("select_table", "load_table", "use_catalog", "load_metalake", "drop_table",
              "modify_table", "load_tabel")
#: strings that are wrong somewhere: NUL, control and non-ASCII characters, lone surrogates
#: (sent as JSON escapes), SQL and paths, very long
ODD = ("", " ", "\x00", "a\x00b", "alice\x00", "\ud800", "é", "𝔘𝔫𝔦", "²", "a\nb", "\t",
       "' OR 1=1 --", "../../etc/passwd", "%00", "${jndi:x}", "x" * 10_000, "\u202e", "\ufeff",
       "allowed(U, select_table, R)", "m1.lakehouse.sales.orders\x00")
ids = st.one_of(st.sampled_from(PEOPLE + OBJECTS + OPERATIONS), st.sampled_from(ODD),
                st.text(max_size=12))
#: values of a JSON field meant to be a number or a flag
NUMS = (0, 1, -1, 2, 2**63, 2**64, 10**30, 1.5, -0.0, True, False, None, "1", "²", "", [], {},
        [1], float("nan"), float("inf"))
numbers = st.sampled_from(NUMS)
#: cursors: a real one, and ones no page ever made
CURSORS = ('"m1.lakehouse.sales.customers"', '["alice","m1"]', "[]", "[[]]", "{}", "null", "1",
           "-1", "1.5", "nan", "NaN", '"', "", "[", '["a",["b"]]', "[true]", "[null]",
           "1e400", "9" * 5000, '"' + "x" * 5000 + '"', "\x00", '"\\u0000"', "²", "[1,2,3,4,5]",
           '{"a":1}', '"\\ud800"', "true")
cursors = st.one_of(st.sampled_from(CURSORS), st.text(max_size=10), st.sampled_from(NUMS))
#: query-string values of numeric parameters (``limit``, ``since``)
QNUMS = ("0", "1", "10", "²", "³", "٣", "१", "１", "𝟙", "-1", "+1", " 1", "1 ", "1e3", "0x10",
         "1.5", "", "99999999999999999999", "9" * 19, "9" * 5000, "nan", "∞", "\x00", "1\x00",
         "true")
qnums = st.one_of(st.sampled_from(QNUMS), st.text(max_size=6))
GOALS = ("allowed(U, select_table, R)", 'allowed(alice, select_table, "m1.lakehouse.sales.orders")',
         'allowed(carol, select_table, "m1.lakehouse.sales.customers")', "entity(X, T)",
         "contains(X, Y), contains(Y, Z)", "allowed(U, O, R)", "member(X)",
         "allowed(U, select_table, R), not role_of(U, analyst)", "nope(X)", "allowed(U)",
         "allowed(", "allowed(U,,R)",
         "X", "", "1 = 1", "allowed(U, O, R", "(" * 500, "allowed(" * 300, "X = X", "_",
         "allowed(U, select_table, R) :- entity(R, table)", "import \"/etc/passwd\".",
         "not allowed(alice, select_table, R)", "allowed(U, select_table, 99999999999999999999999)",
         "X = 99999999999999999999999", "X = -9223372036854775809")
goals = st.one_of(st.sampled_from(GOALS), gen.token_mutated(st.sampled_from(GOALS[:7])),
                  st.text(max_size=30))


def maybe(d: dict[str, Any], draw: st.DrawFn, key: str, values: st.SearchStrategy[Any]) -> None:
    if draw(st.booleans()):
        d[key] = draw(values)


# -- request bodies, valid first, then damaged --------------------------------------------------

@st.composite
def check_doc(draw: st.DrawFn) -> dict[str, Any]:
    d = {"subject": draw(ids), "operation": draw(ids), "resource": draw(ids)}
    maybe(d, draw, "at_least_revision", st.sampled_from((0, 1, -1, 2**63, "1", None, 1.5)))
    maybe(d, draw, "explain", st.sampled_from((True, False, 1, "yes", None, [])))
    return d


@st.composite
def batch_doc(draw: st.DrawFn) -> dict[str, Any]:
    d: dict[str, Any] = {"checks": draw(st.lists(check_doc(), max_size=5))}
    if draw(st.integers(0, 9)) == 0:
        d["checks"] = d["checks"] * 60  # over --max-batch
    maybe(d, draw, "at_least_revision", st.sampled_from((0, 1, -1, 2**63, "1", None)))
    return d


@st.composite
def list_doc(draw: st.DrawFn) -> dict[str, Any]:
    d = {"subject": draw(ids), "operation": draw(ids)}
    maybe(d, draw, "type", st.sampled_from(("table", "schema", "", None, 1, "nope")))
    maybe(d, draw, "within", ids)
    maybe(d, draw, "limit", numbers)
    maybe(d, draw, "cursor", cursors)
    return d


@st.composite
def who_doc(draw: st.DrawFn) -> dict[str, Any]:
    d = {"operation": draw(ids), "resource": draw(ids)}
    maybe(d, draw, "limit", numbers)
    maybe(d, draw, "cursor", cursors)
    return d


LAYOUT_KEYS = ("table", "id", "type", "parent", "path", "path_separator")


@st.composite
def filter_doc(draw: st.DrawFn) -> dict[str, Any]:
    d = {"subject": draw(ids), "operation": draw(ids)}
    maybe(d, draw, "type", st.sampled_from(("table", "schema", None, 3)))
    if draw(st.booleans()):
        d["sql"] = draw(st.sampled_from(("sqlite", "postgres", "spark", "trino", "oracle", "")))
        d["layout"] = draw(st.one_of(
            st.just({"table": "catalog_objects", "id": "id", "type": "kind", "path": "path"}),
            st.dictionaries(st.sampled_from(LAYOUT_KEYS), st.one_of(
                st.sampled_from(("", "user", "kind; DROP TABLE canary; --", '"', "a.b", "/")),
                ids, numbers), max_size=6)))
    return d


@st.composite
def query_doc(draw: st.DrawFn) -> dict[str, Any]:
    d = {"goal": draw(goals)}
    maybe(d, draw, "limit", numbers)
    maybe(d, draw, "cursor", cursors)
    return d


@st.composite
def explain_doc(draw: st.DrawFn) -> dict[str, Any]:
    d = {"goal": draw(goals)}
    maybe(d, draw, "format", st.sampled_from(("json", "text", "dot", "mermaid", "tree", "", 1)))
    return d


#: values a write may hold; never a person or role of :data:`SENTINELS` (their answers must
#: not change while fuzzing)
WRITE_VALUES = st.one_of(st.sampled_from(("fz_user", "fz.table", "m1.lakehouse.sales.orders",
                                          "table", "select_table", "allow", "deny", "")),
                         st.sampled_from(ODD), st.integers(-2**70, 2**70), st.text(max_size=6))
RELATIONS = ("entity", "contains", "role_of", "metalake_user", "user_attribute", "column_tag",
             "mask_policy", "allowed", "nope", "", "privilege")


@st.composite
def write_doc(draw: st.DrawFn) -> dict[str, Any]:
    rows = st.dictionaries(st.sampled_from(RELATIONS), st.lists(
        st.lists(WRITE_VALUES, max_size=5), max_size=3), max_size=3)
    d: dict[str, Any] = {"insert": draw(rows)}
    maybe(d, draw, "retract", rows)
    maybe(d, draw, "if_revision", numbers)
    maybe(d, draw, "watch", st.sampled_from((["allowed"], [], ["nope"], "allowed", [1])))
    return d


MODEL = Path(RULES).read_text(encoding="utf-8")
POLICY_TEXTS = (MODEL, 'import "/etc/passwd".\n', 'import "../../../../etc/passwd".\n',
                'import "gravitino".\n', "", "p(X) :- q(X).", "allowed(", "\x00",
                'import "tokens".\n')


@st.composite
def policy_doc(draw: st.DrawFn) -> dict[str, Any]:
    """An upload: always with an ``if_hash`` that is not the current hash (or not a string),
    so that no upload replaces the policy the other tests need."""
    text = draw(st.one_of(st.sampled_from(POLICY_TEXTS), gen.token_mutated(st.just(MODEL))))
    name = draw(st.sampled_from(("policy.gl", "../x.gl", "/etc/passwd", "", "a\x00.gl", "t.gl")))
    d: dict[str, Any] = {"files": {name: text}}
    maybe(d, draw, "roots", st.sampled_from(([name], ["nope.gl"], [], "x", [1])))
    d["if_hash"] = draw(st.sampled_from(("0000000000000000", "", "x" * 300, 1, [], {})))
    return d


TRINO_OPS = ("SelectFromColumns", "ExecuteQuery", "AccessCatalog", "ShowSchemas", "ShowTables",
             "FilterTables", "FilterColumns", "GetRowFilters", "GetColumnMask", "CreateTable",
             "DropTable", "ExecuteFunction", "Nope", "")


@st.composite
def trino_resource(draw: st.DrawFn) -> dict[str, Any]:
    cat, sch, tab = (draw(st.one_of(st.sampled_from(v), ids)) for v in
                     (("lakehouse",), ("sales",), ("orders", "customers")))
    table = {"catalogName": cat, "schemaName": sch, "tableName": tab}
    return draw(st.sampled_from((
        {"table": table | {"columns": draw(st.lists(ids, max_size=3))}},
        {"column": table | {"columnName": draw(ids), "columnType": "varchar"}},
        {"schema": {"catalogName": cat, "schemaName": sch}},
        {"catalog": {"name": cat}}, {}, {"function": {"functionName": draw(ids)}})))


@st.composite
def trino_doc(draw: st.DrawFn) -> dict[str, Any]:
    action: dict[str, Any] = {"operation": draw(st.sampled_from(TRINO_OPS))}
    if draw(st.booleans()):
        action["resource"] = draw(trino_resource())
    else:
        action["filterResources"] = draw(st.lists(trino_resource(), max_size=4))
    return {"input": {"context": {"identity": {"user": draw(ids), "groups": draw(
        st.lists(ids, max_size=2))}, "softwareStack": {"trinoVersion": "476"}},
        "action": action}}


POLARIS_ACTIONS = ("LOAD_TABLE", "GET_CATALOG", "LIST_NAMESPACES", "CREATE_NAMESPACE",
                   "CREATE_TABLE_DIRECT", "RENAME_TABLE", "DROP_TABLE_WITHOUT_PURGE",
                   "CREATE_CATALOG", "NOPE", "")


@st.composite
def polaris_target(draw: st.DrawFn) -> dict[str, Any]:
    kind = draw(st.sampled_from(("TABLE_LIKE", "NAMESPACE", "CATALOG", "ROOT", "PRINCIPAL", "")))
    parents = draw(st.sampled_from(([], [{"type": "ROOT", "name": "root"}],
                                    [{"type": "CATALOG", "name": "lakehouse"},
                                     {"type": "NAMESPACE", "name": "sales"}],
                                    [{"type": "CATALOG", "name": draw(ids)}])))
    return {"type": kind, "name": draw(st.one_of(st.sampled_from(("orders", "lakehouse",
                                                                   "sales")), ids)),
            "parents": parents}


@st.composite
def polaris_doc(draw: st.DrawFn) -> dict[str, Any]:
    resource: dict[str, Any] = {"targets": draw(st.lists(polaris_target(), max_size=3))}
    maybe(resource, draw, "secondaries", st.lists(polaris_target(), max_size=2))
    return {"input": {"actor": {"principal": draw(ids), "roles": draw(st.lists(ids, max_size=2))},
                      "action": draw(st.sampled_from(POLARIS_ACTIONS)), "resource": resource,
                      "context": {"request_id": draw(ids)}}}


DATA_PATHS = ("trino/allow", "trino/batch", "trino/rowFilters", "trino/columnMask",
              "trino/batchColumnMasks", "polaris", "polaris/allow")


@st.composite
def body_bytes(draw: st.DrawFn, doc: st.SearchStrategy[Any]) -> bytes:
    """A document as bytes: as is (JSON with escapes, so lone surrogates and NaN pass as a
    careless client would send them), damaged (json_mutated, json_bytes), not an object, over
    the limit, deeply nested, or not JSON at all."""
    kind = draw(st.sampled_from(("valid", "valid", "valid", "mutated", "mutated", "bytes",
                                 "other", "huge", "deep", "binary")))
    d = draw(doc)
    if kind == "valid":
        return json.dumps(d).encode()
    if kind == "mutated":
        return json.dumps(draw(gen.json_mutated(d))).encode()
    if kind == "bytes":
        return draw(gen.json_bytes(d))
    if kind == "other":
        return draw(st.sampled_from((b"", b"null", b"[]", b"1", b'"x"', b"{", b"{}", b"\xef\xbb"
                                     b"\xbf{}", "{}".encode("utf-16"), b"\x00", b"a=1&b=2",
                                     b'{"a":1,"a":2}', b"{}" * 2)))
    if kind == "huge":  # near or over --max-body
        n = draw(st.sampled_from((MAX_BODY - 64, MAX_BODY + 1, 4 * MAX_BODY)))
        return b'{"subject":"' + b"x" * n + b'","operation":"a","resource":"b"}'
    if kind == "deep":
        n = draw(st.sampled_from((100, 1000, 1025, 5000, 50_000)))
        return b'{"a":' * n + b"1" + b"}" * n
    return draw(st.binary(max_size=64))


# -- authorization ------------------------------------------------------------------------------

@st.composite
def authorization(draw: st.DrawFn) -> tuple[bytes | None, str | None]:
    """An ``Authorization`` header (None: none) and the token it validly carries (None: none).
    RFC 7235: the scheme is case-insensitive, separated from the token by one or more
    spaces."""
    token = draw(st.sampled_from((READ, WRITE, ADMIN)))
    kind = draw(st.sampled_from(("plain",) * 14 + ("valid", "valid", "valid", "none", "bad",
                                                  "bad")))
    if kind == "plain":  # most requests: get past the token to the endpoint's own checks
        return f"Bearer {token}".encode(), token
    if kind == "valid":
        scheme = draw(st.sampled_from(("Bearer", "bearer", "BEARER", "bEaReR")))
        gap = draw(st.sampled_from((" ", "  ", "   ")))
        return f"{scheme}{gap}{token}".encode(), token
    if kind == "none":
        return None, None
    scheme = draw(st.sampled_from(("Bearer", "bearer")))
    bad = draw(st.sampled_from((
        "", "Bearer", f"Basic {token}", f"Token {token}", f"{scheme}{token}",
        f"{scheme} {token[:-1]}", f"{scheme} {token}x", f"{scheme} x{token}",
        f"{scheme} {token.upper()}", f"{scheme} {token} {token}", token,
        f"{scheme} {token[:16]}", f"{scheme} é{token}", f"{scheme} " + "x" * 5000,
        f"Bearer,{token}")))
    return bad.encode("latin-1", "replace"), None


CONTENT_TYPES = (None, "application/json", "application/json; charset=utf-8", "text/plain",
                 "application/x-www-form-urlencoded", "multipart/form-data; boundary=x",
                 "application/json; charset=utf-16", "application/xml", "*/*", "",
                 "application/x-ndjson", "application/json; charset=\"é\"")


@st.composite
def extra_headers(draw: st.DrawFn) -> list[tuple[bytes, bytes]]:
    out: list[tuple[bytes, bytes]] = []
    ctype = draw(st.sampled_from(CONTENT_TYPES))
    if ctype is not None:
        out.append((b"content-type", ctype.encode("latin-1", "replace")))
    if draw(st.booleans()):
        out.append((b"x-request-id", draw(st.sampled_from(
            (b"", b"r-1", b"x" * 4000, "é".encode("latin-1"), b"a b", b"../../x")))))
    if draw(st.integers(0, 4)) == 0:
        out.append(draw(st.sampled_from((
            (b"accept", b"text/event-stream"), (b"content-encoding", b"gzip"),
            (b"accept-encoding", b"br, gzip, *"), (b"expect", b"100-continue"),
            (b"connection", b"close"), (b"x-forwarded-for", b"1.2.3.4, ::1"),
            (b"authorization-x", b"Bearer " + READ.encode())))))
    return out
