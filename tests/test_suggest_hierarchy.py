"""Suggestions find the ownership or the grant at the goal's object and its ancestors first,
and rank the changes that move the hierarchy (its edges) or flip a global switch (a 0-ary
fact) after them (engine/answer/abduction.py, suggest.py). From the rules' structure: the
model below names its relations unlike any shipped model (its hierarchy is recognised from the
rules' shape), and the shipped Gravitino example's `bob drop_table orders` gets the owner
facts that were never found before (only `authorization_disabled` and moving the table)."""

from __future__ import annotations

from pathlib import Path

from grantlog.engine.answer.abduction import Bounds
from test_suggest import verify

import grantlog

ROOT = Path(__file__).resolve().parent.parent

MODEL = """
rel link(parent: string, child: string).
rel kind(object: string, type: string).
rel keeper(object: string, user: string).
rel user(name: string).
rel open_all().
rel up(anc: string, obj: string).
rel keeps(user: string, object: string).
rel allowed(user: string, op: string, object: string).
up(X, X) :- kind(X, _).
up(A, X) :- link(A, X).
up(A, X) :- up(A, P), link(P, X).
keeps(U, O) :- keeper(O, U), user(U).
allowed(U, drop, O) :- keeps(U, A), up(A, O).
allowed(U, drop, O) :- open_all, user(U), kind(O, _).
kind(r, root). kind(s, dir). kind(t, file). kind(x, file). kind(y, file).
link(r, s). link(s, t). link(r, x). link(r, y).
keeper(x, bob). keeper(y, bob). user(bob).
"""


def _facts(found: grantlog.Suggestions) -> list[list[str]]:
    return [[e.fact for e in s.edits] for s in found]


def test_ownership_up_the_tree_first_then_moves_and_switches() -> None:
    program = grantlog.compile(MODEL)
    r = grantlog.Reasoner(program)
    found = r.suggest("bob", "drop", "t", limit=10, bounds=Bounds(seconds=60))
    verify(grantlog.Reasoner(program), found.goal, found)
    got = _facts(found)
    # the object itself first (it names the goal's constants), then its ancestors
    assert got[:3] == [["keeper(t, bob)"], ["keeper(r, bob)"], ["keeper(s, bob)"]], got
    rest = [f for fs in got[3:] for f in fs]
    assert rest and all(f.startswith("link(") or f == "open_all" for f in rest), got
    assert ["link(x, t)"] in got  # moving the object under one bob keeps: still found, after
    assert ["open_all"] in got
    assert [s.moves for s in found] == sorted(s.moves for s in found)


def test_the_example_owner_of_the_table_or_an_ancestor_before_moving_it() -> None:
    program = grantlog.compile(paths=[ROOT / "rules" / "gravitino.gl",
                                      ROOT / "examples" / "gravitino" / "facts.gl"])
    r = grantlog.Reasoner(program)
    table = "m1.lakehouse.sales.orders"
    found = r.suggest("bob", "drop_table", table, limit=6, bounds=Bounds(seconds=60))
    verify(grantlog.Reasoner(program), found.goal, found)
    got = _facts(found)
    owners = [f"owner({x}, bob)" for x in ('"m1.lakehouse.sales.orders"', '"m1.lakehouse"',
                                           '"m1.lakehouse.sales"', "m1")]
    assert got[:4] == [[o] for o in owners], got
    assert all(s.moves == 0 for s in found.suggestions[:4])
    assert all(s.moves == 1 for s in found.suggestions[4:]), got  # edges, the switch
