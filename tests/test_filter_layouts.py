"""Filter layouts attacked (issue "Safe to expose", item 6): a layout is checked when it is made
(``bad-layout``), every name is printed quoted, no literal holds a quote or a backslash, and the
SQL runs in real SQLite and PostgreSQL databases (and Spark SQL when Java is there) over a
catalog whose table, columns and ids are hostile: a canary table survives, and the filter admits
exactly what ``list`` answers. The service refuses a bad layout with a 422 (a live server)."""

from __future__ import annotations

import itertools
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import sqlglot
from httpserver import serve, stop
from sqlglot import exp

import grantlog
from grantlog.cli import main
from grantlog.filters import Layout, select_sql, to_sql

ROOT = Path(__file__).resolve().parent.parent
TOKEN = "layout-check-token-0123456789"

RULES = """\
import "prelude.gl".
rel grant(user: string, object: string).
rel deny(user: string, object: string).

/// A grant on an object reaches the tables at or below it, unless a deny does.
granted: allowed(U, read, R) :- grant(U, A), ancestor_or_self(A, R), entity(R, table),
    not denied(U, R).
denied_below: denied(U, R) :- deny(U, A), ancestor_or_self(A, R).
"""

#: catalogs whose names differ only where LIKE, GLOB or a string literal would read them
#: differently, or that carry SQL of their own
CATALOGS = ["c_1", "cX1", "c%1", "c%12", "c\\1", "c\\\\1", "c'1", "c''1", 'c"1', "c*1", "c?1",
            "c[1]", "c]1", "c!1", "c!_1", "C_1", "Ç1", "c;1 --", "c_1'; DROP TABLE canary; --",
            "c\\'; DROP TABLE canary; --", "c/1", "c|1"]
GRANTS = {"u1": ["c_1", "c%1", "c\\1", "c'1", "c[1]", "c!1", "c*1", "cX1.s.t1",
                 "c_1'; DROP TABLE canary; --"],
          "u2": ["r"], "u3": ["c\\'; DROP TABLE canary; --.s", "c|1.s.t2", "c/1"]}
DENIES = {"u1": ["c_1.s.t2", "c'1.s"], "u2": ["c'1", "c%1.s.t1", "c_1"]}
#: separators, among them every character LIKE, GLOB or a literal treats specially
SEPARATORS = ["/", "|", "%", "_", "\\", "'", "!", "*", "[", "ab", "\x1f"]

#: a table, a schema and columns named to break out of an unquoted or badly quoted name
HOSTILE = {"table": 'objects"; DROP TABLE canary; --', "id": "user",
           "type": "kind; DROP TABLE canary; --", "parent": 'pa"rent', "path": "pa'th`x"}
PG_SCHEMA = 'sch"ema; DROP TABLE canary; --'


def _world(sep: str) -> tuple[list[tuple[str, str]], dict[str, str]]:
    """The objects (id, type) and each one's parent, no id holding ``sep``."""
    def n(x: str) -> str:
        return x.replace(sep, "~")

    objects = [("r", "metalake")]
    parent: dict[str, str] = {}
    for c in CATALOGS:
        c = n(c)
        objects += [(c, "catalog"), (f"{c}.s", "schema"), (f"{c}.s.t1", "table"),
                    (f"{c}.s.t2", "table")]
        parent.update({c: "r", f"{c}.s": c, f"{c}.s.t1": f"{c}.s", f"{c}.s.t2": f"{c}.s"})
    return objects, parent


def _reasoner(tmp: Path, sep: str) -> grantlog.Reasoner:
    (tmp / "prelude.gl").write_text((ROOT / "rules" / "prelude.gl").read_text())
    (tmp / "policy.gl").write_text(RULES)
    r = grantlog.Reasoner(grantlog.compile(paths=[str(tmp / "policy.gl")]))
    objects, parent = _world(sep)

    def n(x: str) -> str:
        return x.replace(sep, "~")

    with r.transaction() as tx:
        tx.insert("entity", objects)
        tx.insert("contains", [(p, c) for c, p in parent.items()])
        tx.insert("grant", [(u, n(o)) for u, os in GRANTS.items() for o in os])
        tx.insert("deny", [(u, n(o)) for u, os in DENIES.items() for o in os])
    return r


def _rows(r: grantlog.Reasoner, sep: str) -> list[tuple[str, str, str | None, str]]:
    """The catalog table: (id, type, parent, path)."""
    parent = {c: p for p, c in r.rows("contains")}
    out = []
    for x, t in sorted(r.rows("entity")):
        chain = [x]
        while chain[-1] in parent:
            chain.append(parent[chain[-1]])
        out.append((x, t, parent.get(x), sep + "".join(f"{y}{sep}" for y in reversed(chain))))
    return out


def _q(name: str, quote: str = '"') -> str:
    return quote + name.replace(quote, quote * 2) + quote


def _layouts(sep: str, schema: str | None) -> list[Layout]:
    h = HOSTILE
    named = {"schema": schema} if schema is not None else {}
    return [Layout(h["table"], h["id"], h["type"], path=h["path"], path_separator=sep,
                   **named),
            Layout(h["table"], h["id"], h["type"], parent=h["parent"], **named)]


def _create(run: Any, schema: str | None, rows: list[Any], mark: str) -> None:
    h = HOSTILE
    table = (_q(schema) + "." if schema else "") + _q(h["table"])
    run("CREATE TABLE canary (x int)")
    run(f"CREATE TABLE {table} ({_q(h['id'])} text, {_q(h['type'])} text, "
        f"{_q(h['parent'])} text, {_q(h['path'])} text)")
    run(f"INSERT INTO {table} VALUES ({', '.join([mark] * 4)})", rows)


def _agrees(r: grantlog.Reasoner, sep: str, schema: str | None, dialect: str,
            query: Any) -> int:
    """Every user's filter, with both layouts (and the path one without the chains: the
    substring test), gives exactly what ``list`` answers. Returns the queries run."""
    ran = 0
    for user, lay in itertools.product([*sorted(GRANTS), "nobody"], _layouts(sep, schema)):
        f = r.filter(user, "read", "table")
        want = set(r.list(user, "read", type="table"))
        variants = [f]
        if lay.path is not None:
            g = r.filter(user, "read", "table")
            g.chains = {}
            variants.append(g)
        for v in variants:
            sql = select_sql(v, lay, dialect)
            assert len(sqlglot.parse(sql, read=dialect)) == 1, sql
            got = {row[0] for row in query(sql)}
            assert got == want, (user, sep, lay, sql, got ^ want)
            ran += 1
        assert want or user == "nobody"
    return ran


@pytest.mark.parametrize("sep", SEPARATORS)
def test_hostile_names_and_ids_in_sqlite(sep: str, tmp_path: Path) -> None:
    r = _reasoner(tmp_path, sep)
    db = sqlite3.connect(":memory:")

    def run(sql: str, rows: Any = None) -> Any:
        return db.executemany(sql, rows) if rows is not None else db.execute(sql)

    _create(run, None, _rows(r, sep), "?")
    assert _agrees(r, sep, None, "sqlite", lambda sql: db.execute(sql).fetchall()) > 0
    assert db.execute("SELECT count(*) FROM canary").fetchone() == (0,)


def test_hostile_names_and_ids_in_postgresql(pg_server: Any, tmp_path: Path) -> None:
    import psycopg

    with psycopg.connect(pg_server.schema_url(), autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {_q(PG_SCHEMA)}")  # type: ignore[call-overload]
        for sep in SEPARATORS:
            r = _reasoner(tmp_path, sep)
            conn.execute(f"DROP TABLE IF EXISTS canary, {_q(PG_SCHEMA)}.{_q(HOSTILE['table'])}")  # type: ignore[call-overload]

            def run(sql: str, rows: Any = None) -> Any:
                if rows is None:
                    return conn.execute(sql)  # type: ignore[call-overload]
                with conn.cursor() as cur:
                    cur.executemany(sql, rows)  # type: ignore[call-overload]
                return None

            _create(run, PG_SCHEMA, _rows(r, sep), "%s")
            # `user` quoted is the column, not PostgreSQL's current_user
            assert _agrees(r, sep, PG_SCHEMA, "postgres",
                           lambda sql: conn.execute(sql).fetchall()) > 0  # type: ignore[call-overload]
            assert conn.execute("SELECT count(*) FROM canary").fetchone() == (0,)
        # the server's string escapes do not change what the SQL means: no literal holds a
        # quote or a backslash
        conn.execute("SET standard_conforming_strings = off")
        conn.execute("SET escape_string_warning = off")
        assert _agrees(r, sep, PG_SCHEMA, "postgres",
                       lambda sql: conn.execute(sql).fetchall()) > 0  # type: ignore[call-overload]
        assert conn.execute("SELECT count(*) FROM canary").fetchone() == (0,)


def test_hostile_names_and_ids_in_spark_sql(spark: Any, tmp_path: Path) -> None:
    """Spark SQL (backquoted names; a literal's quote is CHR(39)) over a temporary view,
    with the path layout (Spark has no recursive queries); under both settings of
    ``spark.sql.parser.escapedStringLiterals``."""
    sep = "/"
    r = _reasoner(tmp_path, sep)
    h = HOSTILE
    df = spark.createDataFrame(_rows(r, sep), [h["id"], h["type"], h["parent"], h["path"]])
    df.createOrReplaceTempView("grantlog_objects")
    lay = Layout("grantlog_objects", h["id"], h["type"], path=h["path"], path_separator=sep)
    try:
        for escaped in ("false", "true"):
            spark.conf.set("spark.sql.parser.escapedStringLiterals", escaped)
            for user in sorted(GRANTS):
                f = r.filter(user, "read", "table")
                got = {row[0] for row in spark.sql(select_sql(f, lay, "spark")).collect()}
                assert got == set(r.list(user, "read", type="table")), (user, escaped)
    finally:
        spark.conf.set("spark.sql.parser.escapedStringLiterals", "false")


@pytest.mark.parametrize("dialect", ["sqlite", "postgres", "spark", "trino"])
def test_every_name_is_one_quoted_identifier_in_every_dialect(dialect: str,
                                                              tmp_path: Path) -> None:
    """Parsed back in its dialect, the SQL names exactly the layout's table and columns (each
    one identifier, quoted), is one statement, and its literals hold no quote or backslash."""
    r = _reasoner(tmp_path, "/")
    h = HOSTILE
    lays = [Layout(h["table"], h["id"], h["type"], path=h["path"], schema="s;x", catalog="c`")]
    if dialect != "spark":
        lays.append(Layout(h["table"], h["id"], h["type"], parent=h["parent"]))
    for lay, user in itertools.product(lays, sorted(GRANTS)):
        sql = select_sql(r.filter(user, "read", "table"), lay, dialect)
        (tree,) = sqlglot.parse(sql, read=dialect)
        assert isinstance(tree, exp.Select)
        cols = {c.name for c in tree.find_all(exp.Column)}
        assert cols - {"id"} == {x for x in (lay.id, lay.type, lay.parent, lay.path) if x}
        assert all(i.quoted for i in tree.find_all(exp.Identifier)), sql
        tables = {(t.catalog, t.db, t.name) for t in tree.find_all(exp.Table)
                  if not t.name.startswith("grantlog_")}
        assert tables == {(lay.catalog or "", lay.schema or "", lay.table)}
        for lit in tree.find_all(exp.Literal):
            assert "'" not in lit.this and "\\" not in lit.this, (lit, sql)
        assert not list(tree.find_all(exp.Drop, exp.Command))


BAD = [
    ({"table": "t", "path": "p", "path_separator": ""}, "must not be empty"),
    ({"table": "t", "path": "p", "path_separator": "//"}, "starts with what it ends with"),
    ({"table": "t", "path": "p", "path_separator": "::"}, "starts with what it ends with"),
    ({"table": "t", "path": "p", "path_separator": "aba"}, "starts with what it ends with"),
    ({"table": ""}, "`table` must not be empty"),
    ({"table": "t", "id": ""}, "`id` must not be empty"),
    ({"table": "t", "type": ""}, "`type` must not be empty"),
    ({"table": "t", "parent": "a\x00b"}, "NUL"),
    ({"table": "t", "path_separator": "\x00"}, "NUL"),
    ({"table": "public.objects"}, "contains `.`"),
    ({"table": "t", "schema": "a.b"}, "contains `.`"),
    ({"table": "t", "id": 7}, "must be a string"),
    ({"table": "t", "id": None}, "must be a string"),
    ({"table": "t", "path_separator": None}, "must be a string"),
    ({"table": "t", "id": ["a"]}, "must be a string"),
    ({"table": "t", "colour": "x"}, "unknown: colour"),
    ({"id": "id"}, "names `table`"),
]


@pytest.mark.parametrize(("data", "why"), BAD)
def test_bad_layouts_are_refused(data: dict[str, Any], why: str, tmp_path: Path) -> None:
    with pytest.raises(grantlog.GrantlogError) as err:
        Layout.from_dict(data)
    d = err.value.diagnostics[0]
    assert d.code == "bad-layout" and why in d.message and d.help, d
    if "colour" not in data and "table" in data:  # made directly: the same check
        with pytest.raises(grantlog.GrantlogError) as err:
            Layout(**data)
        assert err.value.diagnostics[0].code == "bad-layout"


def test_good_layouts_are_kept_exactly(tmp_path: Path) -> None:
    for sep in ["/", "|", "%", "_", "\\", "'", "ab", "abc", "\x1f", "→"]:
        assert Layout.from_dict({"table": "t", "path": "p", "path_separator": sep}) \
            .path_separator == sep
    lay = Layout.from_dict({"table": " T ", "id": "user", "type": None, "schema": "S",
                            "catalog": None})
    assert lay == Layout(" T ", "user", schema="S")
    from grantlog.engine.answer.residual import Residual

    one = Residual("u", "o", ("is", "x"), 0, None, None, None)
    assert select_sql(one, Layout(" T ", "user"), "postgres") == \
        'SELECT "user" FROM " T " WHERE "user" = \'x\''
    assert select_sql(one, Layout("Objects", "ID"), "postgres") == \
        'SELECT "ID" FROM "Objects" WHERE "ID" = \'x\''  # exactly as written
    toml = tmp_path / "layout.toml"
    toml.write_text('table = "t"\npath = "p"\npath_separator = ""\n')
    with pytest.raises(grantlog.GrantlogError) as err:
        Layout.load(toml)
    assert err.value.diagnostics[0].code == "bad-layout"
    assert err.value.diagnostics[0].span.file == str(toml)


def _residual(obj: str, chains: dict[str, tuple[str, ...]] | None = None) -> Any:
    from grantlog.engine.answer.residual import Residual

    return Residual("u", "o", ("under", obj), 0, None, None, None, chains or {})


def test_an_id_holding_the_separator_is_refused_not_over_admitted() -> None:
    """`under c/1` with `/` as the separator would read as "under c, then 1": refused,
    whether the id is the object's or one above it."""
    lay = Layout("t", "id", path="p", path_separator="/")
    for res in (_residual("c/1", {"c/1": ("r", "c/1")}), _residual("c/1"),
                _residual("x", {"x": ("r/s", "x")})):
        for dialect in ("sqlite", "postgres", "trino", "spark"):
            with pytest.raises(grantlog.GrantlogError) as err:
                to_sql(res, lay, dialect)
            assert err.value.diagnostics[0].code == "bad-layout"
            assert "path_separator" in err.value.diagnostics[0].message
    with pytest.raises(grantlog.GrantlogError) as err:  # NUL cannot be written in SQL text
        to_sql(_residual("a\x00b", {"a\x00b": ("a\x00b",)}), lay, "sqlite")
    assert err.value.diagnostics[0].code == "filter-unsupported"


def test_the_filter_command_refuses_a_bad_layout(tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    r = _reasoner(tmp_path, "/")
    (tmp_path / "facts.gl").write_text("".join(
        f"{rel}({', '.join(_gl(v) for v in row)}).\n"
        for rel in ("entity", "contains", "grant", "deny") for row in r.rows(rel)))
    layout = tmp_path / "layout.toml"
    args = ["filter", str(tmp_path / "policy.gl"), str(tmp_path / "facts.gl"), "u1", "read",
            "--type", "table", "--sql", "postgres", "--layout", str(layout)]
    layout.write_text('table = "t"\npath = "p"\npath_separator = ""\n')
    assert main(args) == 2
    assert "bad-layout" in capsys.readouterr().err
    layout.write_text('table = "t"\nid = "user"\ntype = "kind; DROP TABLE canary; --"\n'
                      'path = "p"\n')
    assert main(args) == 0
    out = capsys.readouterr().out
    assert out.startswith('SELECT "user" FROM "t" WHERE "kind; DROP TABLE canary; --" = ')


def _gl(v: str) -> str:
    return '"' + v.replace("\\", "\\\\").replace('"', '\\"') + '"'


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    tmp = tmp_path_factory.mktemp("layouts")
    r = _reasoner(tmp, "\x1f")  # ids with "/" and "|" in them
    (tmp / "facts.gl").write_text("".join(
        f"{rel}({', '.join(_gl(v) for v in row)}).\n"
        for rel in ("entity", "contains", "grant", "deny") for row in r.rows(rel)))
    tokens = tmp / "tokens"
    tokens.write_text(f"{TOKEN} check\n")
    tokens.chmod(0o600)
    proc, url = serve(tmp, str(tmp / "policy.gl"), str(tmp / "facts.gl"), "--tokens",
                      str(tokens))
    try:
        with httpx.Client(base_url=url, headers={"Authorization": f"Bearer {TOKEN}"},
                          timeout=30) as client:
            yield {"client": client, "reasoner": r}
    finally:
        stop(proc)


def test_the_service_refuses_bad_layouts_with_422(server: dict[str, Any]) -> None:
    c = server["client"]
    ask = {"subject": "u1", "operation": "read", "type": "table", "sql": "postgres"}
    for data, why in BAD:
        got = c.post("/v1/filter", json={**ask, "layout": data})
        assert got.status_code == 422, (data, got.text)
        err = got.json()["error"]
        assert err["code"] == "bad-layout" and why in got.text, got.text
    # a layout whose separator an id holds (the objects under "c/1"): refused, not rendered
    got = c.post("/v1/filter", json={**ask, "subject": "u3", "layout": {
        "table": "t", "type": "kind", "path": "p", "path_separator": "/"}})
    assert got.status_code == 422 and got.json()["error"]["code"] == "bad-layout", got.text


def test_the_service_renders_hostile_names_quoted(server: dict[str, Any]) -> None:
    """The SQL the service answers, run in SQLite over the hostile table: what list says,
    and the canary is still there."""
    r, c = server["reasoner"], server["client"]
    db = sqlite3.connect(":memory:")

    def run(sql: str, rows: Any = None) -> Any:
        return db.executemany(sql, rows) if rows is not None else db.execute(sql)

    _create(run, None, _rows(r, "\x1f"), "?")
    h = HOSTILE
    for user, lay in itertools.product(sorted(GRANTS), _layouts("\x1f", None)):
        layout = {k: v for k, v in lay.__dict__.items() if v is not None}
        got = c.post("/v1/filter", json={"subject": user, "operation": "read",
                                         "type": "table", "sql": "sqlite", "layout": layout})
        assert got.status_code == 200, got.text
        sql = got.json()["sql"]
        rows = db.execute(f"SELECT {_q(h['id'])} FROM {_q(h['table'])} WHERE {sql}").fetchall()
        assert {x for (x,) in rows} == set(r.list(user, "read", type="table")), (user, sql)
    assert db.execute("SELECT count(*) FROM canary").fetchone() == (0,)
