"""As-of checks by point reads where facts have validity intervals (issue #28, item 6):
``check(..., at_revision=R, now=T)`` and ``check(..., as_of=T)`` read the facts at R as
they stood at T by points (engine/answer/pointread.py ``MomentView``: the ``@valid`` rows
read by the facts' values, grantlog/store/temporal.py ``PastFacts.timed``), not from a
reasoner of R rebuilt; a view answers its own moment only, and a timeline's proofs are not
read from a check's view at another moment. tests/test_history_validity_property.py holds
the same checks to fresh reasoners on generated histories (SQLite and PostgreSQL)."""

from __future__ import annotations

import time
import types
from typing import Any

import pytest
import test_history_validity_property as hv
from grantlog.engine.answer import history, pointread, validity

import grantlog
from grantlog.store import base as store_base

B, S = hv.BASE, hv.STEP
#: u0 in g0 until between commits 3 and 4; g0 may read r0 from commit 2; u1 in g1 from
#: between commits 1 and 2; g1's write on r0 from commit 5 until between 5 and 6
HISTORY = [[("+", "member", ("u0", "g0"), None, B + 2 * S + 5)],
           [("+", "grant", ("g0", "read", "r0"), None, None)],
           [("+", "deny", ("u1", "r1"), None, None)],
           [("+", "member", ("u1", "g1"), B + S / 2, None)],
           [("+", "grant", ("g1", "write", "r0"), None, B + 4 * S + 5)]]


@pytest.fixture()
def written(tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> Any:
    clock = hv.Clock()
    monkeypatch.setattr(store_base, "time", types.SimpleNamespace(
        time=clock.time, monotonic=time.monotonic, sleep=time.sleep,
        perf_counter=time.perf_counter))
    r, w = hv.write(f"sqlite:///{tmp_path / 'moments.db'}", HISTORY, clock)
    with r:
        yield r, w


def test_checks_at_a_moment_are_read_by_points(written: Any) -> None:
    r, w = written
    for rev, t in w.moments(0):
        fresh = w.fresh(rev, t)
        for u, o, x in [(u, o, x) for u in hv.USERS for o in hv.OPS for x in hv.RES]:
            assert r.check(u, o, x, at_revision=rev, now=t).allowed == \
                fresh.check(u, o, x, now=t).allowed, (rev, t, u, o, x)
        view = history.kept(r, rev, points=True)
        assert isinstance(view, pointread.MomentView) and view.now == t, (rev, t)
        assert history.kept(r, rev) is None  # no reasoner of the revision rebuilt
    # the expiry passed between commits 3 and 4: at revision 3, before it and after it
    assert r.check("u0", "read", "r0", at_revision=3, now=B + 2 * S + 4).allowed
    assert not r.check("u0", "read", "r0", at_revision=3, now=B + 2 * S + 5).allowed
    assert r.check("u0", "read", "r0", as_of=B + 2 * S + 4).allowed
    assert not r.check("u0", "read", "r0", as_of=B + 2 * S + 6).allowed


def test_a_view_at_a_moment_answers_that_moment_only(written: Any) -> None:
    r, _ = written
    assert r.check("u0", "read", "r0", at_revision=3, now=B + 2 * S + 4).allowed
    first = history.kept(r, 3, points=True)
    assert not r.check("u0", "read", "r0", at_revision=3, now=B + 2 * S + 6).allowed
    assert history.kept(r, 3, points=True) is not first
    assert r.check("u1", "write", "r0", at_revision=5, now=B + 4 * S + 1).allowed
    assert not r.check("u1", "write", "r0", at_revision=5).allowed  # the clock: expired


def test_proofs_at_an_edge_are_not_read_from_a_check_s_view(written: Any) -> None:
    """A check at revision 3 before the expiry keeps a view of that moment; the why-not at
    the expiry (the same revision, later) is still the facts at the expiry's moment."""
    r, _ = written
    assert r.check("u0", "read", "r0", at_revision=3, now=B + 2 * S + 1).allowed
    (iv,) = [i for i in r.timeline("u0", "read", "r0", proofs=True)
             if i.end is not None and i.end.passed]
    assert (iv.end.revision, iv.end.committed_at) == (3, B + 2 * S + 5)
    assert iv.why_not is not None and not iv.why_not.holds
    rebuilt = validity.at(history.past(r, iv.end.revision, None),
                          validity.instant(iv.end.committed_at, "now")).explain(
        grantlog.engine.core.ir.show_atom("allowed", ("u0", "read", "r0")))
    assert iv.why_not.to_dict() == rebuilt.to_dict()
