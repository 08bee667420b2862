"""Short reprs of the objects a user prints first: a `Program` (its full dataclass repr was
175k characters for gravitino) and a filter's `Residual`."""

from __future__ import annotations

from pathlib import Path

from grantlog.rules import model_path

import grantlog

ROOT = Path(__file__).resolve().parent.parent
DEMO = [str(ROOT / "examples/demo/policy.gl"), str(ROOT / "examples/demo/facts.gl")]
FACTS = str(ROOT / "examples/gravitino/facts.gl")


def test_program_repr_counts_and_names_the_decision() -> None:
    program = grantlog.compile(
        "rel member(user: string, group: string).\n"
        "member(alice, eng). member(bob, eng).\n"
        "allowed(U, read, doc) :- member(U, eng).\n")
    assert repr(program) == "<Program 2 relations, 1 rule, 2 facts, decision allowed/3>"
    empty = grantlog.compile("p(a).")
    assert repr(empty) == "<Program 1 relation, 0 rules, 1 fact, decision allowed (none)>"


def test_program_repr_is_short_for_a_shipped_model() -> None:
    path = model_path("gravitino")
    assert path is not None
    program = grantlog.compile(paths=[str(path), FACTS])
    text = repr(program)
    assert text.startswith("<Program ") and text.endswith(", decision allowed/3>")
    assert len(text) < 100
    assert f"{len(program.rules):,} rules" in text and f"{len(program.facts):,} facts" in text


def test_residual_repr_shows_the_question_and_a_cut_condition() -> None:
    path = model_path("gravitino")
    assert path is not None
    r = grantlog.Reasoner(grantlog.compile(paths=[str(path), FACTS]))
    f = r.filter("alice", "load_table", type="table")
    assert repr(f) == ('<Residual alice load_table at revision 0: {"and": [{"type": "table"}, '
                       '{"under": "m1.lakehouse.sales"}]}>')
    long = r.filter("bob", "load_table")  # 217 characters of JSON: cut at 120
    text = repr(long)
    assert text.startswith('<Residual bob load_table at revision 0: {"and": [{"type": "table"}')
    assert text.endswith("...>")
    assert len(text) == len("<Residual bob load_table at revision 0: >") + 120
    quoted = grantlog.Reasoner(grantlog.compile(paths=DEMO)).filter("a b", "load_table")
    assert repr(quoted).startswith('<Residual "a b" load_table at revision 0: ')
