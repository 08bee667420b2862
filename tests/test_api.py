"""The public Python API: compile, Reasoner, rows/query/ask/check/explain, errors."""

from __future__ import annotations

import sys
import threading

import pytest

import grantlog

POLICY = """
/// A user belongs to a group.
rel member(user: string, group: string).
/// A group is granted an operation on a resource.
rel grant(group: string, operation: string, resource: string).
rel banned(user: string).

/// Members may use what their group was granted, unless banned.
via_group: allowed(U, Op, R) :- member(U, G), grant(G, Op, R), not banned(U).
"""


@pytest.fixture
def reasoner() -> grantlog.Reasoner:
    r = grantlog.Reasoner(grantlog.compile(POLICY))
    r.insert("member", [("alice", "eng"), ("bob", "eng")])
    r.insert("grant", [("eng", "read", "t1")])
    return r


def test_rows_query_ask(reasoner: grantlog.Reasoner) -> None:
    assert reasoner.rows("allowed") == {("alice", "read", "t1"), ("bob", "read", "t1")}
    assert reasoner.query('allowed(U, "read", t1)') == [{"U": "alice"}, {"U": "bob"}]
    assert reasoner.ask('allowed("alice", read, t1)')
    assert not reasoner.ask('allowed("carol", read, t1)')


def test_insert_and_retract_take_effect(reasoner: grantlog.Reasoner) -> None:
    reasoner.insert("banned", [("bob",)])
    assert not reasoner.ask("allowed(bob, read, t1)")
    reasoner.retract("banned", [("bob",)])
    assert reasoner.ask("allowed(bob, read, t1)")
    reasoner.retract("member", [("alice", "eng")])
    assert reasoner.query("allowed(U, read, t1)") == [{"U": "bob"}]


def test_check_returns_decision_with_rule_names(reasoner: grantlog.Reasoner) -> None:
    d = reasoner.check("alice", "read", "t1")
    assert d.allowed and bool(d)
    assert d.reasons == ("via_group",)
    denied = reasoner.check("alice", "write", "t1")
    assert not denied.allowed and denied.reasons == ()


def test_explain_builds_a_checkable_proof(reasoner: grantlog.Reasoner) -> None:
    ex = reasoner.explain('allowed("alice", read, t1)')
    assert ex.holds and ex.proof is not None
    data = ex.to_dict()
    assert data["proof"]["rule"] == "via_group"
    assert data["proof"]["doc"] == "Members may use what their group was granted, unless banned."
    kids = [c["fact"] for c in data["proof"]["children"]]
    assert kids == ["member(alice, eng)", "grant(eng, read, t1)", "not banned(alice)"]
    assert "inserted at run time" in ex.render()
    assert not reasoner.explain("allowed(carol, read, t1)").holds


def test_bad_inserts_are_user_errors(reasoner: grantlog.Reasoner) -> None:
    with pytest.raises(grantlog.GrantlogError) as e:
        reasoner.insert("member", [("alice",)])
    assert e.value.diagnostics[0].code == "bad-fact"
    with pytest.raises(grantlog.GrantlogError) as e:
        reasoner.insert("membr", [("alice", "eng")])
    assert e.value.diagnostics[0].code == "unknown-relation"
    assert "did you mean `member`" in str(e.value)
    with pytest.raises(grantlog.GrantlogError) as e:
        reasoner.insert("member", [("alice", 3)])
    assert e.value.diagnostics[0].code == "bad-fact"


def test_bad_goals_are_user_errors(reasoner: grantlog.Reasoner) -> None:
    for goal, code in [
        ("allowed(U, read)", "arity-mismatch"),
        ("alowed(U, read, t1)", "unknown-relation"),
        ("allowed(U, read, t1), not banned(V)", "unsafe-variable"),
        ("allowed(U, read", "syntax-error"),
    ]:
        with pytest.raises(grantlog.GrantlogError) as e:
            reasoner.query(goal)
        assert e.value.diagnostics[0].code == code, goal


def test_compile_errors_carry_spans_and_render() -> None:
    with pytest.raises(grantlog.GrantlogError) as e:
        grantlog.compile("p(X, Y) :- q(X).\nq(1).", filename="x.gl")
    d = e.value.diagnostics[0]
    assert (d.code, d.span.file, d.span.line, d.span.col) == ("unsafe-variable", "x.gl", 1, 6)
    assert str(e.value).splitlines()[1:3] == [" 1 | p(X, Y) :- q(X).", "   |      ^"]


def test_several_errors_in_one_run() -> None:
    with pytest.raises(grantlog.GrantlogError) as e:
        grantlog.compile("p(X) :- q(Y).\nr(A) :- s(A), not r(A).\ns(1). q(1).")
    assert [d.code for d in e.value.diagnostics] == ["unsafe-variable", "negation-cycle"]


def test_unknown_relation_is_warning_then_strict_error() -> None:
    p = grantlog.compile("p(X) :- membr(X).")
    assert [w.code for w in p.warnings] == ["unknown-relation"]
    with pytest.raises(grantlog.GrantlogError):
        grantlog.compile("p(X) :- membr(X).", strict=True)


def test_compile_from_paths_with_imports(tmp_path) -> None:  # type: ignore[no-untyped-def]
    (tmp_path / "base.gl").write_text("edge(a, b).\nedge(b, c).\n")
    (tmp_path / "main.gl").write_text(
        'import "base.gl".\npath(X, Y) :- edge(X, Y).\npath(X, Z) :- path(X, Y), edge(Y, Z).\n'
    )
    r = grantlog.Reasoner(grantlog.compile(paths=[tmp_path / "main.gl"]))
    assert ("a", "c") in r.rows("path")


def test_reads_are_consistent_under_concurrent_writes(reasoner: grantlog.Reasoner) -> None:
    """Each transaction moves the one extra member from u{i-1} to u{i}: a read that saw
    half a transaction would find no extra user allowed, or two. (Comparing two separate
    reads, as this test once did, races with the writer between them.)"""
    errors: list[str] = []
    reasoner.insert("member", [("u0", "eng")])

    def writer() -> None:
        for i in range(1, 200):
            with reasoner.transaction() as tx:
                tx.retract("member", [(f"u{i - 1}", "eng")])
                tx.insert("member", [(f"u{i}", "eng")])

    def reader() -> None:
        for _ in range(200):
            users = {row[0] for row in reasoner.rows("allowed")} - {"alice", "bob"}
            if len(users) != 1:
                errors.append(f"a torn read: {sorted(users)}")

    threads = [threading.Thread(target=writer), threading.Thread(target=reader)]
    switch = sys.getswitchinterval()
    sys.setswitchinterval(1e-5)  # switch threads often, inside a transaction too
    try:
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        sys.setswitchinterval(switch)
    assert errors == []


def test_demo_policy_tests_pass() -> None:
    from grantlog.engine.answer.testing import run_tests

    p = grantlog.compile(paths=["examples/demo/policy.gl"])
    results = run_tests(p)
    assert results and all(r.passed for r in results), [r.failures for r in results]


def test_views_nested_too_deep_give_a_diagnostic_not_a_recursion_error() -> None:
    n = 800
    # two rules per view, so that goal-directed plans cannot unfold the chain
    chain = "\n".join(f"r{i + 1}(X) :- r{i}(X).\nr{i + 1}(X) :- r{i}(X), X = 0."
                      for i in range(1, n))
    text = f"b(1).\nr1(X) :- b(X).\n{chain}\n"
    r = grantlog.Reasoner(grantlog.compile(text))
    with pytest.raises(grantlog.GrantlogError) as info:
        r.ask(f"r{n}(1)")
    assert info.value.diagnostics[0].code == "evaluation-too-deep"
    # the advice works: a materialized link in the middle halves the depth
    fixed = grantlog.compile(f"@materialize rel r400(x: int).\n{text}")
    assert grantlog.Reasoner(fixed).ask(f"r{n}(1)")


def test_a_long_chain_of_one_rule_views_is_unfolded() -> None:
    n = 400
    chain = "\n".join(f"r{i + 1}(X) :- r{i}(X)." for i in range(1, n))
    r = grantlog.Reasoner(grantlog.compile(f"b(1).\nr1(X) :- b(X).\n{chain}\n"))
    assert r.ask(f"r{n}(1)") and not r.ask(f"r{n}(2)")
    assert len(r.planner.unfolded) == n - 1


def test_backend_names_are_checked() -> None:
    p = grantlog.compile("p(1).")
    with pytest.raises(grantlog.GrantlogError) as info:
        grantlog.Reasoner(p, backend="pydatlog")
    assert info.value.diagnostics[0].code == "unknown-backend"
    assert "pydatalog" in str(info.value)
