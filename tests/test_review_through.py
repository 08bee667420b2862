"""A role review restricted to the decisions derivable through the role (issue #28, item 5:
engine/answer/through.py): the same review as when every decision of every holder is asked
and explained (the candidates made every decision: the review's ``_path`` filter alone, as
before), on generated histories, now and since several revisions; the candidates are a
superset of the decisions whose proof names the role, now and at every revision of the
history; a holder's many decisions not through the role are never explained; a decision
through the role by a chain of memberships and a hierarchy stays. SQLite (PostgreSQL runs
the same interval path in tests/test_review_roles_interval.py)."""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import pytest
from conftest import write_history
from grantlog.engine.answer import through, timed
from grantlog.engine.answer.explain import Prover
from grantlog.engine.core import ir
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_review_roles_interval import POLICY_A, POLICY_B, ROLES, histories

import grantlog


def _every_decision(r: grantlog.Reasoner, value: Any, rel: str | None = None) -> set[Any]:
    return set(r.rows(rel or r.program.decision))


def _every_decision_over(r: grantlog.Reasoner, value: Any, first: int, last: int,
                         rel: str | None = None) -> set[Any] | None:
    d = timed.decided(r, (), (), first, last)
    return None if d is None else set(d.rows)


def _reviews(r: grantlog.Reasoner, role: str, since: int | None) -> None:
    got = r.review(role=role, since=since).to_dict()
    with pytest.MonkeyPatch.context() as m:  # every decision a candidate: the filter alone
        m.setattr(through, "found", _every_decision)
        m.setattr(through, "keys_over", _every_decision_over)
        want = r.review(role=role, since=since).to_dict()
    assert got == want, (role, since)


def _names(r: grantlog.Reasoner, role: str, key: Any, at: int | None = None) -> bool:
    """Whether the proof of ``key`` (now, or at revision ``at``) has a fact naming ``role``."""
    goal = ir.show_atom("allowed", key)
    ex = r.explain(goal) if at is None else timed.explain_at(r, at, goal)
    return ex.holds and any(role in n.row for n in ex.proof.walk()
                            if n.kind == "fact" and n.row is not None)


def _superset(r: grantlog.Reasoner, role: str, head: int) -> None:
    """Every decision whose proof names ``role`` is a candidate: now, and at every revision
    (by the candidates over the whole history)."""
    found = through.found(r, role)
    assert {k for k in r.rows(r.program.decision) if _names(r, role, k)} <= found
    assert found <= set(r.rows(r.program.decision))  # every candidate holds
    over = through.keys_over(r, role, 1, head)
    assert over is not None
    for rev in range(1, head + 1):
        held = {tuple(b.values()) for b in r.query("allowed(S, O, X)", at_revision=rev)}
        assert {k for k in held if _names(r, role, k, rev)} <= over, rev


@settings(max_examples=8, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(history=histories, every=st.sampled_from([1, 2]))
def test_restricted_role_reviews_equal_every_decision_filtered(
        tmp_path_factory: pytest.TempPathFactory, history: list[Any], every: int) -> None:
    url = f"sqlite:///{tmp_path_factory.mktemp('thr') / 'facts.db'}"
    head = write_history(POLICY_A, POLICY_B, url, history, every)
    with grantlog.Reasoner(POLICY_A, store=url, follow=False) as r:
        for role, since in itertools.product([*ROLES, "r9"],
                                             sorted({None, 0, head // 2, head}, key=str)):
            _reviews(r, role, since)
        if head >= 1:
            for role in [*ROLES, "r9"]:
                _superset(r, role, head)


#: u holds the focus role through a chain of groups (u in g1, g1 inside g2, g2 given the
#: role); the role reads the catalog c, whose tables sit two levels down, and includes the
#: role mid, which includes leaf (a role hierarchy: recursive), which writes d.t5; u also
#: holds the role `other`, which reads 40 other tables; t3 is read through both roles; a
#: deny of one table holds only for focus-role readers
CHAIN = grantlog.compile("""
rel member(user: string, group: string).
rel inside(group: string, outer: string).
rel role_of(group: string, role: string).
rel contains(parent: string, child: string).
rel grant(role: string, op: string, res: string).
rel deny(role: string, res: string).
rel in_group(user: string, group: string).
rel holds(principal: string, role: string).
rel below(obj: string, anc: string).
in_group(U, G) :- member(U, G).
in_group(U, G2) :- in_group(U, G), inside(G, G2).
holds(U, R) :- in_group(U, G), role_of(G, R).
rel includes(role: string, inner: string).
holds(U, R2) :- holds(U, R1), includes(R1, R2).
below(X, X) :- contains(_, X).
below(X, A) :- contains(A, X).
below(X, A) :- contains(P, X), below(P, A).
allowed(U, O, X) :- holds(U, R), grant(R, O, Y), below(X, Y), not denied(U, X).
rel denied(user: string, res: string).
denied(U, X) :- holds(U, R), deny(R, X).
""", filename="chain.gl")


def _chain_facts() -> dict[str, list[tuple[str, ...]]]:
    facts: dict[str, list[tuple[str, ...]]] = {
        "member": [("u", "g1"), ("v", "g3")], "inside": [("g1", "g2")],
        "role_of": [("g2", "focus"), ("g3", "other"), ("g1", "other")],
        "contains": [("root", "c"), ("c", "c.s"), ("c.s", "c.s.t1"), ("c.s", "c.s.t2"),
                     ("c.s", "c.s.t3"), ("root", "d")],
        "grant": [("focus", "read", "c"), ("other", "read", "c.s.t3")],
        "deny": [("focus", "c.s.t2")], "includes": [("focus", "mid"), ("mid", "leaf")]}
    facts["grant"].append(("leaf", "write", "d.t5"))
    for i in range(40):
        facts["contains"].append(("d", f"d.t{i}"))
        facts["grant"].append(("other", "read", f"d.t{i}"))
    return facts


def test_decisions_not_through_the_role_are_not_explained(tmp_path: Path) -> None:
    r = grantlog.Reasoner(CHAIN)
    with r.transaction() as tx:
        for rel, rows in _chain_facts().items():
            tx.insert(rel, rows)
    proofs: list[Any] = []
    prove, explain = Prover.prove, grantlog.Reasoner.explain

    def counted(self: Prover, rel: str, row: Any, depth: int = 0) -> Any:
        if depth == 0:
            proofs.append(row)
        return prove(self, rel, row, depth)

    def explained(self: grantlog.Reasoner, goal: str, *a: Any, **k: Any) -> Any:
        proofs.append(goal)
        return explain(self, goal, *a, **k)

    with pytest.MonkeyPatch.context() as m:
        m.setattr(Prover, "prove", counted)
        m.setattr(grantlog.Reasoner, "explain", explained)
        rv = r.review(role="focus")
    keys = {(e.subject, e.operation, e.resource) for e in rv.entries}
    # through the chain of groups and down the hierarchy (c.s.t2 is denied to the role)
    assert keys == {("u", "read", x) for x in ("c", "c.s", "c.s.t1", "c.s.t3")} | {
        ("u", "write", "d.t5")}
    assert len(r.rows("allowed")) == 86  # u's 40 others, v's 41: never explained
    assert len(proofs) == 5, proofs
    # the same entries, paths included, as when every decision is a candidate
    with pytest.MonkeyPatch.context() as m:
        m.setattr(through, "found", _every_decision)
        assert r.review(role="focus").to_dict() == rv.to_dict()
