"""The explorer's what-if endpoints over real HTTP (conftest's ``explorer_url``: one `grantlog
explore --log FILE` per run): the permission diff between the served rules and a draft, grouped
per subject and resource and paged, the example proof of each difference, the draft's errors,
the served program left alone, and the decision log's requests the draft would answer
otherwise (the same replay as `grantlog logs replay`)."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from grantlog.engine.answer.whatif import diff_programs, diff_reasoners

import grantlog

ROOT = Path(__file__).resolve().parent.parent
ORDERS = "m1.lakehouse.sales.orders"
GIVE_BOB = '\ngive_bob: allowed("bob", drop_table, T) :- entity(T, table).\n'
# analysts (alice) lose select_table on the orders table: a DENY beats their ALLOW
DENY_ORDERS = 'privilege("m1/role/analyst", select_table, "m1.lakehouse.sales.orders", deny).\n'


@pytest.fixture
def client(explorer_url: str, explorer_log: Path) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=explorer_url, timeout=60) as c:
        yield c
    explorer_log.write_text("")


def _served(c: httpx.Client) -> str:
    return str(c.get("/api/state").json()["docs"][0]["text"])


def _diff(c: httpx.Client, draft: str, **extra: Any) -> dict[str, Any]:
    r = c.post("/api/whatif/diff", json={"drafts": {"0": draft}, **extra})
    assert r.status_code == 200, r.text
    return dict(r.json())


def _changes(d: dict[str, Any], side: str) -> dict[str, str]:
    return {c["fact"]: c["what"] for g in d["groups"] for c in g[side]}


def test_the_diff_shows_gained_and_lost_decisions_per_subject_and_resource(
        client: httpx.Client) -> None:
    served = _served(client)
    d = _diff(client, served + GIVE_BOB + DENY_ORDERS, limit=500)
    assert d["compiled"] and d["relation"] == "allowed"
    gained, lost = _changes(d, "gained"), _changes(d, "lost")
    assert gained[f'allowed(bob, drop_table, "{ORDERS}")'] == "drop_table"
    assert f'allowed(alice, load_table, "{ORDERS}")' in lost
    assert d["counts"]["gained"] == len(gained) and d["counts"]["lost"] == len(lost)
    # grouped: one row per (subject, resource), sorted, each change in its group
    keys = [(g["subject"], g["resource"]) for g in d["groups"]]
    assert keys == sorted(set(keys)) and d["counts"]["groups"] == len(keys)
    alice = next(g for g in d["groups"] if (g["subject"], g["resource"]) == ("alice", ORDERS))
    assert {c["what"] for c in alice["lost"]} >= {"load_table"} and not alice["gained"]
    # the same differences as `grantlog diff` between the two rule sets (one comparison)
    before = grantlog.compile(paths=["m.gl", "f.gl"], files={
        "m.gl": served, "f.gl": (ROOT / "examples/gravitino/facts.gl").read_text()},
        disk=False)
    after = grantlog.compile(paths=["m.gl", "f.gl"], files={
        "m.gl": served + GIVE_BOB + DENY_ORDERS,
        "f.gl": (ROOT / "examples/gravitino/facts.gl").read_text()}, disk=False)
    w = diff_programs(before, after, "allowed", proofs=False)
    assert set(gained) == {x.fact for x in w.gained}
    assert set(lost) == {x.fact for x in w.lost}


def test_a_large_diff_is_paged_and_says_how_many_were_left_out(client: httpx.Client) -> None:
    draft = _served(client) + GIVE_BOB
    whole = _diff(client, draft, limit=500)
    n = whole["counts"]["groups"]
    assert n >= 3 and whole["left_out"] == 0
    first = _diff(client, draft, limit=2)
    assert len(first["groups"]) == 2 and first["left_out"] == n - 2
    rest = _diff(client, draft, offset=2, limit=500)
    assert first["groups"] + rest["groups"] == whole["groups"]
    assert _diff(client, draft, offset=n)["groups"] == []


def test_each_difference_has_an_example_proof_on_the_side_that_holds_it(
        client: httpx.Client) -> None:
    d = _diff(client, _served(client) + GIVE_BOB + DENY_ORDERS)
    assert d["compiled"]
    gained = f'allowed(bob, drop_table, "{ORDERS}")'
    lost = f'allowed(alice, load_table, "{ORDERS}")'
    p = client.post("/api/whatif/proof", json={"fact": gained, "side": "draft"}).json()
    assert p["graph"]["holds"] and p["side"] == "draft"
    assert any("give_bob" in (n["data"].get("rule") or n["data"]["label"])
               for n in p["graph"]["nodes"])
    p = client.post("/api/whatif/proof", json={"fact": lost, "side": "served"}).json()
    assert p["graph"]["holds"] and len(p["graph"]["nodes"]) >= 5
    # and under the draft the lost one is a why-not, its failed premises marked
    p = client.post("/api/whatif/proof", json={"fact": lost, "side": "draft"}).json()
    assert not p["graph"]["holds"]
    assert any(n["data"]["cls"] == "failed" for n in p["graph"]["nodes"])


def test_the_served_rules_keep_answering_the_ask_bar(client: httpx.Client) -> None:
    before = _served(client)
    _diff(client, before + GIVE_BOB)
    a = client.post("/api/ask", json={"question": f"check bob drop_table {ORDERS}"}).json()
    assert a["summary"].startswith("DENY")
    assert _served(client) == before


def test_a_draft_that_does_not_compile_gets_its_diagnostics(client: httpx.Client) -> None:
    served = _served(client)
    d = _diff(client, served + "\nbroken(X) :- nope(.")
    assert not d["compiled"]
    assert d["diagnostics"][0]["code"] == "syntax-error"
    assert d["diagnostics"][0]["doc"] == 0
    assert d["diagnostics"][0]["line"] == served.count("\n") + 2


@pytest.mark.parametrize("body, says", [
    ({}, "`drafts` must be an object"),
    ({"drafts": {"9": "x"}}, "no document `9`"),
    ({"drafts": {"-1": "x"}}, "no document `-1`"),
    ({"drafts": {"0": 5}}, "must be a string"),
    ({"drafts": {}, "limit": -1}, "`limit` must be a non-negative integer"),
    ({"drafts": {}, "offset": "2"}, "`offset` must be a non-negative integer"),
])
def test_bad_diff_requests_are_refused(client: httpx.Client, body: dict[str, Any],
                                       says: str) -> None:
    r = client.post("/api/whatif/diff", json=body)
    assert r.status_code == 422 and says in r.json()["errors"][0]["message"]


def test_bad_proof_requests_are_refused(client: httpx.Client) -> None:
    for body in ({"fact": "allowed(a, b, c)", "side": "elsewhere"}, {"fact": 3, "side": "draft"},
                 {"fact": "nothing", "side": "served"}):
        r = client.post("/api/whatif/proof", json=body)
        assert r.status_code == 422, body
    assert client.post("/api/whatif/diff", content=b"{}").status_code == 400  # JSON only


def _entry(s: str, o: str, r: str, allowed: bool, rid: str, **extra: Any) -> str:
    return json.dumps({"time": "2026-01-01T00:00:00Z", "request_id": rid, "endpoint": "check",
                       "revision": 3, "policy": "p0", "input": {"subject": s, "operation": o,
                                                                  "resource": r},
                       "result": {"allowed": allowed, "reasons": []}, **extra}) + "\n"


def test_the_replay_lists_the_logged_requests_the_draft_flips(client: httpx.Client,
                                                               explorer_log: Path) -> None:
    explorer_log.write_text(
        _entry("bob", "drop_table", ORDERS, False, "r1")
        + _entry("alice", "load_table", ORDERS, True, "r2")
        + _entry("carol", "load_table", ORDERS, False, "r3")
        + _entry("***", "load_table", ORDERS, True, "r4")
        + json.dumps({"request_id": "r5", "endpoint": "list", "input": {"subject": "alice"},
                      "answer": {"size": 2}}) + "\n"
        + '{"request_id": "torn", "inp')  # the writer stopped mid-line: skipped
    draft = _served(client) + GIVE_BOB + DENY_ORDERS
    r = client.post("/api/whatif/replay", json={"drafts": {"0": draft}})
    assert r.status_code == 200, r.text
    j = r.json()
    assert (j["replayed"], j["masked"], j["not_decisions"]) == (3, 1, 1)
    flips = {c["request_id"]: c for c in j["changed"]}
    assert set(flips) == {"r1", "r2"}
    assert flips["r1"]["was"] is False and flips["r1"]["draft"] is True
    assert flips["r1"]["served"] is False and flips["r1"]["at"] == "decisions.log:1"
    assert flips["r2"]["was"] is True and flips["r2"]["draft"] is False
    assert str(explorer_log.parent) not in r.text  # the server's paths stay on the server
    # the same entries as `grantlog logs replay` finds under the draft
    tmp = explorer_log.parent / "draft.gl"
    tmp.write_text(draft)
    cli = subprocess.run([sys.executable, "-m", "grantlog.cli", "logs", "replay",
                          str(explorer_log), "--rules", str(tmp), "--facts",
                          str(ROOT / "examples/gravitino/facts.gl"), "--json", "--no-proofs"],
                         capture_output=True, text=True, timeout=120)
    assert cli.returncode == 1, cli.stderr
    assert {c["request_id"] for c in json.loads(cli.stdout)["changed"]} == set(flips)


def test_a_broken_log_is_an_error_that_names_only_its_file(client: httpx.Client,
                                                           explorer_log: Path) -> None:
    explorer_log.write_text("not json\n" + _entry("bob", "drop_table", ORDERS, False, "r1"))
    r = client.post("/api/whatif/replay", json={"drafts": {}})
    assert r.status_code == 422
    e = r.json()["errors"][0]
    assert e["code"] == "bad-log" and "`decisions.log:1`" in e["message"]
    assert str(explorer_log.parent) not in r.text


def test_diff_reasoners_compares_two_reasoners_as_diff_programs_does() -> None:
    before = grantlog.compile("rel p(x: string).\nrel q(x: string).\np(a). p(b).\n"
                              "q(X) :- p(X).\n")
    after = grantlog.compile("rel p(x: string).\nrel q(x: string).\np(b). p(c).\n"
                             "q(X) :- p(X).\n")
    w = diff_reasoners(grantlog.Reasoner(before), grantlog.Reasoner(after), "q")
    assert [d.fact for d in w.gained] == ["q(c)"] and [d.fact for d in w.lost] == ["q(a)"]
    assert w.gained[0].proof is not None and w.lost[0].proof is not None
    assert w.to_dict() == diff_programs(before, after, "q").to_dict()


def test_the_draft_keeps_the_facts_the_served_side_holds_besides_its_files() -> None:
    """Facts inserted at run time (or a store's) are on both sides: an unchanged draft
    differs in nothing, and a draft's own edit is all its diff shows."""
    from grantlog.explorer.whatif import Drafts
    from grantlog.explorer.workspace import Workspace

    ws = Workspace.open([], "gravitino", [str(ROOT / "examples/gravitino/facts.gl")])
    try:
        ws.reasoner.insert("service_admin", [("bob",)])
        assert ws.reasoner.ask('allowed(bob, create_metalake, gravitino)')
        drafts = Drafts(ws)
        assert drafts.build({}) is None and not drafts.diff
        assert drafts.reasoner.ask('allowed(bob, create_metalake, gravitino)')
        assert drafts.build({0: ws.docs[0].live + GIVE_BOB}) is None
        assert {d.fact for d in drafts.diff.gained} >= {f'allowed(bob, drop_table, "{ORDERS}")'}
        assert not drafts.diff.lost
    finally:
        ws.close()
