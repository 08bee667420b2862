"""Access reviews (issue #28, item 5): the Gravitino example world (examples/gravitino/facts.gl
loaded into a store, then a few transactions with authors) reviewed by subject, resource and
role; its JSON golden (times normalised); the CSV and HTML formats; the CLI; SQLite and
PostgreSQL; a model without roles says so."""

from __future__ import annotations

import csv
import io
import json
import os
from pathlib import Path
from typing import Any

import pytest

import grantlog
from grantlog.cli import main
from grantlog.cli.review import CSV_COLUMNS, to_csv, to_html

ROOT = Path(__file__).resolve().parent.parent
GOLDEN = ROOT / "tests" / "golden" / "review" / "alice.json"
FACTS = ROOT / "examples" / "gravitino" / "facts.gl"
RULES = ROOT / "rules" / "gravitino.gl"


def world(url: str) -> grantlog.Reasoner:
    """The example world loaded by ``store load`` (revision 1, author admin), then four
    transactions: the analyst role gains the finance schema (2), alice joins the contractors,
    whose role denies the PII table (3), and leaves them again (4), carol leaves the
    analysts (5)."""
    assert main(["store", "load", url, str(FACTS), "--rules", str(RULES), "--create",
                 "--author", "admin", "--reason", "the example world", "--quiet"]) == 0
    r = grantlog.Reasoner(grantlog.compile(None, paths=[str(RULES)]), store=url,
                          follow=False)
    with r.transaction(author="sam", reason="finance dashboards", ticket="CHG-7") as tx:
        tx.insert("privilege", [("m1/role/analyst", p, "m1.lakehouse.finance", "allow")
                                for p in ("use_schema", "select_table")])
    r.insert("member", [("alice", "contractors")], author="maria", reason="contract work",
             ticket="CHG-8")
    r.retract("member", [("alice", "contractors")], author="maria", reason="contract ends",
              ticket="CHG-9")
    r.retract("member", [("carol", "analysts")], author="maria", reason="leaves the team")
    return r


def normalised(d: dict[str, Any]) -> dict[str, Any]:
    """Commit times replaced by their order (the golden must not depend on the clock), the
    policies' digests by their order of appearance (nor on the rule files' text)."""
    text = json.dumps(d, sort_keys=True)
    out = json.loads(text)
    digests: dict[str, str] = {}
    policies = out.get("policies") or {}
    for p in [policies, *policies.get("past", ())]:
        for k in ("now", "stored", "policy"):
            if p.get(k) is not None:
                p[k] = digests.setdefault(p[k], f"<policy {len(digests) + 1}>")

    def walk(x: Any) -> None:
        if isinstance(x, dict):
            if x.get("committed_at") is not None:
                x["committed_at"] = "<time>"
            for v in x.values():
                walk(v)
        elif isinstance(x, list):
            for v in x:
                walk(v)

    walk(out)
    return out


@pytest.fixture(scope="module")
def sqlite_world(tmp_path_factory: pytest.TempPathFactory) -> Any:
    url = f"sqlite:///{tmp_path_factory.mktemp('review') / 'facts.db'}"
    r = world(url)
    yield url, r
    r.close()


def test_the_gravitino_review_of_alice_matches_its_golden(sqlite_world: Any) -> None:
    _, r = sqlite_world
    rv = r.review(subject="alice", since=1)
    got = normalised(rv.to_dict())
    if os.environ.get("GRANTLOG_UPDATE_GOLDENS") == "1":
        GOLDEN.parent.mkdir(parents=True, exist_ok=True)
        GOLDEN.write_text(json.dumps(got, indent=2, sort_keys=True) + "\n")
    assert got == json.loads(GOLDEN.read_text())
    assert got["schema"] == "grantlog-review/1" and got["since"] == 1
    assert got["revision"] == r.revision == 5


def test_a_subject_review_tells_what_changed_and_why(sqlite_world: Any) -> None:
    _, r = sqlite_world
    rv = r.review(subject="alice", since=1)
    by = {(e.operation, e.resource): e for e in rv.entries}
    ledger = by[("load_table", "m1.lakehouse.finance.ledger")]
    assert ledger.change == "gained"
    assert [(v.gained, v.edge.revision, v.edge.author, v.edge.ticket)
            for v in ledger.events] == [(True, 2, "sam", "CHG-7")]
    assert 'privilege("m1/role/analyst", select_table, "m1.lakehouse.finance", allow)' in \
        ledger.path
    pii = by[("load_table", "m1.lakehouse.sales.customers")]
    assert pii.change == "unchanged"  # lost while she was a contractor, then regained
    assert [(v.gained, v.edge.revision, v.edge.reason) for v in pii.events] == \
        [(False, 3, "contract work"), (True, 4, "contract ends")]
    assert by[("get_role", "m1/role/pii_blocker")].change == "transient"
    assert "member(alice, analysts)" in pii.path
    assert not any(p.startswith(("contains(", "entity(")) for p in pii.path)
    # the entries are exactly the decisions held now or at some point since
    now = {(b["O"], b["R"]) for b in r.query("allowed(alice, O, R)")}
    assert {k for k, e in by.items() if e.change in ("gained", "unchanged")} == now
    # the current state only: no changes, every entry
    plain = r.review(subject="alice")
    assert plain.since is None and {(e.operation, e.resource) for e in plain.entries} == now
    assert all(e.change == "" and not e.events for e in plain.entries)


def test_resource_and_role_reviews(sqlite_world: Any) -> None:
    _, r = sqlite_world
    rv = r.review(resource="m1.lakehouse.sales.orders", since=1)
    now = {(b["S"], b["O"]) for b in r.query('allowed(S, O, "m1.lakehouse.sales.orders")')}
    assert {(e.subject, e.operation) for e in rv.entries if e.change == "unchanged"} == now
    lost = {(e.subject, e.operation) for e in rv.entries if e.change == "lost"}
    assert ("carol", "load_table") in lost
    carol = next(e for e in rv.entries if (e.subject, e.operation) == ("carol", "load_table"))
    assert [(v.gained, v.edge.revision, v.edge.reason) for v in carol.events] == \
        [(False, 5, "leaves the team")]
    assert "member(carol, analysts)" in carol.path  # the path she had: just before she lost it
    role = r.review(role="m1/role/analyst", since=1)
    assert set(role.holders) >= {"alice", "analysts"} and "carol" not in role.holders
    assert role.to_dict()["holders"] == list(role.holders)
    assert {e.subject for e in role.entries} >= {"alice", "carol"}
    plain = r.review(role="m1/role/analyst")
    assert plain.entries and all(any("m1/role/analyst" in p for p in e.path)
                                 for e in plain.entries)
    assert not any("m1/role/catalog_manager" in " ".join(e.path) and
                   "m1/role/analyst" not in " ".join(e.path) for e in plain.entries)


def test_the_formats(sqlite_world: Any, tmp_path: Path,
                     capsys: pytest.CaptureFixture[str]) -> None:
    url, r = sqlite_world
    rv = r.review(subject="alice", since=1)
    rows = list(csv.reader(io.StringIO(to_csv(rv))))
    assert tuple(rows[0]) == CSV_COLUMNS and len(rows) == len(rv.entries) + 1
    ledger = next(x for x in rows if x[2] == "m1.lakehouse.finance.ledger" and
                  x[1] == "load_table")
    assert ledger[3:5] == ["gained", "2"] and ledger[6:9] == ["sam", "finance dashboards",
                                                              "CHG-7"]
    assert {x[10] for x in rows[1:] if x[3] != "lost"} == {rv.policies["now"]}  # (policy)
    page = to_html(rv)
    assert page.startswith("<!doctype html>") and "<svg" in page and "<style>" in page
    assert f"Policies: now (the current entries and their paths): <code>" \
        f"{rv.policies['now']}</code>" in page
    assert "http://" not in page.replace('xmlns="http://www.w3.org/2000/svg"', "")
    assert "https://" not in page and "<script" not in page
    out = tmp_path / "alice.csv"
    assert main(["review", "--model", "gravitino", "--store", url, "--subject", "alice",
                 "--since", "1", "--format", "csv", "-o", str(out)]) == 0
    assert out.read_text() == to_csv(rv)
    assert main(["review", "--model", "gravitino", "--store", url, "--role",
                 "m1/role/analyst"]) == 0
    got = json.loads(capsys.readouterr().out)
    assert got["kind"] == "role" and got["since"] is None
    assert main(["review", "--model", "gravitino", "--facts", str(FACTS), "--resource",
                 "m1.lakehouse.sales.orders", "--format", "html"]) == 0
    assert "Access review of resource m1.lakehouse.sales.orders" in capsys.readouterr().out
    assert main(["review", "--model", "gravitino", "--facts", str(FACTS), "--subject",
                 "alice", "--since", "1"]) == 2
    assert "--since needs --store" in capsys.readouterr().err
    assert main(["review", "--model", "gravitino", "--facts", str(FACTS)]) == 2
    assert "exactly one of" in capsys.readouterr().err


def test_a_model_without_roles_says_so() -> None:
    r = grantlog.Reasoner(grantlog.compile(
        "rel grant(u: string, o: string, r: string).\n"
        "allowed(U, O, R) :- grant(U, O, R).\ngrant(a, read, t).\n"))
    with pytest.raises(grantlog.GrantlogError) as e:
        r.review(role="admin")
    assert e.value.diagnostics[0].code == "no-roles"
    assert [(x.operation, x.resource, x.path) for x in r.review(subject="a").entries] == \
        [("read", "t", ("grant(a, read, t)",))]


def test_postgres_reviews_like_sqlite(pg_server: Any, sqlite_world: Any) -> None:
    _, lite = sqlite_world
    with world(pg_server.schema_url("review")) as r:
        for kw in ({"subject": "alice"}, {"resource": "m1.lakehouse.sales.orders"}):
            a, b = (normalised(x.review(**kw, since=1).to_dict()) for x in (r, lite))
            assert a == b
