"""The semi-join filter (engine/core/lazy_index.py ``semijoin``, forced on with SEMI=0)
against the unfiltered run, on rule shapes the property tests rarely make: constants,
repeated variables, assignments and comparisons before the first scan, integers, negation,
materialized and queried (written in review, session 29)."""

from __future__ import annotations

import random
from unittest.mock import patch

import pytest
from grantlog.engine.core import lazy_index

import grantlog

FACTS = []
rnd = random.Random(3)
for _ in range(60):
    a, b, c = (rnd.choice(["a", "b", "c", "d", 1, 2]) for _ in range(3))
    FACTS.append((a, b, c))


def _lit(v: object) -> str:
    return f'"{v}"' if isinstance(v, str) else str(v)


def _facts() -> str:
    out = []
    for a, b, c in FACTS:
        out.append(f"t({_lit(a)}, {_lit(b)}, {_lit(c)}).")
        out.append(f"e({_lit(a)}, {_lit(b)}).")
    return "\n".join(sorted(set(out))) + "\n"


BODIES = [
    "h(X, Y) :- e(X, Y), e(Y, X).",
    "h(X, Y) :- e(X, X), t(X, Y, _).",
    "h(X, Y) :- e(X, Y), t(Y, Y, X).",
    "h(X, Y) :- e(X, Y), t(\"a\", Y, _).",
    "h(X, Y) :- e(X, Y), t(Y, \"a\", Z), e(Z, X).",
    "h(X, Y) :- Z = \"a\", e(X, Y), t(Z, Y, _).",
    "h(X, Y) :- e(X, Y), Z = Y, t(Z, _, _).",
    "h(X, Y) :- e(X, Y), not t(X, Y, _), e(Y, _).",
    "h(X, Y) :- e(X, Y), X != Y, e(Y, Z), e(Z, X).",
    "h(X, Y) :- t(X, Y, Y), e(Y, X).",
    "h(X, Y) :- e(X, Y), h2(Y, X).\nh2(A, B) :- e(A, B).",
    "h(X, Y) :- e(X, Y).\nh(X, Z) :- h(X, Y), e(Y, Z).",
    "h(X, Z) :- e(X, Y), h(Y, Z).\nh(X, Y) :- t(X, Y, 1).",
    "h(X, Y) :- e(X, Y), e(Y, X), t(X, Y, X).",
]


def _run(text: str, semi: int) -> tuple[set, list]:
    with patch.object(lazy_index, "SEMI", semi):
        r = grantlog.Reasoner(grantlog.compile(text))
        rows = r.rows("h")
        q = r.query("e(X, Y), t(Y, X, _)")
        return rows, q


@pytest.mark.parametrize("body", BODIES)
@pytest.mark.parametrize("mat", [False, True])
def test_filter_changes_nothing(body: str, mat: bool) -> None:
    decl = "@materialize rel h(a: any, b: any).\n" if mat else ""
    text = ("rel e(a: any, b: any).\nrel t(a: any, b: any, c: any).\n" + decl + body + "\n"
            + _facts())
    assert _run(text, 0) == _run(text, 10**9)
