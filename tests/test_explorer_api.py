"""The explorer's HTTP API over real HTTP (`grantlog explore` in a subprocess: conftest's
``explorer_url``, one per run): state, diagnostics as you type, asking with proof graphs,
pins that flip after an edit, facts tables, and the bounds (JSON only, body size, host)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest

import grantlog
from grantlog.explorer import ask, proofs

ORDERS = "m1.lakehouse.sales.orders"


@pytest.fixture
def client(explorer_url: str) -> Iterator[httpx.Client]:
    """A client of the run's explorer; the model's text and the pins are put back after."""
    with httpx.Client(base_url=explorer_url, timeout=60) as c:
        original = c.get("/api/state").json()["docs"][0]["text"]
        yield c
        assert c.post("/api/edit", json={"doc": 0, "text": original}).json()["live"]
        for p in c.get("/api/state").json()["pins"]:
            c.delete(f"/api/pins/{p['id']}")


def _ask(c: httpx.Client, question: str) -> dict[str, Any]:
    r = c.post("/api/ask", json={"question": question})
    assert r.status_code == 200, r.text
    return dict(r.json())


def test_state_lists_documents_relations_and_completions(client: httpx.Client) -> None:
    s = client.get("/api/state").json()
    assert [(d["name"], d["editable"]) for d in s["docs"]] == [("gravitino.gl", True),
                                                                ("facts.gl", True)]
    assert s["diagnostics"] == []
    names = {r["name"]: r for r in s["relations"]}
    assert names["entity"]["columns"] == ["object", "type"] and names["entity"]["rows"] > 10
    assert any(x.startswith("allowed(") for x in s["vocabulary"]["relations"])
    assert ORDERS in s["vocabulary"]["constants"]


def test_the_page_and_its_assets_are_served_from_the_package(client: httpx.Client) -> None:
    page = client.get("/")
    assert page.status_code == 200 and "/static/vendor/cytoscape.min.js" in page.text
    assert "http://" not in page.text and "https://" not in page.text  # no CDN
    js = client.get("/static/vendor/cytoscape-dagre.min.js")
    assert js.status_code == 200 and js.headers["content-type"].startswith("text/javascript")
    assert client.get("/static/explorer.js").status_code == 200
    for name in ("../app.py", "..%2Fapp.py", "/etc/passwd", "vendor/../../app.py"):
        assert client.get(f"/static/{name}").status_code == 404


def test_an_error_is_diagnosed_with_its_line_and_the_live_program_kept(
        client: httpx.Client) -> None:
    text = client.get("/api/state").json()["docs"][0]["text"]
    lines = text.count("\n")
    r = client.post("/api/edit", json={"doc": 0, "text": text + "broken(X) :- nope(.\n"}).json()
    assert r["live"] is False
    [d] = r["diagnostics"]
    assert (d["doc"], d["line"], d["code"], d["severity"]) == (0, lines + 1, "syntax-error",
                                                               "error")
    assert d["col"] == len("broken(X) :- nope(") + 1
    # answers still come from the last text that compiled
    assert _ask(client, f"check alice load_table {ORDERS}")["value"] is True
    warn = client.post("/api/edit", json={"doc": 0, "text": text + "w(X) :- nowhere(X).\n"})
    assert warn.json()["live"] is True
    assert [x["code"] for x in warn.json()["diagnostics"]] == ["unknown-relation"]


def test_check_answers_with_a_proof_graph(client: httpx.Client) -> None:
    a = _ask(client, f"check alice load_table {ORDERS}")
    assert a["value"] is True and a["summary"].startswith("ALLOW")
    g = a["graph"]
    assert g["holds"] and g["nodes"][0]["data"]["cls"] == "derived"
    classes = {n["data"]["cls"] for n in g["nodes"]}
    assert {"derived", "rule", "fact", "under"} <= classes
    ids = {n["data"]["id"] for n in g["nodes"]}
    assert all(e["data"]["source"] in ids and e["data"]["target"] in ids for e in g["edges"])
    # the hierarchy's closure is folded: no node of its relations is drawn but `under` ones
    fold = proofs.folded_relations(grantlog.compile(paths=[_model()]))
    assert fold
    drawn = {proofs.relation_of(n["data"].get("fact", "")) for n in g["nodes"]
             if n["data"]["cls"] != "under"}
    assert not drawn & fold


def test_why_not_marks_the_failed_premises(client: httpx.Client) -> None:
    a = _ask(client, f"check bob drop_table {ORDERS}")
    assert a["value"] is False and a["summary"].startswith("DENY")
    nodes = [n["data"] for n in a["graph"]["nodes"]]
    assert nodes[0]["cls"] == "failed" and "[fails]" in nodes[0]["label"]
    assert any(n["cls"] == "holds" for n in nodes)
    assert any(n["cls"] == "failed" and n.get("kind") == "missing" for n in nodes)
    assert any(n["cls"] == "rule" and n["label"].startswith("via ") for n in nodes)


def test_list_who_and_goals(client: httpx.Client) -> None:
    r = grantlog.Reasoner(grantlog.compile(paths=[_model(), _facts()]))
    lst = _ask(client, "list alice load_table")
    assert lst["value"] == [str(x) for x in r.list("alice", "load_table")]
    who = _ask(client, f"who load_table {ORDERS}")
    assert who["value"] == [str(x) for x in r.who("load_table", ORDERS)]
    goal = _ask(client, f'allowed(U, load_table, "{ORDERS}")')
    assert sorted(row["U"] for row in goal["rows"]) == who["value"]
    assert goal["graph"]["holds"]


@pytest.mark.parametrize("question", ["", "check alice", "who a b c", "hello there",
                                      'check "unterminated'])
def test_a_bad_question_is_a_diagnostic(client: httpx.Client, question: str) -> None:
    r = client.post("/api/ask", json={"question": question})
    assert r.status_code == 422
    assert r.json()["errors"][0]["code"] == "bad-question"


def test_a_pinned_check_flips_after_an_edit(client: httpx.Client) -> None:
    question = f"check bob drop_table {ORDERS}"
    pins = client.post("/api/pins", json={"question": question}).json()["pins"]
    assert [(p["question"], p["value"], p["flipped"]) for p in pins] == [
        (question, False, False)]
    listed = client.post("/api/pins", json={"question": "who drop_table " + ORDERS}).json()
    text = client.get("/api/state").json()["docs"][0]["text"]
    edit = text + '\ngive_bob: allowed("bob", drop_table, T) :- entity(T, table).\n'
    r = client.post("/api/edit", json={"doc": 0, "text": edit}).json()
    assert r["live"]
    by_q = {p["question"]: p for p in r["pins"]}
    assert (by_q[question]["value"], by_q[question]["flipped"]) == (True, True)
    who = by_q["who drop_table " + ORDERS]
    assert who["flipped"] and who["added"] == ["bob"] and who["removed"] == []
    # an edit that changes neither answer: no flip
    r = client.post("/api/edit", json={"doc": 0, "text": edit + "// a comment\n"}).json()
    assert not any(p["flipped"] for p in r["pins"])
    pid = listed["pins"][-1]["id"]
    assert client.delete(f"/api/pins/{pid}").status_code == 200
    assert client.delete(f"/api/pins/{pid}").status_code == 404


def test_facts_tables_filter(client: httpx.Client) -> None:
    t = client.get("/api/facts", params={"rel": "entity", "contains": "SALES"}).json()
    assert t["columns"] == ["object", "type"]
    assert t["matched"] == len(t["rows"]) > 0
    assert all(any("sales" in c for c in row) for row in t["rows"])
    assert [ORDERS, "table"] in t["rows"]
    assert client.get("/api/facts", params={"rel": "no_such"}).json()["rows"] == []


def test_bounds(client: httpx.Client, explorer_url: str) -> None:
    # JSON only: a cross-site form post is refused
    r = client.post("/api/ask", content=b"question=x",
                    headers={"content-type": "application/x-www-form-urlencoded"})
    assert r.status_code == 400 and r.json()["errors"][0]["code"] == "malformed-json"
    assert client.post("/api/ask", content=b"{", headers={
        "content-type": "application/json"}).status_code == 400
    big = client.post("/api/edit", json={"doc": 0, "text": "x" * (9 * 2**20)})
    assert big.status_code == 413 and big.json()["errors"][0]["code"] == "body-too-large"
    assert client.post("/api/edit", json={"doc": 7, "text": ""}).status_code == 422
    assert client.post("/api/edit", json={"doc": "0", "text": ""}).status_code == 422
    # another Host (DNS rebinding) is refused
    assert httpx.get(explorer_url + "/api/state", headers={"host": "evil.example"}
                     ).status_code == 400


def test_a_question_parses_into_its_form() -> None:
    assert ask.parse('check alice load_table "m1.a b"') == ask.Question(
        "check", ("alice", "load_table", "m1.a b"))
    assert ask.parse("explain allowed(U, O, R).") == ask.Question("goal", ("allowed(U, O, R)",))
    assert ask.parse("list alice read table").args == ("alice", "read", "table")


def _model() -> str:
    from grantlog.rules import model_path

    return str(model_path("gravitino"))


def _facts() -> str:
    from pathlib import Path

    return str(Path(__file__).resolve().parent.parent / "examples/gravitino/facts.gl")
