"""Retention: ``Store.compact`` by a count of transactions, a time or a revision, and
``grantlog store compact STORE --keep N|AGE | --keep-revision R`` (docs/history.md, "How
retention works"). The horizon is answerable, below it ``revision-compacted``; kept
transactions keep their metadata. On SQLite and PostgreSQL (``store_url``)."""

from __future__ import annotations

import json
import sqlite3
import time
from pathlib import Path
from typing import Any

import pytest

import grantlog
from grantlog.cli import main
from grantlog.store import checkpoints
from grantlog.store.cli import duration

RULES = """
rel member(user: string, group: string).
allowed(U, "read", G) :- member(U, G).
"""
PROGRAM = grantlog.compile(RULES, filename="r.gl")


def _five(url: str) -> list[float]:
    """Five transactions (member u1..u5 of g), each by `tester`; their commit times."""
    with grantlog.Reasoner(PROGRAM, store=url, create=True, follow=False) as r:
        for i in range(1, 6):
            with r.transaction(author="tester", reason=f"add u{i}", ticket=f"T-{i}") as tx:
                tx.insert("member", [(f"u{i}", "g")])
            time.sleep(0.01)  # distinct commit times
        return [c.committed_at for c in r.transactions()]


def _answers(url: str) -> tuple[int, list[int]]:
    """(the horizon, the revisions whose as-of `who` still answers exactly)."""
    with grantlog.Reasoner(PROGRAM, store=url, follow=False) as r:
        assert r.store is not None
        horizon = r.store.head()[1]
        exact = []
        for rev in range(0, 6):
            try:
                who = list(r.who("read", "g", at_revision=rev))
            except grantlog.GrantlogError as e:
                assert e.diagnostics[0].code == "revision-compacted"
                assert f"revision it can answer at is {horizon}" in str(e)
                continue
            assert who == [f"u{i}" for i in range(1, rev + 1)], (rev, who)
            exact.append(rev)
        meta = [(c.revision, c.author, c.reason, c.ticket) for c in r.transactions()]
        assert meta == [(n, "tester", f"add u{n}", f"T-{n}") for n in range(horizon + 1, 6)]
        return horizon, exact


@pytest.mark.parametrize("how", ["count", "revision", "time"])
def test_compact_keeps_what_it_says(store_url: str, how: str) -> None:
    times = _five(url=store_url)
    with grantlog.Reasoner(PROGRAM, store=store_url, follow=False) as r:
        st = r.store
        assert st is not None
        if how == "count":
            st.compact(3)
        elif how == "revision":
            st.compact(before_revision=2)
        else:  # between revisions 2 and 3: the state at that time is revision 2's
            st.compact(before_time=(times[1] + times[2]) / 2)
    assert _answers(store_url) == (2, [2, 3, 4, 5])


def test_compact_refuses_a_bad_request(store_url: str) -> None:
    _five(store_url)
    with grantlog.Reasoner(PROGRAM, store=store_url, follow=False) as r:
        assert r.store is not None
        for kwargs in ({}, {"keep": 1, "before_revision": 2}):
            with pytest.raises(grantlog.GrantlogError) as e:
                r.store.compact(**kwargs)  # type: ignore[arg-type]
            assert e.value.diagnostics[0].code == "bad-option"
        with pytest.raises(grantlog.GrantlogError) as e:
            r.store.compact(before_revision=6)
        assert e.value.diagnostics[0].code == "revision-ahead"
        r.store.compact(before_time=0.0)  # before every transaction: nothing to drop
        assert r.store.head() == (5, 0)
        r.store.compact(before_revision=4)
        r.store.compact(before_revision=1)  # the horizon never moves back
        assert r.store.head() == (5, 4)


def test_durations() -> None:
    assert [duration(x) for x in ("400d", "12h", "30m", "90s", "1.5d")] == [
        400 * 86400, 12 * 3600, 1800, 90, 1.5 * 86400]
    for bad in ("4x", "d", "-1d", "", "nand"):
        with pytest.raises(grantlog.GrantlogError) as e:
            duration(bad)
        assert e.value.diagnostics[0].code == "bad-option"


def test_the_cli_compacts_by_count_age_or_revision(tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    url = f"sqlite:///{tmp_path / 'facts.db'}"
    _five(url)

    def run(*argv: str) -> tuple[int, dict[str, int]]:
        code = main(["store", "compact", url, *argv, "--json"])
        out, err = capsys.readouterr()
        assert code == 0 or "error[" in err
        return code, json.loads(out) if code == 0 else {}

    assert run("--keep", "400d") == (0, {"removed_log_rows": 0, "revision": 5, "horizon": 0})
    assert run("--keep-revision", "1") == (0, {"removed_log_rows": 1, "revision": 5,
                                               "horizon": 1})
    assert run("--before", "2") == (0, {"removed_log_rows": 1, "revision": 5, "horizon": 2})
    assert run("--keep", "4") == (0, {"removed_log_rows": 0, "revision": 5, "horizon": 2})
    assert run("--keep", "4x")[0] == 2
    assert run("--keep-revision", "9")[0] == 2
    assert run("--keep", "0s") == (0, {"removed_log_rows": 3, "revision": 5, "horizon": 5})
    assert _answers(url) == (5, [5])


def test_checkpoints_answer_without_the_log_below_them(tmp_path: Path) -> None:
    """After a checkpoint at C, the as-of answers up to C read the temporal table only: with
    the log up to C deleted behind the store's back they stay exact; past C they add the log
    rows in (C, R]."""
    url = f"sqlite:///{tmp_path / 'facts.db'}"
    _five(url)
    with grantlog.Reasoner(PROGRAM, store=url, follow=False) as r:
        assert r.store is not None
        assert r.store.checkpoint() == 5
        with r.transaction() as tx:
            tx.retract("member", [("u2", "g")])
        with r.transaction() as tx:
            tx.insert("member", [("u2", "g")])
            tx.retract("member", [("u5", "g")])
    db = sqlite3.connect(tmp_path / "facts.db")
    with db:
        db.execute("DELETE FROM grantlog_log WHERE revision <= 5")
    db.close()
    want = {0: [], 3: ["u1", "u2", "u3"], 5: ["u1", "u2", "u3", "u4", "u5"],
            6: ["u1", "u3", "u4", "u5"], 7: ["u1", "u2", "u3", "u4"]}
    with grantlog.Reasoner(PROGRAM, store=url, follow=False) as r:
        for rev, who in want.items():
            assert list(r.who("read", "g", at_revision=rev)) == who, rev


def test_checkpoints_every_n_and_after_compaction(store_url: str) -> None:
    """``checkpoint(every=N)`` folds the log on the commits N revisions apart; a compaction
    folds up to its horizon and drops the intervals closed by then; a store compacted before
    its first checkpoint seeds it with the facts at the horizon."""
    _five(store_url)
    with grantlog.Reasoner(PROGRAM, store=store_url, follow=False) as r:
        st = r.store
        assert st is not None
        st.compact(before_revision=2)
        assert st.checkpoint(every=2) == 5  # seeded at 2, the log (2, 5] folded in
        for i in (1, 3):
            with r.transaction() as tx:
                tx.retract("member", [(f"u{i}", "g")])
        assert _intervals_head(st) == 7  # two revisions on: folded on commit
        with r.transaction() as tx:
            tx.insert("member", [("u1", "g")])
        assert _intervals_head(st) == 7
        st.compact(before_revision=7)
        assert _intervals_head(st) == 7
        assert st.checkpoint(every=0) == 8
        with r.transaction() as tx:
            tx.insert("member", [("u9", "g")])
        assert _intervals_head(st) == 8  # no longer on commit
        expect = {7: ["u2", "u4", "u5"], 8: ["u1", "u2", "u4", "u5"],
                  9: ["u1", "u2", "u4", "u5", "u9"]}
        for rev, who in expect.items():
            assert list(r.who("read", "g", at_revision=rev)) == who, rev
        with pytest.raises(grantlog.GrantlogError) as e:
            r.who("read", "g", at_revision=6)
        assert e.value.diagnostics[0].code == "revision-compacted"


def _intervals_head(st: Any) -> int | None:
    return checkpoints.revision(st)


def test_the_cli_takes_checkpoints(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    url = f"sqlite:///{tmp_path / 'facts.db'}"
    _five(url)
    assert main(["store", "checkpoint", url, "--every", "3", "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == {"checkpoint": 5, "every": 3}
    assert main(["store", "checkpoint", url]) == 0
    assert capsys.readouterr().out.strip() == "checkpoint at revision 5"
    assert main(["store", "checkpoint", url, "--every", "-1"]) == 2
    assert "error[bad-option]" in capsys.readouterr().err
