"""``grantlog check --suggest`` and ``grantlog explain --suggest``: the smallest changes that
would make a denied check (a goal that does not hold) hold, in words and as JSON."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import ROOT

import grantlog
from grantlog.cli.main import main

RULES = str(ROOT / "rules" / "gravitino.gl")
FACTS = str(ROOT / "examples" / "gravitino" / "facts.gl")
CUSTOMERS = "m1.lakehouse.sales.customers"
DENY = ["m1/role/pii_blocker", "select_table", CUSTOMERS, "deny"]


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_check_suggest_text_and_json(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "check", RULES, FACTS, "carol", "select_table", CUSTOMERS,
                       "--suggest", "3")
    assert code == 1
    lines = out.splitlines()
    assert lines[0].startswith("DENY ")
    assert lines[1].startswith("changes that would make allowed(carol, select_table")
    assert len([x for x in lines if x.startswith("  ")]) == 3
    assert "remove `privilege(\"m1/role/pii_blocker\"" in out
    code, out, _ = run(capsys, "check", RULES, FACTS, "carol", "select_table", CUSTOMERS,
                       "--suggest", "--json")
    got = json.loads(out)
    assert got["allowed"] is False
    found = got["suggestions"]["suggestions"]
    assert 1 <= len(found) <= 5
    assert any(s["edits"] == [{"op": "retract", "rel": "privilege", "row": DENY,
                               "fact": 'privilege("m1/role/pii_blocker", select_table, '
                                       f'"{CUSTOMERS}", deny)'}] for s in found)


def test_an_allow_suggests_nothing(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "check", RULES, FACTS, "alice", "select_table",
                       "m1.lakehouse.sales.orders", "--suggest", "--json")
    assert code == 0 and "suggestions" not in json.loads(out)


def test_explain_suggest(capsys: pytest.CaptureFixture[str]) -> None:
    goal = f'allowed(carol, select_table, "{CUSTOMERS}")'
    code, out, _ = run(capsys, "explain", RULES, FACTS, goal, "--suggest", "2")
    assert code == 1
    assert "does not hold" in out or "fails" in out
    assert "changes that would make" in out and "\n  2. " in out
    code, out, _ = run(capsys, "explain", RULES, FACTS, goal, "--suggest", "--json")
    got = json.loads(out)
    assert got["holds"] is False and got["why_not"] and got["suggestions"]["suggestions"]


def test_suggest_is_refused_as_of_a_past_revision(capsys: pytest.CaptureFixture[str],
                                                  tmp_path: Path) -> None:
    policy = tmp_path / "policy.gl"
    policy.write_text("rel member(user, group).\nrel grant(group, op, resource).\n"
                      "allowed(U, O, R) :- member(U, G), grant(G, O, R).\n")
    url = f"sqlite:///{tmp_path / 'facts.db'}"
    r = grantlog.Reasoner(grantlog.compile(paths=[policy]), store=url, create=True)
    with r, r.transaction() as tx:
        tx.insert("member", [("dora", "eng")])
    code, out, err = run(capsys, "check", str(policy), "--store", url, "dora", "read", "t1",
                         "--suggest", "--at", "1")
    assert code == 2 and out == ""
    assert "error[bad-argument]: `--suggest` answers on the current facts" in err
    code, out, _ = run(capsys, "check", str(policy), "--store", url, "dora", "read", "t1",
                       "--suggest", "1")
    assert code == 1
    assert "  1. add `grant(eng, read, t1)` (`eng` as in `member(dora, eng)`" in out
