"""The "did you mean" of an unknown constant is computed when the warning is read, not when
the denial is decided (engine/answer/vocabulary.py ``Unknown``), and reads as it did."""

from __future__ import annotations

import pickle

import pytest
from grantlog.engine.answer import vocabulary
from grantlog.grammar.diagnostics import Diagnostic

import grantlog

TEXT = """
rel member(user, group).
rel grant(group, op, obj).
allowed(U, P, O) :- member(U, G), grant(G, P, O).
member(alice, eng). member(bob, ops).
grant(eng, load_table, orders). grant(ops, drop_table, payments).
"""


@pytest.fixture
def counted(monkeypatch: pytest.MonkeyPatch) -> list[object]:
    """The words ``closest`` was asked about (engine/core/suggest.py, as vocabulary calls it)."""
    asked: list[object] = []
    real = vocabulary.closest

    def closest(word: object, candidates: object, *args: object) -> str | None:
        asked.append(word)
        return real(word, candidates, *args)  # type: ignore[arg-type]
    monkeypatch.setattr(vocabulary, "closest", closest)
    return asked


def test_a_denial_computes_no_suggestion_until_its_help_is_read(counted: list[object]) -> None:
    r = grantlog.Reasoner(grantlog.compile(TEXT))
    d = r.check("alice", "load_tabel", "orders")
    assert not d.allowed and d.warned("unknown-constant")
    assert counted == []  # decided: nothing suggested yet
    (w,) = d.warnings
    assert w.help == "did you mean `load_table`?"
    assert counted and set(counted) == {"load_tabel"}
    n = len(counted)
    assert w.help == "did you mean `load_table`?" and len(counted) == n  # computed once


def test_the_warning_reads_as_the_eager_one() -> None:
    r = grantlog.Reasoner(grantlog.compile(TEXT))
    for user, op, obj, near in [("alice", "load_tabel", "orders", "load_table"),
                                ("alcie", "load_table", "orders", "alice"),
                                ("alice", "load_table", "zzzzzz", None)]:
        (w,) = r.check(user, op, obj).warnings
        plain = Diagnostic(w.code, w.message, w.span, "warning", vocabulary.did_you_mean(near))
        assert w == plain and plain == w and hash(w) == hash(plain)
        assert str(w.render()) == plain.render() and w.to_dict() == plain.to_dict()
        assert repr(w) == repr(plain)
        back = pickle.loads(pickle.dumps(w))
        assert type(back) is Diagnostic and back == plain
        assert vocabulary.to_json([w]) == vocabulary.to_json([plain])


def test_strict_raises_the_suggestion() -> None:
    r = grantlog.Reasoner(grantlog.compile(TEXT))
    with pytest.raises(grantlog.GrantlogError) as info:
        r.check("alice", "load_tabel", "orders", strict=True)
    (d,) = info.value.diagnostics
    assert d.severity == "error" and d.help == "did you mean `load_table`?"
    assert "did you mean `load_table`?" in str(info.value)

