"""Writes give facts of base relations only (issue 24, item 4).

A write (``Reasoner.insert``/``retract``/``transaction``, the store-backed reasoner, the
pyDatalog backend, ``grantlog store load``, ``/v1/write``, a ``--facts`` file) may not give
facts of a relation that rules derive, unless the rules mark it ``@writable``: writing
``allowed(carol, load_table, m1.lakehouse.sales.customers)`` used to override the model's
explicit DENY. The compiler refuses rule files that give facts of a derived relation without
the annotation (``derived-relation``), and a store holding such facts.
"""

from __future__ import annotations

import dataclasses
import json
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import strategies as gen
from grantlog.grammar.diagnostics import GrantlogError, display_path
from httpserver import serve, stop
from hypothesis import given, settings
from hypothesis import strategies as st

import grantlog

ROOT = Path(__file__).resolve().parent.parent
RULES = ROOT / "rules" / "gravitino.gl"
FACTS = ROOT / "examples" / "gravitino" / "facts.gl"
CAROL = ("carol", "load_table", "m1.lakehouse.sales.customers")
WRITE = "writer-token-0123456789"

#: a relation that rules derive and writes may also add to, next to one they may not
MIXED = """
rel member(user: string, group: string).
rel grant(group: string, op: string, res: string).
rel denied(user: string, op: string, res: string).
/// granted through a group, or written directly (break-glass access)
@writable rel granted(user: string, op: string, res: string).
granted(U, O, R) :- member(U, G), grant(G, O, R).
allowed(U, O, R) :- granted(U, O, R), not denied(U, O, R).
member(ann, eng).
grant(eng, read, t1).
"""


@pytest.fixture(scope="module")
def gravitino() -> grantlog.Program:
    return grantlog.compile(paths=[RULES, FACTS])


@pytest.fixture(scope="module")
def mixed() -> grantlog.Program:
    return grantlog.compile(MIXED, filename="mixed.gl")


def _refused(exc: pytest.ExceptionInfo[GrantlogError], program: grantlog.Program,
             rel: str) -> None:
    """The error names the relation, the rule deriving it (file:line) and the annotation."""
    d = exc.value.diagnostics[0]
    assert d.code == "derived-relation", d
    assert f"`{rel}`" in d.message
    rule = program.rules_for(rel)[0]
    assert f"{display_path(rule.span.file)}:{rule.span.line}" in d.message
    assert rule.name in d.message
    assert d.help and f"@writable rel {rel}(" in d.help


# -- the Python API -------------------------------------------------------------------------------

def test_insert_into_the_decision_relation_is_refused(gravitino: grantlog.Program) -> None:
    r = grantlog.Reasoner(gravitino)
    assert not r.check(*CAROL)  # the DENY of pii_blocker
    with pytest.raises(GrantlogError) as exc:
        r.insert("allowed", [CAROL])
    _refused(exc, gravitino, "allowed")
    with pytest.raises(GrantlogError) as exc:
        r.retract("allowed", [CAROL])
    _refused(exc, gravitino, "allowed")
    assert not r.check(*CAROL) and r.revision == 0


def test_a_transaction_with_a_derived_fact_applies_nothing(gravitino: grantlog.Program) -> None:
    r = grantlog.Reasoner(gravitino)
    with pytest.raises(GrantlogError) as exc, r.transaction() as tx:
        tx.insert("member", [("dave", "analysts")])
        tx.insert("allowed", [CAROL])
    _refused(exc, gravitino, "allowed")
    assert r.revision == 0 and ("dave", "analysts") not in r.rows("member")
    # an intermediate derived relation is refused alike; base relations are written
    with pytest.raises(GrantlogError) as exc:
        r.insert("deny_wins", [("carol", "select_table", "m1.lakehouse.sales.customers")])
    assert exc.value.diagnostics[0].code == "derived-relation"
    r.insert("member", [("dave", "analysts")])
    assert r.revision == 1


def test_a_writable_relation_takes_facts_and_rules(mixed: grantlog.Program) -> None:
    r = grantlog.Reasoner(mixed)
    r.insert("granted", [("bo", "read", "t2")])
    assert r.rows("granted") == {("ann", "read", "t1"), ("bo", "read", "t2")}
    assert r.check("bo", "read", "t2")
    r.retract("granted", [("bo", "read", "t2")])
    assert not r.check("bo", "read", "t2")
    with pytest.raises(GrantlogError) as exc:
        r.insert("allowed", [("bo", "read", "t2")])
    _refused(exc, mixed, "allowed")


def test_the_pydatalog_backend_refuses_alike(mixed: grantlog.Program) -> None:
    pytest.importorskip("pyDatalog")
    r = grantlog.Reasoner(mixed, backend="pydatalog")
    with pytest.raises(GrantlogError) as exc:
        r.insert("allowed", [("bo", "read", "t2")])
    _refused(exc, mixed, "allowed")
    r.insert("granted", [("bo", "read", "t2")])
    assert r.check("bo", "read", "t2").allowed


@settings(max_examples=150, deadline=None)
@given(st.data())
def test_generated_programs_refuse_writes_of_derived_relations(data: st.DataObject) -> None:
    """Generated programs without `@writable`: their text compiles exactly when it gives no
    facts of a derived relation; then every update of a derived relation is refused and
    changes nothing, and every update of a base relation applies."""
    prog = data.draw(gen.programs(), label="program")
    plain = dataclasses.replace(prog, derived=set())
    if any(prog.facts.get(rel) for rel in prog.derived):
        with pytest.raises(GrantlogError) as exc:
            grantlog.compile(plain.text())
        assert "derived-relation" in {d.code for d in exc.value.diagnostics}
    base = {rel: rows for rel, rows in prog.facts.items() if rel not in prog.derived}
    r = grantlog.Reasoner(grantlog.compile(plain.text(base)))
    before = r.all_rows()
    for kind, rel, rows in data.draw(gen.updates(prog), label="updates"):
        update = r.insert if kind == "insert" else r.retract
        if rel in prog.derived:
            with pytest.raises(GrantlogError) as exc:
                update(rel, rows)
            assert exc.value.diagnostics[0].code == "derived-relation"
            assert r.all_rows() == before
        else:
            update(rel, rows)
            before = r.all_rows()


def test_spark_inputs_are_base_facts_too(spark: Any, mixed: grantlog.Program) -> None:
    """`grantlog spark run --inputs` (spark_bridge.read_inputs / evaluate): an input of a
    derived relation is refused up front; of a `@writable` one, taken."""
    import grantlog.spark_bridge as sb

    df = spark.createDataFrame([("bo", "read", "t2")], "user string, op string, res string")
    with pytest.raises(GrantlogError) as exc:
        sb.evaluate(mixed, spark, {"allowed": df})
    assert exc.value.diagnostics[0].code == "derived-relation"
    got = sb.collect(sb.evaluate(mixed, spark, {"granted": df}), ["allowed"])
    assert got["allowed"] == {("ann", "read", "t1"), ("bo", "read", "t2")}


# -- the compiler ---------------------------------------------------------------------------------

def test_rule_files_may_not_mix_without_the_annotation() -> None:
    text = MIXED.replace("@writable ", "") + "granted(cy, read, t3).\n"
    with pytest.raises(GrantlogError) as exc:
        grantlog.compile(text, filename="mixed.gl")
    d = exc.value.diagnostics[0]
    assert (d.code, d.severity) == ("derived-relation", "error")
    line = text.count("\n", 0, text.index("granted(cy")) + 1
    assert (d.span.file, d.span.line) == ("mixed.gl", line)
    assert "`granted#1` at mixed.gl:7" in d.message and "@writable" in (d.help or "")
    # facts of a test block are writes too (the test runner inserts them)
    test = MIXED.replace("@writable ", "") + 'test "t" {\n  allowed(cy, read, t3).\n' \
        '  expect allowed(cy, read, t3).\n}\n'
    with pytest.raises(GrantlogError) as exc:
        grantlog.compile(test, filename="mixed.gl")
    assert exc.value.diagnostics[0].code == "derived-relation"
    # annotated: compiles, and the facts count
    ok = grantlog.compile(MIXED + "granted(cy, read, t3).\n", filename="mixed.gl")
    assert grantlog.Reasoner(ok).check("cy", "read", "t3")


def test_writable_is_for_derived_relations() -> None:
    with pytest.raises(GrantlogError) as exc:
        grantlog.compile("@writable rel member(u: string, g: string).\n"
                         "allowed(U, read, G) :- member(U, G).\n")
    d = exc.value.diagnostics[0]
    assert d.code == "bad-annotation" and "`member`" in d.message


def test_shipped_models_do_not_mix() -> None:
    for path in sorted((ROOT / "rules").glob("*.gl")):
        grantlog.compile(paths=[path])  # raises on mixing
    for example in sorted((ROOT / "examples").iterdir()):
        gls = sorted(example.glob("*.gl"))
        if gls:
            grantlog.compile(paths=gls)


def test_a_facts_file_on_the_command_line_is_a_write(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from grantlog.cli import main

    evil = tmp_path / "evil.gl"
    evil.write_text('allowed(carol, load_table, "m1.lakehouse.sales.customers").\n')
    args = ["check", "--model", "gravitino", "--facts", str(FACTS), "--facts", str(evil), *CAROL]
    assert main(args) == 2
    err = capsys.readouterr().err
    assert "error[derived-relation]" in err and f"{evil}:1:1" in err and "@writable" in err


# -- the store ------------------------------------------------------------------------------------

def test_the_store_backed_reasoner_refuses_and_writes_nothing(
        tmp_path: Path, gravitino: grantlog.Program) -> None:
    url = f"sqlite:///{tmp_path / 'facts.db'}"
    with grantlog.Reasoner(gravitino, store=url, follow=False, create=True) as r:
        with pytest.raises(GrantlogError) as exc:
            r.insert("allowed", [CAROL])
        _refused(exc, gravitino, "allowed")
        assert r.store.head()[0] == 0 and not r.check(*CAROL)
    con = sqlite3.connect(tmp_path / "facts.db")
    assert not con.execute("SELECT COUNT(*) FROM grantlog_log").fetchone()[0]
    assert not con.execute("SELECT name FROM sqlite_master WHERE name = 'rel_allowed'"
                           ).fetchall()
    con.close()


def test_the_store_keeps_facts_of_a_writable_relation(
        tmp_path: Path, mixed: grantlog.Program) -> None:
    url = f"sqlite:///{tmp_path / 'facts.db'}"
    with grantlog.Reasoner(mixed, store=url, follow=False, create=True) as r:
        r.insert("granted", [("bo", "read", "t2")])
    with grantlog.Reasoner(mixed, store=url, follow=False) as r:
        assert r.check("bo", "read", "t2")
    # the same store under rules that no longer let writes give `granted`: refused on open
    strict = grantlog.compile(MIXED.replace("@writable ", ""), filename="mixed.gl")
    with pytest.raises(GrantlogError) as exc:
        grantlog.Reasoner(strict, store=url, follow=False)
    d = exc.value.diagnostics[0]
    assert d.code == "derived-relation" and "`granted`" in d.message and "1 fact" in d.message


@pytest.mark.parametrize(("name", "text", "line"), [
    ("facts.gl", 'member(dave, analysts).\nallowed(carol, load_table, '
     '"m1.lakehouse.sales.customers").\n', 2),
    ("facts.jsonl", '{"relation": "member", "row": ["dave", "analysts"]}\n'
     '{"relation": "allowed", "row": ["carol", "load_table", '
     '"m1.lakehouse.sales.customers"]}\n', 2),
    ("allowed.csv", "carol,load_table,m1.lakehouse.sales.customers\n", 0),
])
def test_store_load_refuses_facts_of_derived_relations(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str, text: str,
        line: int) -> None:
    from grantlog.cli import main

    url = f"sqlite:///{tmp_path / 'facts.db'}"
    data = tmp_path / name
    data.write_text(text)
    assert main(["store", "load", url, str(data), "--rules", str(RULES), "--create"]) == 2
    err = capsys.readouterr().err
    where = f"{data}:{line}:" if line else f"{data}:"
    assert "error[derived-relation]" in err and where in err and "`allowed`" in err
    with grantlog.Reasoner(grantlog.compile(paths=[RULES]), store=url, follow=False,
                           create=True) as r:
        assert r.revision == 0  # nothing of the file was loaded


# -- the decision service -------------------------------------------------------------------------

@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """The Gravitino model and its example facts in a SQLite store, with one relation of the
    policy's own that is derived and `@writable`."""
    from grantlog.cli import main

    tmp = tmp_path_factory.mktemp("serve")
    policy = tmp / "policy.gl"
    policy.write_text('import "gravitino.gl".\n\nrel on_call(user: string).\n\n'
                      "/// on call, or written at run time\n"
                      "@writable rel break_glass(user: string).\n\n"
                      "break_glass(U) :- on_call(U).\n")
    store = f"sqlite:///{tmp / 'facts.db'}"
    assert main(["store", "load", store, str(FACTS), "--rules", str(policy), "--create"]) == 0
    (tmp / "tokens").write_text(f"{WRITE} check,write\n")
    (tmp / "tokens").chmod(0o600)
    proc, url = serve(tmp, str(policy), "--store", store, "--tokens", str(tmp / "tokens"))
    try:
        with httpx.Client(base_url=url, headers={"Authorization": f"Bearer {WRITE}"},
                          timeout=30) as client:
            yield {"client": client, "store": store,
                   "program": grantlog.compile(paths=[policy])}
    finally:
        stop(proc)


def _check(c: httpx.Client) -> bool:
    got = c.post("/v1/check", json=dict(zip(("subject", "operation", "resource"), CAROL,
                                            strict=True)))
    assert got.status_code == 200, got.text
    return bool(got.json()["allowed"])


def test_v1_write_of_a_derived_fact_is_422(server: dict[str, Any]) -> None:
    c = server["client"]
    assert not _check(c)
    rev = c.get("/v1/policy").json()["revision"]
    got = c.post("/v1/write", json={"insert": {"allowed": [list(CAROL)],
                                               "member": [["dave", "analysts"]]}})
    assert got.status_code == 422, got.text
    err = got.json()["error"]
    assert err["code"] == "derived-relation" and "`allowed`" in err["message"]
    assert "@writable" in json.dumps(err)
    assert not _check(c)  # the DENY still holds
    assert c.get("/v1/policy").json()["revision"] == rev  # nothing of the write applied
    got = c.post("/v1/write", json={"retract": {"deny_wins": [
        ["carol", "select_table", "m1.lakehouse.sales.customers"]]}})
    assert got.status_code == 422 and got.json()["error"]["code"] == "derived-relation"


def test_v1_write_of_a_writable_relation_is_accepted(server: dict[str, Any]) -> None:
    c = server["client"]
    got = c.post("/v1/write", json={"insert": {"break_glass": [["carol"]],
                                               "on_call": [["dave"]]}})
    assert got.status_code == 200, got.text
    with grantlog.Reasoner(server["program"], store=server["store"], follow=False) as r:
        assert r.revision == got.json()["revision"]
        assert r.rows("break_glass") == {("carol",), ("dave",)}


def test_a_policy_swap_may_not_keep_facts_of_a_relation_now_derived(
        mixed: grantlog.Program) -> None:
    """The service's policy swap without a store (grantlog/service/policy.py) carries the
    facts written at run time over to the new rules: not those of a relation the new rules
    derive without `@writable`."""
    from grantlog.service.policy import carried_facts

    old = grantlog.Reasoner(mixed)
    old.insert("granted", [("bo", "read", "t2")])
    assert carried_facts(old, mixed) == {"granted": {("bo", "read", "t2")}}
    strict = grantlog.compile(MIXED.replace("@writable ", ""), filename="mixed.gl")
    with pytest.raises(GrantlogError) as exc:
        carried_facts(old, strict)
    assert exc.value.diagnostics[0].code == "derived-relation"
