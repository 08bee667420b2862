"""The temporal table's fold (grantlog/store/checkpoints.py ``fold``), set-based: one UPDATE
and one INSERT ... SELECT per batch of revisions. On generated histories (bulk loads,
inserts, retracts of facts with awkward values; checkpoints at chosen revisions, ``every``
set, compactions before and after the first checkpoint), the temporal table holds, at
every revision from the horizon on, exactly the facts the log's events replay to, one row
per stretch of presence (the only such table: the per-row fold it replaced made the same
table on the 100k and 1M history stores). On
SQLite and PostgreSQL."""

from __future__ import annotations

import itertools
import uuid
from collections import Counter
from typing import Any

import pytest
from conftest import examples
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import grantlog
from grantlog.store import checkpoints, open_store
from grantlog.store.records import encode_row

PROGRAM = grantlog.compile("""
rel p(a: string, b: string).
rel q(n: int, s: string).
rel flag().
""", filename="fold.gl")
#: values whose JSON text differs between encoders (spaces, quotes, escapes, non-ASCII)
STRINGS = ["a", "b, c", 'q"t', "back\\slash", "tab\there", "é ü", "[1, 2]"]
INTS = [0, -7, 2**40]
FACTS: list[tuple[str, tuple[Any, ...]]] = (
    [("p", (x, y)) for x in STRINGS[:4] for y in STRINGS[3:]]
    + [("q", (n, s)) for n in INTS for s in STRINGS[:3]] + [("flag", ())])


def _url(kind: str, tmp_path: Any, request: pytest.FixtureRequest) -> str:
    if kind == "sqlite":
        return f"sqlite:///{tmp_path / f'fold-{uuid.uuid4().hex[:8]}.db'}"
    return str(request.getfixturevalue("pg_server").schema_url())


def _table(s: Any) -> tuple[Counter[tuple[Any, ...]], int | None]:
    """The temporal table's rows (a multiset) and the checkpoint's revision."""
    rows, at = checkpoints.intervals(s)
    return Counter(rows), at


#: one step of a history: ("write", adds, removes) with fact indexes (the present ones of
#: each removed, the absent ones added), ("load", facts), ("checkpoint", every),
#: ("compact", keep)
step = st.one_of(
    st.tuples(st.just("write"), st.lists(st.integers(0, len(FACTS) - 1), max_size=4),
              st.lists(st.integers(0, len(FACTS) - 1), max_size=3)),
    st.tuples(st.just("write"), st.lists(st.integers(0, len(FACTS) - 1), max_size=2),
              st.lists(st.integers(0, len(FACTS) - 1), max_size=2)),
    st.tuples(st.just("load"), st.lists(st.integers(0, len(FACTS) - 1), min_size=1,
                                        max_size=8)),
    st.tuples(st.just("checkpoint"), st.sampled_from([None, None, 0, 2, 3])),
    st.tuples(st.just("compact"), st.integers(0, 4)),
)


def _run(url: str, steps: list[Any]) -> tuple[Any, dict[Any, Any], int]:
    """Write ``steps`` to a new store at ``url`` and checkpoint at its head; returns the
    temporal table, per fact the revisions it was added (1) and removed (-1) at, and the
    store's horizon."""
    s = open_store(url, PROGRAM, create=True)
    present: set[int] = set()
    events: dict[tuple[str, str], list[tuple[int, int]]] = {}
    try:
        for kind, *args in steps:
            if kind in ("write", "load"):
                with s.writing() as w:
                    if kind == "load":
                        new = [i for i in dict.fromkeys(args[0]) if i not in present]
                        by: dict[str, list[Any]] = {}
                        for i in args[0]:
                            by.setdefault(FACTS[i][0], []).append(FACTS[i][1])
                        for rel, rows in by.items():
                            w.load(rel, rows)
                        gone: list[int] = []
                    else:
                        new = [i for i in dict.fromkeys(args[0]) if i not in present]
                        gone = [i for i in dict.fromkeys(args[1])
                                if i in present and i not in new]
                        ins: dict[str, list[Any]] = {}
                        dels: dict[str, list[Any]] = {}
                        for i in new:
                            ins.setdefault(FACTS[i][0], []).append(FACTS[i][1])
                        for i in gone:
                            dels.setdefault(FACTS[i][0], []).append(FACTS[i][1])
                        w.apply(ins, dels)
                    rev = w.next
                for i in new:
                    present.add(i)
                    events.setdefault(_key(i), []).append((rev, 1))
                for i in gone:
                    present.discard(i)
                    events.setdefault(_key(i), []).append((rev, -1))
            elif kind == "checkpoint":
                s.checkpoint(every=args[0])
            else:
                s.compact(args[0])
        s.checkpoint()
        with s.writing() as w:
            horizon = w.horizon
        return _table(s), events, horizon
    finally:
        s.close()


def _key(i: int) -> tuple[str, str]:
    return FACTS[i][0], encode_row(FACTS[i][1])


def _present(events: dict[Any, list[tuple[int, int]]], revision: int) -> set[Any]:
    """The facts present at ``revision`` by the log's events."""
    out = set()
    for key, evs in events.items():
        signs = [sign for rev, sign in evs if rev <= revision]
        if signs and signs[-1] > 0:
            out.add(key)
    return out


@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
@settings(max_examples=examples(12, 60), deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(steps=st.lists(step, min_size=1, max_size=14), small=st.booleans())
@example(steps=[("load", [0, 1, 22, 23, 25]), ("write", [2], [0]), ("compact", 1),  # seeded
                ("write", [0], [1, 22]), ("checkpoint", 2), ("write", [1], [0]),
                ("write", [22], [2]), ("write", [0], [25]), ("compact", 1),
                ("write", [25], [0])], small=True)
def test_the_set_based_fold_holds_every_revisions_facts(kind: str, tmp_path: Any,
                                                    request: pytest.FixtureRequest,
                                                    monkeypatch: pytest.MonkeyPatch,
                                                    steps: list[Any], small: bool) -> None:
    if small:  # several batches per fold: a revision or two each
        monkeypatch.setattr(checkpoints, "FOLD_BATCH", 2)
    (got, at), events, horizon = _run(_url(kind, tmp_path, request), steps)
    assert at is not None
    # one row per stretch of presence: a fact's intervals are disjoint and never adjacent
    # (a removal and a re-addition are different revisions), so the table is the only one
    # that holds the facts below (the per-row fold it replaced made the same table: compared
    # on the 100k and 1M history stores, benchmarks/RESULTS.md)
    spans: dict[tuple[str, str], list[tuple[int, int | None]]] = {}
    for (r, t, a, b), n in got.items():
        spans.setdefault((r, t), []).extend([(a, b)] * n)
    for key, its in spans.items():
        its.sort()
        for (_a0, b0), (a1, _b1) in itertools.pairwise(its):
            assert b0 is not None and b0 < a1, (key, its)
    # and both hold, at every revision from the horizon on, the facts present then, once
    for rev in range(horizon, at + 1):
        held = Counter((r, t) for (r, t, a, b), n in got.items() for _ in range(n)
                       if a <= rev and (b is None or b > rev))
        assert set(held) == _present(events, rev), rev
        assert set(held.values()) <= {1}, rev


@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
def test_a_spaced_log_row_folds_to_the_compact_form(kind: str, tmp_path: Any,
                                                     request: pytest.FixtureRequest) -> None:
    """A bulk load logs its rows as the database writes JSON (PostgreSQL's
    ``json_build_array`` text is spaced); the intervals keep records.encode_row's form, so
    a later removal written by Python closes them."""
    s = open_store(_url(kind, tmp_path, request), PROGRAM, create=True)
    try:
        with s.writing() as w:
            w.load("p", [("b, c", 'q"t'), ("é ü", "tab\there")])
            w.load("q", [(2**40, "a")])
        with s.writing() as w:
            w.apply({}, {"p": [("b, c", 'q"t')]})
        s.checkpoint()
        with s.writing() as w:
            w.apply({}, {"q": [(2**40, "a")]})
        s.checkpoint()
        table, at = _table(s)
    finally:
        s.close()
    assert at == 3
    assert table == Counter({("p", encode_row(("b, c", 'q"t')), 1, 2): 1,
                             ("p", encode_row(("é ü", "tab\there")), 1, None): 1,
                             ("q", encode_row((2**40, "a")), 1, 3): 1})
