"""Access reviews over histories with validity intervals (issue #28, items 5 and 6): a
subject's and a resource's review ``since`` a revision are evaluated over revision intervals
(engine/answer/timed.py ``decided``, on the axis of commits and validity bounds: the log is
not replayed) and equal the replay's (``keyed``) JSON, on SQLite and PostgreSQL. Both are
also held to fresh reasoners of each (revision, moment): an entry's change, its events (a
gain or loss where time passes a bound carries that edge: the revision in force and the
moment) and its path — now, or for a lost entry just before its last loss (the revision
before a commit at the commit's time; at a validity edge, the same revision a microsecond
before it: engine/answer/timed.py ``before``), with the intervals read then.

The generated histories, their writer and the fresh reasoners are
tests/test_history_validity_property.py's."""

from __future__ import annotations

import time
import types
from typing import Any

import pytest
import test_history_validity_property as hv
from conftest import examples
from grantlog.engine.answer import review as review_mod
from grantlog.engine.answer import timed
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import grantlog
from grantlog.store import base as store_base

#: a moment after every bound a history has (the state the reviews' "now" is in)
LATER = hv.BASE + hv.STEP * (hv.MOST + 3)
KINDS = (("subject", hv.USERS), ("resource", hv.RES))


def _no_replay(*args: Any, **kwargs: Any) -> Any:
    raise AssertionError("the review replayed the log: not evaluated over intervals")


def _leaves(fresh: grantlog.Reasoner, goal: str, t: float) -> list[str]:
    ex = fresh.explain(goal, now=t)
    if not ex.holds or ex.proof is None:
        return []
    return sorted({n.text for n in ex.proof.walk() if n.kind == "fact"})


def _truth(w: hv.World, program: grantlog.Program, kind: str, of: str, since: int,
           at: float | None) -> dict[tuple[str, ...], tuple[str, list[tuple[Any, ...]],
                                                          list[str]]]:
    """Per decision row with ``of`` at its place: (change, events as (change, revision,
    time), path) from fresh reasoners at every moment (hv.expected's); the current entries
    are the reviewing reasoner's (``program``: the head's policy) over the head's facts."""
    head = len(w.at) - 1

    def holds(f: grantlog.Reasoner, now: float) -> set[tuple[str, ...]]:
        goal = f'allowed("{of}", O, R)' if kind == "subject" else f'allowed(S, O, "{of}")'
        return {(of, b["O"], b["R"]) if kind == "subject" else (b["S"], b["O"], of)
                for b in f.query(goal, now=now)}

    current = grantlog.Reasoner(program)
    with current.transaction() as tx:
        for (rel, row), bounds in w.facts[head].items():
            if hv.valid(bounds, LATER):
                tx.insert(rel, [row])
    now = holds(current, LATER)
    timeline = hv.expected(w, since, holds, None, at)
    out = {}
    for k in timeline.keys() | now:
        ivs = timeline.get(k, [])
        events: list[tuple[Any, ...]] = []
        for n, (start, end) in enumerate(ivs):
            if n or start != (since, at):
                events.append(("gained", *start))
            if end is not None:
                events.append(("lost", *end))
        held_then = bool(ivs) and ivs[0][0] == (since, at)
        change = ("unchanged" if held_then else "gained") if k in now else \
            "lost" if held_then else "transient"
        goal = f'allowed("{k[0]}", "{k[1]}", "{k[2]}")'
        if k in now:
            path = _leaves(current, goal, LATER)
        else:
            rev, t = ivs[-1][1]
            passed = w.at[rev] != t  # a validity edge, not a commit
            rev, t = (rev, t - timed.JUST_BEFORE) if passed else (rev - 1, t)
            path = _leaves(w.fresh(rev, t), goal, t) if rev >= 0 else []
        out[k] = (change, events, path)
    return out


def _reviews_agree(r: grantlog.Reasoner, w: hv.World, first: int,
                   monkeypatch: pytest.MonkeyPatch) -> None:
    head = len(w.at) - 1
    for since in sorted({first, (first + head) // 2}):
        at = None if since == first else w.at[since]
        for kind, ofs in KINDS:
            for of in ofs:
                with monkeypatch.context() as m:
                    m.setattr(review_mod, "keyed", _no_replay)
                    got = r.review(**{kind: of}, since=since)  # type: ignore[arg-type]
                with monkeypatch.context() as m:
                    m.setattr(timed, "decided", lambda *a, **k: None)
                    want = r.review(**{kind: of}, since=since)  # type: ignore[arg-type]
                assert got.to_dict() == want.to_dict(), (kind, of, since)
                truth = _truth(w, r.program, kind, of, since, at)
                mine = {(e.subject, e.operation, e.resource): (
                    e.change, [(v.to_dict()["change"], v.edge.revision, v.edge.committed_at)
                               for v in e.events], list(e.path)) for e in got.entries}
                assert mine == truth, (kind, of, since)


def _run(url: str, history: list[Any], keep: int, monkeypatch: pytest.MonkeyPatch) -> None:
    clock = hv.Clock()
    monkeypatch.setattr(store_base, "time", types.SimpleNamespace(
        time=clock.time, monotonic=time.monotonic, sleep=time.sleep,
        perf_counter=time.perf_counter))
    if history.count("swap") % 2:  # the head under the reviewer's own policy (its current
        history = [*history, "swap"]  # entries are its answers, under its program)
    r, w = hv.write(url, history, clock)
    if r.revision == 0:
        r.close()
        return
    assert w.policy[-1] is r.program
    with r:
        _reviews_agree(r, w, 0, monkeypatch)
        head = r.revision
        assert r.store is not None
        r.store.compact(keep)
        horizon = r.store.head()[1]
        assert horizon == max(head - keep, 0)
    with grantlog.Reasoner(hv.POLICY_A, store=url, follow=False) as again:
        _reviews_agree(again, w, horizon, monkeypatch)


@settings(max_examples=examples(3, 30), deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(history=hv.histories(ties=False), keep=st.integers(0, hv.MOST))
def test_reviews_with_validity_intervals_are_evaluated_over_intervals(
        tmp_path: Any, request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch,
        history: list[Any], keep: int) -> None:
    with monkeypatch.context() as m:
        _run(hv.store_url_of("sqlite", tmp_path, request), history, keep, m)


@settings(max_examples=examples(2, 15), deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(history=hv.histories(ties=False), keep=st.integers(0, hv.MOST))
def test_the_same_on_postgres(tmp_path: Any, request: pytest.FixtureRequest,
                              monkeypatch: pytest.MonkeyPatch, history: list[Any],
                              keep: int) -> None:
    with monkeypatch.context() as m:
        _run(hv.store_url_of("postgres", tmp_path, request), history, keep, m)


def test_a_path_lost_at_a_validity_edge_is_read_just_before_it(
        tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """A membership expiring between two commits: the entry is lost at that moment (the
    edge names the fact passed) and its path is the proof just before it, not the facts
    valid at the clock (where the membership is gone: no path)."""
    b, s = hv.BASE, hv.STEP
    history = [[("+", "member", ("u0", "g0"), None, b + 2 * s + 5)],
               [("+", "grant", ("g0", "read", "r0"), None, None)],
               [("+", "deny", ("u1", "r1"), None, None)]]
    with monkeypatch.context() as m:
        clock = hv.Clock()
        m.setattr(store_base, "time", types.SimpleNamespace(
            time=clock.time, monotonic=time.monotonic, sleep=time.sleep,
            perf_counter=time.perf_counter))
        r, _ = hv.write(f"sqlite:///{tmp_path / 'lost.db'}", history, clock)
        with r:
            m.setattr(review_mod, "keyed", _no_replay)
            (e,) = r.review(subject="u0", since=0).entries
    assert (e.resource, e.change) == ("r0", "transient")
    lost = e.events[-1]
    assert (lost.gained, lost.edge.revision, lost.edge.committed_at, lost.edge.passed) == (
        False, 3, b + 2 * s + 5, ("-member(u0, g0)", "+member(u1, g9)"))
    assert e.path == ("grant(g0, read, r0)", "member(u0, g0)")
