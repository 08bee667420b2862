"""Store-backed equals in-memory: random update sequences through a store-backed reasoner,
a second reasoner following it, and a reopened one all equal an in-memory reasoner given
the same updates (hypothesis; both stores)."""

from __future__ import annotations

import itertools

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import grantlog

RULES = """
rel member(user: string, group: string).
rel parent(child: string, parent: string).
rel grant(group: string, res: string).
rel deny(user: string, res: string).
member(u0, g0).
under(X, Y) :- parent(X, Y).
under(X, Z) :- parent(X, Y), under(Y, Z).
can(U, R) :- member(U, G), grant(G, R), not deny(U, R).
can(U, R) :- member(U, G), grant(G, P), under(R, P), not deny(U, R).
"""
PROGRAM = grantlog.compile(RULES, filename="props.gl")
VALUES = {"member": (["u0", "u1", "u2"], ["g0", "g1"]),
          "parent": (["r0", "r1", "r2", "r3"], ["r0", "r1", "r2", "r3"]),
          "grant": (["g0", "g1"], ["r0", "r1", "r2"]),
          "deny": (["u0", "u1", "u2"], ["r0", "r1", "r2", "r3"])}
COUNTER = itertools.count()


@st.composite
def op(draw: st.DrawFn) -> tuple[str, str, tuple[str, str]]:
    rel = draw(st.sampled_from(sorted(VALUES)))
    a, b = VALUES[rel]
    row = (draw(st.sampled_from(a)), draw(st.sampled_from(b)))
    if (rel, row) == ("member", ("u0", "g0")):  # a policy fact: retracting it is refused
        return rel, "+", row
    return rel, draw(st.sampled_from("+-")), row


transactions = st.lists(st.lists(op(), min_size=1, max_size=4), min_size=1, max_size=8)


def _run(url: str, txs: list[list[tuple[str, str, tuple[str, str]]]]) -> None:
    memory = grantlog.Reasoner(PROGRAM, watch="all")
    with grantlog.Reasoner(PROGRAM, store=url, follow=False, watch="all",
                           create=True) as stored, \
            grantlog.Reasoner(PROGRAM, store=url, follow=False) as follower:
        for ops in txs:
            with memory.transaction() as mt, stored.transaction() as stx:
                for rel, sign, row in ops:
                    for t in (mt, stx):
                        (t.insert if sign == "+" else t.retract)(rel, [row])
            assert stx.changes.by_relation == mt.changes.by_relation
            assert stored.all_rows() == memory.all_rows()
            follower.sync()
            assert follower.all_rows() == memory.all_rows()
        assert follower.revision == stored.revision
    with grantlog.Reasoner(PROGRAM, store=url, follow=False) as reopened:
        assert reopened.all_rows() == memory.all_rows()


@settings(max_examples=30, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(txs=transactions)
def test_sqlite_store_equals_memory(tmp_path_factory: object, txs: list[
        list[tuple[str, str, tuple[str, str]]]]) -> None:
    path = tmp_path_factory.mktemp("prop") / "facts.db"  # type: ignore[attr-defined]
    _run(f"sqlite:///{path}", txs)


@settings(max_examples=20, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(txs=transactions)
def test_postgres_store_equals_memory(pg_server: object, txs: list[
        list[tuple[str, str, tuple[str, str]]]]) -> None:
    _run(pg_server.schema_url(f"prop{next(COUNTER)}"), txs)  # type: ignore[attr-defined]
