"""Which policy a review uses (issue #28, item 5; engine/answer/review.py ``policies``): the
current entries ("now") are the reviewing reasoner's, under its own program, whatever the
store has installed; the changes since ``since`` are the store's history, each revision under
the policy in force then. The review says so: ``policies`` gives the digest used for "now",
the store's at its head, and the one in force from ``since`` and from each installation
after it. On SQLite."""

from __future__ import annotations

from typing import Any

import grantlog

DECLS = """
rel member(user: string, group: string).
rel grant(group: string, op: string, res: string).
rel deny(user: string, res: string).
"""
#: a deny blocks
POLICY_A = grantlog.compile(DECLS + """
allowed(U, O, R) :- member(U, G), grant(G, O, R), not deny(U, R).
""", filename="a.gl")
#: installed later: a deny no longer blocks
POLICY_B = grantlog.compile(DECLS + """
allowed(U, O, R) :- member(U, G), grant(G, O, R).
""", filename="b.gl")


def _store(url: str) -> int:
    """Policy A installed; revision 1: u0 may read r0 through g0, but is denied it;
    revision 2: u0 may write r1; policy B installed then (in force from revision 2);
    revision 3: u1 joins g0. Returns the revision B is in force from."""
    with grantlog.Reasoner(POLICY_A, store=url, create=True, follow=False) as w:
        assert w.store is not None
        w.store.put_policy(POLICY_A)
        w.store.checkpoint()
        with w.transaction(author="a1") as tx:
            tx.insert("member", [("u0", "g0")])
            tx.insert("grant", [("g0", "read", "r0")])
            tx.insert("deny", [("u0", "r0")])
        w.insert("grant", [("g0", "write", "r1")], author="a2")
        w.store.put_policy(POLICY_B)
        w.insert("member", [("u1", "g0")], author="a3")
    with grantlog.Reasoner(POLICY_B, store=url, follow=False) as r:
        assert r.journal is not None
        (swap,) = r.journal.policy_revisions()[-1:]
        return int(swap)


def test_now_is_the_reasoner_s_policy_and_the_past_the_store_s(tmp_path: Any) -> None:
    url = f"sqlite:///{tmp_path / 'policies.db'}"
    swap = _store(url)
    # opened with A while the store's head is under B
    with grantlog.Reasoner(POLICY_A, store=url, follow=False) as r:
        rv = r.review(subject="u0", since=1)
        assert rv.policies == {"now": POLICY_A.digest, "stored": POLICY_B.digest,
                               "past": [{"from": 1, "policy": POLICY_A.digest},
                                        {"from": swap, "policy": POLICY_B.digest}]}
        assert rv.to_dict()["policies"] == rv.policies
        by = {(e.operation, e.resource): e for e in rv.entries}
        # now, under A: the deny blocks u0's read; its write holds
        assert {k for k, e in by.items() if e.change in ("gained", "unchanged")} == \
            {("write", "r1")}
        # the past, under the store's policies: the read was gained where B came in force
        read = by[("read", "r0")]
        assert [(v.gained, v.edge.revision) for v in read.events] == [(True, swap)]
        assert read.change == "transient"  # held under B at the head, not now under A
        plain = r.review(subject="u0")  # no since: "now" only
        assert plain.policies == {"now": POLICY_A.digest, "stored": POLICY_B.digest}
    # opened with the store's own policy: "now" and the head's agree, the past is the same
    with grantlog.Reasoner(POLICY_B, store=url, follow=False) as r:
        rv = r.review(subject="u0", since=1)
        assert rv.policies == {"now": POLICY_B.digest, "stored": POLICY_B.digest,
                               "past": [{"from": 1, "policy": POLICY_A.digest},
                                        {"from": swap, "policy": POLICY_B.digest}]}
        assert {(e.operation, e.resource): e.change for e in rv.entries} == {
            ("read", "r0"): "gained", ("write", "r1"): "gained"}


def test_where_the_store_kept_no_policy_the_reasoner_s_own_is_the_past_s(
        tmp_path: Any) -> None:
    url = f"sqlite:///{tmp_path / 'none.db'}"
    with grantlog.Reasoner(POLICY_B, store=url, create=True, follow=False) as w:
        w.insert("member", [("u0", "g0")])
        w.insert("grant", [("g0", "read", "r0")])
    with grantlog.Reasoner(POLICY_A, store=url, follow=False) as r:
        assert r.review(subject="u0", since=1).policies == {
            "now": POLICY_A.digest, "stored": None,
            "past": [{"from": 1, "policy": POLICY_A.digest}]}


def test_without_a_store_only_now() -> None:
    r = grantlog.Reasoner(POLICY_A)
    r.insert("member", [("u0", "g0")])
    r.insert("grant", [("g0", "read", "r0")])
    rv = r.review(subject="u0")
    assert rv.policies == {"now": POLICY_A.digest}
    assert rv.to_dict()["policies"] == {"now": POLICY_A.digest}
