"""The whole-platform review's plans on Spark (spark_bridge/review.py): a *product view* (one
rule none of whose atoms binds its whole head, such as users registered for every object of
their site) is unfolded into its callers; a rule's bindings lose their duplicates where its
plan first drops a variable before a later join (a user reaching one grant through two
roles); the small relations of a large checkpoint are read back to the driver. On generated
histories where users share roles and groups, hold one grant through several roles, and join
and leave sites, the review with these, without them, and the as-of answers agree interval
for interval."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest
from conftest import examples
from test_spark_review import _expected, _parquet

import grantlog

#: roles held directly and through groups, a site per object (``registered``: every user of
#: a site × every object of it, a product view), a closure and a DENY
MODEL = """
rel member(user: string, group: string).
rel role_of(principal: string, role: string).
rel grant(role: string, op: string, res: string).
rel deny(user: string, res: string).
rel parent(child: string, parent: string).
rel located(res: string, site: string).
rel site_user(user: string, site: string).
under(X, Y) :- parent(X, Y).
under(X, Z) :- parent(X, Y), under(Y, Z).
holds(U, R) :- role_of(U, R).
holds(U, R) :- member(U, G), role_of(G, R).
registered(U, X) :- located(X, S), site_user(U, S).
allowed(U, O, X) :- holds(U, R), grant(R, O, X), registered(U, X), not deny(U, X).
allowed(U, O, X) :- holds(U, R), grant(R, O, P), under(X, P), registered(U, X),
    not deny(U, X).
"""


def _history(r: Any, rng: random.Random, n: int) -> None:
    """a world where users reach the same grant through several roles, then ``n``
    transactions: grants and revokes, memberships and roles gained and lost, users joining
    and leaving sites, DENYs, objects moved"""
    objs = ["c1", "s1", "s2", "t1", "t2", "t3", "t4"]
    r.insert("parent", [("s1", "c1"), ("s2", "c1"), ("t1", "s1"), ("t2", "s1"), ("t3", "s2"),
                        ("t4", "s2")])
    r.insert("located", [(o, "east" if o != "t4" else "west") for o in objs])
    r.insert("site_user", [("u1", "east"), ("u2", "east"), ("u3", "west"), ("u3", "east")])
    r.insert("member", [("u1", "g1"), ("u2", "g1"), ("u3", "g2")])
    r.insert("role_of", [("g1", "r1"), ("g1", "r2"), ("u1", "r2"), ("g2", "r1")])
    r.insert("grant", [("r1", "read", "c1"), ("r2", "read", "c1"), ("r2", "read", "s1"),
                       ("r1", "write", "t4")])
    choices = {
        "grant": lambda: (rng.choice(("r1", "r2")), rng.choice(("read", "write")),
                          rng.choice(objs)),
        "member": lambda: (rng.choice(("u1", "u2", "u3")), rng.choice(("g1", "g2"))),
        "role_of": lambda: (rng.choice(("u1", "u2", "g1", "g2")), rng.choice(("r1", "r2"))),
        "site_user": lambda: (rng.choice(("u1", "u2", "u3")), rng.choice(("east", "west"))),
        "deny": lambda: (rng.choice(("u1", "u2", "u3")), rng.choice(objs)),
    }
    for _ in range(n):
        rel = rng.choice(sorted(choices))
        rows = sorted(r.rows(rel))
        if rows and rng.random() < 0.45:
            r.retract(rel, [rng.choice(rows)])
        else:
            r.insert(rel, [choices[rel]()])


def test_the_review_with_products_unfolded_and_duplicates_dropped(
        spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The product view is unfolded (no relation of it left to compute), and with every rule's
    bindings deduplicated and every checkpoint's small relations on the driver (the
    thresholds at 0), without these, and as of every revision: the same intervals (one
    generated history in `make test`, two in the long profile)."""
    from grantlog.engine.compile.restrict import restrict
    from grantlog.spark_bridge import review as rv

    program = grantlog.compile(MODEL, filename="roles.gl")
    cut = rv.unfold_products(restrict(program, [program.decision]))
    assert "registered" not in cut.relations and "under" in cut.relations
    assert "holds" in cut.relations  # its atoms bind its head: not a product
    for seed in (1, 2)[:examples(1, 2)]:
        url = f"sqlite:///{tmp_path / f'h{seed}.db'}"
        with grantlog.Reasoner(program, store=url, create=True) as r:
            _history(r, random.Random(seed), 14)
            head = r.journal.head()
            got = {}
            for how in ("both", "neither"):
                with monkeypatch.context() as m:
                    if how == "both":
                        m.setattr(rv, "DISTINCT_ROWS", 0)
                        m.setattr(rv, "SPLIT_ROWS", 0)
                    else:
                        m.setattr(rv, "unfold_products", lambda p: p)
                    out = tmp_path / f"o{seed}-{how}"
                    _, n = rv.review(r, spark, str(out), 1, head, symmetry=False)
                got[how], _ = _parquet(spark, out)
                assert n == len(got[how])
            assert got["both"] == got["neither"] == _expected(r, 1, head)
