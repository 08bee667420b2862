"""History with validity intervals (issue #28, "What must be shown"): over generated
transaction histories — inserts with and without an interval (expiring, scheduled, both),
retracts, policy swaps, checkpoints — with commit times under the test's control, every
as-of answer equals a fresh reasoner of the facts and policy of that revision evaluated at
that moment, and the timelines (of one decision, a whole resource, a whole subject) equal
the sequence of those answers at every commit and every edge of an interval (where time
passes a ``valid_from``/``valid_until`` between two commits, at the revision in force then).
The same after ``compact`` for the revisions it keeps. On SQLite and PostgreSQL.

Times: commit ``k`` (revision ``k``) is at ``BASE + 10 k``, an interval's bounds at
``BASE + 10 j + 5`` (between two commits) or, with ``ties``, on a commit; all in the past,
so the wall clock is after every edge."""

from __future__ import annotations

import itertools
import time
import types
import uuid
from typing import Any

import pytest
from conftest import examples
from grantlog.engine.answer import timelines
from grantlog.engine.answer.history import Edge, Interval
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import grantlog
from grantlog.store import base as store_base

#: the first commit's time, a million seconds ago (whole seconds: exact as floats)
BASE = float(int(time.time()) - 10**6)
STEP = 10.0
#: a rule file's own facts (every policy has them), one with an interval: from between
#: commits 2 and 3 to commit 5 (a group the stored facts never name)
RULE_FACT = (f"member(u1, g9) from {int(BASE + 2 * STEP + 5)} until {int(BASE + 5 * STEP)}.\n"
             "grant(g9, read, r1).\n")
DECLS = """
rel member(user: string, group: string).
rel grant(group: string, op: string, res: string).
rel deny(user: string, res: string).
"""
POLICY_A = grantlog.compile(DECLS + RULE_FACT + """
allowed(U, O, R) :- member(U, G), grant(G, O, R), not deny(U, R).
""", filename="a.gl")
#: swapped in: deny no longer blocks, and it lets its subject read
POLICY_B = grantlog.compile(DECLS + RULE_FACT + """
allowed(U, O, R) :- member(U, G), grant(G, O, R).
allowed(U, "read", R) :- deny(U, R).
""", filename="b.gl")
POLICIES = {POLICY_A.digest: POLICY_A, POLICY_B.digest: POLICY_B}
USERS, GROUPS, OPS, RES = ["u0", "u1"], ["g0", "g1"], ["read", "write"], ["r0", "r1"]
VALUES: dict[str, tuple[list[str], ...]] = {
    "member": (USERS, GROUPS), "grant": (GROUPS, OPS, RES), "deny": (USERS, RES)}
#: the decisions whose own timelines are compared (every one is in a resource timeline)
DECISIONS = [("u0", "read", "r0"), ("u1", "read", "r1"), ("u0", "write", "r1")]
#: the commits a history has at most (the bounds' grid reaches a little past them)
MOST = 9
Fact = tuple[str, tuple[str, ...]]
Bounds = tuple[float | None, float | None] | None


@st.composite
def bound(draw: st.DrawFn, ties: bool) -> float:
    """A moment between two commits (``ties``: or on one)."""
    j = draw(st.integers(0, MOST + 1))
    return BASE + STEP * j + (0.0 if ties and draw(st.booleans()) else STEP / 2)


@st.composite
def op(draw: st.DrawFn, ties: bool) -> tuple[Any, ...]:
    rel = draw(st.sampled_from(sorted(VALUES)))
    row = tuple(draw(st.sampled_from(vs)) for vs in VALUES[rel])
    if draw(st.sampled_from("++-")) == "-":
        return ("-", rel, row)
    lo = draw(st.none() | bound(ties))
    hi = draw(st.none() | bound(ties).filter(lambda h: lo is None or h > lo))
    return ("+", rel, row, lo, hi)


def histories(ties: bool) -> Any:
    """Steps: a transaction (a list of operations), "swap" (the other policy installed at
    the head), "checkpoint" (the temporal table folded up to the head)."""
    return st.lists(st.one_of(st.lists(op(ties), min_size=1, max_size=3),
                              st.sampled_from(["swap", "checkpoint"])),
                    min_size=1, max_size=MOST + 2)


class Clock:
    """The store's clock (its commit times and policies' install times): the time of the
    last commit until the next one moves it on a step."""

    def __init__(self) -> None:
        self.now = BASE - STEP

    def time(self) -> float:
        return self.now


def valid(bounds: Bounds, t: float) -> bool:
    return bounds is None or ((bounds[0] is None or bounds[0] <= t)
                              and (bounds[1] is None or t < bounds[1]))


class World:
    """What the test wrote: per revision, the facts with their intervals and the policy in
    force (by revision), and each revision's commit time."""

    def __init__(self) -> None:
        self.facts: list[dict[Fact, Bounds]] = [{}]
        self.policy: list[grantlog.Program] = [POLICY_A]
        self.at: list[float | None] = [None]
        self.bounds: set[float] = set()
        self._fresh: dict[tuple[int, float], grantlog.Reasoner] = {}

    def fresh(self, revision: int, t: float) -> grantlog.Reasoner:
        """A fresh reasoner of revision's facts valid at ``t`` (its program's own facts
        read at ``t`` too: ask it with ``now=t``)."""
        key = (revision, t)
        if key not in self._fresh:
            r = grantlog.Reasoner(self.policy[revision])
            with r.transaction() as tx:
                for (rel, row), b in self.facts[revision].items():
                    if valid(b, t):
                        tx.insert(rel, [row])
            self._fresh[key] = r
        return self._fresh[key]

    def revision_before(self, t: float) -> int:
        """The revision a timeline is at when time passes ``t`` between two commits (the
        edges at a commit's own time pass before it)."""
        return max(rev for rev, c in enumerate(self.at) if c is None or c < t)

    def moments(self, first: int) -> list[tuple[int, float]]:
        """(revision, time) of every commit from ``first`` on and every edge after it, in
        time order; the first one is ``first`` at the time the timeline starts from."""
        head = len(self.at) - 1
        start = self.at[first] if self.at[first] is not None else self.at[min(1, head)]
        assert start is not None
        out = [(first, start)]
        out += [(rev, self.at[rev]) for rev in range(first + 1, head + 1)]  # type: ignore[misc]
        rule_edges = {BASE + 2 * STEP + 5, BASE + 5 * STEP}
        out += [(self.revision_before(t), t) for t in self.bounds | rule_edges if t > start]
        return sorted(set(out), key=lambda m: (m[1], m[0]))


def write(url: str, history: list[Any], clock: Clock,
           folded: bool = True) -> tuple[grantlog.Reasoner, World]:
    """The history written (``folded``: the temporal table kept from the start, so the
    timelines are evaluated over it; else only from a "checkpoint" step on)."""
    w = World()
    r = grantlog.Reasoner(POLICY_A, store=url, create=True, follow=False)
    if folded:
        assert r.store is not None
        r.store.checkpoint()
    model: dict[Fact, Bounds] = {}
    policy = POLICY_A
    for n, step in enumerate(history):
        assert r.store is not None
        if step == "swap":
            policy = POLICY_B if policy is POLICY_A else POLICY_A
            r.store.put_policy(policy)  # at the last commit's time: in force from it on
            w.policy[-1] = policy
            continue
        if step == "checkpoint":
            r.store.checkpoint()
            continue
        clock.now += STEP
        with r.transaction(author=f"a{n}") as tx:
            for o in step:
                if o[0] == "-":
                    tx.retract(o[1], [o[2]])
                    model.pop((o[1], o[2]), None)
                else:
                    tx.insert(o[1], [o[2]], valid_from=o[3], valid_until=o[4])
                    model[(o[1], o[2])] = None if o[3] is None and o[4] is None \
                        else (o[3], o[4])
                    w.bounds |= {b for b in o[3:] if b is not None}
        if tx.revision == len(w.facts):  # it changed something
            w.facts.append(dict(model))
            w.policy.append(policy)
            w.at.append(clock.now)
        else:
            clock.now -= STEP
    assert r.revision == len(w.facts) - 1
    return r, w


def expected(w: World, first: int, holds: Any, until: int | None = None,
              at: float | None = None) -> dict[Any, list[tuple[Any, Any]]]:
    """Per key, the intervals ``((revision, time) of the start, of the end or None)`` of
    ``holds(fresh, t)`` (the keys holding) over the moments from ``first`` (to revision
    ``until``'s commit: no edge after it); an interval that held at ``first`` starts at
    ``(first, at)`` (``at``: None where ``first`` is 0 or the horizon, whose transaction the
    compaction dropped)."""
    out: dict[Any, list[tuple[Any, Any]]] = {}
    opened: dict[Any, Any] = {}
    moments = w.moments(first)
    if until is not None:
        end = w.at[until]
        moments = [m for i, m in enumerate(moments) if i == 0 or m[0] < until
                   or (end is not None and m[0] == until and m[1] <= end)]
    for i, (rev, t) in enumerate(moments):
        now = holds(w.fresh(rev, t), t)
        edge = (first, at) if i == 0 else (rev, t)  # held at first: from first
        for k in now - set(opened):
            opened[k] = edge
        for k in set(opened) - now:
            out.setdefault(k, []).append((opened.pop(k), edge))
    for k, start in opened.items():
        out.setdefault(k, []).append((start, None))
    return out


def _shape(intervals: list[Interval]) -> list[tuple[Any, Any]]:
    def e(x: Edge | None) -> Any:
        return None if x is None else (x.revision, x.committed_at)

    return [(e(i.start), e(i.end)) for i in intervals]


def _check(u: str, o: str, x: str) -> Any:
    return lambda fresh, t: {()} if fresh.check(u, o, x, now=t).allowed else set()


def _timelines_agree(r: grantlog.Reasoner, w: World, first: int) -> None:
    for u, o, x in DECISIONS:  # (the others: in the resource and subject timelines)
        want = expected(w, first, _check(u, o, x)).get((), [])
        assert _shape(r.timeline(u, o, x)) == want, (u, o, x)
    for o, x in itertools.product(OPS, RES):
        t = r.resource_timeline(o, x)
        want = expected(w, first, lambda f, now, o=o, x=x: {
            (s,) for s in f.who(o, x, now=now)})
        assert {k: _shape(v) for k, v in t.intervals.items()} == want, (o, x)
        if timelines.keyed is _no_replay:  # and the replay's edges: authors, facts passed
            assert t.to_dict() == _REPLAY(
                r, {"operation": o, "resource": x}, ("subject",), None, None,
                lambda live, o=o, x=x: {(s,) for s in live.who(o, x)},
                lambda row, o=o, x=x: (row[0],) if row[1:] == (o, x) else None).to_dict()
    head = len(w.at) - 1  # and a stretch inside, from a revision to another's commit
    since, until = first + (head - first) // 3, first + 2 * (head - first) // 3
    for o, x in itertools.product(OPS, RES):
        t = r.resource_timeline(o, x, since=since, until=until)
        want = expected(w, since, lambda f, now, o=o, x=x: {
            (s,) for s in f.who(o, x, now=now)}, until, None if since == first else w.at[since])
        assert {k: _shape(v) for k, v in t.intervals.items()} == want, (o, x, since, until)
    for u in USERS:
        t = r.subject_timeline(u)
        want = expected(w, first, lambda f, now, u=u: {
            (b["O"], b["R"]) for b in f.query(f'allowed("{u}", O, R)', now=now)})
        assert {k: _shape(v) for k, v in t.intervals.items()} == want, u


def _as_of_agree(r: grantlog.Reasoner, w: World, first: int) -> None:
    """At every moment: ``at_revision`` with ``now``, and ``as_of`` the moment's time
    (which reads the facts at that time too), as the fresh reasoner of that moment."""
    for rev, t in w.moments(first):
        fresh = w.fresh(rev, t)
        by_time = rev == w.revision_before(t) or w.at[rev] == t
        for u, o, x in itertools.product(USERS, OPS, RES):
            want = fresh.check(u, o, x, now=t).allowed
            assert r.check(u, o, x, at_revision=rev, now=t).allowed == want, (rev, t, u, o, x)
            if by_time and w.at[1:] and t >= w.at[1]:  # type: ignore[operator]
                # the last revision committed at or before t: rev, unless t is a commit's
                at = max(k for k, c in enumerate(w.at) if c is not None and c <= t)
                other = w.fresh(at, t).check(u, o, x, now=t).allowed
                assert r.check(u, o, x, as_of=t).allowed == other, (at, t, u, o, x)
        for o, x in itertools.product(OPS, RES):
            assert list(r.who(o, x, at_revision=rev, now=t)) == list(fresh.who(o, x, now=t))
        for u in USERS:
            assert list(r.list(u, "read", at_revision=rev, now=t)) == \
                list(fresh.list(u, "read", now=t))


#: the replay of the log (engine/answer/timelines.py), compared with where it is not taken
_REPLAY = timelines.keyed


def _no_replay(*args: Any, **kwargs: Any) -> Any:
    raise AssertionError("the log was replayed: the timeline was not evaluated over the "
                         "temporal table's intervals (engine/answer/timed.py)")


def _run(url: str, history: list[Any], keep: int, monkeypatch: pytest.MonkeyPatch,
         folded: bool = True) -> None:
    """``folded``: the timelines must be evaluated over the temporal table (the replay of
    the log fails); else, without a "checkpoint" step, they are the replay's."""
    clock = Clock()
    monkeypatch.setattr(store_base, "time", types.SimpleNamespace(
        time=clock.time, monotonic=time.monotonic, sleep=time.sleep,
        perf_counter=time.perf_counter))
    if folded:
        monkeypatch.setattr(timelines, "keyed", _no_replay)
    r, w = write(url, history, clock, folded)
    if r.revision == 0:  # nothing written (no transaction changed anything): no history
        r.close()
        return
    with r:
        _as_of_agree(r, w, 0)
        _timelines_agree(r, w, 0)
        head = r.revision
        assert r.store is not None
        r.store.compact(keep)
        horizon = r.store.head()[1]
        assert horizon == max(head - keep, 0)
    with grantlog.Reasoner(POLICY_A, store=url, follow=False) as again:
        _as_of_agree(again, w, horizon)
        _timelines_agree(again, w, horizon)


def store_url_of(kind: str, tmp_path: Any, request: pytest.FixtureRequest) -> str:
    if kind == "sqlite":
        return f"sqlite:///{tmp_path / f'facts-{uuid.uuid4().hex[:8]}.db'}"
    return str(request.getfixturevalue("pg_server").schema_url())


@settings(max_examples=examples(4, 40), deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(history=histories(ties=False), keep=st.integers(0, MOST))
def test_as_of_answers_and_timelines_follow_the_intervals(
        tmp_path: Any, request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch,
        history: list[Any], keep: int) -> None:
    with monkeypatch.context() as m:
        _run(store_url_of("sqlite", tmp_path, request), history, keep, m)


@settings(max_examples=examples(2, 20), deadline=None,  # a store round trip per read
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(history=histories(ties=False), keep=st.integers(0, MOST))
def test_the_same_on_postgres(tmp_path: Any, request: pytest.FixtureRequest,
                              monkeypatch: pytest.MonkeyPatch, history: list[Any],
                              keep: int) -> None:
    with monkeypatch.context() as m:
        _run(store_url_of("postgres", tmp_path, request), history, keep, m)


@settings(max_examples=examples(4, 40), deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(history=histories(ties=True), keep=st.integers(0, MOST))
def test_edges_on_a_commit_s_own_time(tmp_path: Any, request: pytest.FixtureRequest,
                                      monkeypatch: pytest.MonkeyPatch, history: list[Any],
                                      keep: int) -> None:
    """An interval's bound at a commit's time: passed before that commit (at the revision
    before it), so ``at_revision`` of the one before, at that moment, sees it passed."""
    with monkeypatch.context() as m:
        _run(store_url_of("sqlite", tmp_path, request), history, keep, m)
