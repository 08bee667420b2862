"""Attacks on the bulk-insert path (a relation's first write of ``BATCH`` rows or more, kept
as a list by ``Transaction``, a ``Batch`` in the net change, a ``BatchChange`` in
``tx.changes``; session 26).

Each test gives the same writes twice, at the real thresholds: once as one bulk write (the
new path), once in writes of fewer than ``BATCH`` rows (the path that existed before), and
compares what a caller can see: ``tx.changes`` (as ``Change``s, dicts, lines, pickled,
copied, JSON), the listeners' and watched changes, every relation's rows with their levels,
the answers, ``tx.ops``; through a re-evaluation from scratch and a change maintained row by
row, a derived ``@writable`` relation, intervals in the transaction or stored, a SQLite
store, the pyDatalog backend, ``seed``, and a reader thread during the load.
"""

from __future__ import annotations

import copy
import dataclasses
import json
import pickle
import threading
from typing import Any

import pytest
from grantlog.engine.answer import reasoner as reasoner_mod
from grantlog.engine.core.results import BATCH, Change
from grantlog.engine.eval.database import BatchChange

import grantlog

MODEL = """
rel edge(parent, child).
rel kind(obj, type).
rel grant(who, obj).
rel below(x, y).
below(X, Y) :- edge(X, Y).
@demand
rel can(who, obj).
can(W, O) :- grant(W, O).
can(W, O) :- grant(W, P), below(P, O).
rel typed(who, obj, type).
typed(W, O, T) :- grant(W, O), kind(O, T).
@writable
rel tagged(obj).
tagged(O) :- kind(O, "a").
"""

N = BATCH + 904  # 5,000 rows: one bulk write
CHUNK = BATCH - 96  # 4,000: under the threshold


@pytest.fixture(scope="module")
def program() -> Any:
    return grantlog.compile(MODEL)


def _edges(n: int = N, tag: str = "") -> list[tuple[str, str]]:
    """``n`` edges of short chains (below stays small): x0->x1, x2->x3, ..."""
    return [(f"{tag}x{2 * i}", f"{tag}x{2 * i + 1}") for i in range(n)]


def _write(tx: Any, verb: str, rel: str, rows: list[Any], chunked: bool, **kw: Any) -> None:
    """``rows`` written at once, or (``chunked``) after a retract of a row that is nowhere,
    in writes of fewer than ``BATCH`` rows: the relation's net change then made row by row,
    in sets, as before bulk loads were batched (no ``Batch`` anywhere)."""
    if chunked:
        tx.retract(rel, [("nowhere",) * len(rows[0])])
    step = CHUNK if chunked else max(len(rows), 1)
    for i in range(0, len(rows), step):
        getattr(tx, verb)(rel, rows[i:i + step], **kw)


def _state(r: Any) -> Any:
    db = r.database()
    levels = {rel: dict(rows) for rel, rows in db.full.items() if rows}
    answers = [r.ask(f'can("u1", "x{i}")') for i in (0, 1, 2, 3, 4001, 9999)]
    return levels, answers, r.all_rows()


def _changes(changes: Any) -> Any:
    return changes.to_dict(), changes.lines(), {rel: (bool(c), len(c.added), len(c.removed))
                                                for rel, c in changes.by_relation.items()}


def _both(program: Any, script: Any, **kw: Any) -> tuple[Any, Any]:
    """``script(reasoner, chunked)`` run with one bulk write and with chunked writes; the
    two reasoners and what the script returned, compared by the caller."""
    out = []
    for chunked in (False, True):
        r = grantlog.Reasoner(program, **kw)
        out.append((r, script(r, chunked)))
    return out[0], out[1]


# -- the transaction and its changes ------------------------------------------------------


def test_tx_ops_after_the_commit_still_hold_the_bulk_rows(program: Any) -> None:
    """A caller reading ``tx.ops`` after the commit (to log, or replay the writes on another
    backend) sees every relation written, as with smaller writes."""
    def script(r: Any, chunked: bool) -> Any:
        with r.transaction() as tx:
            _write(tx, "insert", "edge", _edges(), chunked)
            tx.insert("grant", [("u1", "x0")])
        return {rel: dict(ops) for rel, ops in tx.ops.items()}

    (_, bulk), _ = _both(program, script)
    assert bulk == {"edge": dict.fromkeys(_edges(), True), "grant": {("u1", "x0"): True}}


def test_a_bulk_change_reads_copies_pickles_and_compares_as_a_change(program: Any) -> None:
    def script(r: Any, chunked: bool) -> Any:
        with r.transaction() as tx:
            _write(tx, "insert", "edge", _edges() * 2, chunked)  # (each row given twice)
        return tx

    (_, btx), (_, stx) = _both(program, script)
    b, s = btx.changes.by_relation["edge"], stx.changes.by_relation["edge"]
    assert _changes(btx.changes) == _changes(stx.changes)
    assert b == s and s == b
    assert [b != s, s != b] == [False, False]
    assert btx.changes == stx.changes and btx.changes.by_relation == stx.changes.by_relation
    assert type(b) is BatchChange and type(s) is Change  # (the paths compared)
    assert isinstance(b.added, set) and isinstance(b.removed, set)
    assert b.added - s.added == set() and (b.added | s.added) == s.added
    assert (b.added & {("x0", "x1"), ("no", "pe")}) == {("x0", "x1")}
    assert len(b.added) == N and ("x0", "x1") in b.added
    for made in (copy.copy(b), copy.deepcopy(b), pickle.loads(pickle.dumps(b)),
                 pickle.loads(pickle.dumps(btx.changes)).by_relation["edge"]):
        assert made == s and made.added == s.added and bool(made)
    assert dataclasses.asdict(b) == dataclasses.asdict(s)
    assert json.dumps(btx.changes.to_dict()) == json.dumps(stx.changes.to_dict())
    assert btx.changes.gained("edge") == stx.changes.gained("edge")
    assert dataclasses.replace(b, added=set()) == Change(set(), set())
    assert dataclasses.replace(b) == s and dataclasses.replace(b, removed={("a", "b")}) == Change(
        s.added, {("a", "b")})


def test_a_bulk_change_mutated_by_its_reader_stays_its_own(program: Any) -> None:
    """A caller changing the sets of ``tx.changes`` (``.add``, ``.discard``, ``-=``) changes
    no relation, and later writes change no reported change."""
    def script(r: Any, chunked: bool) -> Any:
        with r.transaction() as tx:
            _write(tx, "insert", "edge", _edges(), chunked)
        r.retract("edge", _edges()[4:10])  # (the change not read yet)
        r.insert("edge", _edges(3, "y"))
        unread = _changes(tx.changes)
        c = tx.changes.by_relation["edge"]
        c.added.add(("new", "row"))
        c.added.discard(("x0", "x1"))
        c.added -= {("x2", "x3")}
        r.retract("edge", _edges()[10:12])
        return unread, tx.changes, len(c.added), ("x0", "x1") in c.added, bool(c)

    (rb, b), (rs, s) = _both(program, script)
    assert b[0] == s[0] and _changes(b[1]) == _changes(s[1]) and b[2:] == s[2:]
    assert _state(rb) == _state(rs)


# -- the paths a load takes ----------------------------------------------------------------


@pytest.mark.parametrize("maintained", [False, True])
@pytest.mark.parametrize("case", ["plain", "dupes", "held", "retracted", "again", "derived",
                                  "derived-held", "timed-in-tx", "timed-stored"])
def test_a_bulk_load_changes_as_smaller_writes(program: Any, case: str, maintained: bool,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """``maintained``: the change is maintained row by row (``settled``), as when the base
    holds many more facts, not re-evaluated from scratch."""
    rows = _edges()
    if maintained:
        monkeypatch.setattr(reasoner_mod, "BULK_MIN", 10**9)

    def script(r: Any, chunked: bool) -> Any:
        seen: list[Any] = []
        # the listeners read the changes at the commit (as the service's feed does) when
        # maintained; else only later, after more writes (a change sharing a dict that
        # they change would show then)
        r.listeners.append(lambda ch: seen.append(
            _changes(ch) if maintained else (ch.revision, sorted(ch.by_relation))))
        r.insert("grant", [("u1", "x0"), ("u1", "x2")])
        assert not r.ask('can("u1", "x1")')  # evaluated, indexes built before the load
        if case == "held":
            r.insert("edge", rows[::7])
        if case == "derived-held":
            r.insert("kind", [(f"x{i}", "a") for i in range(0, 40)])
        if case == "timed-stored":
            r.insert("edge", [("x0", "x1"), ("t", "u")], valid_from=0)
        with r.transaction(watch="can") as tx:
            if case in ("derived", "derived-held"):
                _write(tx, "insert", "tagged", [(a,) for a, _ in rows], chunked)
            else:
                _write(tx, "insert", "edge", rows * 2 if case == "dupes" else rows, chunked)
            if case == "retracted":
                tx.retract("edge", rows[100:200])
            if case == "again":
                tx.retract("edge", rows[:50])
                tx.insert("edge", rows[:20] + _edges(5, "z"))
            if case == "timed-in-tx":
                tx.insert("grant", [("u1", "x4")], valid_from=0)
        r.retract("edge", rows[:3])  # (the load's changes read only after these)
        r.insert("edge", rows[:1])
        r.insert("tagged", [("x0",), ("x2",)])
        return _changes(tx.changes), seen, tx.changes.by_relation.get("can")

    (rb, b), (rs, s) = _both(program, script)
    assert b[:2] == s[:2]
    assert b[2] == s[2]  # the watched virtual relation's change
    assert _state(rb) == _state(rs)


def test_the_callers_list_changed_after_the_write_changes_nothing(program: Any) -> None:
    """The rows are the transaction's own from the write on (kept as a list till the
    commit): a caller reusing its list as a buffer changes nothing written."""
    def script(r: Any, chunked: bool) -> Any:
        buf = _edges()
        with r.transaction() as tx:
            _write(tx, "insert", "edge", buf, chunked)
            buf[:] = _edges(N, "b")
            tx.insert("kind", buf[:3])
            buf.clear()
        return _changes(tx.changes)

    (rb, b), (rs, s) = _both(program, script)
    assert b == s and _state(rb) == _state(rs)
    assert len(rb.all_rows()["edge"]) == N


def test_a_bulk_load_through_a_sqlite_store(program: Any, tmp_path: Any) -> None:
    def script(r: Any, chunked: bool) -> Any:
        with r.transaction(watch="can") as tx:
            _write(tx, "insert", "edge", _edges() * 2, chunked)
            tx.insert("grant", [("u1", "x0")])
        got = _changes(tx.changes), _state(r)
        r.close()
        return got

    got: list[Any] = []
    for chunked in (False, True):
        url = f"sqlite:///{tmp_path}/{chunked}.db"
        r = grantlog.Reasoner(program, store=url, follow=False, create=True, watch="all")
        written = script(r, chunked)
        with grantlog.Reasoner(program, store=url, follow=False) as again:
            got.append((written, _state(again)))
    assert got[0] == got[1]
    want = got[0]
    assert len(want[1][0]["edge"]) == N


def test_seed_of_many_rows_after_the_first_read(program: Any) -> None:
    def script(r: Any, chunked: bool) -> Any:
        r.insert("grant", [("u1", "x0")])
        r.ask('can("u1", "x1")')  # evaluated: the seed is applied as a transaction
        rows = _edges() * 2
        step = CHUNK if chunked else len(rows)
        for n, i in enumerate(range(0, len(rows), step)):
            r.seed({"edge": rows[i:i + step]}, 2 + n)
        return None

    (rb, _), (rs, _) = _both(program, script)
    assert _state(rb) == _state(rs)
    assert rb.ask('can("u1", "x1")')


def test_readers_during_a_bulk_load_see_before_or_after(program: Any) -> None:
    r = grantlog.Reasoner(program)
    r.insert("grant", [("u1", "x0")])
    r.ask('can("u1", "x1")')
    seen: list[Any] = []
    stop = threading.Event()

    def read() -> None:
        while not stop.is_set():
            for read in (lambda: bool(r.ask('can("u1", "x1")')),
                         lambda: len(r.all_rows().get("edge", ()))):
                at = r.revision
                got = read()
                if r.revision == at:  # (no commit around the read: its revision known)
                    seen.append((got, at))

    t = threading.Thread(target=read)
    t.start()
    try:
        with r.transaction() as tx:
            tx.insert("edge", _edges())
        r.insert("kind", [("k", "a")])
    finally:
        stop.set()
        t.join(30)
    # each read is the facts before the load (revision 1) or after it (2, 3), never between
    assert set(seen) <= {(False, 1), (0, 1), (True, 2), (N, 2), (True, 3), (N, 3)}, set(seen)
    assert len(tx.changes.by_relation["edge"].added) == N


def test_the_pydatalog_backend_takes_a_bulk_write(program: Any) -> None:
    pytest.importorskip("pyDatalog")
    from grantlog.engine.backends.pydatalog import PyDatalogReasoner

    small = grantlog.compile("rel e(a, b).\nrel f(a).\nf(A) :- e(A, \"x1\").\n")
    memory, other = grantlog.Reasoner(small), PyDatalogReasoner(small)
    rows = [(f"x{i % 7}", f"x{i}") for i in range(N)]
    for r in (memory, other):
        with r.transaction() as tx:
            tx.insert("e", rows + rows[:10])
        assert tx.changes.gained("e") == set(rows)
        assert r.ask('f("x1")') and not r.ask('f("x2")')
    # the backend reads the operations (``ops`` makes the batch's dict) when it commits
    assert {rel: dict(ops) for rel, ops in tx.ops.items()} == {"e": dict.fromkeys(rows, True)}
    assert memory.all_rows() == other.all_rows()


def test_what_if_between_a_bulk_loaded_reasoner_and_a_draft(program: Any) -> None:
    """The explorer's draft starts from the served reasoner's base facts (``base_facts``,
    then ``seed``) and is diffed against it: nothing differs, with or without the batch."""
    from grantlog.engine.answer.whatif import diff_reasoners

    def script(r: Any, chunked: bool) -> Any:
        with r.transaction() as tx:
            _write(tx, "insert", "edge", _edges(), chunked)
            _write(tx, "insert", "tagged", [(f"t{i}",) for i in range(N)], chunked)
            tx.insert("grant", [("u1", "x0")])
            tx.insert("kind", [("x1", "a")])
        draft = grantlog.Reasoner(program)
        draft.seed(r.base_facts(), 0)
        return r.base_facts(), draft

    (rb, (bb, db)), (rs, (bs, ds)) = _both(program, script)
    assert bb == bs and len(bb["edge"]) == N and len(bb["tagged"]) == N
    for rel in ("below", "typed", "tagged"):
        assert diff_reasoners(rb, rs, rel) == diff_reasoners(rb, db, rel) == diff_reasoners(
            rs, ds, rel)
        assert not diff_reasoners(rb, rs, rel).gained and not diff_reasoners(rb, db, rel).lost
    assert _state(db) == _state(ds) == _state(rb)
