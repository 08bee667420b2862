"""rules/gravitino.gl on the example facts: the README's sample checks and the explanations.

The rule file's own test blocks (rules/gravitino_test.gl) run in test_rules.py; here we pin what
a user sees: the verdicts of examples/gravitino/README.md and proofs that name the DENY that won
and the missing prerequisite.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

import grantlog
from grantlog.cli import main

ROOT = Path(__file__).resolve().parent.parent
MODEL = ROOT / "rules" / "gravitino.gl"
FACTS = ROOT / "examples" / "gravitino" / "facts.gl"
README = ROOT / "examples" / "gravitino" / "README.md"


def _samples() -> list[tuple[list[str], str]]:
    """Each ``$ grantlog check ...`` line of the README with the verdict line after it."""
    lines = README.read_text(encoding="utf-8").splitlines()
    out = []
    for i, line in enumerate(lines):
        if line.startswith("$ grantlog check "):
            out.append((shlex.split(line[len("$ grantlog "):]), lines[i + 1]))
    return out


SAMPLES = _samples()


def test_readme_has_three_to_five_kinds_of_sample_checks() -> None:
    assert len(SAMPLES) >= 3
    assert {v.split()[0] for _, v in SAMPLES} == {"ALLOW", "DENY"}


@pytest.mark.parametrize(("argv", "verdict"), SAMPLES, ids=[" ".join(a[3:6]) for a, _ in SAMPLES])
def test_readme_sample_check(
    argv: list[str], verdict: str, capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.chdir(ROOT)
    code = main(argv)
    out = capsys.readouterr().out
    assert out.splitlines()[0].startswith(verdict), out
    assert code == (0 if verdict.startswith("ALLOW") else 1)


@pytest.fixture(scope="module")
def reasoner() -> grantlog.Reasoner:
    return grantlog.Reasoner(grantlog.compile(paths=[MODEL, FACTS], strict=True))


def test_allow_proof_names_the_rule_row_and_the_grants(reasoner: grantlog.Reasoner) -> None:
    d = reasoner.check("alice", "load_table", "m1.lakehouse.sales.orders")
    assert d.allowed
    assert d.reasons[0] == "load_table"
    text = reasoner.explain('allowed(alice, load_table, "m1.lakehouse.sales.orders")').render()
    assert "load table: load catalog and schema" in text
    assert 'privilege("m1/role/analyst", select_table, "m1.lakehouse.sales", allow)' in text
    assert "member(alice, analysts)" in text


def test_proof_of_the_deny_that_won_points_at_the_deny(reasoner: grantlog.Reasoner) -> None:
    assert not reasoner.check("carol", "load_table", "m1.lakehouse.sales.customers").allowed
    ex = reasoner.explain('deny_wins(carol, select_table, "m1.lakehouse.sales.customers")')
    assert ex.holds
    text = ex.render()
    assert "rule deny_wins" in text
    deny = 'privilege("m1/role/pii_blocker", select_table, "m1.lakehouse.sales.customers", deny)'
    assert deny in text
    assert "member(carol, contractors)" in text
    assert re.search(r"facts\.gl:\d+:\d+", text)
    # The same user's ALLOW on the sibling table is untouched.
    assert reasoner.check("carol", "load_table", "m1.lakehouse.sales.orders").allowed


def test_missing_use_schema_is_explained() -> None:
    r = grantlog.Reasoner(grantlog.compile(paths=[MODEL, FACTS]))
    r.insert("role_of", [("dave", "m1/role/reader")])
    r.insert("privilege", [("m1/role/reader", "use_catalog", "m1.lakehouse", "allow"),
                           ("m1/role/reader", "select_table", "m1.lakehouse", "allow")])
    assert not r.check("dave", "load_table", "m1.lakehouse.sales.orders").allowed
    ex = r.explain('missing_use_schema(dave, "m1.lakehouse.sales.orders")')
    assert ex.holds
    text = ex.render()
    assert "rule missing_use_schema" in text
    assert 'not can_use_schema(dave, "m1.lakehouse.sales")' in text
    assert not r.ask('missing_use_catalog(dave, "m1.lakehouse.sales.orders")')
    r.insert("privilege", [("m1/role/reader", "use_schema", "m1.lakehouse.sales", "allow")])
    assert r.check("dave", "load_table", "m1.lakehouse.sales.orders").allowed
    assert not r.ask('missing_use_schema(dave, "m1.lakehouse.sales.orders")')


def test_example_facts_have_no_invalid_grant(reasoner: grantlog.Reasoner) -> None:
    assert reasoner.rows("invalid_grant") == set()
    assert reasoner.rows("unregistered_owner") == set()


def test_list_within_a_container_is_the_listing_below_it(reasoner: grantlog.Reasoner) -> None:
    """``list(..., within=C)`` (decisions only below C) equals the whole listing filtered by
    ``ancestor_or_self(C, _)``, on both backends, for every user, operation and container."""
    pyd = grantlog.Reasoner(reasoner.program, backend="pydatalog")
    users = sorted({row[0] for row in reasoner.rows("metalake_user")})
    containers = sorted({row[0] for row in reasoner.rows("contains")}, key=str)
    below = {c: {row[1] for row in reasoner.rows("ancestor_or_self") if row[0] == c}
             for c in containers}
    nonempty = 0
    for u in users:
        for op in ("load_table", "select_table", "load_schema", "modify_table"):
            whole = reasoner.list(u, op, type="table")
            for c in containers:
                got = reasoner.list(u, op, type="table", within=c)
                assert got == [x for x in whole if x in below[c]], (u, op, c)
                nonempty += bool(got)
            c = containers[-1]
            assert pyd.list(u, op, within=c) == reasoner.list(u, op, within=c), (u, op, c)
    assert nonempty >= 5  # some listings allow, the others deny: both are exercised
    assert reasoner.list("alice", "load_table", within="m1.nosuch") == []


# ---------------------------------------------------------------------------------------------
# grantlog issue 24, items 16 and 17: an owner's grant, revoke and set owner need the catalog
# and the schema loadable (reading 8); get_owner and list_roles_for_object (readings 19, 20).

LEDGER = "m1.lakehouse.finance.ledger"


def test_a_table_owner_who_may_not_load_its_schema_may_not_grant_revoke_or_set_owner() -> None:
    r = grantlog.Reasoner(grantlog.compile(paths=[MODEL, FACTS]))
    # carol (analysts: USE_CATALOG on the lakehouse, USE_SCHEMA on sales only) owns the ledger
    r.insert("owner", [(LEDGER, "carol")])
    assert r.ask(f'missing_use_schema(carol, "{LEDGER}")')
    for op in ("grant_privilege", "revoke_privilege", "set_owner", "drop_table", "load_table",
               "get_owner", "list_roles_for_object"):
        assert not r.check("carol", op, LEDGER).allowed, op
    # the metalake owner and the catalog owner still may, whatever their roles
    for user in ("maria", "sam"):
        for op in ("grant_privilege", "revoke_privilege", "set_owner"):
            assert r.check(user, op, LEDGER).allowed, (user, op)
    # once she may load the schema her ownership counts again
    r.insert("privilege", [("m1/role/analyst", "use_schema", "m1.lakehouse.finance", "allow")])
    for op in ("grant_privilege", "revoke_privilege", "set_owner", "drop_table", "get_owner"):
        assert r.check("carol", op, LEDGER).allowed, op


def test_get_owner_and_list_roles_for_object_are_operations_of_the_model(
        reasoner: grantlog.Reasoner) -> None:
    ops = {row[0] for row in reasoner.rows("api")}
    assert {"get_owner", "list_roles_for_object"} <= ops
    orders = "m1.lakehouse.sales.orders"
    # alice (analysts) loads the sales tables: she may get their owner and list their roles
    assert reasoner.check("alice", "get_owner", orders).allowed
    assert reasoner.check("alice", "list_roles_for_object", "m1.lakehouse.sales").allowed
    got = reasoner.query('listed(alice, list_roles_for_object, "m1.lakehouse.sales", R)')
    assert [a["R"] for a in got] == ["m1/role/analyst"]
    # ... but not of the finance ledger, which she may not load
    assert not reasoner.check("alice", "get_owner", LEDGER).allowed
    assert not reasoner.check("alice", "list_roles_for_object", LEDGER).allowed
    # the metalake owner sees every role bound to the customers table, the DENY one too
    got = reasoner.query('listed(maria, list_roles_for_object, "m1.lakehouse.sales.customers", R)')
    assert [a["R"] for a in got] == ["m1/role/pii_blocker"]
    # carol holds pii_blocker (through contractors) but it denies her the table: no listing
    assert not reasoner.check("carol", "list_roles_for_object",
                              "m1.lakehouse.sales.customers").allowed
