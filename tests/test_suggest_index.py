"""Suggestions for unknown constants from an index kept up to date (issue 26, item 3).

engine/core/suggest.py ``Names`` answers "did you mean" for a set of names that changes
(``add``, ``discard``): over many names from a shortlist (one edit away, sorted neighbours
forward and reversed, trigrams, the names added since the build), else the names whose
length and characters can reach the cutoff. engine/answer/vocabulary.py keeps one per
stored column of the live database, told of every row added and removed. Here: the
suggestion is as close as the one a pass over every name finds (the same ratio), a name
removed is never suggested and one added is, through updates and rebuilds; and a reasoner
over thousands of tables suggests a table created after its first suggestion and never
one dropped.
"""

from __future__ import annotations

import random

from grantlog.engine.core.suggest import CHANGES_FROM, INDEXED_FROM, Names, closest
from rapidfuzz import fuzz

import grantlog

MODEL = """
rel entity(name: string, kind: string).
rel grant(user: string, table: string).
@materialize rel allowed(user: string, op: string, table: string).
allowed(U, "read", T) :- grant(U, T), entity(T, "table").
"""


def table(rnd: random.Random, i: int) -> str:
    return f"m1.cat{rnd.randrange(20):03d}.sch{i // 40:05d}.t{i % 40:05d}"


def typo(rnd: random.Random, name: str) -> str:
    k = rnd.randrange(len(name) - 1)
    how = rnd.randrange(4)
    if how == 0:
        return name[:k] + name[k + 1] + name[k] + name[k + 2:]
    if how == 1:
        return name[:k] + name[k + 1:]
    if how == 2:
        return name[:k] + rnd.choice("0123456789x") + name[k + 1:]
    return name[:k] + rnd.choice("0123456789.") + name[k:]


def score(word: str, got: str | None) -> float:
    return 0.0 if got is None else fuzz.ratio(word, got)


def test_as_close_as_a_pass_over_every_name() -> None:
    rnd = random.Random(7)
    names = sorted({table(rnd, i) for i in range(3 * INDEXED_FROM)})
    index = Names(names)
    for name in rnd.sample(names, 150):
        word = typo(rnd, name)
        if word in names:
            continue
        assert score(word, index.closest(word)) == score(word, closest(word, names)), word
    # near nothing: no suggestion, as the pass finds none
    for word in ("qqqqqqq", "zx_zx_zx_zx_zx_zx_zx_zx", "m"):
        assert index.closest(word) is None and closest(word, names) is None


def test_names_added_and_removed_through_updates_and_rebuilds() -> None:
    rnd = random.Random(11)
    start = [table(rnd, i) for i in range(2 * INDEXED_FROM)]
    live = set(start)
    index = Names(start)
    assert index.closest(typo(rnd, start[0])) is not None  # built
    fresh = [f"m1.new{i:04d}.sch{i:05d}.tab{i:05d}" for i in range(CHANGES_FROM * 3)]
    gone = rnd.sample(start, CHANGES_FROM)
    removed: set[str] = set()
    for steps, (new, old) in enumerate(
            zip(fresh, [*gone, *([None] * len(fresh))], strict=False), 1):
        index.add([new])
        live.add(new)
        if old is not None:
            index.discard([old])
            live.discard(old)
            removed.add(old)
        if steps % 97 == 0:  # sometimes asked between the updates (some after a rebuild)
            word = typo(rnd, new)
            got = index.closest(word)
            assert got not in removed
            assert score(word, got) == score(word, closest(word, sorted(live)))
            old_word = typo(rnd, old or gone[0])
            assert index.closest(old_word) not in removed
    assert len(index) == len(live)
    for name in gone[:50]:
        assert index.closest(name) not in gone
        assert name not in index
    assert all(name in index for name in fresh)
    # a small set is answered exactly, through its changes too
    small = Names(["load_table", "drop_table"])
    small.add(["load_tables"])
    small.discard(["load_table"])
    assert small.closest("load_tabel") == closest("load_tabel", ["load_tables", "drop_table"])


def test_a_reasoner_suggests_tables_created_and_never_tables_dropped() -> None:
    rnd = random.Random(3)
    tables = sorted({table(rnd, i) for i in range(INDEXED_FROM + 500)})
    r = grantlog.Reasoner(grantlog.compile(MODEL))
    with r.transaction() as tx:
        tx.insert("entity", [(t, "table") for t in tables])
        tx.insert("grant", [("ann", tables[0])])
    d = r.check("ann", "read", tables[1][:-1] + "x")  # a typo: the index is built
    assert not d.allowed and d.warnings[0].code == "unknown-constant"
    assert d.warnings[0].help is not None and "did you mean" in d.warnings[0].help

    new = "m1.cat005.sch99999.orders_2026"
    r.insert("entity", [(new, "table")])
    assert r.check("ann", "read", "m1.cat005.sch99999.ordres_2026").warnings[0].help == \
        f"did you mean `{new}`?"
    dropped = tables[7]
    r.retract("entity", [(dropped, "table")])
    d = r.check("ann", "read", dropped)
    assert d.warnings and f"`{dropped}`" not in str(d.warnings[0].help)
    got = str(d.warnings[0].help).split("`")[1]
    assert score(dropped, got) == score(dropped, closest(dropped, [*tables[:7], *tables[8:], new]))
    r.insert("entity", [(dropped, "table")])  # back: known again, no warning at all
    assert r.check("ann", "read", dropped).warnings == ()
    assert r.check("ann", "read", dropped + "x").warnings[0].help == f"did you mean `{dropped}`?"
