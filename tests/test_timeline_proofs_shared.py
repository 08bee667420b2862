"""A timeline's proofs with reads shared between its edges (issue #28: engine/answer/timed_proofs.py
``Shared``): on generated histories (tests/test_history_timeline_proofs.py's models: nested
groups, negation, a policy swap, rule-file facts, a materialized relation, stored facts of a
derived one), every goal explained at every revision through one ``Shared`` — its point reads
answered from every version of the facts they match, an edge's explanation taken from an
earlier edge whose reads all answer the same — equals the rebuilt reasoner's explanation at
that revision, node for node; and so do ``timeline(..., proofs=True)``'s, asked of a reasoner
that keeps nothing. On SQLite and PostgreSQL."""

from __future__ import annotations

import itertools
from typing import Any

import pytest
from conftest import write_history
from grantlog.engine.answer import timed_proofs
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from test_history_timeline_proofs import OPS, POLICY_A, POLICY_B, RES, USERS, histories

import grantlog

GOALS = [f'allowed("{u}", "{o}", "{x}")' for u, o, x in itertools.product(USERS, OPS, RES)] \
    + ['allowed("u0", O, "r1")']
#: u0's write on r1 comes and goes with its membership of g1 (a member of g9, which the rule
#: files grant it), and is denied between: reads that answer the same at many revisions
TOGGLES = [[("member", "+", ("u0", "g1"))], [("deny", "+", ("u0", "r1"))],
           [("deny", "-", ("u0", "r1"))], [("member", "-", ("u0", "g1"))],
           [("member", "+", ("u0", "g1"))], [("grant", "+", ("g0", "read", "r0"))],
           [("member", "-", ("u0", "g1"))], [("member", "+", ("u0", "g1"))]]


def _run(url: str, history: list[Any], every: int) -> timed_proofs.Shared:
    head = write_history(POLICY_A, POLICY_B, url, history, every)
    with grantlog.Reasoner(POLICY_A, store=url, follow=False) as r, \
            grantlog.Reasoner(POLICY_A, store=url, follow=False) as rebuilt:
        sh = timed_proofs.shared(r, range(head + 1))
        assert sh is not None
        # the revisions out of order (the even ones up, then the odd ones down): a read's
        # versions are walked both ways
        for rev in [*range(0, head + 1, 2), *range(head - (head % 2 == 0), 0, -2)]:
            for goal in GOALS:
                want = rebuilt.explain(goal, at_revision=rev)
                got = sh.explain(r, rev, goal, want.holds)
                assert got is not None, (goal, rev)
                assert got.to_dict() == want.to_dict(), (goal, rev, got.render(),
                                                         want.render())
    with grantlog.Reasoner(POLICY_A, store=url, follow=False) as r, \
            grantlog.Reasoner(POLICY_A, store=url, follow=False) as rebuilt, \
            pytest.MonkeyPatch.context() as m:
        m.setattr(timed_proofs, "SHARED_FROM", 1)  # shared however few the edges
        for u, o, x in (("u0", "write", "r1"), ("u1", "read", "r0"), ("u0", "read", "r1")):
            for i in r.timeline(u, o, x, proofs=True):
                for edge, ex in ((i.start, i.why), (i.end, i.why_not)):
                    if edge is not None:
                        assert ex.to_dict() == rebuilt.explain(
                            ex.goal, at_revision=edge.revision).to_dict()
    return sh


@settings(max_examples=5, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(history=histories, every=st.sampled_from([1, 2, 3]))
@example(history=TOGGLES, every=2)
def test_sqlite_shared_proofs_equal_the_rebuilt_reasoners(
        tmp_path_factory: pytest.TempPathFactory, history: list[Any], every: int) -> None:
    sh = _run(f"sqlite:///{tmp_path_factory.mktemp('tps') / 'facts.db'}", history, every)
    if history is TOGGLES:  # the edges' explanations were shared, not all made afresh
        assert sh.reused > 0 and sh.made > 0


_COUNTER = itertools.count()


@settings(max_examples=2, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(history=histories, every=st.sampled_from([1, 3]))
@example(history=TOGGLES, every=1)
def test_postgres_shared_proofs_equal_the_rebuilt_reasoners(
        pg_server: Any, history: list[Any], every: int) -> None:
    _run(pg_server.schema_url(f"tps{next(_COUNTER)}"), history, every)
