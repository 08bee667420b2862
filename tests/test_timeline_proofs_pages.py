"""A timeline's proofs with reads shared between its edges (engine/answer/timed_proofs.py
``Shared``) re-read the why-not search's page reads before an explanation is taken from
another edge (issue #28). The why-not search asks whether a derived relation has any row
for a bound column (a negated literal with an anonymous variable) by reading its facts a
page at a time (engine/answer/point_proofs.py ``_Pages``); where no point read of those facts
was made over the edges, that page is the only read of them. A fixed history: u0's write on
r0 is lost twice the same way (its membership retracted), the why-nots reading the same
facts but for that page, whose deny came in between; the second why-not is not the
first's. On SQLite."""

from __future__ import annotations

from typing import Any

import pytest
from grantlog.engine.answer import timed_proofs

import grantlog

#: ``blocked(u0, _)`` is asked only by the why-not search (the second rule's first literal
#: fails, so evaluation never reaches it; the why goes through the first rule)
POLICY = grantlog.compile("""
rel member(user: string, group: string).
rel grant(group: string, op: string, res: string).
rel owner(user: string, res: string).
rel deny(user: string, res: string).
rel blocked(user: string, res: string).
blocked(U, R) :- deny(U, R).
allowed(U, O, R) :- member(U, G), grant(G, O, R).
allowed(U, "write", R) :- owner(U, R), not blocked(U, _).
""", filename="pages.gl")
#: revision by revision: gained, lost (no deny), a deny on r1, gained again, lost again (the
#: deny still there: the why-not's page of u0's denies is not the first one's)
STEPS: list[list[tuple[str, str, tuple[str, ...]]]] = [
    [("+", "grant", ("g0", "write", "r0")), ("+", "member", ("u0", "g0"))],
    [("-", "member", ("u0", "g0"))],
    [("+", "deny", ("u0", "r1"))],
    [("+", "member", ("u0", "g0"))],
    [("-", "member", ("u0", "g0"))],
]


def test_a_why_not_is_not_reused_where_its_page_read_changed(
        tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    url = f"sqlite:///{tmp_path / 'pages.db'}"
    with grantlog.Reasoner(POLICY, store=url, create=True, follow=False) as w:
        assert w.store is not None
        w.store.checkpoint()  # a temporal table from the start: point reads
        for step in STEPS:
            with w.transaction() as tx:
                for sign, rel, row in step:
                    (tx.insert if sign == "+" else tx.retract)(rel, [row])
    monkeypatch.setattr(timed_proofs, "SHARED_FROM", 1)  # the edges' reads shared
    with grantlog.Reasoner(POLICY, store=url, follow=False) as r, \
            grantlog.Reasoner(POLICY, store=url, follow=False) as rebuilt:
        got = r.timeline("u0", "write", "r0", proofs=True)
        assert [(i.start.revision, i.end and i.end.revision) for i in got] == [(1, 2), (4, 5)]
        first, second = (i.why_not for i in got)
        assert first is not None and second is not None
        for i in got:
            for edge, ex in ((i.start, i.why), (i.end, i.why_not)):
                assert ex.to_dict() == rebuilt.explain(ex.goal, at_revision=edge.revision).to_dict()
        assert "deny(u0, r1)" not in first.render() and "deny(u0, r1)" in second.render()
        assert first.to_dict() != second.to_dict()
