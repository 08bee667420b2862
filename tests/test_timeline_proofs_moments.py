"""Proofs at a moment by point reads where facts have validity intervals (issue #28, item 6):
``timed_proofs.explain(r, R, goal, now=T)`` explains over the facts at revision R as they
stood at T, read by points (engine/answer/pointread.py ``MomentView``), and a timeline's
proofs (``timeline(..., proofs=True)``: the why at each interval's start, the why-not at its
end, at the edge's moment — a commit, or where time passed an interval's bound) are made so,
with or without the reads shared between the edges (engine/answer/timed_proofs.py
``Shared``), no reasoner of a revision rebuilt.

Held to the rebuilt reasoner of the revision moved to the moment (``validity.at``: what a
timeline's proof at such an edge was before), ``to_dict()`` for ``to_dict()``, at every
commit and validity edge of generated histories (tests/test_history_validity_property.py's:
expiring, scheduled and bounded intervals, retracts, policy swaps, checkpoints, rule-file
facts with an interval), under policies with a derived relation (read on demand, and by
pages when the why-not search asks whether it has any row) and a materialized one. On
SQLite and PostgreSQL. A fixed example: one revision, a decision held at two moments through
two memberships — an explanation made at one moment is not the other's."""

from __future__ import annotations

import itertools
import time
import types
import uuid
from typing import Any

import pytest
import test_history_validity_property as hv
from conftest import examples
from grantlog.engine.answer import history, timed, timed_proofs, validity
from hypothesis import HealthCheck, example, given, settings

import grantlog
from grantlog.store import base as store_base

B, S = hv.BASE, hv.STEP
DECLS = hv.DECLS + hv.RULE_FACT + """
rel in_group(user: string, group: string).
rel blocked(user: string, res: string).
@materialize rel granted(user: string, op: string, res: string).
in_group(U, G) :- member(U, G).
in_group(U, "g0") :- member(U, "g1").
granted(U, O, R) :- in_group(U, G), grant(G, O, R).
blocked(U, R) :- deny(U, R).
"""
#: through derived relations (whether ``blocked(U, _)`` has any row: its facts read by pages)
#: and a materialized one
POLICY_A = grantlog.compile(DECLS + """
allowed(U, O, R) :- in_group(U, G), grant(G, O, R), not deny(U, R).
allowed(U, "write", R) :- in_group(U, G), grant(G, "read", R), not blocked(U, _).
""", filename="a.gl")
POLICY_B = grantlog.compile(DECLS + """
allowed(U, O, R) :- granted(U, O, R).
allowed(U, "read", R) :- deny(U, R).
""", filename="b.gl")
GOALS = [f'allowed("{u}", "{o}", "{x}")'
         for u, o, x in itertools.product(hv.USERS, hv.OPS, hv.RES)] + ['allowed("u0", O, "r1")']
#: after commit 2 (the head), u0 reads r0 through g0 for a while, then through g1 (nested in
#: g0 by the rules) for another: two intervals in one revision; between them, u0 in no group
#: is denied r1 for a while (the why-not of u0's write on r0 under policy A's second rule
#: then asks whether ``blocked(u0, _)`` has any row: that deny, read by pages)
TWO_MOMENTS = [[("+", "grant", ("g0", "read", "r0"), None, None),
                ("+", "grant", ("g1", "read", "r0"), None, None)],
               [("+", "member", ("u0", "g0"), B + 1.25 * S, B + 1.5 * S),
                ("+", "member", ("u0", "g1"), B + 1.75 * S, B + 2.5 * S),
                ("+", "deny", ("u0", "r1"), B + 1.55 * S, B + 1.7 * S)]]


def _rebuilt(rebuilt: grantlog.Reasoner, revision: int, t: float | None, goal: str) -> Any:
    """The explanation of the revision's rebuilt reasoner moved to the moment ``t``."""
    p = history.past(rebuilt, revision, None)
    if t is not None:
        p = validity.at(p, validity.instant(t, "now"))
    return p.explain(goal)


def _same(got: Any, want: Any, *where: Any) -> None:
    assert got is not None, where  # by point reads
    assert got.to_dict() == want.to_dict(), (*where, got.render(), want.render())


def _run(url: str, steps: list[Any], m: pytest.MonkeyPatch) -> None:
    clock = hv.Clock()
    m.setattr(store_base, "time", types.SimpleNamespace(
        time=clock.time, monotonic=time.monotonic, sleep=time.sleep,
        perf_counter=time.perf_counter))
    m.setattr(hv, "POLICY_A", POLICY_A)  # hv.write's policies: these
    m.setattr(hv, "POLICY_B", POLICY_B)
    r, w = hv.write(url, steps, clock)
    r.close()
    if len(w.at) == 1:
        return  # nothing written
    with grantlog.Reasoner(POLICY_A, store=url, follow=False) as r, \
            grantlog.Reasoner(POLICY_A, store=url, follow=False) as rebuilt:
        moments = w.moments(0)
        revisions = sorted({rev for rev, _ in moments})
        sh = timed_proofs.shared(r, revisions)
        assert sh is not None
        # each moment alone, then through one Shared with the moments out of order (every
        # other one forwards, then the rest backwards): a read's versions walked both ways
        # and explanations taken across revisions and moments
        order = [*moments[::2], *moments[1::2][::-1]]
        for rev, t in moments:
            for goal in GOALS:
                _same(timed_proofs.explain(r, rev, goal, now=t),
                      _rebuilt(rebuilt, rev, t, goal), rev, t, goal)
        for rev, t in order:
            for goal in GOALS:
                want = _rebuilt(rebuilt, rev, t, goal)
                _same(sh.explain(r, rev, goal, want.holds, t), want, "shared", rev, t, goal)
        # a timeline's proofs: every edge at its moment, by point reads
        for shared_from in (timed_proofs.SHARED_FROM, 1):
            m.setattr(timed_proofs, "SHARED_FROM", shared_from)
            for u, o, x in (("u0", "read", "r0"), ("u1", "read", "r1"), ("u0", "write", "r0")):
                for i in r.timeline(u, o, x, proofs=True):
                    for edge, ex in ((i.start, i.why), (i.end, i.why_not)):
                        if edge is not None:
                            _same(ex, _rebuilt(rebuilt, edge.revision, edge.committed_at,
                                               ex.goal), "timeline", shared_from, edge)
        # a review's path at a validity edge (timed.explain_at): by point reads too
        for rev, t in moments:
            _same(timed.explain_at(r, rev, GOALS[0], t), _rebuilt(rebuilt, rev, t, GOALS[0]),
                  "explain_at", rev, t)
        assert all(history.kept(r, rev) is None for rev in revisions)  # nothing rebuilt


_SETTINGS = settings(max_examples=examples(3, 30), deadline=None,
                     suppress_health_check=[HealthCheck.function_scoped_fixture])


@_SETTINGS
@given(steps=hv.histories(ties=False))
@example(steps=TWO_MOMENTS)
def test_sqlite_proofs_at_moments_equal_the_rebuilt_reasoners(
        tmp_path: Any, monkeypatch: pytest.MonkeyPatch, steps: list[Any]) -> None:
    with monkeypatch.context() as m:
        _run(f"sqlite:///{tmp_path / f'facts-{uuid.uuid4().hex[:8]}.db'}", steps, m)


@settings(max_examples=examples(1, 10), deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(steps=hv.histories(ties=True))
@example(steps=TWO_MOMENTS)
def test_postgres_proofs_at_moments_equal_the_rebuilt_reasoners(
        pg_server: Any, monkeypatch: pytest.MonkeyPatch, steps: list[Any]) -> None:
    with monkeypatch.context() as m:
        _run(pg_server.schema_url(f"tpm{uuid.uuid4().hex[:8]}"), steps, m)


def test_an_explanation_at_one_moment_is_not_another_s(tmp_path: Any,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """One revision, two moments: u0 reads r0 through g0, then (after a gap) through g1. The
    why at the second start is not the first's, though every fact read at that revision is
    the same: the memberships' intervals hold at one moment and not at the other."""
    url = f"sqlite:///{tmp_path / 'two.db'}"
    clock = hv.Clock()
    monkeypatch.setattr(store_base, "time", types.SimpleNamespace(
        time=clock.time, monotonic=time.monotonic, sleep=time.sleep,
        perf_counter=time.perf_counter))
    monkeypatch.setattr(hv, "POLICY_A", POLICY_A)
    monkeypatch.setattr(hv, "POLICY_B", POLICY_B)
    hv.write(url, TWO_MOMENTS, clock)[0].close()
    monkeypatch.setattr(timed_proofs, "SHARED_FROM", 1)  # the edges' reads shared
    with grantlog.Reasoner(POLICY_A, store=url, follow=False) as r:
        got = r.timeline("u0", "read", "r0", proofs=True)
        assert [(i.start.revision, i.start.committed_at, i.end and i.end.committed_at)
                for i in got] == [(2, B + 1.25 * S, B + 1.5 * S),
                                  (2, B + 1.75 * S, B + 2.5 * S)]
        leaves = [{n.text for n in i.why.proof.walk() if n.kind == "fact"} for i in got]
        assert 'member(u0, g0)' in leaves[0] and 'member(u0, g1)' not in leaves[0]
        assert 'member(u0, g1)' in leaves[1] and 'member(u0, g0)' not in leaves[1]
        assert all(not i.why_not.holds for i in got)
        assert all(history.kept(r, rev) is None for rev in range(3))  # nothing rebuilt
