"""As-of checks at recent revisions from the live reasoner (issue #28; engine/answer/recent.py):
at every revision of generated histories (inserts, retracts, a policy swap) a check asked
``at_revision=R`` equals the one of the reasoner rebuilt from the store's facts and policy at
R, and within the window it is the live reasoner that answered (the undo path), not a rebuilt
one; outside the window, across the swap, and on a follower that applied a batch at once it
falls back to the rebuild, still exact. On SQLite and PostgreSQL."""

from __future__ import annotations

import itertools
from typing import Any

import pytest
from grantlog.engine.answer import history, recent
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import grantlog

DECLS = """
rel member(user: string, group: string).
rel grant(group: string, op: string, res: string).
rel parent(child: string, parent: string).
rel deny(user: string, res: string).
"""
#: a materialized derived relation (``held``), a recursive virtual one (``under``), negation
RULES = """
@materialize rel held(user: string, op: string, res: string).
held(U, O, R) :- member(U, G), grant(G, O, R).
under(X, Y) :- parent(X, Y).
under(X, Z) :- parent(X, Y), under(Y, Z).
"""
POLICY_A = grantlog.compile(DECLS + RULES + """
allowed(U, O, R) :- held(U, O, R), not deny(U, R).
allowed(U, O, R) :- under(R, P), held(U, O, P), not deny(U, R).
""", filename="a.gl")
#: swapped in: deny no longer blocks
POLICY_B = grantlog.compile(DECLS + RULES + """
allowed(U, O, R) :- held(U, O, R).
allowed(U, O, R) :- under(R, P), held(U, O, P).
""", filename="b.gl")
USERS, GROUPS, OPS, RES = ["u0", "u1"], ["g0", "g1"], ["read", "write"], ["r0", "r1", "r2"]
VALUES: dict[str, tuple[list[str], ...]] = {
    "member": (USERS, GROUPS), "grant": (GROUPS, OPS, RES), "parent": (RES, RES),
    "deny": (USERS, RES)}


@st.composite
def op(draw: st.DrawFn) -> tuple[str, str, tuple[str, ...]]:
    rel = draw(st.sampled_from(sorted(VALUES)))
    row = tuple(draw(st.sampled_from(vs)) for vs in VALUES[rel])
    return rel, draw(st.sampled_from("+-")), row


steps = st.lists(st.lists(op(), min_size=1, max_size=4), min_size=2, max_size=12)


def _shape(r: grantlog.Reasoner, d: Any) -> tuple[Any, ...]:
    """A decision as both ways must give it: allowed or not, its revision, its warnings, and
    whether rules decided it. Which derivation its reasons name when several hold depends on
    the order the rows were stored in (a rebuilt reasoner's too: PostgreSQL and SQLite read
    a revision's facts in other orders), so of the reasons only that they are rules."""
    names = {rule.name for rule in r.program.rules}
    assert set(d.reasons) <= names, d
    return d.allowed, d.revision, d.warnings, bool(d.reasons)


def _checks(r: grantlog.Reasoner, rev: int) -> list[Any]:
    return [_shape(r, r.check(u, o, x, at_revision=rev))
            for u, o, x in itertools.product(USERS, OPS, RES)]


def _rebuilt(r: grantlog.Reasoner, rev: int) -> list[Any]:
    p = history.past(r, rev, None)
    return [_shape(r, p.check(u, o, x)) for u, o, x in itertools.product(USERS, OPS, RES)]


def _write(r: grantlog.Reasoner, step: list[tuple[str, str, tuple[str, ...]]]) -> None:
    with r.transaction() as tx:
        for rel, sign, row in step:
            (tx.insert if sign == "+" else tx.retract)(rel, [row])


def _agree(r: grantlog.Reasoner, window: int, start: int | None,
           swapped: int | None = None) -> int:
    """Every revision's checks equal the rebuilt reasoner's, and the live reasoner answered
    those at most ``window`` back from ``start`` (the revision it began following; None:
    never, its policy is not the one in force) and ``swapped`` (a policy installed) on;
    returns how many it answered itself."""
    live = 0
    head = r.revision
    for u, o, x in itertools.product(USERS, OPS, RES):  # answers kept now: shared where
        r.check(u, o, x)  # the undone change does not reach them
    for rev in range(0, head + 1):
        fast = recent.undone(r, rev) is not None
        expected = start is not None and start <= rev < head and head - rev <= window and (
            swapped is None or rev >= swapped)
        assert fast == expected, (rev, head, start, swapped)
        live += fast
        got = _checks(r, rev)
        assert got == _rebuilt(r, rev), rev
        assert {d[1] for d in got} == {rev}
        for typo in [("u0", "read", "r9"), ("u7", "write", "r1")]:  # "did you mean", at rev
            d = r.check(*typo, at_revision=rev)
            assert d.warnings == history.past(r, rev, None).check(*typo).warnings, (rev, typo)
    return live


def _url(kind: str, tmp_path: Any, request: pytest.FixtureRequest) -> str:
    import uuid

    from grantlog.store import open_store

    name = f"facts-{uuid.uuid4().hex[:8]}.db"  # hypothesis's examples share ``tmp_path``
    url = (f"sqlite:///{tmp_path / name}" if kind == "sqlite"
           else str(request.getfixturevalue("pg_server").schema_url()))
    open_store(url, create=True).close()
    return url


@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
@settings(max_examples=6, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(history=steps, swap=st.integers(0, 14), window=st.sampled_from([3, 1000]))
def test_recent_checks_equal_the_rebuilt_reasoner(kind: str, tmp_path: Any,
                                                  request: pytest.FixtureRequest,
                                                  history: Any, swap: int, window: int,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(recent, "WINDOW", window)
    url = _url(kind, tmp_path, request)
    swapped = None
    with grantlog.Reasoner(POLICY_A, store=url, follow=False) as r:
        for n, step in enumerate(history):
            if n == swap:  # install policy B: in force from this head on
                assert r.store is not None
                r.store.put_policy(POLICY_B)
                swapped = r.revision
            _write(r, step)
        if swapped is None:
            assert _agree(r, window, 0) == min(window, r.revision)
            return
        _agree(r, window, None)  # it runs policy A, B is in force: every check rebuilds
    with grantlog.Reasoner(POLICY_B, store=url, follow=False) as other:
        start = other.revision
        for step in history:
            _write(other, [(rel, "-" if sign == "+" else "+", row) for rel, sign, row in step])
        _agree(other, window, start, swapped)


@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
def test_a_policy_swap_inside_the_window_falls_back(kind: str, tmp_path: Any,
                                                    request: pytest.FixtureRequest) -> None:
    url = _url(kind, tmp_path, request)
    with grantlog.Reasoner(POLICY_B, store=url, follow=False) as r:
        _write(r, [("member", "+", ("u0", "g0")), ("grant", "+", ("g0", "read", "r1"))])
        _write(r, [("deny", "+", ("u0", "r1"))])
        assert r.store is not None
        r.store.put_policy(POLICY_B)
        swapped = r.revision
        _write(r, [("parent", "+", ("r2", "r1"))])
        _write(r, [("deny", "-", ("u0", "r1")), ("member", "+", ("u1", "g0"))])
        assert _agree(r, recent.WINDOW, swapped) == r.revision - swapped
        assert recent.undone(r, 1) is None  # before the swap (no policy stored: its own)
        assert r.check("u0", "read", "r1", at_revision=2).allowed is True


@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
def test_a_follower_answers_the_revisions_it_applied_one_by_one(
        kind: str, tmp_path: Any, request: pytest.FixtureRequest) -> None:
    url = _url(kind, tmp_path, request)
    with grantlog.Reasoner(POLICY_A, store=url, follow=False) as writer:
        _write(writer, [("member", "+", ("u0", "g0")), ("grant", "+", ("g0", "read", "r0"))])
        with grantlog.Reasoner(POLICY_A, store=url, follow=False) as follower:
            _write(writer, [("parent", "+", ("r1", "r0"))])
            _write(writer, [("deny", "+", ("u0", "r0"))])
            follower.sync()  # two transactions, applied one by one (it has listeners)
            _write(writer, [("grant", "-", ("g0", "read", "r0"))])
            follower.sync()
            assert follower.revision == writer.revision == 4
            assert _agree(follower, recent.WINDOW, 1) == 3  # 0: before it started
            assert follower.check("u0", "read", "r1", at_revision=2).allowed is True
            assert follower.check("u0", "read", "r1", at_revision=3).allowed is True
            assert follower.check("u0", "read", "r0", at_revision=3).allowed is False


def test_validity_intervals_fall_back(tmp_path: Any) -> None:
    url = f"sqlite:///{tmp_path / 'facts.db'}"
    with grantlog.Reasoner(POLICY_A, store=url, create=True, follow=False) as r:
        _write(r, [("member", "+", ("u0", "g0")), ("grant", "+", ("g0", "read", "r0"))])
        r.insert("member", [("u1", "g0")], valid_until=4102444800.0)
        _write(r, [("grant", "+", ("g0", "write", "r0"))])
        assert recent.undone(r, 1) is None
        assert _checks(r, 1) == _rebuilt(r, 1)


def test_did_you_mean_reads_the_values_of_that_revision(tmp_path: Any) -> None:
    url = f"sqlite:///{tmp_path / 'facts.db'}"
    with grantlog.Reasoner(POLICY_A, store=url, create=True, follow=False) as r:
        _write(r, [("member", "+", ("u0", "g0"))])
        _write(r, [("grant", "+", ("g0", "read", "zeta"))])
        _write(r, [("grant", "-", ("g0", "read", "zeta"))])
        _write(r, [("member", "+", ("u1", "g1"))])
        assert recent.undone(r, 2) is not None
        then = r.check("u0", "read", "zetta", at_revision=2)
        assert then.warnings == history.past(r, 2, None).check("u0", "read", "zetta").warnings
        assert "did you mean `zeta`" in then.warnings[0].help
        now = r.check("u0", "read", "zetta", at_revision=3)
        assert "did you mean `zeta`" not in (now.warnings[0].help or "")


def test_a_bulk_transaction_is_not_kept(tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """A transaction changing more than ``BIG`` stored rows is forgotten (no copy of a bulk
    load is kept): the revisions before it go to the rebuilt reasoner, those after it stay
    live, and the answers agree either way."""
    monkeypatch.setattr(recent, "BIG", 3)
    url = f"sqlite:///{tmp_path / 'facts.db'}"
    with grantlog.Reasoner(POLICY_A, store=url, create=True, follow=False) as r:
        _write(r, [("member", "+", ("u0", "g0")), ("grant", "+", ("g0", "read", "r0"))])
        _write(r, [("grant", "+", ("g0", "read", f"t{i}")) for i in range(5)])  # big
        _write(r, [("deny", "+", ("u0", "r0"))])
        assert r.revision == 3
        assert recent.undone(r, 1) is None
        assert recent.undone(r, 2) is not None
        for rev in (1, 2):
            assert _checks(r, rev) == _rebuilt(r, rev)
