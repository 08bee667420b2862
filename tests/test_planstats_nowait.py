"""The planner's statistics are written back without waiting for another writer's lock
(grantlog/store/planstats.py, ``Store.writing(wait=False)``): closing a reasoner over a store
whose lock another connection holds returns at once (SQLite: not after its 10 s busy timeout;
PostgreSQL: NOWAIT on the head), keeps nothing, and the next reasoner measures and keeps them.
Real SQLite and PostgreSQL stores (the ``store_url`` fixture)."""

from __future__ import annotations

import time

import pytest
from grantlog.engine.plan import kept
from grantlog.grammar.diagnostics import GrantlogError
from test_cold_start_stats import _answers, _kept, _load, _world

import grantlog
from grantlog.store import open_store


def test_closing_while_another_writer_holds_the_lock_returns_at_once_and_keeps_them_later(
        store_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(kept, "PREWARM", 1)  # a small world's statistics are worth keeping
    program, w, questions = _world(100)
    _load(store_url, program, w)
    first = grantlog.Reasoner(program, store=store_url, follow=False)
    expected = _answers(first, questions)
    assert first.planner.stats is not None and first.planner.stats.measured > 0
    other = open_store(store_url, program)
    s = open_store(store_url, program)
    held = other.writing()  # another connection's write transaction: the lock held
    held.__enter__()
    try:
        t0 = time.monotonic()
        first.close()
        took = time.monotonic() - t0
        assert took < 1.0, f"closing waited {took:.2f} s for the lock"
        # a write that must not wait is refused at once, saying why
        t0 = time.monotonic()
        with pytest.raises(GrantlogError) as e, s.writing(wait=False):
            pass
        assert e.value.diagnostics[0].code == "store-locked"
        assert time.monotonic() - t0 < 1.0
    finally:
        held.__exit__(None, None, None)  # nothing written: rolled back
        other.close()
        s.close()
    assert _kept(store_url, program) is None  # skipped, not waited for
    again = grantlog.Reasoner(program, store=store_url, follow=False)
    assert _answers(again, questions) == expected
    assert again.planner.stats is not None and again.planner.stats.measured > 0
    again.close()  # the lock is free: written now
    data = _kept(store_url, program)
    assert data is not None and data["distinct"]
