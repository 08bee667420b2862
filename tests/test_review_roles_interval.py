"""A role's review over revision intervals (issue #28, item 5: engine/answer/review.py
``role_timeline``): on generated histories — memberships, roles given to groups and to users
directly, grants to roles, denies, a policy swap, rule-file facts — with checkpoints every few
revisions, the review of every role since several revisions equals the replay's (the same
review with the interval path refused: timelines.py ``keyed``), as JSON; the Gravitino example
world's role review too. On SQLite and PostgreSQL."""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import pytest
from conftest import history_strategy, write_history
from grantlog.engine.answer import review as review_mod
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from test_review import normalised, world

import grantlog

DECLS = """
rel member(user: string, group: string).
rel role_of(group: string, role: string).
rel direct(user: string, role: string).
rel grant(role: string, op: string, res: string).
rel deny(user: string, res: string).
rel holds(principal: string, role: string).
holds(U, R) :- member(U, G), role_of(G, R).
holds(G, R) :- role_of(G, R).
holds(U, R) :- direct(U, R).
role_of("g1", "r9").
grant("r9", "write", "x1").
"""
#: the first policy: a role's grants unless denied; g2's members read anything granted
POLICY_A = grantlog.compile(DECLS + """
allowed(U, O, X) :- holds(U, R), grant(R, O, X), not deny(U, X).
allowed(U, "read", X) :- member(U, "g2"), grant(_, _, X).
""", filename="a.gl")
#: swapped in: a deny no longer blocks a role's grant; a direct role holder writes anything
#: written by some role, unless denied
POLICY_B = grantlog.compile(DECLS + """
allowed(U, O, X) :- holds(U, R), grant(R, O, X).
allowed(U, "write", X) :- direct(U, _), grant(_, "write", X), not deny(U, X).
""", filename="b.gl")
USERS, GROUPS, ROLES = ["u0", "u1"], ["g1", "g2"], ["r0", "r1"]
OPS, RES = ["read", "write"], ["x0", "x1"]
VALUES: dict[str, tuple[list[str], ...]] = {
    "member": (USERS, GROUPS), "role_of": (GROUPS, ROLES), "direct": (USERS, ROLES),
    "grant": (ROLES, OPS, RES), "deny": (USERS, RES)}

histories = history_strategy(VALUES, "+++-", 8)


def _both(r: grantlog.Reasoner, role: str, since: int) -> None:
    """The review of ``role`` since ``since``: over revision intervals, and the replay's."""
    rv = review_mod
    holders = rv.role_holders(r, role)
    assert rv.role_timeline(r, role, holders, since) is not None  # the interval path applies
    got = r.review(role=role, since=since).to_dict()
    with pytest.MonkeyPatch.context() as m:
        m.setattr(rv, "role_timeline", lambda *a: None)  # refused: the replay
        want = r.review(role=role, since=since).to_dict()
    assert got == want, (role, since)


def _run(url: str, history: list[Any], every: int) -> None:
    head = write_history(POLICY_A, POLICY_B, url, history, every)
    with grantlog.Reasoner(POLICY_A, store=url, follow=False) as r:
        sinces = sorted({0, min(1, head), head // 2, head})
        for role, since in itertools.product([*ROLES, "r9"], sinces):
            _both(r, role, since)


#: u0 holds r0 only between the policy swap's revision and the head: the replay follows it
#: from the swap on (its read gained there, not at revision 1); u1 held it at revision 1 only
FOLLOWED = [[("direct", "+", ("u0", "r0")), ("grant", "+", ("r0", "read", "x0")),
             ("member", "+", ("u1", "g2")), ("role_of", "+", ("g2", "r0"))],
            [("member", "-", ("u1", "g2"))], "swap", [("direct", "-", ("u0", "r0"))]]


@settings(max_examples=8, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(history=histories, every=st.sampled_from([1, 2, 3]))
@example(history=FOLLOWED, every=1)
def test_sqlite_role_reviews_over_intervals_equal_the_replays(
        tmp_path_factory: pytest.TempPathFactory, history: list[Any], every: int) -> None:
    _run(f"sqlite:///{tmp_path_factory.mktemp('rri') / 'facts.db'}", history, every)


_COUNTER = itertools.count()


@settings(max_examples=2, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(history=histories, every=st.sampled_from([1, 3]))
def test_postgres_role_reviews_over_intervals_equal_the_replays(
        pg_server: Any, history: list[Any], every: int) -> None:
    _run(pg_server.schema_url(f"rri{next(_COUNTER)}"), history, every)


def test_the_gravitino_role_review_over_intervals(tmp_path: Path) -> None:
    """The example world's analyst and PII-blocker roles: the same review before the store
    has a temporal table (the replay) and after (over revision intervals)."""
    with world(f"sqlite:///{tmp_path / 'facts.db'}") as r:
        assert r.store is not None
        roles = ("m1/role/analyst", "m1/role/pii_blocker")
        replayed = {role: normalised(r.review(role=role, since=1).to_dict()) for role in roles}
        assert replayed["m1/role/analyst"]["counts"]["lost"] >= 1
        r.store.checkpoint()
        for role in roles:
            assert review_mod.role_timeline(r, role, review_mod.role_holders(r, role),
                                             1) is not None
            assert normalised(r.review(role=role, since=1).to_dict()) == replayed[role]
