"""Proofs at past revisions by point reads (issue #28: engine/answer/timed_proofs.py): on
generated histories — inserts, retracts, a policy swap, nested groups (recursion), negation,
rule-file facts, a relation kept materialized, stored facts of a derived relation — with
checkpoints taken every few revisions, the why and the why-not of every goal at every revision
equal the rebuilt reasoner's (``explain(..., at_revision=)``), node for node, and a timeline's
proofs (``timeline(..., proofs=True)``) are those explanations; the same for the shipped
Gravitino model's example world, whose review (``review --since``) is evaluated over revision
intervals once the store has a temporal table and equals the replay's (its golden). On SQLite
and PostgreSQL."""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

import pytest
from conftest import history_strategy, write_history
from grantlog.engine.answer import timed, timed_proofs
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_review import GOLDEN, normalised, world

import grantlog

DECLS = """
rel member(user: string, group: string).
rel sub(group: string, parent: string).
rel grant(group: string, op: string, res: string).
rel deny(user: string, res: string).
@writable rel in_group(user: string, group: string).
@materialize rel granted(user: string, op: string, res: string).
in_group(U, G) :- member(U, G).
in_group(U, P) :- in_group(U, G), sub(G, P).
granted(U, O, R) :- in_group(U, G), grant(G, O, R).
sub("g1", "g9").
grant("g9", "write", "r1").
"""
#: the first policy: grants through nested groups unless denied; g2's members read anything
#: granted to anyone
POLICY_A = grantlog.compile(DECLS + """
allowed(U, O, R) :- granted(U, O, R), not deny(U, R).
allowed(U, "read", R) :- in_group(U, "g2"), grant(_, _, R).
""", filename="a.gl")
#: swapped in: a deny no longer blocks a write
POLICY_B = grantlog.compile(DECLS + """
allowed(U, O, R) :- granted(U, O, R), O = "write".
allowed(U, O, R) :- in_group(U, G), grant(G, O, R), not deny(U, R).
""", filename="b.gl")
USERS, GROUPS, OPS, RES = ["u0", "u1"], ["g0", "g1", "g2"], ["read", "write"], ["r0", "r1"]
VALUES: dict[str, tuple[list[str], ...]] = {
    "member": (USERS, GROUPS), "sub": (GROUPS, GROUPS), "grant": (GROUPS, OPS, RES),
    "deny": (USERS, RES), "in_group": (USERS, GROUPS)}


histories = history_strategy(VALUES, "++-", 7)


def _write(url: str, history: list[Any], every: int) -> int:
    return write_history(POLICY_A, POLICY_B, url, history, every)


def _same(r: grantlog.Reasoner, goal: str, revision: int) -> None:
    got = timed_proofs.explain(r, revision, goal)
    assert got is not None, (goal, revision)  # by point reads
    want = r.explain(goal, at_revision=revision)  # the rebuilt reasoner of the revision
    assert got.to_dict() == want.to_dict(), (goal, revision, got.render(), want.render())


def _run(url: str, history: list[Any], every: int) -> None:
    head = _write(url, history, every)
    with grantlog.Reasoner(POLICY_A, store=url, follow=False) as r:
        for rev in range(head + 1):
            for u, o, x in itertools.product(USERS, OPS, RES):
                _same(r, f'allowed("{u}", "{o}", "{x}")', rev)
            _same(r, 'allowed("u0", O, "r1")', rev)  # a goal with variables
        for u, o, x in (("u0", "write", "r1"), ("u1", "read", "r0")):
            for i in r.timeline(u, o, x, proofs=True):
                goal = i.why.goal  # as the timeline spells it
                assert i.why.to_dict() == r.explain(
                    goal, at_revision=i.start.revision).to_dict()
                assert i.why.holds and (i.why_not is None or not i.why_not.holds)
                if i.end is not None:
                    assert i.why_not.to_dict() == r.explain(
                        goal, at_revision=i.end.revision).to_dict()


@settings(max_examples=6, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(history=histories, every=st.sampled_from([1, 2, 3]))
def test_sqlite_proofs_by_point_reads_equal_the_rebuilt_reasoners(
        tmp_path_factory: pytest.TempPathFactory, history: list[Any], every: int) -> None:
    _run(f"sqlite:///{tmp_path_factory.mktemp('tpr') / 'facts.db'}", history, every)


@settings(max_examples=2, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(history=histories, every=st.sampled_from([1, 3]))
def test_postgres_proofs_by_point_reads_equal_the_rebuilt_reasoners(
        pg_server: Any, history: list[Any], every: int) -> None:
    _run(pg_server.schema_url(f"tpr{next(_COUNTER)}"), history, every)


_COUNTER = itertools.count()


def _gravitino(url: str) -> None:
    """The review world with a temporal table: explanations at every revision equal the
    rebuilt reasoner's, and the reviews are evaluated over revision intervals with the
    replay's answers (the golden was made by the replay)."""
    with world(url) as r:
        assert r.store is not None
        assert timed.decided(r, (0,), ("alice",), 1) is None  # no temporal table yet: replay
        replayed = normalised(r.review(resource="m1.lakehouse.sales.orders", since=1).to_dict())
        r.store.checkpoint()
        assert timed.decided(r, (0,), ("alice",), 1) is not None  # over intervals now
        for rev in range(int(r.revision) + 1):
            for u, o, x in (("alice", "select_table", "m1.lakehouse.sales.pii"),
                            ("alice", "select_table", "m1.lakehouse.finance.ledger"),
                            ("carol", "select_table", "m1.lakehouse.sales.orders"),
                            ("bob", "modify_table", "m1.lakehouse.sales.orders")):
                _same(r, f'allowed("{u}", "{o}", "{x}")', rev)
        got = normalised(r.review(subject="alice", since=1).to_dict())
        assert got == json.loads(Path(GOLDEN).read_text(encoding="utf-8"))
        assert normalised(r.review(resource="m1.lakehouse.sales.orders",
                                   since=1).to_dict()) == replayed
        # a role's review still replays, its paths at past revisions by point reads
        assert r.review(role="m1/role/analyst", since=1).to_dict()["counts"]["lost"] >= 1


def test_sqlite_gravitino_proofs_and_reviews_over_intervals(tmp_path: Path) -> None:
    _gravitino(f"sqlite:///{tmp_path / 'facts.db'}")


def test_postgres_gravitino_proofs_and_reviews_over_intervals(pg_server: Any) -> None:
    _gravitino(pg_server.schema_url("tpr_gravitino"))
