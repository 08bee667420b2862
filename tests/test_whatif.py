"""What-if diffs (answer/whatif.py, `grantlog diff`): rows gained and lost, each with its proof.

Inputs live in tests/golden/whatif/ and are passed by path relative to the repository root, so
proofs (and the golden) show relative paths:

- policy_before.gl -> policy_after.gl: a rule edit that narrows (`via_group` now skips suspended
  users: bob loses his eng grants) and widens (new rule `owner_read`: carol may read t1);
- facts.gl -> facts_revoked.gl: alice leaves the eng group and loses what it granted her.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import GOLDEN_DIR, ROOT, check_golden
from grantlog.engine.answer.whatif import WhatIf, diff_programs

import grantlog
from grantlog.cli import main

WHATIF = GOLDEN_DIR.relative_to(ROOT) / "whatif"
BEFORE = str(WHATIF / "policy_before.gl")
AFTER = str(WHATIF / "policy_after.gl")
FACTS = str(WHATIF / "facts.gl")
REVOKED = str(WHATIF / "facts_revoked.gl")


@pytest.fixture(autouse=True)
def _at_root(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def diff(before: list[str], after: list[str], relation: str = "allowed",
         proofs: bool = True) -> WhatIf:
    return diff_programs(grantlog.compile(paths=before), grantlog.compile(paths=after),
                         relation, proofs)


def test_rule_edit_widens_access_with_proofs_naming_the_new_rule() -> None:
    w = diff([BEFORE, FACTS], [AFTER, FACTS])
    assert [d.row for d in w.gained] == [("carol", "read", "t1")]
    gained = w.gained[0]
    assert gained.sign == "+" and gained.fact == "allowed(carol, read, t1)"
    assert gained.proof is not None
    assert gained.proof.rule_names() == ["owner_read"]
    assert gained.proof.rule is not None and gained.proof.rule.span.file == AFTER
    assert [c.text for c in gained.proof.children] == ["owner(carol, t1)"]
    # the same edit narrows: suspended bob loses his group grants, proved in the old policy
    assert [d.row for d in w.lost] == [("bob", "read", "t1"), ("bob", "write", "t1")]
    for d in w.lost:
        assert d.proof is not None and d.proof.rule is not None
        assert d.proof.rule.name == "via_group" and d.proof.rule.span.file == BEFORE
    assert w.summary == "1 gained, 2 lost" and w


def test_fact_change_revokes_access_with_the_proof_from_before(
    capsys: pytest.CaptureFixture[str],
) -> None:
    w = diff([BEFORE, FACTS], [BEFORE, REVOKED])
    assert w.gained == ()
    assert [d.fact for d in w.lost] == ["allowed(alice, read, t1)", "allowed(alice, write, t1)"]
    for d in w.lost:
        assert d.proof is not None
        member = d.proof.children[0]
        assert member.text == "member(alice, eng)"
        assert member.kind == "fact" and member.origin == f"{FACTS}:3:1"
    # the CLI's shared-rules form gives the same answer
    code, out, err = run(capsys, "diff", BEFORE, "--facts-before", FACTS,
                         "--facts-after", REVOKED)
    assert (code, err) == (1, "")
    assert out.startswith("-allowed(alice, read, t1)\n    allowed(alice, read, t1)  <- rule "
                          "via_group: Members may use what their group was granted.\n")
    assert f"member(alice, eng)  <- fact ({FACTS}:3:1)" in out
    assert out.splitlines()[-1] == "0 gained, 2 lost"


def test_no_change_exits_0(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "diff", "--before", BEFORE, FACTS, "--after", BEFORE, FACTS)
    assert (code, out) == (0, "0 gained, 0 lost\n")
    code, out, _ = run(capsys, "diff", BEFORE, "--facts-before", FACTS, "--facts-after", FACTS)
    assert (code, out) == (0, "0 gained, 0 lost\n")
    assert not diff([BEFORE, FACTS], [BEFORE, FACTS])


def test_json_shape(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "diff", "--before", BEFORE, FACTS, "--after", AFTER, FACTS,
                       "--json")
    assert code == 1
    data = json.loads(out)
    assert set(data) == {"relation", "gained", "lost", "counts"}
    assert data["relation"] == "allowed"
    assert data["counts"] == {"gained": 1, "lost": 2}
    g = data["gained"][0]
    assert g["fact"] == "allowed(carol, read, t1)" and g["row"] == ["carol", "read", "t1"]
    assert g["proof"]["kind"] == "rule" and g["proof"]["rule"] == "owner_read"
    assert g["proof"]["at"].startswith(f"{AFTER}:")
    assert g["proof"]["children"] == [
        {"fact": "owner(carol, t1)", "kind": "fact", "origin": f"{FACTS}:11:1"}]
    assert [x["row"] for x in data["lost"]] == [["bob", "read", "t1"], ["bob", "write", "t1"]]
    assert all(x["proof"]["rule"] == "via_group" for x in data["lost"])
    code, out, _ = run(capsys, "diff", "--before", BEFORE, FACTS, "--after", AFTER, FACTS,
                       "--json", "--no-proofs")
    assert json.loads(out)["gained"] == [
        {"fact": "allowed(carol, read, t1)", "row": ["carol", "read", "t1"]}]


def test_golden_text(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "diff", "--before", BEFORE, FACTS, "--after", AFTER, FACTS)
    assert (code, err) == (1, "")
    check_golden("whatif/rule_edit.txt", out)
    code, out, _ = run(capsys, "diff", "--before", BEFORE, FACTS, "--after", AFTER, FACTS,
                       "--no-proofs")
    assert out == ("+allowed(carol, read, t1)\n-allowed(bob, read, t1)\n"
                   "-allowed(bob, write, t1)\n1 gained, 2 lost\n")


def test_other_relation_and_relation_in_one_program_only(
    tmp_path: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    code, out, _ = run(capsys, "diff", BEFORE, "--facts-before", FACTS,
                       "--facts-after", REVOKED, "-r", "member", "--no-proofs")
    assert (code, out) == (1, "-member(alice, eng)\n0 gained, 1 lost\n")
    extra = tmp_path / "extra.gl"
    extra.write_text("/// Auditors.\naudit(U) :- suspended(U).\n")
    w = diff([BEFORE, FACTS], [BEFORE, FACTS, str(extra)], "audit")
    assert [d.fact for d in w.gained] == ["audit(bob)"] and w.lost == ()
    w = diff([BEFORE, FACTS, str(extra)], [BEFORE, FACTS], "audit")
    assert [d.fact for d in w.lost] == ["audit(bob)"] and w.gained == ()


def test_proofs_round_trip_awkward_values() -> None:
    values = ['"a b"', '"Alice"', '"not"', '"12"', "12", "-3", '""', r'"q\"t"', r'"n\nl"']
    facts = "".join(f"v({v}).\n" for v in values) + "flag.\n"
    before = grantlog.compile("p(X) :- v(X).\nq :- flag.\n" + facts)
    after = grantlog.compile("v(zzz).\n")
    for rel, n in (("p", len(values)), ("q", 1)):
        w = diff_programs(before, after, rel)
        assert len(w.lost) == n and all(d.proof is not None for d in w.lost)
        back = diff_programs(after, before, rel)
        assert [d.row for d in back.gained] == [d.row for d in w.lost]
    assert [d.row for d in diff_programs(before, after, "p").lost][:2] == [(-3,), (12,)]


def test_user_errors_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "diff", "--before", BEFORE, FACTS, "--after", AFTER, FACTS,
                       "-r", "allowd")
    assert code == 2
    assert "error[unknown-relation]" in err and "did you mean `allowed`?" in err
    code, _, err = run(capsys, "diff", BEFORE, FACTS)
    assert code == 2 and "error[no-input]: nothing to compare" in err
    code, _, err = run(capsys, "diff", "--before", BEFORE, "--after", "missing.gl")
    assert code == 2 and "error[file-not-found]" in err
    with pytest.raises(grantlog.GrantlogError) as e:
        diff([BEFORE], [AFTER], "nope")
    assert e.value.diagnostics[0].code == "unknown-relation"
