"""``Reasoner.all_views()``: virtual relations are evaluated inside the read (under the
reasoner's lock, errors as diagnostics), not later when the caller reads the views (found
in review, session 29)."""

from __future__ import annotations

import pytest
from grantlog.engine.eval import demand as demand_mod

import grantlog

TEXT = """rel e(a: string, b: string).
e("a", "b").
e("b", "c").
p(X, Y) :- e(X, Y).
q(X) :- p(X, _), e(_, X).
"""


def test_all_views_evaluates_virtual_relations_before_it_returns() -> None:
    r = grantlog.Reasoner(grantlog.compile(TEXT))
    after: list[str] = []
    real = demand_mod.DemandContext.demand
    views = None

    def spy(self, rel, cols, key):  # type: ignore[no-untyped-def]
        if views is not None:  # asked for once all_views has returned
            after.append(rel)
        return real(self, rel, cols, key)

    demand_mod.DemandContext.demand = spy  # type: ignore[method-assign]
    try:
        views = r.all_views()
        got = {k: set(v) for k, v in views.items()}
    finally:
        demand_mod.DemandContext.demand = real  # type: ignore[method-assign]
    assert got["q"] == {("b",)}
    assert got == r.all_rows()
    assert not after, f"evaluated after all_views returned: {after}"


def test_all_views_deep_chain_gives_the_diagnostic_as_all_rows_does() -> None:
    n = 800
    # the deepest view sorts first ("a"), so it is evaluated before the memo has the chain
    chain = "\n".join(f"r{i + 1:04}(X) :- r{i:04}(X).\nr{i + 1:04}(X) :- r{i:04}(X), X = 0."
                      for i in range(1, n))
    text = f"b(1).\nr0001(X) :- b(X).\n{chain}\na(X) :- r{n:04}(X).\n"
    r = grantlog.Reasoner(grantlog.compile(text))
    with pytest.raises(grantlog.GrantlogError) as info:
        r.all_rows()
    assert info.value.diagnostics[0].code == "evaluation-too-deep"
    r2 = grantlog.Reasoner(grantlog.compile(text))
    with pytest.raises(grantlog.GrantlogError) as info:
        r2.all_views()
    assert info.value.diagnostics[0].code == "evaluation-too-deep"
