"""The explorer's suggestion routes over real HTTP (conftest.py's one ``grantlog explore``
process): ``POST /api/suggest`` answers a DENY with checked suggestions and the why-not graph's
nodes they repair; ``POST /api/suggest/try`` applies one in memory and returns its undo; bad
requests are refused with their codes. Facts changed here are put back."""

from __future__ import annotations

import httpx
import pytest

CUSTOMERS = "m1.lakehouse.sales.customers"
DENIED = f"check carol select_table {CUSTOMERS}"


@pytest.fixture
def client(explorer_url: str) -> httpx.Client:
    with httpx.Client(base_url=explorer_url, timeout=60) as c:
        yield c


def test_a_deny_gets_suggestions_and_marks(client: httpx.Client) -> None:
    got = client.post("/api/suggest", json={"question": DENIED}).json()
    assert got["holds"] is False and got["suggestions"]
    assert got["goal"] == f'allowed(carol, select_table, "{CUSTOMERS}")'
    sizes = [s["size"] for s in got["suggestions"]]
    assert sizes == sorted(sizes)
    # every mark names a node of the why-not graph /api/ask draws, and a suggestion
    graph = client.post("/api/ask", json={"question": DENIED}).json()["graph"]
    nodes = {n["data"]["id"]: n["data"] for n in graph["nodes"]}
    assert got["marks"]
    for nid, nums in got["marks"].items():
        assert nodes[nid]["cls"] == "failed"
        assert all(0 <= i < len(got["suggestions"]) for i in nums)
    assert any(nodes[nid]["fact"].startswith("not denied(") for nid in got["marks"])


def test_try_it_flips_and_its_undo_puts_the_facts_back(client: httpx.Client) -> None:
    got = client.post("/api/suggest", json={"question": DENIED}).json()
    s = next(s for s in got["suggestions"] if s["edits"][0]["op"] == "retract")
    done = client.post("/api/suggest/try", json={"edits": s["edits"]}).json()
    try:
        assert done["applied"] == len(s["edits"])
        assert client.post("/api/ask", json={"question": DENIED}).json()["value"] is True
    finally:
        client.post("/api/suggest/try", json={"edits": done["undo"]})
    assert client.post("/api/ask", json={"question": DENIED}).json()["value"] is False


def test_an_allow_has_nothing_to_suggest(client: httpx.Client) -> None:
    got = client.post("/api/suggest", json={
        "question": "check alice select_table m1.lakehouse.sales.orders"}).json()
    assert got["holds"] is True and got["suggestions"] == []


@pytest.mark.parametrize("path,body,code", [
    ("/api/suggest", {"question": "list alice select_table"}, "bad-request"),
    ("/api/suggest", {"question": 3}, "bad-request"),
    ("/api/suggest", {"question": "check alice"}, "bad-question"),
    ("/api/suggest/try", {"edits": []}, "bad-request"),
    ("/api/suggest/try", {"edits": [{"op": "drop", "rel": "member", "row": ["a"]}]},
     "bad-request"),
    ("/api/suggest/try", {"edits": [{"op": "insert", "rel": "allowed",
                                     "row": ["a", "b", "c"]}]}, "derived-relation"),
    ("/api/suggest/try", {"edits": [{"op": "insert", "rel": "member", "row": ["a"]}]},
     "bad-fact"),
])
def test_bad_requests_are_refused(client: httpx.Client, path: str, body: object,
                                  code: str) -> None:
    r = client.post(path, json=body)
    assert r.status_code == 422
    assert r.json()["errors"][0]["code"] == code
