"""Issue #27, item 2: API misuse is an error, never a silent answer or a TypeError.

Every public entry point (``grantlog.compile``, ``grantlog.Reasoner`` and its methods, the
transaction, ``grantlog.Client``, the SQL renderers of grantlog/filters.py) checks its
arguments (engine/core/arguments.py) and raises ``GrantlogError`` with ``bad-argument``
(``unknown-relation`` for a relation name the program does not have) and a hint naming the
argument. Values valid before keep working: ints as constants, ``watch="allowed"``,
``watch="all"``, paths as ``pathlib.Path``, rows as lists, sets and generators.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from httpserver import free_port, serve, stop

import grantlog
from grantlog.filters import Layout, mask_sql, select_sql, strongest_mask, to_sql

RULES = """
member("alice", eng).
grant(eng, read, t1).
allowed(U, O, R) :- member(U, G), grant(G, O, R).
"""


@pytest.fixture
def r() -> grantlog.Reasoner:
    return grantlog.Reasoner(grantlog.compile(RULES))


def refused(fn: Callable[[], Any], code: str = "bad-argument") -> grantlog.Diagnostic:
    """The one diagnostic ``fn()`` raises, which has ``code`` and a hint."""
    with pytest.raises(grantlog.GrantlogError) as info:
        fn()
    [d] = info.value.diagnostics
    assert d.code == code, d
    if code == "bad-argument":
        assert d.help, d
    return d


# -- rows -----------------------------------------------------------------------------------------

def test_a_string_where_rows_belong_is_not_iterated(r: grantlog.Reasoner) -> None:
    d = refused(lambda: r.insert("member", ["ab"]))
    assert d.message == "`rows` must hold rows (tuples or lists of values), not `'ab'` (str)"
    assert d.help == 'rows are tuples or lists of values, e.g. ' \
                     '`insert("member", [("alice", "eng")])`'
    d = refused(lambda: r.retract("member", "ab"))
    assert "`rows` must be an iterable of rows" in d.message
    assert 'retract("member"' in (d.help or "")
    assert r.rows("member") == {("alice", "eng")}  # nothing was inserted


def test_a_dict_is_neither_rows_nor_a_row(r: grantlog.Reasoner) -> None:
    refused(lambda: r.insert("member", {("x", "y"): 1}))
    refused(lambda: r.insert("member", [{"x": 1, "y": 2}]))
    refused(lambda: r.insert("member", [b"xy"]))
    refused(lambda: r.insert("member", None))
    refused(lambda: r.insert("member", 5))
    assert r.rows("member") == {("alice", "eng")}


def test_rows_of_every_valid_shape_still_insert(r: grantlog.Reasoner) -> None:
    r.insert("member", [("bob", "eng")])
    r.insert("member", [["carol", "eng"]])
    r.insert("member", {("dave", "eng")})
    r.insert("member", (row for row in [("erin", "eng")]))
    r.insert("member", [("fred", 7)])  # an int is a constant
    assert {u for u, _ in r.rows("member")} == {"alice", "bob", "carol", "dave", "erin", "fred"}
    with r.transaction() as tx:
        tx.insert("member", [("gina", "eng")])
        tx.retract("member", [["bob", "eng"]])
    assert tx.changes.gained("member") == {("gina", "eng")}
    assert tx.changes.lost("member") == {("bob", "eng")}


def test_a_relation_name_of_the_wrong_type(r: grantlog.Reasoner) -> None:
    d = refused(lambda: r.insert(5, [("a", "b")]))  # type: ignore[arg-type]
    assert d.message == "`rel` must be a string, not `5` (int)"
    refused(lambda: r.insert("membr", [("a", "b")]), "unknown-relation")
    refused(lambda: r.rows(5))  # type: ignore[arg-type]
    refused(lambda: r.rows(["member"]))  # type: ignore[arg-type]


def test_bad_values_in_rows_stay_bad_facts(r: grantlog.Reasoner) -> None:
    refused(lambda: r.insert("member", [("alice", None)]), "bad-fact")
    refused(lambda: r.insert("member", [("alice", True)]), "bad-fact")


# -- questions ------------------------------------------------------------------------------------

@pytest.mark.parametrize("call, name", [
    (lambda r: r.check(None, "read", "t1"), "subject"),
    (lambda r: r.check("alice", 1.5, "t1"), "operation"),
    (lambda r: r.check("alice", "read", ["t1"]), "resource"),
    (lambda r: r.check("alice", "read", True), "resource"),
    (lambda r: r.check("alice", "read", "t1", at_least="x"), "at_least"),
    (lambda r: r.list(None, "read"), "subject"),
    (lambda r: r.list("alice", "read", limit="x"), "limit"),
    (lambda r: r.list("alice", "read", type=3.0), "type"),
    (lambda r: r.list("alice", "read", after=object()), "after"),
    (lambda r: r.who("read", None), "resource"),
    (lambda r: r.filter({"alice"}, "read"), "subject"),
    (lambda r: r.row_filter("alice", None), "table"),
    (lambda r: r.query(None), "goal"),
    (lambda r: r.ask(b"allowed(U, O, R)"), "goal"),
    (lambda r: r.explain(5), "goal"),
    (lambda r: r.explain("allowed(U, O, R)", limits=3), "limits"),
    (lambda r: r.plan(None), "goal"),
    (lambda r: r.query("allowed(U, O, R)", at_least=1.0), "at_least"),
    (lambda r: r.wait_for("1"), "revision"),
    (lambda r: r.wait_for(0, timeout="1"), "timeout"),
    (lambda r: r.holds_value("member", "0", "alice"), "column"),
    (lambda r: r.holds_value("member", 0, None), "value"),
    (lambda r: r.prover(None), "ctx"),
    (lambda r: r.seed(None, 0), "rows"),
])
def test_a_question_with_an_argument_of_the_wrong_type(
        r: grantlog.Reasoner, call: Callable[[grantlog.Reasoner], Any], name: str) -> None:
    d = refused(lambda: call(r))
    assert d.message.startswith(f"`{name}` must "), d.message
    assert f"`{name}`" in (d.help or "") or "e.g." in (d.help or ""), d.help
    assert str(d.span) == "", "an API call has no place to show"


def test_ints_are_constants_as_before(r: grantlog.Reasoner) -> None:
    r.insert("grant", [("eng", "read", 42)])
    assert r.check("alice", "read", 42).allowed
    assert r.list("alice", "read") == [42, "t1"]
    assert r.who("read", 42) == ["alice"]
    assert r.list("alice", "read", limit=1, after=42) == ["t1"]
    assert r.check("alice", "read", "t1", at_least=0).allowed
    assert not r.check(1, "read", "t1").allowed  # an unknown subject: denied (and warned)


# -- watch ----------------------------------------------------------------------------------------

def test_watch_names_relations_of_the_program() -> None:
    p = grantlog.compile(RULES)
    refused(lambda: grantlog.Reasoner(p, watch="nope"), "unknown-relation")
    refused(lambda: grantlog.Reasoner(p, watch=["allowed", "nope"]), "unknown-relation")
    d = refused(lambda: grantlog.Reasoner(p, watch=5))  # type: ignore[arg-type]
    assert "`watch`" in d.message and '"all"' in (d.help or "")
    refused(lambda: grantlog.Reasoner(p, watch=[None]))  # type: ignore[list-item]
    r = grantlog.Reasoner(p)
    with pytest.raises(grantlog.GrantlogError) as info, r.transaction(watch="nope") as tx:
        tx.insert("member", [("bob", "eng")])
    assert info.value.diagnostics[0].code == "unknown-relation"
    assert r.rows("member") == {("alice", "eng")}  # refused before anything was applied
    refused(lambda: r.transaction(if_revision="0").__enter__())
    # what worked keeps working: one name, several, "all"
    for watch in ("allowed", ["allowed"], ("allowed", "member"), "all"):
        rw = grantlog.Reasoner(p, watch=watch)
        assert rw.insert("member", [("bob", "eng")]).gained("allowed") == {("bob", "read", "t1")}


# -- the constructor and compile ------------------------------------------------------------------

def test_the_reasoner_takes_a_compiled_program() -> None:
    d = refused(lambda: grantlog.Reasoner("x"))  # type: ignore[arg-type]
    assert "grantlog.compile" in (d.help or "")
    refused(lambda: grantlog.Reasoner(None))  # type: ignore[arg-type]
    p = grantlog.compile(RULES)
    refused(lambda: grantlog.Reasoner(p, backend=5))  # type: ignore[arg-type]
    refused(lambda: grantlog.Reasoner(p, store=5))  # type: ignore[arg-type]
    refused(lambda: grantlog.Reasoner(p, follow="yes"))  # type: ignore[arg-type]
    refused(lambda: grantlog.Reasoner(p).load("facts.csv"))


def test_compile_checks_its_arguments() -> None:
    d = refused(lambda: grantlog.compile(5))  # type: ignore[arg-type]
    assert d.message == "`text` must be a string, not `5` (int)"
    refused(lambda: grantlog.compile(RULES, filename=None))  # type: ignore[arg-type]
    refused(lambda: grantlog.compile(RULES, strict="yes"))  # type: ignore[arg-type]
    refused(lambda: grantlog.compile(RULES, files={"a.gl": 5}))  # type: ignore[dict-item]
    refused(lambda: grantlog.compile(paths=[5]))  # type: ignore[list-item]


@pytest.mark.parametrize("one", ["a/b.gl", Path("a/b.gl")])
def test_a_single_path_is_refused_at_once_not_walked(one: str | Path) -> None:
    start = time.monotonic()
    d = refused(lambda: grantlog.compile(paths=one))  # type: ignore[arg-type]
    assert time.monotonic() - start < 1  # was: every character a path, the whole disk walked
    assert d.help == 'pass one path as a list: `paths=["a/b.gl"]`'


def test_paths_of_every_valid_shape_still_compile(tmp_path: Path) -> None:
    f = tmp_path / "p.gl"
    f.write_text(RULES)
    for paths in ([str(f)], [f], (f,), [tmp_path]):
        assert "allowed" in grantlog.compile(paths=paths).relations


# -- the SQL renderers ----------------------------------------------------------------------------

def test_the_renderers_check_their_arguments(r: grantlog.Reasoner) -> None:
    layout = Layout(table="objects")
    refused(lambda: to_sql(None, layout))  # type: ignore[arg-type]
    refused(lambda: select_sql(r.filter("alice", "read"), {"table": "objects"}))  # type: ignore
    refused(lambda: to_sql(r.filter("alice", "read"), layout, 5), "bad-option")  # type: ignore
    assert to_sql(r.filter("alice", "read"), layout)  # as before
    refused(lambda: strongest_mask("nullify"))
    assert strongest_mask(["redact", "nullify"]) == "nullify"
    refused(lambda: mask_sql("nullify", "c", column_type=5))  # type: ignore[arg-type]
    refused(lambda: Layout.load(None))  # type: ignore[arg-type]


# -- the client -----------------------------------------------------------------------------------

def client_calls(c: grantlog.Client) -> list[tuple[str, Callable[[], Any]]]:
    """A wrong call of each of the client's methods, by the argument it gets wrong."""
    def tx(watch: Any = (), if_revision: Any = None, rows: Any = None) -> None:
        with c.transaction(watch=watch, if_revision=if_revision) as t:
            t.insert("member", rows if rows is not None else [("zed", "eng")])

    return [
        ("subject", lambda: c.check(None, "read", "t1")),  # type: ignore[arg-type]
        ("at_least", lambda: c.check("alice", "read", "t1", at_least="x")),  # type: ignore
        ("checks", lambda: c.check_many("abc")),  # type: ignore[arg-type]
        ("checks", lambda: c.check_many([("alice", "read")])),  # type: ignore[list-item]
        ("goal", lambda: c.query(None)),  # type: ignore[arg-type]
        ("goal", lambda: c.ask(5)),  # type: ignore[arg-type]
        ("goal", lambda: c.explain(5)),  # type: ignore[arg-type]
        ("subject", lambda: c.list(None, "read")),  # type: ignore[arg-type]
        ("within", lambda: c.list("alice", "read", within=[1])),  # type: ignore[arg-type]
        ("resource", lambda: c.who("read", None)),  # type: ignore[arg-type]
        ("sql", lambda: c.filter("alice", "read", sql=5)),  # type: ignore[arg-type]
        ("layout", lambda: c.filter("alice", "read", layout=[1])),  # type: ignore[arg-type]
        ("rows", lambda: c.insert("member", ["ab"])),
        ("rel", lambda: c.retract(None, [("a", "b")])),  # type: ignore[arg-type]
        ("watch", lambda: tx(watch=5)),
        ("if_revision", lambda: tx(if_revision="1")),
        ("rows", lambda: tx(rows={"a": "b"})),
        ("since", lambda: next(c.watch(since="x"))),  # type: ignore[arg-type]
        ("sources", lambda: c.policy(sources="yes")),  # type: ignore[arg-type]
        ("files", lambda: c.set_policy("rules.gl")),
        ("files", lambda: c.set_policy({"a.gl": 5})),  # type: ignore[dict-item]
    ]


def test_the_client_checks_before_any_http() -> None:
    # nothing listens on this port: a call that got as far as HTTP would be
    # `service-unavailable`; every one is `bad-argument` instead
    with grantlog.Client(f"http://127.0.0.1:{free_port()}") as c:
        for name, call in client_calls(c):
            d = refused(call)
            assert d.message.startswith(f"`{name}` must "), (name, d.message)
        with pytest.raises(grantlog.GrantlogError) as info:
            c.check("alice", "read", "t1")
        assert info.value.diagnostics[0].code == "service-unavailable"
    refused(lambda: grantlog.Client(None))  # type: ignore[arg-type]
    refused(lambda: grantlog.Client("http://x", token=5))  # type: ignore[arg-type]
    refused(lambda: grantlog.Client("http://x", timeout="5"))  # type: ignore[arg-type]
    # a bad value inside a row is refused here too (it has no relation to check it with)
    with grantlog.Client("http://127.0.0.1:1") as c:
        refused(lambda: c.insert("member", [("a", b"b")]), "bad-fact")


@pytest.fixture(scope="module")
def service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A real `grantlog serve` of RULES (writes allowed without tokens)."""
    tmp = tmp_path_factory.mktemp("args")
    (tmp / "rules.gl").write_text(RULES)
    proc, url = serve(tmp, str(tmp / "rules.gl"), "--allow-unauthenticated-writes",
                      "--watch", "allowed")
    yield url
    stop(proc)


def test_the_client_against_the_service(service: str) -> None:
    with grantlog.Client(service) as c:
        for name, call in client_calls(c):
            d = refused(call)
            assert d.message.startswith(f"`{name}` must "), (name, d.message)
        # the valid shapes answer as the embedded reasoner does
        assert c.check("alice", "read", "t1").allowed
        assert c.insert("member", [["bob", "eng"]]).gained("allowed") == {("bob", "read", "t1")}
        with c.transaction(watch="allowed") as tx:
            tx.retract("member", {("bob", "eng")})
        assert tx.changes.lost("allowed") == {("bob", "read", "t1")}
        assert c.list("alice", "read") == ["t1"]
        assert c.check_many([("alice", "read", "t1"), ["bob", "read", "t1"]])[1].allowed is False
