"""Expiring and scheduled grants (issue #28, item 6): facts with a validity interval.

Property (hypothesis): over generated histories of inserts (with and without an interval),
retracts and moves of the clock (forward and back), the decision at the reasoner's clock and
at any ``now=`` equals a fresh reasoner built from the facts valid at that moment; the
change feed, added up, is the facts valid at the clock. The same through a store (SQLite and
PostgreSQL): the reasoner writing, a follower and a reopened reasoner agree. Times are far in
the future (the wall clock never reaches them), so only ``tick`` moves the clock; the tests
at the end use the wall clock with short intervals."""

from __future__ import annotations

import itertools
import time
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import grantlog

RULES = """
rel member(user: string, group: string).
rel grant(group: string, res: string).
rel banned(user: string).
allowed(U, "read", R) :- member(U, G), grant(G, R), not banned(U).
member(u9, g0).
"""
PROGRAM = grantlog.compile(RULES, filename="valid.gl")
USERS, GROUPS, RES = ["u0", "u1"], ["g0", "g1"], ["r0", "r1"]
VALUES: dict[str, tuple[list[str], ...]] = {
    "member": (USERS, GROUPS), "grant": (GROUPS, RES), "banned": (USERS,)}
#: the moments of the histories: BASE + 0..10 seconds (far ahead of the wall clock)
BASE = float(int(time.time()) + 10**8)
COUNTER = itertools.count()
Op = tuple[str, ...] | tuple[Any, ...]


@st.composite
def op(draw: st.DrawFn) -> Op:
    kind = draw(st.sampled_from(["+", "+", "+", "-", "tick"]))
    if kind == "tick":
        return ("tick", draw(st.integers(0, 10)))
    rel = draw(st.sampled_from(sorted(VALUES)))
    row = tuple(draw(st.sampled_from(vs)) for vs in VALUES[rel])
    if kind == "-":
        return ("-", rel, row)
    lo = draw(st.none() | st.integers(0, 9))
    hi = draw(st.none() | st.integers((lo or 0) + 1, 10))
    return ("+", rel, row, lo, hi)


histories = st.lists(op(), min_size=1, max_size=14)


def _at(model: dict[tuple[str, Any], Any], t: float) -> dict[str, set[Any]]:
    """The facts valid at ``t``."""
    out: dict[str, set[Any]] = {}
    for (rel, row), iv in model.items():
        if iv is None or ((iv[0] is None or BASE + iv[0] <= t) and \
                (iv[1] is None or t < BASE + iv[1])):
            out.setdefault(rel, set()).add(row)
    return out


def _fresh(facts: dict[str, set[Any]]) -> grantlog.Reasoner:
    r = grantlog.Reasoner(PROGRAM)
    with r.transaction() as tx:
        for rel, rows in facts.items():
            tx.insert(rel, rows)
    return r


def _decisions(r: grantlog.Reasoner, **now: Any) -> list[bool]:
    return [r.check(u, "read", x, **now).allowed for u in USERS for x in RES]


def _apply(r: grantlog.Reasoner, o: Op) -> None:
    if o[0] == "tick":
        r.tick(BASE + o[1])
    elif o[0] == "-":
        r.retract(o[1], [o[2]])
    else:
        lo, hi = o[3], o[4]
        r.insert(o[1], [o[2]], valid_from=None if lo is None else BASE + lo,
                 valid_until=None if hi is None else BASE + hi)


def _step(model: dict[tuple[str, Any], Any], o: Op) -> None:
    if o[0] == "-":
        model.pop((o[1], o[2]), None)
    elif o[0] == "+":
        model[(o[1], o[2])] = None if o[3] is None and o[4] is None else (o[3], o[4])


def _feed(r: grantlog.Reasoner) -> dict[str, set[Any]]:
    """The base facts as the change feed tells them (from the reasoner's facts now)."""
    seen = {rel: set(rows) for rel, rows in r.base_facts().items()}

    def on(changes: grantlog.Changes) -> None:
        for rel, c in changes.by_relation.items():
            if rel in VALUES:
                seen.setdefault(rel, set()).update(c.added)
                seen[rel] -= c.removed

    r.listeners.append(on)
    return seen


def _compare(rs: list[grantlog.Reasoner], model: dict[tuple[str, Any], Any], clock: float,
             probe: int) -> None:
    want = _fresh(_at(model, clock))
    for r in rs:
        assert _decisions(r) == _decisions(want)
        assert {k: v for k, v in r.base_facts().items() if k in VALUES} == \
            {k: v for k, v in want.base_facts().items() if k in VALUES}
    there = _fresh(_at(model, BASE + probe))
    assert _decisions(rs[0], now=BASE + probe) == _decisions(there)


@settings(max_examples=60, deadline=None)
@given(history=histories, probes=st.lists(st.integers(0, 10), min_size=14, max_size=14))
def test_the_decision_at_now_equals_a_fresh_reasoner_of_the_facts_valid_then(
        history: list[Op], probes: list[int]) -> None:
    r = grantlog.Reasoner(PROGRAM)
    r.tick(BASE)
    seen = _feed(r)
    model: dict[tuple[str, Any], Any] = {("member", ("u9", "g0")): None}
    clock = BASE
    for o, probe in zip(history, probes, strict=False):
        _apply(r, o)
        _step(model, o)
        if o[0] == "tick":
            clock = BASE + o[1]
        _compare([r], model, clock, probe)
        assert {k: v for k, v in seen.items() if v} == \
            {k: v for k, v in _at(model, clock).items() if k in VALUES and v}


def _run_store(url: str, history: list[Op]) -> None:
    model: dict[tuple[str, Any], Any] = {("member", ("u9", "g0")): None}
    clock = BASE
    with grantlog.Reasoner(PROGRAM, store=url, follow=False, create=True) as r, \
            grantlog.Reasoner(PROGRAM, store=url, follow=False) as follower:
        for x in (r, follower):
            x.tick(BASE)
        for o in history:
            _apply(r, o)
            _step(model, o)
            if o[0] == "tick":
                clock = BASE + o[1]
                follower.tick(clock)
            follower.sync()
            _compare([r, follower], model, clock, 5)
    with grantlog.Reasoner(PROGRAM, store=url, follow=False) as reopened:
        reopened.tick(clock)
        _compare([reopened], model, clock, 3)


@settings(max_examples=12, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(history=histories)
def test_sqlite_keeps_the_intervals(tmp_path_factory: pytest.TempPathFactory,
                                    history: list[Op]) -> None:
    _run_store(f"sqlite:///{tmp_path_factory.mktemp('valid') / 'facts.db'}", history)


@settings(max_examples=6, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(history=histories)
def test_postgres_keeps_the_intervals(pg_server: Any, history: list[Op]) -> None:
    _run_store(pg_server.schema_url(f"valid{next(COUNTER)}"), history)


# -- the wall clock ------------------------------------------------------------------------------


def test_a_grant_expires_and_one_starts_as_time_passes() -> None:
    r = grantlog.Reasoner(PROGRAM, watch=["allowed"])
    feed: list[list[str]] = []
    r.listeners.append(lambda c: feed.append(c.lines(derived_only=True)))
    r.insert("grant", [("g0", "r0")])
    t = time.time()
    r.insert("member", [("u0", "g0")], valid_until=t + 0.3)
    r.insert("member", [("u1", "g0")], valid_from=t + 0.3)
    assert r.check("u0", "read", "r0") and not r.check("u1", "read", "r0")
    assert not r.check("u0", "read", "r0", now=t + 1)
    assert r.check("u1", "read", "r0", now=t + 1)
    time.sleep(0.35)
    assert not r.check("u0", "read", "r0") and r.check("u1", "read", "r0")
    assert feed[-1] == ['-allowed(u0, read, r0)', '+allowed(u1, read, r0)']
    assert r.revision == 3  # passing an edge is no transaction


def test_now_within_the_same_stretch_is_answered_by_the_reasoner_itself() -> None:
    from grantlog.engine.answer import validity

    r = grantlog.Reasoner(PROGRAM)
    r.insert("grant", [("g0", "r0")])
    t = time.time()
    r.insert("member", [("u0", "g0")], valid_until=t + 3600)
    assert validity.at(r, t + 60) is r
    assert validity.at(r, t + 7200) is not r
    assert not r.check("u0", "read", "r0", now=t + 7200)


def test_the_errors() -> None:
    r = grantlog.Reasoner(PROGRAM)
    with pytest.raises(grantlog.GrantlogError) as e:
        r.insert("member", [("u0", "g0")], valid_from="2026-06-01", valid_until="2026-01-01")
    assert e.value.diagnostics[0].code == "empty-validity"
    with pytest.raises(grantlog.GrantlogError) as e:
        r.insert("member", [("u0", "g0")], valid_until="next tuesday")
    assert e.value.diagnostics[0].code == "bad-argument"
    program = grantlog.compile(RULES.replace("rel banned", "@writable rel banned")
                               + "banned(U) :- member(U, \"jail\").\n")
    with pytest.raises(grantlog.GrantlogError) as e:
        grantlog.Reasoner(program).insert("banned", [("u0",)], valid_until="2030-01-01")
    assert e.value.diagnostics[0].code == "validity-derived"
    with pytest.raises(grantlog.GrantlogError) as e:
        r.check("u0", "read", "r0", now="soon")
    assert e.value.diagnostics[0].code == "bad-argument"
    assert r.rows("member") == {("u9", "g0")}  # nothing was written


def test_a_timeline_shows_the_moments_intervals_start_and_end(
        tmp_path_factory: pytest.TempPathFactory) -> None:
    from grantlog.engine.core.times import canonical

    url = f"sqlite:///{tmp_path_factory.mktemp('timeline') / 'facts.db'}"
    with grantlog.Reasoner(PROGRAM, store=url, create=True) as r:
        r.insert("grant", [("g0", "r0")])
        t = time.time()
        r.insert("member", [("u0", "g0")], valid_until=t + 0.4, author="ann")
        r.insert("member", [("u1", "g0")], valid_from=t + 0.4)
        time.sleep(0.5)
        (gone,) = r.timeline("u0", "read", "r0")
        assert (gone.start.revision, gone.start.author, gone.start.passed) == (2, "ann", ())
        both = ("-member(u0, g0)", "+member(u1, g0)")  # one moment: an end and a start
        assert gone.end is not None and gone.end.passed == both
        assert (gone.end.revision, gone.end.committed_at) == (3, canonical(t + 0.4))
        assert gone.end.to_dict()["passed"] == list(both)
        assert "passed" not in gone.start.to_dict()
        (came,) = r.timeline("u1", "read", "r0")
        assert came.start == gone.end and came.end is None
        assert r.timeline("u0", "read", "r0", until=2) == [
            grantlog.engine.answer.history.Interval(gone.start, None)]


def test_the_pydatalog_backend_refuses_intervals() -> None:
    r = grantlog.Reasoner(PROGRAM, backend="pydatalog")
    with pytest.raises(grantlog.GrantlogError) as e:
        r.insert("member", [("u0", "g0")], valid_until="2030-01-01")
    assert e.value.diagnostics[0].code == "unsupported-feature"
    timed = grantlog.compile(RULES + 'member(u1, g1) until "2030-01-01".\n')
    with pytest.raises(grantlog.GrantlogError) as e:
        grantlog.Reasoner(timed, backend="pydatalog")
    assert e.value.diagnostics[0].code == "unsupported-feature"


def test_the_cli_reads_intervals_of_rule_files_at_now(
        tmp_path_factory: pytest.TempPathFactory, capsys: pytest.CaptureFixture[str]) -> None:
    from grantlog.cli import main

    tmp = tmp_path_factory.mktemp("cli")
    rules = tmp / "rules.gl"
    rules.write_text(RULES + 'grant(g0, r0).\nmember(u0, g0) from "2026-01-01" until '
                     '"2026-07-01".\n')
    ask = [str(rules), "u0", "read", "r0"]
    assert main(["check", *ask, "--now", "2026-03-03"]) == 0
    assert main(["check", *ask, "--now", "2026-07-01"]) == 1  # the end is not included
    assert main(["check", *ask, "--now", "2025-12-31T23:59:59Z"]) == 1
    from grantlog.grammar.formatter import format_text

    assert 'member(u0, g0) from "2026-01-01" until "2026-07-01".\n' in \
        format_text(rules.read_text())
    facts = tmp / "facts.gl"
    facts.write_text('member(u1, g0) until "2030-01-01".\n')
    capsys.readouterr()  # its intervals load into a store (tests/test_store_dump_validity.py)
    assert main(["store", "load", f"sqlite:///{tmp / 'f.db'}", str(facts), "--rules",
                 str(rules), "--create"]) == 0


def test_as_of_a_time_reads_the_intervals_at_that_time(
        tmp_path_factory: pytest.TempPathFactory) -> None:
    url = f"sqlite:///{tmp_path_factory.mktemp('asof') / 'facts.db'}"
    with grantlog.Reasoner(PROGRAM, store=url, create=True) as r:
        r.insert("grant", [("g0", "r0")])
        t = time.time()
        r.insert("member", [("u0", "g0")], valid_until=t + 0.3)
        time.sleep(0.4)
        assert not r.check("u0", "read", "r0")
        assert r.check("u0", "read", "r0", as_of=t + 0.1)  # the grant still held then
        assert not r.check("u0", "read", "r0", as_of=t + 0.1, now=t + 1)
        assert not r.check("u0", "read", "r0", at_revision=2)  # at the clock
        assert r.who("read", "r0", as_of=t + 0.1) == ["u0", "u9"]


def test_a_reasoner_of_other_rules_keeps_the_intervals() -> None:
    from grantlog.engine.answer import validity

    r = grantlog.Reasoner(PROGRAM)
    r.tick(BASE)
    r.insert("member", [("u0", "g0")], valid_until=BASE + 5)
    r.insert("member", [("u1", "g0")], valid_from=BASE + 5)
    r.insert("grant", [("g0", "r0")])
    facts = validity.journaled_facts(r)
    assert ("u0", "g0") not in facts["member"] and len(facts[validity.VALID]) == 2
    other = grantlog.Reasoner(PROGRAM)
    other.tick(BASE)
    other.seed(facts, r.revision)
    assert other.check("u0", "read", "r0") and not other.check("u1", "read", "r0")
    other.tick(BASE + 5)
    assert not other.check("u0", "read", "r0") and other.check("u1", "read", "r0")


def test_the_store_log_replays_intervals(tmp_path_factory: pytest.TempPathFactory,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    from grantlog.cli import main

    tmp = tmp_path_factory.mktemp("log")
    rules = tmp / "rules.gl"
    rules.write_text(RULES + "grant(g0, r0).\n")
    url = f"sqlite:///{tmp / 'facts.db'}"
    with grantlog.Reasoner(grantlog.compile(None, paths=[str(rules)]), store=url,
                           create=True) as r:
        r.insert("member", [("u0", "g0")], valid_until=time.time() + 3600)
        r.insert("member", [("u0", "g0")])  # made permanent: the interval goes
    capsys.readouterr()
    assert main(["store", "log", url, "--derived", "allowed", "--rules", str(rules)]) == 0
    text = capsys.readouterr().out
    assert '+@valid(member, "[\\"u0\\",\\"g0\\"]", ""' in text
    assert "+allowed(u0, read, r0)" in text and "-allowed" not in text
    with pytest.raises(grantlog.GrantlogError) as e:  # written as it is: checked
        grantlog.Reasoner(PROGRAM).insert("@valid", [("member", "[\"u0\"]", "", "")])
    assert e.value.diagnostics[0].code == "bad-fact"
