"""Timelines evaluated over revision intervals (issue #28, item 3: engine/answer/timed.py over
the store's temporal table): on generated histories — inserts, retracts, a policy swap, nested
groups and a resource hierarchy (recursion), negation, rule-file facts — with checkpoints taken
every few revisions (so the log above the last one is read too), a timeline of one decision
equals the sequence of as-of answers at every revision and equals the replay of the log
(engine/answer/timelines.py ``keyed``), edge for edge (revision, time, author, reason); the
whole-resource and whole-subject timelines equal the replay's; the same after ``compact``
inside the horizon. On SQLite and PostgreSQL."""

from __future__ import annotations

import itertools
from typing import Any

import pytest
from conftest import history_strategy, write_history
from grantlog.engine.answer import timed, timelines
from grantlog.engine.answer.spans import meet, merge, minus
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import grantlog

DECLS = """
rel member(user: string, group: string).
rel sub(group: string, parent: string).
rel contains(parent: string, child: string).
rel grant(group: string, op: string, res: string).
rel deny(user: string, res: string).
in_group(U, G) :- member(U, G).
in_group(U, P) :- in_group(U, G), sub(G, P).
ancestor(C, P) :- contains(P, C).
ancestor(C, A) :- ancestor(C, P), contains(A, P).
sub("g1", "g9").
grant("g9", "write", "r1").
"""
#: the policy in force first: grants through nested groups, down the hierarchy, unless denied
POLICY_A = grantlog.compile(DECLS + """
allowed(U, O, R) :- in_group(U, G), grant(G, O, R), not deny(U, R).
allowed(U, O, R) :- in_group(U, G), grant(G, O, A), ancestor(R, A), not deny(U, R).
""", filename="a.gl")
#: the policy swapped in: a deny no longer blocks a write, and a member of g2 reads anything
POLICY_B = grantlog.compile(DECLS + """
allowed(U, O, R) :- in_group(U, G), grant(G, O, R), O = "write".
allowed(U, O, R) :- in_group(U, G), grant(G, O, R), not deny(U, R).
allowed(U, "read", R) :- member(U, "g2"), grant(_, _, R).
""", filename="b.gl")
USERS, GROUPS, OPS, RES = ["u0", "u1", "u2"], ["g0", "g1", "g2"], ["read", "write"], \
    ["r0", "r1", "r2"]
VALUES: dict[str, tuple[list[str], ...]] = {
    "member": (USERS, GROUPS), "sub": (GROUPS, GROUPS), "contains": (RES, RES),
    "grant": (GROUPS, OPS, RES), "deny": (USERS, RES)}
COUNTER = itertools.count()


histories = history_strategy(VALUES, "+-", 8)


def _write(url: str, history: list[Any], every: int) -> int:
    return write_history(POLICY_A, POLICY_B, url, history, every, reasons=True)


def _replay_one(r: grantlog.Reasoner, u: str, o: str, x: str, first: int) -> list[Any]:
    t = timelines.keyed(r, {}, (), first, None,
                        lambda live: {()} if live.check(u, o, x) else set(),
                        lambda row: () if tuple(row) == (u, o, x) else None)
    return list(t.intervals.get((), []))


def _replay_resource(r: grantlog.Reasoner, o: str, x: str, first: int) -> Any:
    return timelines.keyed(r, {"operation": o, "resource": x}, ("subject",), first, None,
                           lambda live: {(s,) for s in live.who(o, x)},
                           lambda row: (row[0],) if row[1:] == (o, x) else None)


def _replay_subject(r: grantlog.Reasoner, u: str, first: int) -> Any:
    def start(live: Any) -> set[Any]:
        return {(b["O"], b["R"]) for b in live.query(f'allowed("{u}", O, R)')}

    return timelines.keyed(r, {"subject": u}, ("operation", "resource"), first, None, start,
                           lambda row: (row[1], row[2]) if row[0] == u else None)


def _agree(r: grantlog.Reasoner, first: int, head: int) -> None:
    for u, o, x in itertools.product(USERS, OPS, RES):
        assert timed.decided(r, (0, 1, 2), (u, o, x), first) is not None  # this path
        got = r.timeline(u, o, x, since=first)
        for rev in range(first, head + 1):
            want = r.check(u, o, x, at_revision=rev).allowed
            assert any(rev in i for i in got) == want, (u, o, x, rev)
        assert got == _replay_one(r, u, o, x, first), (u, o, x)
    for o, x in itertools.product(OPS, RES):
        assert r.resource_timeline(o, x, since=first).to_dict() == \
            _replay_resource(r, o, x, first).to_dict(), (o, x)
    for u in USERS:
        assert r.subject_timeline(u, since=first).to_dict() == \
            _replay_subject(r, u, first).to_dict(), u


def _run(url: str, history: list[Any], every: int) -> None:
    head = _write(url, history, every)
    with grantlog.Reasoner(POLICY_A, store=url, follow=False) as r:
        _agree(r, 0, head)
        if head > 1:
            _agree(r, head // 2, head)
    horizon = head // 2
    if horizon:
        with grantlog.Reasoner(POLICY_A, store=url, follow=False) as r:
            assert r.store is not None
            r.store.compact(before_revision=horizon)
            _agree(r, horizon, head)
            assert r.timeline("u0", "read", "r0")[:1] == r.timeline(
                "u0", "read", "r0", since=horizon)[:1]  # the default: the horizon


@settings(max_examples=8, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(history=histories, every=st.sampled_from([1, 2, 3]))
def test_sqlite_interval_timelines_equal_the_answers_and_the_replay(
        tmp_path_factory: pytest.TempPathFactory, history: list[Any], every: int) -> None:
    _run(f"sqlite:///{tmp_path_factory.mktemp('tli') / 'facts.db'}", history, every)


@settings(max_examples=3, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(history=histories, every=st.sampled_from([1, 3]))
def test_postgres_interval_timelines_equal_the_answers_and_the_replay(
        pg_server: Any, history: list[Any], every: int) -> None:
    _run(pg_server.schema_url(f"tli{next(COUNTER)}"), history, every)


def test_without_a_checkpoint_the_log_is_replayed(tmp_path: Any) -> None:
    url = f"sqlite:///{tmp_path / 'f.db'}"
    with grantlog.Reasoner(POLICY_A, store=url, create=True, follow=False) as r:
        r.insert("member", [("u0", "g1")])
        r.retract("member", [("u0", "g1")])
        assert timed.decided(r, (0, 1, 2), ("u0", "write", "r1")) is None
        got = r.timeline("u0", "write", "r1")
        assert [(i.start.revision, None if i.end is None else i.end.revision)
                for i in got] == [(1, 2)]


spans_ = st.lists(st.tuples(st.integers(0, 30), st.integers(0, 30))).map(merge)


@given(a=spans_, b=spans_)
def test_the_algebra_of_revision_sets(a: Any, b: Any) -> None:
    def revs(s: Any) -> set[int]:
        return {t for lo, hi in s for t in range(lo, hi)}

    for s in (meet(a, b), minus(a, b), merge(a + b)):
        assert s == merge(s)  # sorted, disjoint, not touching
    assert revs(meet(a, b)) == revs(a) & revs(b)
    assert revs(minus(a, b)) == revs(a) - revs(b)
    assert revs(merge(a + b)) == revs(a) | revs(b)
