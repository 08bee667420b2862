"""engine/compile/columns.py: which values can stand in a column (the service's unknown-operation
answer), and what lint makes of it (`unknown-constant`, engine/compile/lint.py); grantlog issue 24
item 15: a CDAP grant of anything but READ, WRITE, EXECUTE, ADMIN makes nothing visible."""

from __future__ import annotations

import difflib
import random
import string
import time
from pathlib import Path

import pytest
from grantlog.engine.compile.columns import (
    ColumnAnalysis,
    Suggester,
    can_hold,
    column_analysis,
    column_sources,
    reach,
    suggestion,
)
from grantlog.engine.compile.lint import lint

import grantlog
from grantlog.cli import main

ROOT = Path(__file__).resolve().parent.parent
RULES = ROOT / "rules"


def _program(text: str) -> grantlog.Program:
    return grantlog.compile(text)


# ---------------------------------------------------------------------------------------------
# column_sources / reach: the run-time view


def test_gravitino_operations_are_all_constants_of_the_rules() -> None:
    p = grantlog.compile(paths=[RULES / "gravitino.gl"])
    src = column_sources(p, "allowed", 1)
    assert src.closed and not src.bases
    assert {"load_table", "get_owner", "list_roles_for_object", "grant_privilege"} <= src.constants
    assert reach(p, "allowed", 1, "load_table").static
    miss = reach(p, "allowed", 1, "load_tabel")
    assert miss.impossible and not miss.static and miss.bases == ()
    assert suggestion(p, "allowed", 1, "load_tabel") == "load_table"
    assert suggestion(p, "allowed", 1, "zzzzzzzz") is None
    # every operation api/2 lists is one the rules can decide, and the other way round
    api = {row[0] for row in grantlog.Reasoner(p).rows("api")}
    assert api == set(src.constants | column_sources(p, "allowed_with", 1).constants)


def test_cdap_send_operations_come_from_a_base_relation_too() -> None:
    p = grantlog.compile(paths=[RULES / "cdap_entity.gl"])
    assert reach(p, "allowed", 1, "enqueue").static  # a fact of the rule file
    assert reach(p, "allowed", 1, "get").static  # a head constant
    got = reach(p, "allowed", 1, "flush")
    assert not got.static and got.bases == (("stream_send_op", 0),)
    # the caller looks the value up in the run-time facts of those base columns
    r = grantlog.Reasoner(p)

    def base_holds(rel: str, col: int, value: object) -> bool:
        return any(row[col] == value for row in r.rows(rel))

    assert not can_hold(p, "allowed", 1, "flush", base_holds)
    r.insert("stream_send_op", [("flush",)])
    assert can_hold(p, "allowed", 1, "flush", base_holds)
    assert can_hold(p, "allowed", 1, "read", lambda *_: False)


def test_equalities_intersections_recursion_and_writable_relations() -> None:
    p = _program("""
        rel req(user: string, resource: string).
        rel op_table(operation: string).
        @writable rel grant(user: string, operation: string, resource: string).
        op_table(read).
        op_table(write).
        grant(U, O, R) :- req(U, R), O = audit.
        allowed(U, Op, R) :- req(U, R), Op = read.
        allowed(U, Op, R) :- grant(U, Op, R), op_table(Op).
        allowed(U, Op, R) :- grant(U, Op, R), req(U, R).
        edge(a, b).
        path(X, Y) :- edge(X, Y).
        path(X, Z) :- path(X, Y), edge(Y, Z).
        twice(X) :- path(X, X), X = a.
    """)
    ops = column_sources(p, "allowed", 1)
    # `Op = read`; grant's operation bounded by the op_table constants (read, write); and
    # grant's own run-time rows (it is @writable) joined with req
    assert {"read", "write", "audit"} <= ops.constants
    assert ops.bases == frozenset({("grant", 1), ("op_table", 0)})
    assert column_sources(p, "grant", 1).constants == frozenset({"audit"})
    assert column_sources(p, "path", 1).constants == frozenset({"b"})
    assert column_sources(p, "path", 1).bases == frozenset({("edge", 1)})
    assert column_sources(p, "twice", 0).constants == frozenset({"a"})
    assert column_sources(p, "twice", 0).closed
    with pytest.raises(KeyError):
        column_sources(p, "nope", 0)
    with pytest.raises(IndexError):
        column_sources(p, "allowed", 3)


def test_the_analysis_is_computed_once_and_a_reach_is_cheap() -> None:
    p = grantlog.compile(paths=[RULES / "gravitino.gl"])
    a = column_analysis(p)
    assert column_analysis(p) is a
    values = [f"op_{i}" for i in range(50_000)]
    start = time.perf_counter()
    for v in values:
        reach(p, "allowed", 1, v)
    assert time.perf_counter() - start < 1.0


# ---------------------------------------------------------------------------------------------
# "did you mean"


def test_the_suggester_agrees_with_difflib_without_comparing_every_name() -> None:
    rng = random.Random(24)
    names = ["".join(rng.choices(string.ascii_lowercase + "_", k=rng.randint(3, 30)))
             for _ in range(3000)]
    s = Suggester(names)
    for _ in range(200):
        base = rng.choice(names)
        i = rng.randrange(len(base))
        word = base[:i] + rng.choice(string.ascii_lowercase) + base[i + 1:]
        want = difflib.get_close_matches(word, [n for n in names if n != word], n=1)
        got = s.best(word)
        if want:
            ratio = difflib.SequenceMatcher(None, want[0], word).ratio()
            assert got is not None
            assert difflib.SequenceMatcher(None, got, word).ratio() == pytest.approx(ratio)
        else:
            assert got is None


def test_the_suggester_is_not_quadratic() -> None:
    rng = random.Random(7)
    names = ["".join(rng.choices(string.ascii_lowercase, k=rng.randint(4, 40)))
             for _ in range(20_000)]
    s = Suggester(names)
    start = time.perf_counter()
    for w in names[:300]:
        s.best(w[:-1] + "x")
    assert time.perf_counter() - start < 10.0


# ---------------------------------------------------------------------------------------------
# the analysis for lint: what a fact column accepts, what a goal column can be


def test_lint_view_of_the_cdap_entity_model() -> None:
    p = grantlog.compile(paths=[RULES / "cdap_entity.gl"])
    a = ColumnAnalysis(p)
    assert a.accepts("grant", 1) == frozenset({"read", "write", "execute", "admin"})
    assert a.accepts("grant", 0) is None and a.accepts("grant", 2) is None
    assert a.produces("allowed", 0) is None  # users come from run-time facts
    assert "enqueue" in (a.produces("allowed", 1) or ())


def _lint_text(tmp_path: Path, text: str, facts: str | None = None) -> list[grantlog.Diagnostic]:
    f = tmp_path / "p.gl"
    f.write_text(text, encoding="utf-8")
    extra = []
    if facts is not None:
        g = tmp_path / "facts.gl"
        g.write_text(facts, encoding="utf-8")
        extra = [str(g)]
    diags, _ = lint([str(f)], facts=extra)
    return [d for d in diags if d.code == "unknown-constant"]


POLICY = """
rel grant(user: string, privilege: string, table: string).
rel allowed(subject: string, operation: string, resource: string).
/// Read.
read: allowed(U, read_table, T) :- grant(U, read, T).
/// Write.
write: allowed(U, write_table, T) :- grant(U, write, T).
"""


def test_lint_warns_about_a_typo_in_a_fact_or_a_goal(tmp_path: Path) -> None:
    got = _lint_text(tmp_path, POLICY + """
test "t" {
    grant(alice, raed, orders).
    expect not allowed(alice, read_tabel, orders).
}
""")
    assert [d.message for d in got] == [
        "no rule matches `raed` in column `privilege` of `grant`",
        "no rule puts `read_tabel` in column `operation` of `allowed`",
    ]
    assert got[0].help is not None and got[0].help.startswith("did you mean `read`?")
    assert got[1].help is not None and got[1].help.startswith("did you mean `read_table`?")


def test_lint_is_quiet_about_legitimate_constants(tmp_path: Path) -> None:
    got = _lint_text(tmp_path, POLICY + """
test "users, tables and operations the rules know" {
    grant(alice, read, orders).
    grant(bob, write, ledger).
    expect allowed(alice, read_table, orders).
    expect not allowed(zed, write_table, nowhere).
}
""")
    assert got == []


def test_lint_checks_facts_files_and_a_table_they_extend(tmp_path: Path) -> None:
    rules = POLICY.replace(
        "read: allowed(U, read_table, T) :- grant(U, read, T).",
        "read: allowed(U, read_table, T) :- grant(U, P, T), reading(P).\n"
        "rel reading(privilege: string).\nreading(read).")
    got = _lint_text(tmp_path, rules, "grant(alice, select, t1).\ngrant(bob, wirte, t1).\n"
                     "reading(select).\n")
    assert [(Path(d.span.file).name, d.message) for d in got] == [
        ("facts.gl", "no rule matches `wirte` in column `privilege` of `grant`")]


def test_lint_allow_comment_hides_a_deliberate_warning(tmp_path: Path) -> None:
    got = _lint_text(tmp_path, POLICY + """
test "t" {
    grant(alice, raed, orders).  // lint: allow unknown-constant
    grant(alice, raed, ledger).
    // lint: allow unknown-constant, singleton-variable
    expect not allowed(alice, read_tabel, orders).
}
""")
    text = (tmp_path / "p.gl").read_text(encoding="utf-8").splitlines()
    assert [d.span.line for d in got] == [text.index("    grant(alice, raed, ledger).") + 1]


def test_shipped_models_and_examples_lint_without_unknown_constants() -> None:
    files = [RULES / f"{m}.gl" for m in ("cdap_entity", "cdap_entity_test", "gravitino",
                                         "gravitino_test", "gravitino_data",
                                         "gravitino_data_test", "prelude")]
    files += sorted((ROOT / "examples").rglob("*.gl"))
    diags, _ = lint([str(f) for f in files])
    assert [str(d) for d in diags if d.code == "unknown-constant"] == []


def test_example_facts_lint_clean_with_their_model() -> None:
    for model, facts in (("gravitino", "examples/gravitino/facts.gl"),
                         ("cdap_entity", "examples/cdap_entity/facts.gl")):
        if not (ROOT / facts).exists():
            continue
        diags, _ = lint([str(RULES / f"{model}.gl")], facts=[str(ROOT / facts)])
        assert [str(d) for d in diags if d.code == "unknown-constant"] == [], model


def test_cli_lint_takes_facts(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    f = tmp_path / "facts.gl"
    f.write_text('entity(ns1, namespace).\ngrant(alice, foo, ns1).\ngrant(bob, read, ns1).\n',
                 encoding="utf-8")
    code = main(["lint", str(RULES / "cdap_entity.gl"), "--facts", str(f)])
    err = capsys.readouterr().err
    assert code == 1
    assert "warning[unknown-constant]: no rule matches `foo` in column `privilege` of `grant`" \
        in err
    assert err.count("warning[") == 1
    assert main(["lint", str(RULES / "cdap_entity.gl")]) == 0


# ---------------------------------------------------------------------------------------------
# the CDAP entity model (issue 24 item 15): only the four privileges make an entity visible


CDAP_FACTS = """
entity(cdap, instance).
entity(ns1, namespace).
entity("ns1.ds1", dataset).
contains(cdap, ns1).
contains(ns1, "ns1.ds1").
backend_admin(root).
"""


@pytest.mark.parametrize("privilege", ["read", "write", "execute", "admin"])
def test_cdap_each_privilege_makes_the_dataset_and_its_ancestors_visible(
        tmp_path: Path, privilege: str) -> None:
    f = tmp_path / "facts.gl"
    f.write_text(CDAP_FACTS + f'grant(alice, {privilege}, "ns1.ds1").\n', encoding="utf-8")
    r = grantlog.Reasoner(grantlog.compile(paths=[RULES / "cdap_entity.gl", f]))
    for e in ("ns1.ds1", "ns1", "cdap"):
        assert r.check("alice", "get", e).allowed and r.check("alice", "list", e).allowed


@pytest.mark.parametrize("privilege", ["foo", "READ", "get", "list", "all"])
def test_cdap_a_grant_of_anything_else_makes_nothing_visible(privilege: str) -> None:
    r = grantlog.Reasoner(grantlog.compile(paths=[RULES / "cdap_entity.gl"]))
    r.insert("entity", [("cdap", "instance"), ("ns1", "namespace"), ("ns1.ds1", "dataset")])
    r.insert("contains", [("cdap", "ns1"), ("ns1", "ns1.ds1")])
    r.insert("backend_admin", [("root",)])
    r.insert("grant", [("alice", privilege, "ns1.ds1"), ("alice", privilege, "k@EXAMPLE.COM")])
    for e in ("ns1.ds1", "ns1", "cdap"):
        for op in ("get", "list"):
            assert not r.check("alice", op, e).allowed, (op, e)
    assert not r.ask(f'has(alice, "{privilege}", "ns1.ds1")')
    assert not r.check("root", "grant", "k@EXAMPLE.COM").allowed
    assert r.check("root", "grant", "ns1.ds1").allowed


def test_lint_takes_a_relation_read_only_by_its_own_recursion_as_an_answer(
        tmp_path: Path) -> None:
    got = _lint_text(tmp_path, """
@writable rel path(from, to).
path(a, b).
edge(b, c).
path(X, Y) :- edge(X, Y).
path(X, Z) :- path(X, Y), edge(Y, Z).
""")
    assert got == []
