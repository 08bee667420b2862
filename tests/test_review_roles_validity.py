"""A role's review where facts have validity intervals (issue #28, items 5 and 6:
engine/answer/review.py ``role_timeline`` on the axis of commits and validity bounds, as a
subject's or a resource's review is): on generated histories — memberships, roles given to
groups and to users directly, grants to roles, denies, each written with an expiring,
scheduled or bounded interval or none, retracts, a policy swap, checkpoints, a rule-file fact
with an interval — the review of every role since several revisions is evaluated over
intervals (the log not replayed) and equals the replay's (``keyed``) JSON. On SQLite and
PostgreSQL.

The models are tests/test_review_roles_interval.py's; the writer, its clock and the bounds'
grid are tests/test_history_validity_property.py's."""

from __future__ import annotations

import itertools
import time
import types
import uuid
from typing import Any

import pytest
import test_history_validity_property as hv
import test_review_roles_interval as ri
from conftest import examples
from grantlog.engine.answer import review as review_mod
from grantlog.engine.answer import timelines
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import grantlog
from grantlog.store import base as store_base

B, S = hv.BASE, hv.STEP
#: u1 holds r9 directly (the rule files) from between commits 2 and 3 until commit 5
RULE_FACT = f"direct(u1, r9) from {int(B + 2 * S + 5)} until {int(B + 5 * S)}.\n"
POLICY_A = grantlog.compile(ri.DECLS + RULE_FACT + """
allowed(U, O, X) :- holds(U, R), grant(R, O, X), not deny(U, X).
allowed(U, "read", X) :- member(U, "g2"), grant(_, _, X).
""", filename="a.gl")
POLICY_B = grantlog.compile(ri.DECLS + RULE_FACT + """
allowed(U, O, X) :- holds(U, R), grant(R, O, X).
allowed(U, "write", X) :- direct(U, _), grant(_, "write", X), not deny(U, X).
""", filename="b.gl")
ROLES = [*ri.ROLES, "r9"]


@st.composite
def op(draw: st.DrawFn) -> tuple[Any, ...]:
    rel = draw(st.sampled_from(sorted(ri.VALUES)))
    row = tuple(draw(st.sampled_from(vs)) for vs in ri.VALUES[rel])
    if draw(st.sampled_from("+++-")) == "-":
        return ("-", rel, row)
    lo = draw(st.none() | hv.bound(False))
    hi = draw(st.none() | hv.bound(False).filter(lambda h: lo is None or h > lo))
    return ("+", rel, row, lo, hi)


histories = st.lists(st.one_of(st.lists(op(), min_size=1, max_size=3),
                               st.sampled_from(["swap", "checkpoint"])),
                     min_size=1, max_size=hv.MOST + 2)


def _no_replay(*args: Any, **kwargs: Any) -> Any:
    raise AssertionError("the role review replayed the log: not evaluated over intervals")


def _run(url: str, steps: list[Any], m: pytest.MonkeyPatch) -> None:
    clock = hv.Clock()
    m.setattr(store_base, "time", types.SimpleNamespace(
        time=clock.time, monotonic=time.monotonic, sleep=time.sleep,
        perf_counter=time.perf_counter))
    m.setattr(hv, "POLICY_A", POLICY_A)  # hv.write's policies: these
    m.setattr(hv, "POLICY_B", POLICY_B)
    r, _ = hv.write(url, steps, clock)  # (the temporal table kept from the start)
    with r:
        head = int(r.revision)
        if head == 0:
            return
        replay = timelines.keyed
        for role, since in itertools.product(ROLES, sorted({0, 1, head // 2, head})):
            with pytest.MonkeyPatch.context() as n:
                n.setattr(review_mod, "keyed", _no_replay)  # over intervals
                got = r.review(role=role, since=since).to_dict()
            with pytest.MonkeyPatch.context() as n:
                n.setattr(review_mod, "keyed", replay)
                n.setattr(review_mod, "role_timeline", lambda *a, **k: None)  # the replay
                want = r.review(role=role, since=since).to_dict()
            assert got == want, (role, since)


#: g1's members hold r0 until between commits 2 and 3; u0 joins g1, and r0's read on x0
#: starts between commits 1 and 2: u0's read gained and lost at validity edges, through r0
EDGES = [[("+", "role_of", ("g1", "r0"), None, B + 2 * S + 5),
          ("+", "grant", ("r0", "read", "x0"), B + S / 2, None)],
         [("+", "member", ("u0", "g1"), None, None)],
         "swap", [("+", "deny", ("u1", "x1"), None, None)]]


@settings(max_examples=examples(4, 40), deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(steps=histories)
@example(steps=EDGES)
def test_sqlite_role_reviews_with_intervals_equal_the_replays(
        tmp_path: Any, monkeypatch: pytest.MonkeyPatch, steps: list[Any]) -> None:
    with monkeypatch.context() as m:
        _run(f"sqlite:///{tmp_path / f'facts-{uuid.uuid4().hex[:8]}.db'}", steps, m)


@settings(max_examples=examples(1, 10), deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(steps=histories)
@example(steps=EDGES)
def test_postgres_role_reviews_with_intervals_equal_the_replays(
        pg_server: Any, monkeypatch: pytest.MonkeyPatch, steps: list[Any]) -> None:
    with monkeypatch.context() as m:
        _run(pg_server.schema_url(f"rrv{uuid.uuid4().hex[:8]}"), steps, m)


def test_a_change_through_the_role_is_read_at_its_moment(
        tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """Whether a change went through the role is read at its moment (a gain just after it,
    a loss just before it), not at the clock: by now g1's role has expired, yet g1's and
    u0's reads of x0 through r0, followed from the policy swap at revision 2 (the holders
    then), were gained there and lost where the role ended."""
    clock = hv.Clock()
    monkeypatch.setattr(store_base, "time", types.SimpleNamespace(
        time=clock.time, monotonic=time.monotonic, sleep=time.sleep,
        perf_counter=time.perf_counter))
    monkeypatch.setattr(hv, "POLICY_A", POLICY_A)
    monkeypatch.setattr(hv, "POLICY_B", POLICY_B)
    monkeypatch.setattr(review_mod, "keyed", _no_replay)  # over intervals
    r, _ = hv.write(f"sqlite:///{tmp_path / 'edges.db'}", EDGES, clock)
    with r:
        got = r.review(role="r0", since=0)
    assert [(e.subject, e.operation, e.resource, e.change, e.path,
             [(v.gained, v.edge.revision, v.edge.committed_at) for v in e.events])
            for e in got.entries] == [
        (s, "read", "x0", "transient", path, [(True, 2, B + S), (False, 3, B + 2 * S + 5)])
        for s, path in (("g1", ("grant(r0, read, x0)", "role_of(g1, r0)")),
                        ("u0", ("grant(r0, read, x0)", "member(u0, g1)", "role_of(g1, r0)")))]
