"""The whole-platform review on Spark over one representative per class of interchangeable
values (spark_bridge/review_symmetry.py): a value's signature is its rows with their
intervals, so bare tables present through the whole period collapse, and a table granted on,
dropped, or created later in the period leaves its class. The review with the rewrite equals
the review without it and the as-of answers at every revision, on histories where classes
exist and are broken by later transactions."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

from conftest import LONG, examples
from test_spark_review import RULES, _expected, _parquet

import grantlog

#: the own model of tests/test_spark_review.py, with owners: a table's own fact
OWNED = RULES + """
rel owner(res: string, user: string).
allowed(U, own, R) :- owner(R, U), not deny(U, R).
"""


def _world(r: Any, tables: int) -> list[str]:
    """a catalog, two schemas, ``tables`` bare tables under them, users, grants, a DENY"""
    names = [f"t{i:02d}" for i in range(tables)]
    r.insert("parent", [("s1", "c1"), ("s2", "c1")]
             + [(t, "s1" if i % 3 else "s2") for i, t in enumerate(names)])
    r.insert("member", [("u1", "g1"), ("u2", "g2"), ("u3", "g1"), ("u4", "g1")])
    r.insert("grant", [("g1", "read", "c1"), ("g2", "write", "s2")])
    r.insert("deny", [("u3", "s2")])
    return names


def _breaks(r: Any, names: list[str], rng: random.Random, n: int) -> None:
    """``n`` transactions that break classes: a bare table granted on or owned, a table
    dropped (its parent row gone), tables created at different revisions, a DENY on one,
    a user joining a group, and some undone later"""
    made = 0
    for _ in range(n):
        kind = rng.randrange(7)
        t = rng.choice(names)
        if kind == 0:
            r.insert("grant", [(rng.choice(("g1", "g2")), "write", t)])
        elif kind == 1:
            rows = [row for row in r.rows("parent") if row[0] == t]
            if rows:
                r.retract("parent", rows)
        elif kind == 2:
            made += 1
            r.insert("parent", [(f"n{made}", rng.choice(("s1", "s2")))])
            names.append(f"n{made}")
        elif kind == 3:
            r.insert("owner", [(t, rng.choice(("u1", "u2", "u4")))])
        elif kind == 4:
            r.insert("deny", [(rng.choice(("u1", "u4")), t)])
        elif kind == 5:
            r.insert("member", [(rng.choice(("u2", "u4")), rng.choice(("g1", "g2")))])
        else:
            rows = sorted(r.rows("grant")) + sorted(r.rows("owner"))
            if rows:
                row = rng.choice(rows)
                r.retract("grant" if len(row) == 3 else "owner", [row])


def _classes(r: Any, since: int, until: int) -> Any:
    from grantlog.engine.answer.periods import period
    from grantlog.engine.compile.restrict import restrict
    from grantlog.spark_bridge import review_symmetry

    s = period(r, since, until).stretches[0]
    return review_symmetry.find(s, restrict(s.program, [s.program.decision]))


def test_the_review_over_representatives_equals_the_review(spark: Any, tmp_path: Path) -> None:
    """Generated histories (seeds) over bare tables: classes exist at the period's start
    (bare tables, and users of the same groups) and later transactions break them; with the
    rewrite, without it, and the as-of answers agree interval for interval, over the whole
    history and over a later period (`make test`: one of the two periods per seed, seed 1
    the whole history and seed 2 the later period; the long profile: both, and a third seed)."""
    from grantlog.spark_bridge.review import review

    program = grantlog.compile(OWNED, filename="owned.gl")
    for seed in (1, 2, 3)[:examples(2, 3)]:
        url = f"sqlite:///{tmp_path / f'h{seed}.db'}"
        with grantlog.Reasoner(program, store=url, create=True) as r:
            names = _world(r, 12)
            _breaks(r, names, random.Random(seed), 10)
            head = r.journal.head()
            periods = (1, head - 4) if LONG else ((1, head - 4)[(seed - 1) % 2],)
            for since in periods:
                c = _classes(r, since, head)
                assert c is not None and c.classes >= 2  # tables of each schema, users
                got = {}
                for on in (True, False):
                    out = tmp_path / f"o{seed}-{since}-{on}"
                    _, n = review(r, spark, str(out), since, head, symmetry=on)
                    got[on], _ = _parquet(spark, out)
                    assert n == len(got[on])
                assert got[True] == got[False] == _expected(r, since, head)


def test_a_class_is_its_rows_with_their_intervals(tmp_path: Path) -> None:
    """Bare tables created at the same revision are one class; a table created later, a
    table granted on, a table dropped, each leave it; a constant of the program is never a
    member (no Spark needed: the classes are found on the driver)."""
    program = grantlog.compile(OWNED + 'allowed(U, read, R) :- member(U, G), parent(R, "s9").\n',
                               filename="owned.gl")
    url = f"sqlite:///{tmp_path / 'c.db'}"
    with grantlog.Reasoner(program, store=url, create=True) as r:
        r.insert("parent", [("a", "s1"), ("b", "s1"), ("c", "s1"), ("d", "s1"), ("e", "s1"),
                            ("x", "s9"), ("y", "s9")])
        r.insert("member", [("u1", "g1")])
        r.insert("parent", [("f", "s1")])  # created later
        r.insert("grant", [("g1", "read", "b")])  # b granted on
        r.retract("parent", [("c", "s1")])  # c dropped
        head = r.journal.head()
        c = _classes(r, 1, head)
        assert c is not None
        members = {m for rep, m in c.pairs if rep != m}
        pairs = dict((m, rep) for rep, m in c.pairs)
        from grantlog.spark_bridge import encoding

        a, d, e = (encoding.encode(v) for v in "ade")
        assert pairs[a] == pairs[d] == pairs[e] == a
        for v in "bcf":
            assert encoding.encode(v) not in pairs
        assert pairs[encoding.encode("x")] == pairs[encoding.encode("y")]  # s9 is a constant
        assert encoding.encode("s9") not in pairs
        assert members and "parent" in c.columns
        # over a later period, b and c are bare no longer: b has its grant from the start
        c2 = _classes(r, head, head)
        assert c2 is not None
        later = dict((m, rep) for rep, m in c2.pairs)
        assert later[encoding.encode("f")] == later[a]
        assert encoding.encode("b") not in later and encoding.encode("c") not in later
