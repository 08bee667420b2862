"""As-of answers (issue #28, item 2): at every revision of a generated history — inserts,
retracts, a policy swap — ``check``, ``list``, ``who``, ``query`` and ``explain`` asked
``at_revision=R`` (or ``as_of=`` R's commit time) equal a fresh reasoner built from the facts
and the policy of revision R; after ``grantlog store compact`` a revision below the horizon
is ``revision-compacted`` and the ones kept stay exact. On SQLite and PostgreSQL (the suite's
one server). The CLI's ``--at`` and the errors, too."""

from __future__ import annotations

import itertools
import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import grantlog
from grantlog.cli import main
from grantlog.store import checkpoints

DECLS = """
rel member(user: string, group: string).
rel grant(group: string, op: string, res: string).
rel deny(user: string, res: string).
"""
#: the policy in force first: a grant through a group, unless denied
POLICY_A = grantlog.compile(DECLS + """
allowed(U, O, R) :- member(U, G), grant(G, O, R), not deny(U, R).
""", filename="a.gl")
#: the policy swapped in: deny no longer blocks, and it lets its subject read
POLICY_B = grantlog.compile(DECLS + """
allowed(U, O, R) :- member(U, G), grant(G, O, R).
allowed(U, "read", R) :- deny(U, R).
""", filename="b.gl")
USERS, GROUPS, OPS, RES = ["u0", "u1", "u2"], ["g0", "g1"], ["read", "write"], ["r0", "r1"]
VALUES: dict[str, tuple[list[str], ...]] = {
    "member": (USERS, GROUPS), "grant": (GROUPS, OPS, RES), "deny": (USERS, RES)}
COUNTER = itertools.count()

Op = tuple[str, str, tuple[str, ...]]


@st.composite
def op(draw: st.DrawFn) -> Op:
    rel = draw(st.sampled_from(sorted(VALUES)))
    row = tuple(draw(st.sampled_from(vs)) for vs in VALUES[rel])
    return rel, draw(st.sampled_from("+-")), row


#: a history: transactions (lists of operations) and, once, "swap" (install policy B)
histories = st.lists(st.lists(op(), min_size=1, max_size=4), min_size=1, max_size=7).flatmap(
    lambda txs: st.integers(0, len(txs)).map(
        lambda at: [*txs[:at], "swap", *txs[at:]]))


#: how a store is compacted: by a count of transactions, a time, a revision
COMPACTIONS = st.sampled_from(["count", "time", "revision"])
#: the steps after which a checkpoint is taken (none, some, many)
MARKS = st.lists(st.integers(0, 8), max_size=4).map(tuple)
#: a checkpoint every N revisions, or none
EVERY = st.sampled_from([None, 1, 2, 3])


def _fresh(program: grantlog.Program, facts: dict[str, set[tuple[str, ...]]],
           ) -> grantlog.Reasoner:
    r = grantlog.Reasoner(program)
    with r.transaction() as tx:
        for rel, rows in facts.items():
            tx.insert(rel, rows)
    return r


def _same(r: grantlog.Reasoner, fresh: grantlog.Reasoner, **at: Any) -> int:
    """``r`` asked at ``at`` answers as ``fresh``; returns the revision the answers are of."""
    revisions = set()
    for u, o, x in itertools.product(USERS, OPS, RES):
        d = r.check(u, o, x, **at)
        assert d == fresh.check(u, o, x), (u, o, x, at)
        revisions.add(d.revision)
    for u, o in itertools.product(USERS, OPS):
        got = r.list(u, o, **at)
        assert list(got) == list(fresh.list(u, o)), (u, o, at)
        revisions.add(got.revision)
    for o, x in itertools.product(OPS, RES):
        got = r.who(o, x, **at)
        assert list(got) == list(fresh.who(o, x)), (o, x, at)
        revisions.add(got.revision)
    for goal in ("allowed(U, O, R)", "member(U, G)", "deny(U, R)"):
        got = r.query(goal, **at)
        assert list(got) == list(fresh.query(goal))
        revisions.add(got.revision)
    goal = 'allowed("u0", "read", "r0")'
    assert r.explain(goal, **at).to_dict() == fresh.explain(goal).to_dict()
    assert len(revisions) == 1, revisions
    return revisions.pop()


def _timelines_agree(r: grantlog.Reasoner, first: int, head: int) -> None:
    """Each timeline equals the sequence of as-of answers from ``first`` to ``head``; its
    edges are the transactions, with their authors."""
    for u, o, x in [("u0", "read", "r0"), ("u1", "write", "r1"), ("u2", "read", "r1")]:
        found = r.timeline(u, o, x)
        for rev in range(first, head + 1):
            inside = any(rev in i for i in found)
            assert inside == r.check(u, o, x, at_revision=rev).allowed, (u, o, x, rev, found)
        for i in found:
            assert i.held_before == (i.start.revision == first and i is found[0])
            assert i.end is None or i.end.author == "tester"
        assert found == r.timeline(u, o, x, since=first, until=head)


def _run(url: str, history: list[Any], how: str = "count", marks: tuple[int, ...] = (),
         every: int | None = None) -> None:
    """``marks``: after which steps a checkpoint is taken; ``every``: one every N revisions
    from the start. With either, the facts at a revision are read from the checkpoint
    whenever it has them (not only where it is cheaper: small stores rarely are)."""
    cost = checkpoints.INTERVAL_ROW_COST
    checkpoints.INTERVAL_ROW_COST = 0 if marks or every else cost
    try:
        _history(url, history, how, marks, every)
    finally:
        checkpoints.INTERVAL_ROW_COST = cost


def _history(url: str, history: list[Any], how: str, marks: tuple[int, ...],
             every: int | None) -> None:
    facts: dict[str, set[tuple[str, ...]]] = {rel: set() for rel in VALUES}
    at_revision: list[tuple[dict[str, set[tuple[str, ...]]], grantlog.Program]] = []
    policy = POLICY_A  # the reasoner's own program until a policy is stored
    swapped = -1  # the head when policy B was installed
    with grantlog.Reasoner(POLICY_A, store=url, create=True, follow=False) as r:
        at_revision.append(({k: set(v) for k, v in facts.items()}, policy))
        if every is not None:
            assert r.store is not None and r.store.checkpoint(every) == 0
        for n, step in enumerate(history):
            if n in marks:
                assert r.store is not None and r.store.checkpoint() == r.revision
            if step == "swap":
                assert r.store is not None
                r.store.put_policy(POLICY_B)
                policy = POLICY_B  # in force at the head it was installed at, and after
                swapped = r.revision
                at_revision[-1] = (at_revision[-1][0], policy)
                continue
            with r.transaction(author="tester", reason=f"step {len(at_revision)}") as tx:
                for rel, sign, row in step:
                    (tx.insert if sign == "+" else tx.retract)(rel, [row])
                    (facts[rel].add if sign == "+" else facts[rel].discard)(row)
            if tx.revision == len(at_revision):  # a transaction that changed something
                at_revision.append(({k: set(v) for k, v in facts.items()}, policy))
        assert r.revision == len(at_revision) - 1
        for rev, (state, program) in enumerate(at_revision):
            assert _same(r, _fresh(program, state), at_revision=rev) == rev
        committed = r.transactions()
        assert [c.revision for c in committed] == list(range(1, r.revision + 1))
        assert all(c.author == "tester" for c in committed)
        for c in committed[-2:]:  # as of a commit time: that revision (no two share it),
            state = at_revision[c.revision][0]  # under the policy installed before it
            program = POLICY_B if 0 <= swapped < c.revision else POLICY_A
            if sum(1 for d in committed if d.committed_at == c.committed_at) == 1:
                assert _same(r, _fresh(program, state), as_of=c.committed_at) == c.revision
        head = r.revision
        _timelines_agree(r, 0, head)
    keep = max(head // 2, 0)
    target = head - keep
    with grantlog.Reasoner(POLICY_A, store=url, follow=False) as r:
        assert r.store is not None
        if how == "count":
            r.store.compact(keep)
        elif how == "revision":
            r.store.compact(before_revision=target)
        else:  # the time: the state in force then stays answerable
            when = committed[target - 1].committed_at if target else 0.0
            r.store.compact(before_time=when)
        horizon = r.store.head()[1]
        if how == "time":  # the last revision committed at or before it (several may share it)
            assert horizon >= target
            assert horizon == max([c.revision for c in committed if c.committed_at <= when],
                                  default=0)
        else:
            assert horizon == target
        r.store.compact(before_revision=0)  # the horizon never moves back
        assert r.store.head()[1] == horizon
        for rev, (state, program) in enumerate(at_revision):
            if rev < horizon:
                with pytest.raises(grantlog.GrantlogError) as e:
                    r.check("u0", "read", "r0", at_revision=rev)
                assert e.value.diagnostics[0].code == "revision-compacted"
                assert f"revision it can answer at is {horizon}" in str(e.value)
            else:
                assert _same(r, _fresh(program, state), at_revision=rev) == rev
        _timelines_agree(r, horizon, head)


@settings(max_examples=15, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(history=histories, how=COMPACTIONS, marks=MARKS, every=EVERY)
def test_sqlite_as_of_equals_a_fresh_reasoner(tmp_path_factory: pytest.TempPathFactory,
                                              history: list[Any], how: str,
                                              marks: tuple[int, ...], every: int | None) -> None:
    _run(f"sqlite:///{tmp_path_factory.mktemp('asof') / 'facts.db'}", history, how, marks,
         every)


@settings(max_examples=8, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(history=histories, how=COMPACTIONS, marks=MARKS, every=EVERY)
def test_postgres_as_of_equals_a_fresh_reasoner(pg_server: Any, history: list[Any], how: str,
                                                marks: tuple[int, ...], every: int | None,
                                                ) -> None:
    _run(pg_server.schema_url(f"asof{next(COUNTER)}"), history, how, marks, every)


def _three(url: str) -> grantlog.Reasoner:
    """Three transactions: a member, a grant, the member replaced."""
    r = grantlog.Reasoner(POLICY_A, store=url, create=True, follow=False)
    r.insert("member", [("u0", "g0")], author="ann", reason="on board", ticket="T-1")
    r.insert("grant", [("g0", "read", "r0")])
    with r.transaction(author="bob") as tx:
        tx.retract("member", [("u0", "g0")])
        tx.insert("member", [("u1", "g0")])
    return r


def test_errors_name_the_revisions(store_url: str) -> None:
    with _three(store_url) as r:
        with pytest.raises(grantlog.GrantlogError) as e:
            r.check("u0", "read", "r0", at_revision=4)
        assert e.value.diagnostics[0].code == "revision-ahead"
        assert "the store is at revision 3" in str(e.value)
        with pytest.raises(grantlog.GrantlogError) as e:
            r.who("read", "r0", as_of="2001-01-01")
        assert e.value.diagnostics[0].code == "before-history"
        assert "first transaction (revision 1" in str(e.value)
        with pytest.raises(grantlog.GrantlogError) as e:
            r.check("u0", "read", "r0", at_revision=1, as_of="2001-01-01")
        assert e.value.diagnostics[0].code == "bad-argument"
        with pytest.raises(grantlog.GrantlogError) as e:
            r.check("u0", "read", "r0", as_of="yesterday")
        assert e.value.diagnostics[0].code == "bad-argument"
        # a time after the last commit is the head; a datetime (naive: UTC) and a date work
        assert r.check("u1", "read", "r0", as_of=datetime.now(UTC)).revision == 3
        assert r.check("u1", "read", "r0", as_of=datetime.now(UTC).replace(tzinfo=None))
        assert r.check("u1", "read", "r0", as_of="2999-01-01").revision == 3
        assert r.check("u0", "read", "r0", at_revision=2).allowed
        assert not r.check("u0", "read", "r0").allowed
        assert r.store is not None
        r.store.compact(0)
        with grantlog.Reasoner(POLICY_A, store=store_url, follow=False) as again:
            with pytest.raises(grantlog.GrantlogError) as e:
                again.check("u0", "read", "r0", as_of="2001-01-01")
            assert e.value.diagnostics[0].code == "revision-compacted"
            assert again.check("u1", "read", "r0", at_revision=3).allowed


def test_without_a_store_there_is_no_history() -> None:
    r = grantlog.Reasoner(POLICY_A)
    with pytest.raises(grantlog.GrantlogError) as e:
        r.check("u0", "read", "r0", at_revision=0)
    assert e.value.diagnostics[0].code == "history-unavailable"
    with pytest.raises(grantlog.GrantlogError) as e:
        r.transactions()
    assert e.value.diagnostics[0].code == "history-unavailable"


def test_the_cli_answers_at_a_revision_or_a_time(tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    url = f"sqlite:///{tmp_path / 'facts.db'}"
    rules = tmp_path / "a.gl"
    rules.write_text(POLICY_A.sources["a.gl"])
    _three(url).close()

    def run(*argv: str) -> tuple[int, str, str]:
        code = main([argv[0], str(rules), *argv[1:], "--store", url])
        out, err = capsys.readouterr()
        return code, out, err

    code, out, _ = run("check", "u0", "read", "r0", "--at", "2")
    assert (code, out.strip()) == (0, "ALLOW allowed(u0, read, r0) (by allowed#1) at "
                                      "revision 2")
    code, out, _ = run("check", "u0", "read", "r0", "--at", "3", "--json")
    assert code == 1 and json.loads(out)["revision"] == 3
    assert run("check", "u0", "read", "r0")[0] == 1
    code, out, _ = run("who", "read", "r0", "--at", "2", "--json")
    assert json.loads(out) == ["u0"]
    code, out, _ = run("list", "u0", "read", "--at", "2")
    assert out.split() == ["r0"]
    code, out, _ = run("query", "member(U, G)", "--at", "1", "--json")
    assert json.loads(out) == [{"U": "u0", "G": "g0"}]
    code, out, _ = run("explain", 'allowed("u0", "read", "r0")', "--at", "2")
    assert code == 0 and "member(u0, g0)" in out
    code, out, _ = run("check", "u1", "read", "r0", "--at", "2999-01-01T00:00:00Z")
    assert code == 0 and "at revision 3" in out
    code, _, err = run("check", "u0", "read", "r0", "--at", "7")
    assert code == 2 and "error[revision-ahead]" in err
    code = main(["check", str(rules), "u0", "read", "r0", "--at", "1"])
    assert code == 2 and "--at needs --store" in capsys.readouterr().err


def test_timelines_name_their_transactions(tmp_path: Path,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    url = f"sqlite:///{tmp_path / 'facts.db'}"
    rules = tmp_path / "a.gl"
    rules.write_text(POLICY_A.sources["a.gl"])
    with _three(url) as r:
        r.insert("member", [("u0", "g0")], author="zed", reason="back", ticket="T-4")
        found = r.timeline("u0", "read", "r0")
        assert [(i.start.revision, None if i.end is None else i.end.revision)
                for i in found] == [(2, 3), (4, None)]
        closed = found[0].end
        assert closed is not None and closed.author == "bob"
        assert (found[1].start.reason, found[1].start.ticket) == ("back", "T-4")
        assert [i.held_before for i in r.timeline("u0", "read", "r0", since=2)] == \
            [True, False]
        assert r.timeline("u0", "read", "r0", since=3, until=3) == []
        with pytest.raises(grantlog.GrantlogError) as e:
            r.timeline("u0", "read", "r0", since=3, until=2)
        assert e.value.diagnostics[0].code == "bad-argument"
    assert main(["history", str(rules), "u0", "read", "r0", "--store", url]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("from revision 2 (") and "until revision 3 (" in lines[0]
    assert "by bob" in lines[0]
    assert lines[1].startswith("from revision 4 (") and "by zed, ticket T-4: back" in lines[1]
    assert lines[1].endswith("until now")
    assert main(["history", str(rules), "u2", "read", "r0", "--store", url, "--json"]) == 1
    assert json.loads(capsys.readouterr().out) == []
    assert main(["history", str(rules), "u0", "read", "r0", "--store", url, "--since", "3",
                 "--json"]) == 0
    got = json.loads(capsys.readouterr().out)
    assert [(i["start"]["revision"], i["end"]) for i in got] == [(4, None)]
    assert main(["history", str(rules), "u0", "read", "r0"]) == 2
    assert "history needs --store" in capsys.readouterr().err
