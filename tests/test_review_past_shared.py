"""A review's paths at past revisions proven together (engine/answer/review.py
``past_paths``, timed.py ``explain_each_at``, point_proofs.py ``explain_each``): the keys
at one revision and moment over one view with one prover, not one each. On generated
histories (tests/test_review_roles_interval.py's), the reviews of every role and subject
since several revisions equal those with each path explained alone (``timed.explain_at``
per key, as before), and the grouped explanations equal the lone ones at every revision;
a group of N keys at one revision makes one view and one prover, where the keys alone make
N. SQLite."""

from __future__ import annotations

import csv
import io
import itertools
from pathlib import Path
from typing import Any

import pytest
from conftest import write_history
from grantlog.engine.answer import review as review_mod
from grantlog.engine.answer import timed, timed_proofs
from grantlog.engine.answer.explain import Prover
from grantlog.engine.core import ir
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_review_roles_interval import (
    GROUPS,
    OPS,
    POLICY_A,
    POLICY_B,
    RES,
    ROLES,
    USERS,
    histories,
)

import grantlog
from grantlog.cli.review import to_csv, to_html


def _alone(r: Any, want: dict[tuple[int, float | None], set[Any]],
           done: dict[Any, Any]) -> dict[Any, Any]:
    """``past_paths`` as before: each key explained alone (``timed.explain_at``)."""
    for (at, then), keys in want.items():
        got = done.setdefault((at, then), {})
        program = r.journal.policy_at(at) or r.program
        for k in keys - got.keys():
            ex = timed.explain_at(r, at, ir.show_atom(program.decision, k), then)
            got[k] = review_mod.path_facts(program, ex)
    return done


def _same_reviews(r: grantlog.Reasoner, since: int) -> None:
    for kw in [*({"role": x} for x in [*ROLES, "r9"]), *({"subject": u} for u in USERS)]:
        got = r.review(since=since, **kw).to_dict()
        with pytest.MonkeyPatch.context() as m:
            m.setattr(review_mod, "past_paths", _alone)
            want = r.review(since=since, **kw).to_dict()
        assert got == want, (kw, since)


def _same_explanations(r: grantlog.Reasoner, head: int) -> None:
    """At every revision, the grouped explanations of every decision key (held there or
    not) equal the lone ones (a key not held: ``holds`` False in both)."""
    keys = sorted(itertools.product([*USERS, *GROUPS], OPS, RES), key=ir.row_key)
    goals = [ir.show_atom("allowed", k) for k in keys]
    for rev in range(1, head + 1):
        together = timed.explain_each_at(r, rev, goals)
        for goal, ex in zip(goals, together, strict=True):
            alone = timed.explain_at(r, rev, goal)
            assert ex.holds == alone.holds, (rev, goal)
            if alone.holds:
                assert ex.proof == alone.proof, (rev, goal)


@settings(max_examples=8, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(history=histories, every=st.sampled_from([1, 2]))
def test_paths_proven_together_equal_each_alone(tmp_path_factory: pytest.TempPathFactory,
                                                history: list[Any], every: int) -> None:
    url = f"sqlite:///{tmp_path_factory.mktemp('past') / 'facts.db'}"
    head = write_history(POLICY_A, POLICY_B, url, history, every)
    with grantlog.Reasoner(POLICY_A, store=url, follow=False) as r:
        for since in sorted({0, min(1, head), head // 2}):
            _same_reviews(r, since)
        _same_explanations(r, head)


N = 12
#: u0 (through g1) and g1 hold r0, which reads N resources; the role is taken away at
#: revision 2: 2N entries held at ``since`` and lost, each with its path just before the
#: loss
LOSS = [[("member", "+", ("u0", "g1")), ("role_of", "+", ("g1", "r0")),
         *(("grant", "+", ("r0", "read", f"x{i:02d}")) for i in range(N))],
        [("role_of", "-", ("g1", "r0"))]]


class _Count:
    def __init__(self, m: pytest.MonkeyPatch) -> None:
        self.views = self.provers = 0
        view, made = timed_proofs.view, Prover.__init__
        count = self

        def counted_view(*a: Any, **k: Any) -> Any:
            count.views += 1
            return view(*a, **k)

        def counted_prover(*a: Any, **k: Any) -> None:
            count.provers += 1
            made(*a, **k)

        m.setattr(timed_proofs, "view", counted_view)
        m.setattr(Prover, "__init__", counted_prover)


def test_a_group_at_one_revision_makes_one_view_and_one_prover(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'facts.db'}"
    head = write_history(POLICY_B, POLICY_A, url, ["swap", *LOSS], 1)  # (A installed)
    assert head == 2
    with grantlog.Reasoner(POLICY_A, store=url, follow=False) as r:
        goals = [ir.show_atom("allowed", ("u0", "read", f"x{i:02d}")) for i in range(N)]
        with pytest.MonkeyPatch.context() as m:
            c = _Count(m)
            together = timed.explain_each_at(r, 1, goals)
            assert (c.views, c.provers) == (1, 1)
            alone = [timed.explain_at(r, 1, g) for g in goals]
            assert (c.views, c.provers) == (1 + N, 1 + N)  # (the lone explanations: N)
        assert all(ex.holds for ex in together)
        assert [ex.proof for ex in together] == [ex.proof for ex in alone]
        # the review: its paths at past revisions in as many groups as (revision, moment)s
        groups: list[int] = []
        grouped = review_mod.past_paths

        def seen(r: Any, want: dict[Any, set[Any]], done: Any) -> Any:
            groups.extend(len(keys) for keys in want.values())
            return grouped(r, want, done)

        with pytest.MonkeyPatch.context() as m:
            m.setattr(review_mod, "past_paths", seen)
            c = _Count(m)
            rv = r.review(role="r0", since=1)
        assert [e.change for e in rv.entries] == ["lost"] * 2 * N
        assert all(e.path for e in rv.entries)
        assert sum(groups) >= 2 * N  # (every entry's path asked in a group)
        assert 1 <= c.provers <= len([g for g in groups if g]) < N
        with pytest.MonkeyPatch.context() as m:
            m.setattr(review_mod, "past_paths", _alone)
            assert r.review(role="r0", since=1).to_dict() == rv.to_dict()
        # the CSV's policy of a lost entry's path: the store's in force just before the loss
        rows = list(csv.reader(io.StringIO(to_csv(rv))))
        assert rows[0][-1] == "policy"
        assert {x[-1] for x in rows[1:]} == {rv.policies["past"][0]["policy"]}
        assert "the history from r1: <code>" in to_html(rv)
    with grantlog.Reasoner(POLICY_B, store=url, follow=False) as r:  # now: another policy
        rv = r.review(role="r0", since=1)
        rows = list(csv.reader(io.StringIO(to_csv(rv))))
        past = rv.policies["past"][0]["policy"]
        assert past != rv.policies["now"] and {x[-1] for x in rows[1:]} == {past}


def test_without_a_store_nopast_paths() -> None:
    r = grantlog.Reasoner(POLICY_A)
    assert review_mod.past_paths(r, {}, {}) == {}
    assert list(itertools.chain(r.review(role="r0").entries)) == []
