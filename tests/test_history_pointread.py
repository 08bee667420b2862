"""As-of checks by point reads (issue #28: engine/answer/pointread.py over the store's temporal
table, grantlog/store/temporal.py): at every revision of generated histories — nested groups
(recursion), a resource hierarchy, negation, rule-file facts — a check at a revision whose
reasoner is not kept is read by points and equals a fresh reasoner built from the facts of
that revision; above the last checkpoint (the log read over it) and after compaction too. On
SQLite and PostgreSQL. And the benchmarks' bulk-built history (benchmarks/history_world.py:
``append_history``) is a store that verification and replay agree with."""

from __future__ import annotations

import itertools
import random
import sys
from pathlib import Path
from typing import Any

import pytest
from grantlog.engine.answer import history
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import grantlog
from grantlog.store import open_store, verify_store

ROOT = Path(__file__).resolve().parent.parent

PROGRAM = grantlog.compile("""
rel member(user: string, group: string).
rel sub(group: string, parent: string).
rel contains(parent: string, child: string).
rel grant(group: string, op: string, res: string).
rel deny(user: string, res: string).
in_group(U, G) :- member(U, G).
in_group(U, P) :- in_group(U, G), sub(G, P).
ancestor(C, P) :- contains(P, C).
ancestor(C, A) :- ancestor(C, P), contains(A, P).
allowed(U, O, R) :- in_group(U, G), grant(G, O, R), not deny(U, R).
allowed(U, O, R) :- in_group(U, G), grant(G, O, A), ancestor(R, A), not deny(U, R).
sub("g1", "g9").
grant("g9", "write", "r1").
""", filename="point.gl")
USERS, GROUPS, OPS, RES = ["u0", "u1", "u2"], ["g0", "g1", "g2"], ["read", "write"], \
    ["r0", "r1", "r2"]
VALUES: dict[str, tuple[list[str], ...]] = {
    "member": (USERS, GROUPS), "sub": (GROUPS, GROUPS), "contains": (RES, RES),
    "grant": (GROUPS, OPS, RES), "deny": (USERS, RES)}


@st.composite
def op(draw: st.DrawFn) -> tuple[str, str, tuple[str, ...]]:
    rel = draw(st.sampled_from(sorted(VALUES)))
    row = tuple(draw(st.sampled_from(vs)) for vs in VALUES[rel])
    return rel, draw(st.sampled_from("+-")), row


histories = st.lists(st.lists(op(), min_size=1, max_size=4), min_size=1, max_size=8)
short = st.lists(st.lists(op(), min_size=1, max_size=3), min_size=2, max_size=4)


def _fresh(facts: dict[str, set[tuple[str, ...]]]) -> grantlog.Reasoner:
    r = grantlog.Reasoner(PROGRAM)
    with r.transaction() as tx:
        for rel, rows in facts.items():
            tx.insert(rel, rows)
    return r


def _agree(r: grantlog.Reasoner, facts: dict[str, set[tuple[str, ...]]], rev: int) -> None:
    """Every check at ``rev`` is read by points and equals the fresh reasoner's."""
    fresh = _fresh(facts)
    for u, o, x in itertools.product(USERS, OPS, RES):
        d, e = r.check(u, o, x, at_revision=rev), fresh.check(u, o, x)
        # the deciding rule; the premises' rules are those of the first instance found,
        # which depends on the order rows come in when several derive it (ancestor#1/#2)
        assert (d.allowed, d.reasons[:1], d.warnings) == (e.allowed, e.reasons[:1],
                                                          e.warnings), (u, o, x, rev)
        assert d.revision == rev
    assert history.kept(r, rev, points=True) is not None, rev
    assert history.kept(r, rev) is None  # nothing rebuilt


def _run(url: str, steps: list[list[tuple[str, str, tuple[str, ...]]]], every: int) -> None:
    facts: dict[str, set[tuple[str, ...]]] = {rel: set() for rel in VALUES}
    states = [{k: set(v) for k, v in facts.items()}]
    with grantlog.Reasoner(PROGRAM, store=url, create=True, follow=False) as r:
        assert r.store is not None
        r.store.checkpoint(every)
        for step in steps:
            with r.transaction(author="tester") as tx:
                for rel, sign, row in step:
                    (tx.insert if sign == "+" else tx.retract)(rel, [row])
                    (facts[rel].add if sign == "+" else facts[rel].discard)(row)
            if tx.revision == len(states):
                states.append({k: set(v) for k, v in facts.items()})
        head = r.revision
    # a reasoner opened now: none of the revisions is among its recent ones (answer/recent.py)
    with grantlog.Reasoner(PROGRAM, store=url, follow=False) as r:
        for rev in range(head):  # the head itself: the reasoner's own answer
            _agree(r, states[rev], rev)
    horizon = head // 2
    with grantlog.Reasoner(PROGRAM, store=url, follow=False) as r:
        assert r.store is not None
        r.store.compact(before_revision=horizon)
        for rev in range(head):
            if rev < horizon:
                with pytest.raises(grantlog.GrantlogError) as e:
                    r.check("u0", "read", "r0", at_revision=rev)
                assert e.value.diagnostics[0].code == "revision-compacted"
            else:
                _agree(r, states[rev], rev)


@settings(max_examples=8, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(steps=histories, every=st.sampled_from([1, 2, 3]))
def test_sqlite_point_reads_equal_fresh_reasoners(
        tmp_path_factory: pytest.TempPathFactory, steps: Any, every: int) -> None:
    _run(f"sqlite:///{tmp_path_factory.mktemp('point') / 'facts.db'}", steps, every)


@settings(max_examples=3, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(steps=short, every=st.sampled_from([1, 2]))
def test_postgres_point_reads_equal_fresh_reasoners(pg_server: Any, steps: Any,
                                                    every: int) -> None:
    _run(pg_server.schema_url(), steps, every)


def test_no_point_reads_without_a_checkpoint(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'f.db'}"
    with grantlog.Reasoner(PROGRAM, store=url, create=True, follow=False) as r:
        r.insert("member", [("u0", "g1")])
        r.insert("member", [("u1", "g1")])
    with grantlog.Reasoner(PROGRAM, store=url, follow=False) as r:
        assert r.check("u0", "write", "r1", at_revision=1).allowed
        assert history.kept(r, 1, points=True) is None
        assert history.kept(r, 1) is not None


def test_bulk_built_history_agrees_with_replay(tmp_path: Path) -> None:
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import history_world

    w = history_world.build(tmp_path / "w.db", 60, 120, seed=3, every=32)
    assert w.head == 121
    st_ = open_store(w.url)
    try:
        assert verify_store(st_).ok
    finally:
        st_.close()
    with grantlog.Reasoner(w.program, store=w.url, follow=False) as r:
        assert r.journal is not None
        entries = r.journal.since(0)
        assert [e.revision for e in entries] == list(range(1, w.head + 1))
        state: dict[str, set[tuple[Any, ...]]] = {}
        rng = random.Random(5)
        sample = set(rng.sample(range(2, w.head), 2)) | {1, 32, 33, w.head - 1}
        replayed: dict[int, dict[str, set[tuple[Any, ...]]]] = {}
        for e in entries:
            for rel, rows in e.removed.items():
                state.setdefault(rel, set()).difference_update(rows)
            for rel, rows in e.added.items():
                state.setdefault(rel, set()).update(rows)
            if e.revision in sample:
                replayed[e.revision] = {k: set(v) for k, v in state.items() if v}
        checks = w.sample_checks(random.Random(9), 8)
        for rev, facts in sorted(replayed.items()):
            _, rows = r.journal.snapshot_at(rev)
            assert {k: set(v) for k, v in rows.items() if v} == facts, rev
            fresh = grantlog.Reasoner(w.program)
            fresh.seed(facts, rev)
            for s, o, x, _ in checks:
                d = r.check(s, o, x, at_revision=rev)
                e = fresh.check(s, o, x)
                assert (d.allowed, d.reasons) == (e.allowed, e.reasons), (s, o, x, rev)
            assert history.kept(r, rev, points=True) is not None
