"""The explorer's tests, filters and fact-editing API over real HTTP (conftest's one
``explorer_url`` process: the Gravitino model and examples/gravitino/facts.gl), and the fact
edits of a workspace over real SQLite and PostgreSQL stores (a transaction with its author
and reason)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest
import sqlglot
from grantlog.rules import model_path

import grantlog
from grantlog.explorer.workspace import Workspace

ORDERS = "m1.lakehouse.sales.orders"
CHECK = f"check dave load_table {ORDERS}"
#: a test block with a passing and a failing expectation, and a rule no test can fire
ADDED = """

never_fires(X) :- entity(X, no_such_type).

test "pane: analysts read orders" {
    member(dave, analysts).
    expect allowed(dave, load_table, "m1.lakehouse.sales.orders").
    expect allowed(dave, drop_table, "m1.lakehouse.sales.orders").
}
"""


@pytest.fixture
def client(explorer_url: str) -> Iterator[httpx.Client]:
    """A client of the run's explorer; the model's text, the pins and facts put back after."""
    with httpx.Client(base_url=explorer_url, timeout=120) as c:
        original = c.get("/api/state").json()["docs"][0]["text"]
        yield c
        c.post("/api/facts/edit", json={"rel": "member", "retract": [["dave", "analysts"]]})
        assert c.post("/api/edit", json={"doc": 0, "text": original}).json()["live"]
        for p in c.get("/api/state").json()["pins"]:
            c.delete(f"/api/pins/{p['id']}")


def _post(c: httpx.Client, url: str, body: dict[str, Any], status: int = 200) -> Any:
    r = c.post(url, json=body)
    assert r.status_code == status, r.text
    return r.json()


def _ask(c: httpx.Client, question: str) -> Any:
    return _post(c, "/api/ask", {"question": question})["value"]


# ---- tests and coverage -------------------------------------------------------------------


def test_the_shipped_tests_pass_and_coverage_names_unfired_rules(client: httpx.Client) -> None:
    res = _post(client, "/api/tests", {})
    assert res["failed"] == 0 and res["passed"] == len(res["tests"]) >= 2
    cov = res["coverage"]
    assert 0 < cov["fired"] < cov["rules"] == cov["fired"] + len(cov["missed"])
    assert all(m["line"] >= 1 and m["end_line"] >= m["line"] for m in cov["missed"])


def test_a_failing_expectation_is_shown_with_its_why_not(client: httpx.Client) -> None:
    text = client.get("/api/state").json()["docs"][0]["text"]
    assert _post(client, "/api/edit", {"doc": 0, "text": text + ADDED})["live"]
    res = _post(client, "/api/tests", {})
    (t,) = [t for t in res["tests"] if t["name"] == "pane: analysts read orders"]
    assert not t["passed"] and t["failed"] == 1 and t["doc"] == 0
    good, bad = t["expects"]
    assert good["passed"] and not bad["passed"] and "drop_table" in bad["text"]
    assert "does not" in bad["message"] and bad["line"] == text.count("\n") + 8
    # the rule no test fires, at its line of the edited document
    (never,) = [m for m in res["coverage"]["missed"] if m["rule"].startswith("never_fires")]
    assert never["doc"] == 0 and never["line"] == text.count("\n") + 3
    why = _post(client, "/api/tests/why", {"test": t["index"], "expect": bad["index"]})
    assert why["value"] == [] and not why["graph"]["holds"]
    proof = _post(client, "/api/tests/why", {"test": t["index"], "expect": good["index"]})
    assert proof["value"] == [""] and proof["graph"]["holds"]
    # the test's facts are its own: the workspace's dave is still not an analyst
    assert _ask(client, CHECK) is False
    _post(client, "/api/tests/why", {"test": t["index"], "expect": 9}, 422)
    _post(client, "/api/tests/why", {"test": "0", "expect": 0}, 422)


# ---- filters --------------------------------------------------------------------------------


def test_a_filter_as_conditions_and_sql_in_every_dialect(client: httpx.Client) -> None:
    opts = client.get("/api/filter/options").json()
    assert {"trino", "spark", "postgres", "duckdb", "sqlite"} <= set(opts["dialects"])
    path = {**opts["layout"], "parent": None, "path": "path"}
    for dialect in opts["dialects"]:
        f = _post(client, "/api/filter", {"subject": "alice", "operation": "load_table",
                                          "dialect": dialect, "layout": path})
        assert f["conditions"] == {"and": [{"type": "table"}, {"under": "m1.lakehouse.sales"}]}
        assert f["sql"].startswith("SELECT") and ('"kind"' in f["sql"] or "`kind`" in f["sql"])
        sqlglot.parse_one(f["sql"], read=dialect)  # it is that dialect's SQL
        assert "/m1/m1.lakehouse/m1.lakehouse.sales/" in f["sql"]
    where = _post(client, "/api/filter", {"subject": "alice", "operation": "load_table",
                                          "dialect": "trino", "where": True,
                                          "layout": opts["layout"]})
    assert not where["sql"].startswith("SELECT") and "RECURSIVE" in where["sql"]


def test_a_filter_the_layout_cannot_express_is_refused(client: httpx.Client) -> None:
    lay = {"table": "objects", "id": "id"}  # no type column, no parent or path
    err = _post(client, "/api/filter", {"subject": "alice", "operation": "load_table",
                                        "dialect": "spark", "layout": lay}, 422)
    assert err["errors"][0]["code"] == "filter-layout"
    err = _post(client, "/api/filter", {"subject": "alice", "operation": "load_table",
                                        "dialect": "mysql"}, 422)
    assert err["errors"][0]["code"] == "bad-option"
    err = _post(client, "/api/filter", {"subject": "alice", "operation": "load_table",
                                        "layout": {"table": "a.b"}}, 422)
    assert err["errors"][0]["code"] == "bad-layout"


# ---- fact editing ---------------------------------------------------------------------------


def test_a_fact_added_then_deleted_flips_an_answer_and_back(client: httpx.Client) -> None:
    assert _ask(client, CHECK) is False
    table = client.get("/api/facts", params={"rel": "member"}).json()
    assert table["editable"] and ["dave", "analysts"] not in table["rows"]
    out = _post(client, "/api/facts/edit", {"rel": "member", "insert": [["dave", "analysts"]],
                                            "reason": "onboarding"})
    assert {r["name"]: r["rows"] for r in out["relations"]}["member"] == len(table["rows"]) + 1
    assert _ask(client, CHECK) is True
    # an edit of the rules recompiles: the page's fact edits are kept
    text = client.get("/api/state").json()["docs"][0]["text"]
    assert _post(client, "/api/edit", {"doc": 0, "text": text + "\n// a comment\n"})["live"]
    assert _ask(client, CHECK) is True
    _post(client, "/api/facts/edit", {"rel": "member", "retract": [["dave", "analysts"]]})
    assert _ask(client, CHECK) is False
    assert ["dave", "analysts"] not in client.get(
        "/api/facts", params={"rel": "member"}).json()["rows"]


@pytest.mark.parametrize(("rel", "row", "code"), [
    ("allowed", ["a", "load_table", ORDERS], "derived-relation"),
    ("member", ["dave"], "bad-fact"),
    ("no_such_relation", ["x"], "unknown-relation"),
])
def test_bad_rows_get_the_compilers_diagnostics(client: httpx.Client, rel: str, row: list[str],
                                                code: str) -> None:
    err = _post(client, "/api/facts/edit", {"rel": rel, "insert": [row]}, 422)
    assert err["errors"][0]["code"] == code
    assert not client.get("/api/facts", params={"rel": "allowed"}).json()["editable"]


def test_a_malformed_edit_is_refused(client: httpx.Client) -> None:
    assert _post(client, "/api/facts/edit", {"rel": "member", "insert": "x"},
                 422)["errors"][0]["code"] == "bad-request"


def test_with_a_store_an_edit_is_a_transaction_with_author_and_reason(store_url: str) -> None:
    """SQLite and PostgreSQL (conftest's ``store_url``: a fresh store of each kind)."""
    url = store_url
    program = grantlog.compile(None, paths=[str(model_path("gravitino"))])
    ws = Workspace.open([], "gravitino", [], store=url)
    try:
        out = ws.write_facts("member", [["dave", "analysts"]], [], author="maria",
                             reason="onboarding dave")
        last = ws.reasoner.transactions()[-1]
        assert (last.revision, last.author, last.reason, last.added) == (
            out["revision"], "maria", "onboarding dave", 1)
        assert ws.fact_edits == []  # the store keeps it, not the page
        ws.compile({})  # a recompile reads the store again
        assert ("dave", "analysts") in ws.reasoner.base_facts()["member"]
    finally:
        ws.close()
    again = grantlog.Reasoner(program, store=url)
    try:
        assert ("dave", "analysts") in again.base_facts()["member"]
    finally:
        again.close()
