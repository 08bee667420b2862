"""Timelines beyond one decision (issue #28, item 3): on generated histories (inserts, retracts,
a policy swap) a resource timeline equals the sequence of per-revision ``who`` answers and a
subject timeline the sequence of per-revision ``list``/``query`` answers, each change tied to
its transaction; a timeline's intervals carry the proof at their start and the why-not at
their end. On SQLite and PostgreSQL; the CLI's ``history --resource/--subject/--explain``."""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from test_history_asof import OPS, POLICY_A, POLICY_B, RES, USERS, histories

import grantlog
from grantlog.cli import main

COUNTER = itertools.count()


def _write(url: str, history: list[Any]) -> grantlog.Reasoner:
    r = grantlog.Reasoner(POLICY_A, store=url, create=True, follow=False)
    for n, step in enumerate(history):
        if step == "swap":
            assert r.store is not None
            r.store.put_policy(POLICY_B)
            continue
        with r.transaction(author=f"a{n}", reason=f"step {n}") as tx:
            for rel, sign, row in step:
                (tx.insert if sign == "+" else tx.retract)(rel, [row])
    return r


def _agree(r: grantlog.Reasoner, first: int) -> None:
    head = r.revision
    authors = {c.revision: c.author for c in r.transactions()}
    for o, x in itertools.product(OPS, RES):
        t = r.resource_timeline(o, x, since=first)
        assert (t.first, t.last) == (first, head)
        for rev in range(first, head + 1):
            assert {k[0] for k in t.at(rev)} == set(r.who(o, x, at_revision=rev)), (o, x, rev)
        for c in t.changes():  # each change is a transaction that made it, with its author
            assert c.edge.author == authors.get(c.edge.revision)
            assert (c.key[0] in r.who(o, x, at_revision=c.edge.revision)) == c.gained
            assert (c.key[0] in r.who(o, x, at_revision=c.edge.revision - 1)) != c.gained
    for u in USERS:
        t = r.subject_timeline(u, since=first)
        for rev in range(first, head + 1):
            want = {(b["O"], b["R"]) for b in r.query(f'allowed("{u}", O, R)',
                                                       at_revision=rev)}
            assert t.at(rev) == want, (u, rev)
        one = r.subject_timeline(u, "read", since=first)
        for rev in range(first, head + 1):
            assert {k[1] for k in one.at(rev)} == set(r.list(u, "read", at_revision=rev))


def _run(url: str, history: list[Any]) -> None:
    with _write(url, history) as r:
        _agree(r, 0)
        if r.revision > 1:
            _agree(r, r.revision // 2)


@settings(max_examples=15, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(history=histories)
def test_sqlite_resource_and_subject_timelines_equal_the_answers(
        tmp_path_factory: pytest.TempPathFactory, history: list[Any]) -> None:
    _run(f"sqlite:///{tmp_path_factory.mktemp('tl') / 'facts.db'}", history)


@settings(max_examples=6, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(history=histories)
def test_postgres_resource_and_subject_timelines_equal_the_answers(
        pg_server: Any, history: list[Any]) -> None:
    _run(pg_server.schema_url(f"tl{next(COUNTER)}"), history)


HISTORY: list[Any] = [
    [("member", "+", ("u0", "g0")), ("grant", "+", ("g0", "read", "r0"))],
    [("member", "+", ("u1", "g0"))],
    [("deny", "+", ("u0", "r0"))],
    [("deny", "-", ("u0", "r0"))],
]


def test_intervals_carry_their_proofs(tmp_path: Path) -> None:
    with _write(f"sqlite:///{tmp_path / 'facts.db'}", HISTORY) as r:
        plain = r.timeline("u0", "read", "r0")
        found = r.timeline("u0", "read", "r0", proofs=True)
        assert [p.interval for p in found] == plain
        assert [(p.start.revision, p.end and p.end.revision) for p in found] == \
            [(1, 3), (4, None)]
        first, second = found
        assert first.why.holds and 'member(u0, g0)' in first.why.render()
        assert first.why_not is not None and not first.why_not.holds
        assert "deny(u0, r0)" in first.why_not.render()  # the deny that closed it
        assert second.why_not is None and second.why.holds
        d = first.to_dict()
        assert d["start"]["revision"] == 1 and d["why"]["holds"]
        assert d["why_not"]["holds"] is False
        t = r.resource_timeline("read", "r0")
        assert [(c.key, c.gained, c.edge.revision, c.edge.author) for c in t.changes()] == [
            (("u0",), True, 1, "a0"), (("u1",), True, 2, "a1"), (("u0",), False, 3, "a2"),
            (("u0",), True, 4, "a3")]
        assert t.to_dict()["changes"][0] == {
            "subject": "u0", "change": "gained", **t.changes()[0].edge.to_dict()}


def test_the_cli_shows_timelines_and_proofs(tmp_path: Path,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    url = f"sqlite:///{tmp_path / 'facts.db'}"
    _write(url, HISTORY).close()
    rules = tmp_path / "a.gl"
    rules.write_text(POLICY_A.sources["a.gl"])
    assert main(["history", str(rules), "--store", url, "--resource", "r0",
                 "--operation", "read"]) == 0
    out = capsys.readouterr().out
    assert "u1 gained at revision 2" in out and "u0 lost at revision 3" in out
    assert "by a2" in out
    assert main(["history", str(rules), "--store", url, "--subject", "u0", "--json"]) == 0
    got = json.loads(capsys.readouterr().out)
    assert got["subject"] == "u0"
    assert [(c["operation"], c["resource"], c["change"], c["revision"])
            for c in got["changes"]] == [("read", "r0", "gained", 1), ("read", "r0", "lost", 3),
                                         ("read", "r0", "gained", 4)]
    assert main(["history", str(rules), "u0", "read", "r0", "--store", url, "--explain"]) == 0
    out = capsys.readouterr().out
    assert "why at revision 1:" in out and "why not at revision 3:" in out
    assert main(["history", str(rules), "u0", "read", "r0", "--store", url, "--explain",
                 "--json"]) == 0
    got = json.loads(capsys.readouterr().out)
    assert got[0]["why"]["holds"] and got[0]["why_not"]["holds"] is False
    assert main(["history", str(rules), "--store", url, "--resource", "r0"]) == 2
    assert "--operation" in capsys.readouterr().err


def test_a_grant_that_expires_closes_the_interval_at_its_moment(tmp_path: Path) -> None:
    import time

    with _write(f"sqlite:///{tmp_path / 'facts.db'}", HISTORY[:2]) as r:
        until = time.time() + 0.4
        with r.transaction(author="ann", reason="a week's access") as tx:
            tx.insert("grant", [("g0", "write", "r1")], valid_until=until)
        time.sleep(0.5)
        t = r.resource_timeline("write", "r1")
        assert [(c.key, c.gained) for c in t.changes()] == [(("u0",), True), (("u1",), True),
                                                          (("u0",), False), (("u1",), False)]
        lost = t.changes()[-1].edge
        assert lost.committed_at == pytest.approx(until) and lost.revision == 3
        assert lost.passed and lost.passed[0].startswith("-grant(")
        s = r.subject_timeline("u0", "write")
        assert [(i.start.revision, i.end and i.end.committed_at)
                for i in s.intervals[("write", "r1")]] == [(3, pytest.approx(until))]
        (proven,) = r.timeline("u0", "write", "r1", proofs=True)
        assert proven.why.holds and proven.why_not is not None  # explained at that moment
        assert not proven.why_not.holds and "grant(g0, write, r1)" in proven.why_not.render()
