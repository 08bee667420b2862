"""Write metadata (issue #28, item 1): every transaction keeps its commit time and, when
given, who wrote it and why (``author``, ``reason``, ``ticket``) — from the Python API, the
CLI (``store load``, ``import ... --store``), the service (a named token is the default
author) and the client — and ``grantlog store log`` shows them. The service and the client
also answer as of a past revision or time (item 2), over real HTTP."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from httpserver import serve, stop

import grantlog
from grantlog.cli import main
from grantlog.service import auth

ROOT = Path(__file__).resolve().parent.parent
RULES = str(ROOT / "rules" / "gravitino.gl")
FACTS = str(ROOT / "examples" / "gravitino" / "facts.gl")
WRITER = "named-writer-token-0123"
ANON = "anonymous-writer-token-0"
ORDERS = "m1.lakehouse.sales.orders"


def test_the_api_records_who_and_why(store_url: str) -> None:
    program = grantlog.compile(paths=[RULES])
    with grantlog.Reasoner(program, store=store_url, follow=False) as r:
        r.insert("member", [("dave", "analysts")], author="ann", reason="joins", ticket="T-1")
        r.retract("member", [("dave", "analysts")], reason="leaves")
        with r.transaction(author="bob", ticket="https://tickets/2") as tx:
            tx.insert("member", [("erin", "analysts")])
        r.insert("member", [("frank", "analysts")])
        got = [(c.revision, c.author, c.reason, c.ticket) for c in r.transactions()]
        assert got == [(1, "ann", "joins", "T-1"), (2, None, "leaves", None),
                       (3, "bob", None, "https://tickets/2"), (4, None, None, None)]
        assert [c.revision for c in r.transactions(since=1, upto=3)] == [2, 3]
        assert all(c.committed_at > 0 and c.to_dict()["time"].endswith("Z")
                   for c in r.transactions())
        with pytest.raises(grantlog.GrantlogError) as e:
            r.insert("member", [("x", "y")], author=7)  # type: ignore[arg-type]
        assert e.value.diagnostics[0].code == "bad-argument"


def test_an_older_store_gains_the_columns(tmp_path: Path) -> None:
    """A store made before the metadata columns keeps working: opening it adds them."""
    path = tmp_path / "old.db"
    program = grantlog.compile(paths=[RULES])
    grantlog.Reasoner(program, store=f"sqlite:///{path}", create=True).close()
    with sqlite3.connect(path) as db:
        for col in ("author", "reason", "ticket"):
            db.execute(f"ALTER TABLE grantlog_revisions DROP COLUMN {col}")
    with grantlog.Reasoner(program, store=f"sqlite:///{path}", follow=False) as r:
        r.insert("member", [("dave", "analysts")], author="ann")
        assert [c.author for c in r.transactions()] == ["ann"]


def test_the_cli_records_and_shows_them(tmp_path: Path,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    url = f"sqlite:///{tmp_path / 'facts.db'}"
    assert main(["store", "load", url, FACTS, "--rules", RULES, "--create", "--author", "ann",
                 "--reason", "initial load", "--ticket", "CHG-7"]) == 0
    extra = tmp_path / "more.gl"
    extra.write_text('member("dave", "analysts").\n')
    assert main(["store", "load", url, str(extra), "--rules", RULES]) == 0
    capsys.readouterr()
    assert main(["store", "log", url, "--json"]) == 0
    log = json.loads(capsys.readouterr().out)["transactions"]
    assert [(t["author"], t["reason"], t["ticket"]) for t in log] == \
        [("ann", "initial load", "CHG-7"), (None, None, None)]
    assert main(["store", "log", url]) == 0
    text = capsys.readouterr().out
    assert "by ann, ticket CHG-7: initial load" in text.splitlines()[0]
    assert main(["check", RULES, "dave", "load_table", ORDERS, "--store", url, "--at",
                 "1"]) == 1
    assert main(["check", RULES, "dave", "load_table", ORDERS, "--store", url, "--at",
                 "2"]) == 0


def test_named_tokens() -> None:
    text = f"{WRITER} check,write name=svc-writer\n{ANON} check,write\n"
    t = auth.Tokens(tuple(auth.parse(text, "t")), names=tuple(auth.names(text)))
    assert t.allows(f"Bearer {WRITER}", "write") == 200
    assert t.name(f"Bearer {WRITER}") == "svc-writer"
    assert t.name(f"Bearer {ANON}") is None and t.name(None) is None


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """A server over a SQLite store of the Gravitino example, with a named write token and an
    unnamed one."""
    tmp = tmp_path_factory.mktemp("history")
    store = f"sqlite:///{tmp / 'facts.db'}"
    assert main(["store", "load", store, FACTS, "--rules", RULES, "--create",
                 "--author", "loader"]) == 0
    (tmp / "tokens").write_text(f"{WRITER} check,write name=svc-writer\n"
                                f"{ANON} check,write\n")
    (tmp / "tokens").chmod(0o600)
    proc, url = serve(tmp, RULES, "--store", store, "--tokens", str(tmp / "tokens"))
    yield {"url": url, "store": store}
    stop(proc)


def test_the_service_and_client_record_them(server: dict[str, Any]) -> None:
    program = grantlog.compile(paths=[RULES])
    with httpx.Client(base_url=server["url"], timeout=30) as http:
        got = http.post("/v1/write", headers={"Authorization": f"Bearer {WRITER}"},
                        json={"insert": {"member": [["dave", "analysts"]]},
                              "reason": "joins", "ticket": "T-9"})
        assert got.status_code == 200, got.text
        first = got.json()["revision"]
        got = http.post("/v1/write", headers={"Authorization": f"Bearer {WRITER}"},
                        json={"retract": {"member": [["dave", "analysts"]]},
                              "author": "alice@example.com"})
        assert got.status_code == 200
    with grantlog.Client(server["url"], token=ANON) as c:
        c.insert("member", [("erin", "analysts")], reason="contract", ticket="T-10")
        with c.transaction(author="carl") as tx:
            tx.insert("member", [("frank", "analysts")])
        c.insert("member", [("gina", "analysts")])
    with grantlog.Reasoner(program, store=server["store"], follow=False) as r:
        got_meta = [(c.author, c.reason, c.ticket) for c in r.transactions(since=first - 1)]
        assert r.transactions()[0].author == "loader"
    assert got_meta == [("svc-writer", "joins", "T-9"), ("alice@example.com", None, None),
                        (None, "contract", "T-10"), ("carl", None, None), (None, None, None)]


def test_the_service_and_client_answer_as_of(server: dict[str, Any]) -> None:
    program = grantlog.compile(paths=[RULES])
    with grantlog.Client(server["url"], token=WRITER) as c:
        with c.transaction() as tx:  # a user of the metalake, in a group that may load
            tx.insert("metalake_user", [("hank", "m1")])
            tx.insert("member", [("hank", "analysts")])
        before = tx.revision
        after = c.retract("member", [("hank", "analysts")]).revision
        assert before is not None and after is not None
        with grantlog.Reasoner(program, store=server["store"], follow=False) as r:
            for rev in (before - 1, before, after):
                assert c.check("hank", "load_table", ORDERS, at_revision=rev) == \
                    r.check("hank", "load_table", ORDERS, at_revision=rev)
                assert c.check("hank", "load_table", ORDERS, at_revision=rev).revision == rev
                assert c.check_many([("hank", "load_table", ORDERS)] * 2, at_revision=rev) \
                    == [r.check("hank", "load_table", ORDERS, at_revision=rev)] * 2
                assert c.list("hank", "load_table", at_revision=rev) == \
                    r.list("hank", "load_table", at_revision=rev)
                got = c.who("load_table", ORDERS, at_revision=rev)
                assert got == r.who("load_table", ORDERS, at_revision=rev)
                assert got.revision == rev
                goal = f'allowed(hank, load_table, "{ORDERS}")'
                assert c.query(goal, at_revision=rev) == r.query(goal, at_revision=rev)
                ex = c.explain(goal, at_revision=rev)
                assert ex.holds == (rev == before) and ex.revision == rev
                assert "hank" in ex.render()
            when = r.transactions(since=before - 1, upto=before)[0].committed_at
            assert c.check("hank", "load_table", ORDERS, as_of=when).allowed
        assert c.check("hank", "load_table", ORDERS).allowed is False
        with pytest.raises(grantlog.GrantlogError) as e:
            c.check("hank", "load_table", ORDERS, at_revision=after + 100)
        assert e.value.diagnostics[0].code == "revision-ahead"
        with pytest.raises(grantlog.GrantlogError) as e:
            c.who("load_table", ORDERS, as_of="1999-01-01")
        assert e.value.diagnostics[0].code == "before-history"
    with httpx.Client(base_url=server["url"], timeout=30,
                      headers={"Authorization": f"Bearer {ANON}"}) as http:
        got = http.post("/v1/check", json={"subject": "hank", "operation": "load_table",
                                           "resource": ORDERS, "at_revision": before,
                                           "explain": True})
        assert got.status_code == 200 and got.json()["allowed"] is True
        assert got.json()["revision"] == before and got.json()["explanation"]
        got = http.post("/v1/check", json={"subject": "hank", "operation": "load_table",
                                           "resource": ORDERS, "at_revision": 1,
                                           "as_of": "2020-01-01"})
        assert got.status_code == 422 and got.json()["error"]["code"] == "bad-request"
