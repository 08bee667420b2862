"""A DENY that is only a typo (issue 27, item 1): a constant of a question (check, list, who,
filter: the subject, operation, resource, ``type=``, ``within=``) that no rule, declaration
or fact mentions in its column gets an ``unknown-constant`` warning with a "did you mean"; with
``strict`` it is an error. In the API, the CLI, the service (a real `grantlog serve`) and the
client; on the shipped Gravitino model and on a model of its own names."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from grantlog.engine.core.suggest import closest
from httpserver import serve, stop

import grantlog
from grantlog.cli import main

ROOT = Path(__file__).resolve().parent.parent
RULES = str(ROOT / "rules" / "gravitino.gl")
FACTS = str(ROOT / "examples" / "gravitino" / "facts.gl")
T = "m1.lakehouse.sales.orders"
CODE = "unknown-constant"

#: a model with none of the shipped models' names: `can` decided, `under` the hierarchy
OWN = """
@hierarchy(type) rel kind(thing: string, kind: string).
@hierarchy(edge) rel under(parent: string, child: string).
@demand @hierarchy(strict) rel above(top: string, thing: string).
@hierarchy(closure) rel above_or_self(top: string, thing: string).
@decision rel can(who: string, verb: string, thing: string).
rel gives(who: string, verb: string, thing: string).

above(P, C) :- under(P, C).
above(A, C) :- above(A, P), under(P, C).
above_or_self(X, X) :- kind(X, _).
above_or_self(A, X) :- above(A, X).
can(W, V, T) :- gives(W, V, A), above_or_self(A, T), V = peek.
can(W, V, T) :- gives(W, V, A), above_or_self(A, T), V = poke.

kind(shelf, box). kind(jar, pot). kind(lid, pot).
under(shelf, jar). under(shelf, lid).
gives(ann, peek, shelf).
"""


@pytest.fixture(scope="module")
def gravitino() -> grantlog.Reasoner:
    return grantlog.Reasoner(grantlog.compile(paths=[RULES, FACTS]))


@pytest.fixture(scope="module")
def own() -> grantlog.Reasoner:
    return grantlog.Reasoner(grantlog.compile(OWN))


def _only(warnings: Any) -> Any:
    assert len(warnings) == 1, warnings
    (w,) = warnings
    assert w.code == CODE and w.severity == "warning"
    return w


# -- the API ------------------------------------------------------------------------------------

@pytest.mark.parametrize(("args", "what", "typo", "near"), [
    (("alice", "load_tabel", T), "operation", "load_tabel", "load_table"),
    (("alcie", "load_table", T), "subject", "alcie", "alice"),
    (("alice", "load_table", "m1.lakehouse.sales.ordrs"), "resource",
     "m1.lakehouse.sales.ordrs", T),
])
def test_a_typo_in_a_check_warns_with_a_suggestion(gravitino: grantlog.Reasoner,
                                                   args: tuple[str, str, str], what: str,
                                                   typo: str, near: str) -> None:
    d = gravitino.check(*args)
    assert not d.allowed and d.warned(CODE)
    w = _only(d.warnings)
    assert w.message == f"no rule, declaration or fact has `{typo}` as the {what}"
    assert w.help == f"did you mean `{near}`?"
    assert d == grantlog.Decision(False)  # warnings are not part of equality
    with pytest.raises(grantlog.GrantlogError) as info:
        gravitino.check(*args, strict=True)
    (e,) = info.value.diagnostics
    assert (e.code, e.severity, e.message) == (CODE, "error", w.message)


def test_a_real_deny_and_an_allow_have_no_warnings(gravitino: grantlog.Reasoner) -> None:
    denied = gravitino.check("carol", "load_table", "m1.lakehouse.sales.customers")
    assert not denied.allowed and denied.warnings == ()
    assert gravitino.check("carol", "load_table", "m1.lakehouse.sales.customers",
                           strict=True).warnings == ()
    allowed = gravitino.check("alice", "load_table", T, strict=True)
    assert allowed.allowed and allowed.warnings == ()


def test_a_value_known_only_in_another_column_is_unknown_in_this_one(
        own: grantlog.Reasoner) -> None:
    """`ann` is someone, not a verb: no rule or fact can make her one."""
    w = _only(own.check("ann", "ann", "jar").warnings)
    assert w.message.endswith("`ann` as the verb")


def test_a_value_inserted_at_run_time_is_known_from_then_on() -> None:
    r = grantlog.Reasoner(grantlog.compile(paths=[RULES, FACTS]))
    assert r.check("zed", "load_table", T).warned(CODE)
    r.insert("member", [("zed", "nobody")])
    assert r.check("zed", "load_table", T).warnings == ()


def test_empty_listings_warn_and_strict_raises(gravitino: grantlog.Reasoner) -> None:
    cases: list[tuple[Any, str]] = [
        (lambda s: gravitino.list("alice", "load_table", within="m1.lakehouse.salez",
                                  strict=s), "m1.lakehouse.sales"),
        (lambda s: gravitino.list("alice", "load_table", type="tabel", strict=s), "table"),
        (lambda s: gravitino.list("alice", "load_tabel", strict=s), "load_table"),
        (lambda s: gravitino.who("load_tabel", T, strict=s), "load_table"),
    ]
    for ask, near in cases:
        got = ask(False)
        assert list(got) == []
        assert _only(got.warnings).help == f"did you mean `{near}`?"
        with pytest.raises(grantlog.GrantlogError) as info:
            ask(True)
        assert info.value.diagnostics[0].code == CODE
    assert gravitino.list("alice", "load_table").warnings == ()
    assert gravitino.list("nobody-at-all-x", "load_table").warnings != ()


def test_a_filter_warns_of_a_type_and_of_what_makes_it_false(
        gravitino: grantlog.Reasoner) -> None:
    assert _only(gravitino.filter("alice", "load_table", type="tabel").warnings).help == \
        "did you mean `table`?"
    f = gravitino.filter("alice", "load_tabel")
    assert f.cond == ("false",) and _only(f.warnings).help == "did you mean `load_table`?"
    assert gravitino.filter("alice", "load_table").warnings == ()
    with pytest.raises(grantlog.GrantlogError):
        gravitino.filter("alice", "load_tabel", strict=True)


def test_a_model_of_its_own_names(own: grantlog.Reasoner) -> None:
    assert own.check("ann", "peek", "jar").allowed
    d = own.check("ann", "peak", "jar")
    w = _only(d.warnings)
    # the columns are named as the model declares them
    assert w.message == "no rule, declaration or fact has `peak` as the verb"
    assert w.help == "did you mean `peek`?"
    assert _only(own.check("anne", "peek", "jar").warnings).message.endswith("`anne` as the who")
    assert own.check("ann", "poke", "jar").warnings == ()  # a real deny
    assert _only(own.list("ann", "peek", type="pott").warnings).help == "did you mean `pot`?"
    assert _only(own.list("ann", "peek", within="shelv").warnings).message.endswith(
        "`shelv` as the thing")
    assert own.list("ann", "peek", type="pot") == ["jar", "lid"]


def test_the_suggestion_helper() -> None:
    assert closest("load_tabel", ["load_table", "drop_table", 3]) == "load_table"
    assert closest("ab", ["ax", "ay"]) is None  # below the cutoff
    assert closest("x", []) is None and closest(5, ["5"]) is None
    assert closest("ab", ["abc", "abd"]) == "abc"  # a tie goes to the smaller name
    assert closest("abc", ["abc", "abd"]) == "abd"  # never the word itself


# -- the CLI ------------------------------------------------------------------------------------

def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    got = capsys.readouterr()
    return code, got.out, got.err


INPUTS = ("--model", "gravitino", "--facts", FACTS)


@pytest.mark.parametrize(("argv", "near"), [
    (("check", *INPUTS, "alice", "load_tabel", T), "load_table"),
    (("check", *INPUTS, "alcie", "load_table", T), "alice"),
    (("check", *INPUTS, "alice", "load_table", "m1.lakehouse.sales.ordrs"), T),
    (("list", *INPUTS, "alice", "load_table", "--within", "m1.lakehouse.salez"),
     "m1.lakehouse.sales"),
    (("list", *INPUTS, "alice", "load_table", "--type", "tabel"), "table"),
    (("who", *INPUTS, "load_tabel", T), "load_table"),
])
def test_cli_warns_exits_1_and_2_with_strict(capsys: pytest.CaptureFixture[str],
                                             argv: tuple[str, ...], near: str) -> None:
    code, out, err = run(capsys, *argv)
    assert code == 1
    assert "warning[unknown-constant]: no rule, declaration or fact has " in err
    assert f"help: did you mean `{near}`?" in err
    assert "<api>" not in err and "unknown-constant" not in out
    code, out, err = run(capsys, *argv, "--strict")
    assert code == 2 and "error[unknown-constant]" in err and out == ""


def test_cli_json_carries_the_warnings(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "check", *INPUTS, "alice", "load_tabel", T, "--json")
    assert code == 1
    payload = json.loads(out)
    assert payload["allowed"] is False
    assert payload["warnings"] == [{
        "code": CODE, "help": "did you mean `load_table`?",
        "message": "no rule, declaration or fact has `load_tabel` as the operation"}]
    code, out, err = run(capsys, "check", *INPUTS, "carol", "load_table",
                         "m1.lakehouse.sales.customers", "--json", "--strict")
    assert code == 1 and "warnings" not in json.loads(out) and "unknown-constant" not in err
    code, out, _ = run(capsys, "filter", *INPUTS, "alice", "load_tabel")
    assert code == 0 and json.loads(out)["warnings"][0]["code"] == CODE


# -- the service and the client -----------------------------------------------------------------

@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    tmp = tmp_path_factory.mktemp("typos")
    proc, url = serve(tmp, RULES, FACTS)
    yield url
    stop(proc)


def test_service_answers_carry_warnings_and_strict_is_a_422(server: str) -> None:
    c = httpx.Client(base_url=server, timeout=30)
    typo = {"subject": "alice", "operation": "load_tabel", "resource": T}
    got = c.post("/v1/check", json=typo).json()
    assert got["allowed"] is False
    assert got["warnings"] == [{
        "code": CODE, "help": "did you mean `load_table`?",
        "message": "no rule, declaration or fact has `load_tabel` as the operation"}]
    denied = c.post("/v1/check", json={"subject": "carol", "operation": "load_table",
                                       "resource": "m1.lakehouse.sales.customers"}).json()
    assert denied["allowed"] is False and "warnings" not in denied
    strict = c.post("/v1/check", json={**typo, "strict": True})
    assert strict.status_code == 422 and strict.json()["error"]["code"] == CODE
    assert c.post("/v1/check", json={**typo, "strict": "yes"}).status_code == 422
    batch = c.post("/v1/check/batch", json={"checks": [typo]}).json()["results"]
    assert batch[0]["warnings"][0]["code"] == CODE
    assert c.post("/v1/check/batch", json={"checks": [typo], "strict": True}
                  ).status_code == 422
    lines = [json.loads(x) for x in c.post("/v1/list", json={
        "subject": "alice", "operation": "load_table", "type": "tabel"}).text.splitlines()]
    assert lines == [{"revision": lines[0]["revision"], "count": 0, "warnings": [{
        "code": CODE, "help": "did you mean `table`?",
        "message": "no rule, declaration or fact has `tabel` as the type"}]}]
    paged = c.post("/v1/who", json={"operation": "load_tabel", "resource": T,
                                    "limit": 10}).json()
    assert paged["subjects"] == [] and paged["warnings"][0]["code"] == CODE
    assert c.post("/v1/who", json={"operation": "load_tabel", "resource": T,
                                   "strict": True}).status_code == 422
    got = c.post("/v1/filter", json={"subject": "alice", "operation": "load_tabel"}).json()
    assert got["condition"] is False and got["warnings"][0]["code"] == CODE
    assert c.post("/v1/filter", json={"subject": "alice", "operation": "load_tabel",
                                      "strict": True}).status_code == 422


def test_client_exposes_the_warnings_and_passes_strict(server: str) -> None:
    with grantlog.Client(server) as c:
        d = c.check("alice", "load_tabel", T)
        assert not d.allowed and d.warned(CODE) and d.warnings[0].severity == "warning"
        assert d.warnings[0].help == "did you mean `load_table`?"
        assert c.check("alice", "load_table", T).warnings == ()
        (b,) = c.check_many([("alice", "load_tabel", T)])
        assert b.warned(CODE)
        got = c.list("alice", "load_table", type="tabel")
        assert list(got) == [] and got.warnings[0].code == CODE
        assert c.who("load_tabel", T).warnings[0].code == CODE
        assert c.list("alice", "load_table").warnings == ()
        for call in (lambda: c.check("alice", "load_tabel", T, strict=True),
                     lambda: c.check_many([("alice", "load_tabel", T)], strict=True),
                     lambda: c.list("alice", "load_tabel", strict=True),
                     lambda: c.who("load_tabel", T, strict=True)):
            with pytest.raises(grantlog.GrantlogError) as info:
                call()
            assert info.value.diagnostics[0].code == CODE
