"""``grantlog eval -r REL`` (issue #27, item 4): ``-r`` applies to ``--json`` too, an unknown
relation is ``unknown-relation`` with a "did you mean", and only REL's dependency cone is
evaluated (engine/compile/restrict.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from grantlog.engine.compile.restrict import cone, restrict

import grantlog
from grantlog.cli import main

ROOT = Path(__file__).resolve().parent.parent
RULES = str(ROOT / "rules" / "gravitino.gl")
FACTS = str(ROOT / "examples" / "gravitino" / "facts.gl")
DEMO = [str(ROOT / "examples" / "demo" / "policy.gl"), str(ROOT / "examples" / "demo" / "facts.gl")]

SMALL = """
n(1). n(2). n(3). m(2).
pair(X, Y) :- n(X), n(Y), X != Y.
only(X) :- n(X), not m(X).
reach(X, Y) :- pair(X, Y).
reach(X, Z) :- reach(X, Y), pair(Y, Z).
"""


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


# -- the engine -----------------------------------------------------------------------------------

def test_the_cone_of_a_relation() -> None:
    p = grantlog.compile(SMALL)
    assert cone(p, ["n"]) == {"n"}
    assert cone(p, ["only"]) == {"only", "n", "m"}  # negation is a dependency too
    assert cone(p, ["reach"]) == {"reach", "pair", "n"}
    part = restrict(p, ["n"])
    assert part.rules == [] and set(part.relations) == {"n"}
    assert {f.rel for f in part.facts} == {"n"}
    part = restrict(p, ["reach", "only"])
    assert {r.head.rel for r in part.rules} == {"reach", "pair", "only"}
    assert [r.index for r in part.rules] == list(range(len(part.rules)))


def test_an_unknown_relation_is_an_error_with_a_suggestion() -> None:
    p = grantlog.compile(SMALL)
    with pytest.raises(grantlog.GrantlogError) as exc:
        restrict(p, ["reech"])
    d = exc.value.diagnostics[0]
    assert d.code == "unknown-relation" and "`reech`" in d.message
    assert d.help is not None and "`reach`" in d.help


@pytest.mark.parametrize("paths", [DEMO, [RULES, FACTS]], ids=["demo", "gravitino"])
def test_the_restricted_program_gives_the_same_rows(paths: list[str]) -> None:
    p = grantlog.compile(paths=paths)
    full = grantlog.Reasoner(p).all_rows()
    names = sorted(p.relations)
    if len(names) > 20:  # the base relations, and derived ones of every kind
        names = sorted({n for n in names if n not in p.derived}
                       | {"ancestor", "ancestor_or_self", "allowed", "can_use_schema",
                           "missing_use_schema"}
                       & set(names))
    for rel in names:
        got = grantlog.Reasoner(restrict(p, [rel])).rows(rel)
        assert got == full[rel], rel


# -- the command line -----------------------------------------------------------------------------

def test_relation_with_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "p.gl").write_text(SMALL)
    code, out, _ = run(capsys, "eval", str(tmp_path / "p.gl"), "-r", "only", "--json")
    assert code == 0 and json.loads(out) == {"only": [[1], [3]]}
    code, out, _ = run(capsys, "eval", str(tmp_path / "p.gl"), "-r", "only", "-r", "m",
                       "--json")
    assert json.loads(out) == {"m": [[2]], "only": [[1], [3]]}
    code, out, _ = run(capsys, "eval", str(tmp_path / "p.gl"), "-r", "only")
    assert out.splitlines() == ["// only: 2 rows", "only(1).", "only(3)."]
    code, out, _ = run(capsys, "eval", str(tmp_path / "p.gl"), "--json")  # still everything
    assert set(json.loads(out)) == {"n", "m", "pair", "only", "reach"}


def test_an_unknown_relation_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "p.gl").write_text(SMALL)
    for extra in ([], ["--json"]):
        code, out, err = run(capsys, "eval", str(tmp_path / "p.gl"), "-r", "reech", *extra)
        assert code == 2 and out == ""
        assert "error[unknown-relation]" in err and "did you mean `reach`?" in err


def test_only_the_cone_is_evaluated(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                    monkeypatch: pytest.MonkeyPatch) -> None:
    import grantlog.cli.rules as rules

    seen: list[set[str]] = []

    class Spy(rules.Reasoner):  # type: ignore[misc,name-defined]
        def __init__(self, program: grantlog.Program, *args: object, **kw: object) -> None:
            seen.append({r.head.rel for r in program.rules})
            super().__init__(program, *args, **kw)

    monkeypatch.setattr(rules, "Reasoner", Spy)
    code, out, _ = run(capsys, "eval", "--model", "gravitino", "--facts", FACTS,
                       "-r", "member")
    assert code == 0 and out.startswith("// member: ")
    assert seen == [set()]  # a base relation: no rule evaluated at all
    code, out, _ = run(capsys, "eval", "--model", "gravitino", "--facts", FACTS,
                       "-r", "ancestor")
    assert seen[1] and "allowed" not in seen[1] and seen[1] <= {"ancestor", "ancestor_or_self"}


def test_relation_over_a_store(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    url = f"sqlite:///{tmp_path / 'facts.db'}"
    assert main(["store", "load", url, FACTS, "--model", "gravitino", "--create"]) == 0
    capsys.readouterr()
    code, stored, _ = run(capsys, "eval", "--model", "gravitino", "--store", url,
                          "-r", "member", "-r", "ancestor", "--json")
    code2, direct, _ = run(capsys, "eval", "--model", "gravitino", "--facts", FACTS,
                           "-r", "member", "-r", "ancestor", "--json")
    assert code == code2 == 0 and json.loads(stored) == json.loads(direct)
    assert json.loads(stored)["member"]
