"""Explanations (engine/answer/explain/): why-proofs, why-not trees, renderings, decision reasons.

* Why-proofs are checked by an independent checker below, written against the IR data classes
  only: every rule node is an instance of its rule (head and body literals with the node's
  bindings substituted), negated literals are absent, comparisons hold, leaves are base facts,
  and no node depends on itself. It runs on every allowed decision of the shipped models'
  example facts and on every derived row of generated programs (materialized and on demand).
* Why-not trees are checked by repair: a ground base fact the tree names as the only thing an
  alternative lacks is inserted, and the goal must become true. The cases are built from true
  decisions by retracting one base fact of their proof at a time.
* Goldens under tests/golden/explain/: text why and why-not trees for the subtle cases, one
  DOT and one Mermaid rendering.
"""

from __future__ import annotations

import itertools
import json
import re
import shutil
import subprocess
from collections.abc import Iterator

import pytest
import strategies as gen
from conftest import ROOT, check_golden
from grantlog.engine.answer.explain import Limits, WhyNot
from grantlog.engine.core import ir
from grantlog.engine.core.terms import lit_terms
from hypothesis import assume, given, note, settings
from hypothesis import strategies as st

import grantlog
from grantlog import Proof
from grantlog.cli import main

Row = tuple[ir.Value, ...]
Fact = tuple[str, Row]

MODELS = sorted(p.stem for p in (ROOT / "rules").glob("*.gl")
                if not p.stem.endswith("_test")
                and (ROOT / "examples" / p.stem / "facts.gl").exists())


def _model(name: str) -> grantlog.Reasoner:
    return grantlog.Reasoner(grantlog.compile(
        paths=[ROOT / "rules" / f"{name}.gl", ROOT / "examples" / name / "facts.gl"]))


def test_every_shipped_model_has_example_facts() -> None:
    assert {"cdap_entity", "cdap_parent", "gravitino", "onehouse", "three_tier"} <= set(MODELS)


# ---------------------------------------------------------------------------------------------
# an independent proof checker


def _lt(a: ir.Value, b: ir.Value) -> bool:
    """The language's order: integers before strings, then natural order."""
    if isinstance(a, int) != isinstance(b, int):
        return isinstance(a, int)
    return a < b  # type: ignore[operator]


def _holds(op: str, a: ir.Value, b: ir.Value) -> bool:
    same = type(a) is type(b) and a == b
    return {"=": same, "!=": not same, "<": _lt(a, b), "<=": same or _lt(a, b),
            ">": _lt(b, a), ">=": same or _lt(b, a)}[op]


def _anon(t: ir.Term) -> bool:
    return isinstance(t, ir.Var) and t.name.startswith("_?")


def _value(t: ir.Term, env: dict[str, ir.Value]) -> ir.Value:
    if isinstance(t, ir.Const):
        return t.value
    assert t.name in env, f"variable {t.name} is not bound"
    return env[t.name]


def _matches(args: tuple[ir.Term, ...], row: Row, env: dict[str, ir.Value]) -> bool:
    """Does ``row`` match the literal's arguments (anonymous variables match anything)?"""
    if len(args) != len(row):
        return False
    return all(_anon(t) or (type(_value(t, env)) is type(v) and _value(t, env) == v)
               for t, v in zip(args, row, strict=True))


class Rows:
    """The rows of every relation, read through a reasoner's view (membership tests stay
    goal-directed; a whole relation is read only when a pattern needs it)."""

    def __init__(self, r: grantlog.Reasoner) -> None:
        self.ctx = r.view()
        self.full: dict[str, set[Row]] = {}

    def __contains__(self, fact: Fact) -> bool:
        return fact[1] in self.ctx.F[fact[0]]

    def relation(self, rel: str) -> set[Row]:
        got = self.full.get(rel)
        if got is None:
            got = self.full[rel] = set(self.ctx.F[rel])
        return got


class ProofChecker:
    """Checks why-proofs against the relations' rows and the base facts, nothing else."""

    def __init__(self, rows: Rows, base: set[Fact]) -> None:
        self.rows = rows
        self.base = base
        self.good: set[int] = set()
        self.nodes = 0

    def check(self, node: Proof, stack: frozenset[int] = frozenset()) -> None:
        if id(node) in self.good:
            return
        assert id(node) not in stack, f"{node.text} depends on itself"
        self.nodes += 1
        assert node.rel is not None and node.row is not None, node.label()
        assert (node.rel, node.row) in self.rows, f"{node.text} does not hold"
        if node.kind == "fact":
            assert (node.rel, node.row) in self.base, f"{node.text} is not a base fact"
            assert not node.children
        else:
            assert node.kind == "rule" and node.rule is not None, node.label()
            rule, env = node.rule, dict(node.bindings)
            named = {t.name for lit in (rule.head, *rule.body) for t in lit_terms(lit)
                     if isinstance(t, ir.Var) and not _anon(t)}
            assert named <= set(env), f"{node.text}: unbound {named - set(env)}"
            assert rule.head.rel == node.rel
            assert tuple(_value(t, env) for t in rule.head.args) == node.row, node.label()
            assert len(node.children) == len(rule.body), node.label()
            for lit, child in zip(rule.body, node.children, strict=True):
                if isinstance(lit, ir.Atom):
                    assert child.rel == lit.rel and child.row is not None, child.label()
                    assert _matches(lit.args, child.row, env), f"{child.text} vs {lit}"
                    self.check(child, stack | {id(node)})
                elif isinstance(lit, ir.Neg):
                    assert child.kind == "absent", child.label()
                    args = lit.atom.args
                    if any(_anon(t) for t in args):
                        hits = [r for r in self.rows.relation(lit.atom.rel)
                                if _matches(args, r, env)]
                    else:
                        ground = tuple(_value(t, env) for t in args)
                        hits = [ground] if (lit.atom.rel, ground) in self.rows else []
                    assert not hits, f"{node.text}: `{lit}` is false: {hits[0]}"
                else:
                    assert child.kind == "comparison", child.label()
                    assert _holds(lit.op, _value(lit.left, env), _value(lit.right, env)), lit
        self.good.add(id(node))


def _base(r: grantlog.Reasoner) -> set[Fact]:
    return {(f.rel, f.row) for f in r.program.facts}


def _checker(r: grantlog.Reasoner, base: set[Fact] | None = None) -> ProofChecker:
    return ProofChecker(Rows(r), _base(r) if base is None else base)


def _decisions(r: grantlog.Reasoner) -> list[Row]:
    return sorted(r.rows(r.program.decision), key=repr)


@pytest.mark.parametrize("model", MODELS)
def test_every_allowed_decision_has_a_valid_proof(model: str) -> None:
    r = _model(model)
    checker = _checker(r)
    decisions = _decisions(r)
    assert decisions, "the example allows nothing"
    ctx = r.view()
    prover = r.prover(ctx)
    for row in decisions:
        proof = prover.prove(r.program.decision, row)
        assert proof.kind == "rule", proof.label()
        checker.check(proof)
    # the public path too, and the decision reasons: the deciding rule, then its premises'
    for row in decisions[:: max(1, len(decisions) // 25)]:
        goal = ir.show_atom(r.program.decision, row)
        ex = r.explain(goal)
        assert ex.holds and ex.proof is not None and ex.why_not is None
        checker.check(ex.proof)
        d = r.check(*(str(v) for v in row))
        top = ex.proof.rule
        assert d.allowed and top is not None and d.reasons[0] == top.name
        below = [c.rule.name for c in ex.proof.children if c.kind == "rule" and c.rule]
        assert list(d.reasons[1:]) == list(dict.fromkeys(x for x in below if x != top.name))


def _derived_rows(r: grantlog.Reasoner) -> Iterator[Fact]:
    for rel in sorted(r.program.derived):
        for row in sorted(r.rows(rel), key=repr):
            yield rel, row


def _body_size(rule: str) -> int:
    """The number of literals in a generated rule's body (commas outside parentheses)."""
    body = rule.split(":-", 1)[1]
    depth, n = 0, 1
    in_str = False
    for i, ch in enumerate(body):
        if ch == '"' and body[i - 1] != "\\":
            in_str = not in_str
        elif not in_str and ch in "()":
            depth += 1 if ch == "(" else -1
        elif not in_str and ch == "," and depth == 0:
            n += 1
    return n


def _tabling_is_slow(prog: gen.Program) -> bool:
    """Tabled on-demand evaluation of recursive relations (engine/eval/demand.py) can be very slow
    on generated programs (reported): an 18-literal recursive body took minutes for 6 rows.
    On-demand runs keep to short bodies and read rows from the default compilation."""
    return any(_body_size(r) > 8 for r in prog.rules)


def _all_virtual(text: str) -> grantlog.Program:
    """The program with every derived relation answered on demand (recursive ones tabled)."""
    p = grantlog.compile(text)
    p.virtual = frozenset(p.derived)
    p.compiled.clear()
    return p


@given(prog=gen.programs(), on_demand=st.booleans())
def test_generated_programs_prove_every_derived_row(prog: gen.Program, on_demand: bool) -> None:
    """Default compilation (recursive relations materialized, the others on demand), or every
    derived relation on demand (recursive ones tabled); the checker reads the rows of the
    default compilation either way."""
    assume(not (on_demand and _tabling_is_slow(prog)))
    text = prog.text()
    note(text)
    stored = grantlog.Reasoner(grantlog.compile(text))
    r = grantlog.Reasoner(_all_virtual(text)) if on_demand else stored
    checker = _checker(stored)
    prover = r.prover(r.view())
    for rel, row in _derived_rows(stored):
        if (rel, row) in checker.base:
            continue  # a derived relation's given fact is proved as a fact
        checker.check(prover.prove(rel, row))


def test_recursive_relation_on_demand_gets_a_well_founded_proof() -> None:
    # the recursive rule comes first, so a proof that takes the first instance goes round the
    # cycle a -> b -> a forever; tabled recursive relations have no levels to stop it
    text = ("rel edge(a, b).\n"
            "allowed(U, read, R) :- allowed(U, read, P), edge(P, R).\n"
            "allowed(U, read, R) :- grant(U, R).\n"
            "allowed(U, list, R) :- allowed(U, read, R).\n"
            "grant(alice, a).\nedge(a, b). edge(b, a).\n")
    for program in (grantlog.compile(text), _all_virtual(text)):
        assert "allowed" in program.virtual
        r = grantlog.Reasoner(program)
        ex = r.explain("allowed(alice, list, a)")
        assert ex.proof is not None
        assert ex.render().splitlines() == [
            "allowed(alice, list, a)  <- rule allowed#3",
            "└── allowed(alice, read, a)  <- rule allowed#2",
            "    └── grant(alice, a)  <- fact (<input>:5:1)"]
        checker = _checker(r)
        prover = r.prover(r.view())
        for rel, row in _derived_rows(r):
            checker.check(prover.prove(rel, row))


# ---------------------------------------------------------------------------------------------
# why not: repairs


def _index(tree: Proof) -> dict[str, Proof]:
    out: dict[str, Proof] = {}
    for n in tree.walk():
        if n.kind == "fails":
            out.setdefault(n.text, n)
    return out


def repairs(node: Proof, index: dict[str, Proof]) -> set[Fact]:
    """Base facts the tree says would each make ``node`` hold: a goal holds when one of its
    alternatives does; an alternative (every literal reached) when each failing literal is
    repaired by the same fact; a missing ground base fact by itself. Anything else (a
    comparison, a blocking fact, a variable left open, a cut-off) offers no repair."""
    if node.kind in ("fails", "seen"):
        src = index.get(node.text, node) if node.kind == "seen" else node
        if src.kind != "fails":
            return set()
        out: set[Fact] = set()
        for c in src.children:
            if c.kind == "alternative":
                out |= repairs(c, index)
        return out
    if node.kind == "alternative":
        if any(c.kind == "unchecked" for c in node.children):
            return set()
        common: set[Fact] | None = None
        for c in node.children:
            if c.kind != "holds":
                got = repairs(c, index)
                common = got if common is None else common & got
        return common or set()
    if node.kind == "missing" and node.rel is not None and node.row is not None:
        return {(node.rel, node.row)}
    return set()


def _named_missing(tree: Proof) -> set[Fact]:
    return {(n.rel, n.row) for n in tree.walk()
            if n.kind == "missing" and n.rel is not None and n.row is not None}


OTHER_FAILURES = {"blocked", "false", "no-rule", "more", "limit", "unchecked", "unexpanded"}


def _only_failure(tree: Proof) -> Fact | None:
    """The one missing base fact, when the tree names exactly one and shows no failure of any
    other kind (and nothing left unexplored)."""
    named = _named_missing(tree)
    kinds = {n.kind for n in tree.walk()}
    open_missing = any(n.kind == "missing" and n.row is None for n in tree.walk())
    if len(named) != 1 or kinds & OTHER_FAILURES or open_missing:
        return None
    return next(iter(named))


def check_why_not(r: grantlog.Reasoner, goal: str, base: set[Fact]) -> tuple[Proof, set[Fact]]:
    """The why-not tree of a false goal, with its claims checked against the rows; returns it
    and the repairs it offers."""
    ex = r.explain(goal)
    assert not ex.holds and ex.proof is None and ex.why_not is not None
    tree = ex.why_not
    rows = Rows(r)
    checker = ProofChecker(rows, base)
    for n in tree.walk():
        fact = (n.rel, n.row) if n.rel is not None and n.row is not None else None
        if n.kind in ("fails", "missing", "unexpanded", "seen", "cycle") and fact:
            assert fact not in rows, f"{n.text} holds"
        if n.kind == "missing" and n.rel is not None:
            assert n.rel not in r.program.derived, n.label()
        if n.kind == "holds" and fact:
            assert fact in rows, f"{n.text} does not hold"
        if n.kind == "blocked":
            (proof,) = n.children
            checker.check(proof)
    return tree, repairs(tree, _index(tree))


def _true(r: grantlog.Reasoner, goal: str | Fact) -> bool:
    if isinstance(goal, str):
        return r.ask(goal)
    return goal[1] in r.view().F[goal[0]]


def _repaired(r: grantlog.Reasoner, goal: str | Fact, fact: Fact, tree: Proof) -> bool:
    """Insert a repair the why-not ``tree`` offers: the goal must become true, unless (negation
    is not monotone) the insertion made a negated literal that held in ``tree`` false, which
    the new why-not tree must then show as blocked. True when the goal became true."""
    r.insert(fact[0], [fact[1]])
    try:
        if _true(r, goal):
            return True
        text = goal if isinstance(goal, str) else ir.show_atom(*goal)
        after = r.explain(text).why_not
        assert after is not None
        held = {n.text for n in tree.walk() if n.kind == "holds" and n.text.startswith("not ")}
        flipped = {n.text for n in after.walk() if n.kind == "blocked"} & held
        assert flipped, f"{text}: inserting {fact} repairs nothing\n{tree.render()}"
        return False
    finally:
        r.retract(fact[0], [fact[1]])


def _leaves(proof: Proof) -> list[Fact]:
    return list(dict.fromkeys((n.rel, n.row) for n in proof.walk()
                              if n.kind == "fact" and n.rel is not None and n.row is not None))


def _retract_each_leaf(r: grantlog.Reasoner, goals: list[Fact]) -> dict[str, int]:
    """For each goal (true), retract each base leaf of its proof in turn (each leaf once over
    all goals); where the goal became false, check its why-not tree and the repairs it offers.
    """
    stats = {"false": 0, "repaired": 0, "removed_named": 0, "only": 0, "flipped": 0}
    base = _base(r)
    tried: set[Fact] = set()
    prover = r.prover(r.view())
    proofs = [(goal, prover.prove(*goal)) for goal in goals]
    for goal, proof in proofs:
        for leaf in _leaves(proof):
            if leaf in tried:
                continue
            tried.add(leaf)
            r.retract(leaf[0], [leaf[1]])
            try:
                if _true(r, goal):
                    continue
                stats["false"] += 1
                tree, fixes = check_why_not(r, ir.show_atom(*goal), base - {leaf})
                if leaf in fixes:
                    stats["removed_named"] += 1
                for fact in sorted(fixes - {leaf}, key=repr)[:4]:
                    if not _repaired(r, goal, fact, tree):
                        stats["flipped"] += 1
                stats["repaired"] += bool(fixes)
                only = _only_failure(tree)
                if only is not None:
                    stats["only"] += 1
                    if only != leaf and not _repaired(r, goal, only, tree):
                        stats["flipped"] += 1
            finally:
                r.insert(leaf[0], [leaf[1]])
    return stats


def test_why_not_repairs_on_the_shipped_models() -> None:
    totals = {"false": 0, "repaired": 0, "removed_named": 0, "only": 0, "flipped": 0}
    for model in MODELS:
        r = _model(model)
        dec = r.program.decision
        stats = _retract_each_leaf(r, [(dec, row) for row in _decisions(r)])
        for k, v in stats.items():
            totals[k] += v
    # the heuristic finds a one-fact repair for most single-fact removals, often the removed
    # fact itself (a regression guard; when written: repairs in 282 of 420 cases, the removed
    # fact among them in 153, a lone missing fact and no other failure in 18, no repair undone
    # by a negation)
    assert totals["false"] > 300
    assert totals["flipped"] <= totals["repaired"] // 20, totals
    assert totals["repaired"] >= totals["false"] // 2, totals
    assert totals["removed_named"] >= totals["false"] // 4, totals


@settings(max_examples=60)
@given(prog=gen.programs())
def test_why_not_repairs_on_generated_programs(prog: gen.Program) -> None:
    text = prog.text()
    note(text)
    r = grantlog.Reasoner(grantlog.compile(text))
    base = _base(r)
    goals = [(rel, row) for rel, row in itertools.islice(_derived_rows(r), 12)
             if (rel, row) not in base]
    _retract_each_leaf(r, goals)


@given(data=st.data())
def test_why_not_trees_of_false_goals_are_truthful(data: st.DataObject) -> None:
    _, goal, text = gen.program_and_goal(data)
    r = grantlog.Reasoner(grantlog.compile(text))
    if r.ask(goal):
        return
    tree, fixes = check_why_not(r, goal, _base(r))
    for fact in sorted(fixes, key=repr)[:4]:
        _repaired(r, goal, fact, tree)
    tree.render()
    json.dumps(tree.to_dict())


# ---------------------------------------------------------------------------------------------
# why not: shapes


SMALL = """
/// A user belongs to a group.
rel member(user: string, group: string).
rel grant(group: string, operation: string, resource: string).
rel banned(user: string).
rel edge(a: string, b: string).

/// Members may use what their group was granted, unless banned.
via_group: allowed(U, Op, R) :- member(U, G), grant(G, Op, R), not banned(U).
/// Nobody writes to the archive.
no_archive: allowed(U, write, R) :- member(U, _), grant(_, read, R), R != archive.
reach(X, Y) :- edge(X, Y).
reach(X, Z) :- reach(X, Y), edge(Y, Z).

member(alice, eng).
member(bob, eng).
grant(eng, read, t1).
grant(eng, read, archive).
banned(bob).
edge(a, b).
"""


@pytest.fixture
def small() -> grantlog.Reasoner:
    return grantlog.Reasoner(grantlog.compile(SMALL))


def test_why_not_names_the_missing_grant(small: grantlog.Reasoner) -> None:
    ex = small.explain("allowed(alice, delete, t1)")
    assert not ex.holds
    assert ex.render().splitlines() == [
        "allowed(alice, delete, t1)  <- does not hold",
        "└── via rule via_group: Members may use what their group was granted, unless banned.",
        "    ├── member(alice, eng)  <- holds",
        "    ├── grant(eng, delete, t1)  <- missing base fact",
        "    └── not banned(alice)  <- holds",
    ]
    data = ex.to_dict()
    assert data["proof"] is None and data["holds"] is False
    missing = data["why_not"]["children"][0]["children"][1]
    assert missing == {"fact": "grant(eng, delete, t1)", "kind": "missing",
                       "relation": "grant", "args": ["eng", "delete", "t1"]}


def test_why_not_names_the_fact_that_blocked_and_proves_it(small: grantlog.Reasoner) -> None:
    text = small.explain("allowed(bob, read, t1)").render()
    assert "not banned(bob)  <- blocked: the negated fact holds" in text
    assert re.search(r"banned\(bob\)  <- fact \(<input>:\d+:1\)", text)


def test_why_not_comparisons_open_variables_and_unbound_goals(small: grantlog.Reasoner) -> None:
    text = small.explain("allowed(alice, write, archive)").render()
    assert "archive != archive  <- fails" in text
    text = small.explain("allowed(carol, Op, R)").render()
    assert text.splitlines()[0] == "allowed(carol, Op, R)  <- does not hold for any Op, R"
    assert "member(carol, G)  <- no base fact for any G" in text
    assert "grant(G, Op, R)  <- not reached" in text
    text = small.explain("member(alice, G), grant(G, write, R)").render()
    assert text.splitlines() == [
        "member(alice, G), grant(G, write, R)  <- does not hold for any G, R",
        "├── member(alice, eng)  <- holds",
        "└── grant(eng, write, R)  <- no base fact for any R",
    ]
    assert small.explain("member(zed, eng)").render() == "member(zed, eng)  <- missing base fact"


def test_why_not_recursion_is_cut_at_the_cycle(small: grantlog.Reasoner) -> None:
    lines = small.explain("reach(a, X), edge(X, c)").render().splitlines()
    assert lines[0].endswith("does not hold for any X")
    lines = small.explain("reach(b, Y)").render().splitlines()
    # the rule's own `Y` (`reach(X, Z) :- reach(X, Y), edge(Y, Z)`) is renamed apart from the
    # goal's `Y`, which is the rule's `Z`
    assert "reach(b, Y1)  <- does not hold (recursive: needs itself, explained above)" in \
        "\n".join(lines)
    assert "edge(Y1, Y)  <- not reached" in lines[-1]


def test_a_named_missing_fact_can_be_undone_by_a_negation() -> None:
    # negation is not monotone: the missing grant is the only literal that fails, but adding
    # it makes `lacks_below` true, so the goal stays false, now blocked (cdap_entity's delete
    # rule has this shape: `allowed(stream_owners, delete, cdap)`)
    r = grantlog.Reasoner(grantlog.compile(
        "allowed(U, delete, E) :- entity(E), grant(U, admin, E), not lacks_below(U, E).\n"
        "lacks_below(U, E) :- grant(U, admin, E), child(E, C), not grant(U, admin, C).\n"
        "entity(db). child(db, t1).\n"))
    before = r.explain("allowed(bob, delete, db)").render()
    assert "grant(bob, admin, db)  <- missing base fact" in before
    assert "not lacks_below(bob, db)  <- holds" in before
    r.insert("grant", [("bob", "admin", "db")])
    after = r.explain("allowed(bob, delete, db)").render()
    assert "not lacks_below(bob, db)  <- blocked: the negated fact holds" in after
    assert "grant(bob, admin, t1)" in after  # inside the proof of lacks_below: no such fact


def test_naming_one_missing_fact_is_no_promise_that_it_suffices() -> None:
    # why the repair check above follows the tree's structure instead of trusting a lone named
    # fact: the rule that names it also has a literal not reached and one not expanded
    r = _model("gravitino")
    r.retract("contains", [("m1.kafka.default", "m1.kafka.default.clickstream")])
    goal = 'allowed(alice, consume_topic, "m1.kafka.default.clickstream")'
    tree = r.explain(goal).why_not
    assert tree is not None
    lone = ("entity", ("m1.kafka.default.clickstream", "schema"))
    assert _named_missing(tree) == {lone} and not repairs(tree, _index(tree))
    assert {"unchecked", "unexpanded"} <= {n.kind for n in tree.walk()}
    r.insert(lone[0], [lone[1]])
    assert not r.ask(goal)


def test_why_not_bounds_alternatives_and_depth() -> None:
    rules = "\n".join(f"p(X) :- q{i}(X), r{i}(X)." for i in range(10))
    facts = "q3(a). q7(a). r1(a)."
    r = grantlog.Reasoner(grantlog.compile(rules + "\n" + facts + "\n"))
    tree = r.explain("p(a)").why_not
    assert tree is not None
    alts = [c for c in tree.children if c.kind == "alternative"]
    more = [c for c in tree.children if c.kind == "more"]
    assert len(alts) == Limits().alternatives and len(more) == 1
    assert more[0].count == 10 - Limits().alternatives
    assert more[0].text == "… 4 more rules (each satisfies fewer body literals)"
    # the rules that got furthest (q3, q7 hold, r1 holds) are among those shown
    shown = {c.rule.name for c in alts if c.rule}
    assert {"p#2", "p#4", "p#8"} <= shown
    # a chain deeper than the limit ends in a cut-off node
    chain = "\n".join(f"c{i}(X) :- c{i + 1}(X)." for i in range(20)) + "\nc20(X) :- base(X).\n"
    r = grantlog.Reasoner(grantlog.compile(chain + "base(z).\n"))
    prover_ctx = r.view()
    tree = WhyNot(r.program, prover_ctx, r.prover(prover_ctx), Limits(depth=3)).atom(
        "c0", (ir.Const("a"),), 0, frozenset())
    kinds = [n.kind for n in tree.walk()]
    assert kinds.count("limit") == 1 and "missing" not in kinds
    assert r.explain("c0(a)").render().splitlines()[-1].endswith(
        "c13(a)  <- does not hold (not expanded: depth or size limit)")
    tree = WhyNot(r.program, prover_ctx, r.prover(prover_ctx), Limits(depth=30)).atom(
        "c0", (ir.Const("a"),), 0, frozenset())
    assert tree.render().splitlines()[-1].endswith("base(a)  <- missing base fact")


def test_virtual_and_materialized_relations_explain_alike() -> None:
    text = SMALL + "\nsees(U, R) :- allowed(U, read, R).\n"
    on_demand = grantlog.Reasoner(_all_virtual(text))
    stored = grantlog.Reasoner(grantlog.compile(text.replace(
        "rel banned(user: string).", "rel banned(user: string). "
        "@materialize rel allowed(u: string, o: string, r: string).")))
    assert "allowed" not in stored.program.virtual and "allowed" in on_demand.program.virtual
    for goal in ("sees(bob, t1)", "sees(carol, R)", "reach(b, c)",
                 "allowed(alice, write, archive)"):
        a, b = on_demand.explain(goal), stored.explain(goal)
        assert not a.holds and a.render() == b.render(), goal


# ---------------------------------------------------------------------------------------------
# renderings


NASTY = 'say "hi" \\ <b> #1 & {x} [y] |z|\nnext'


def _nasty() -> grantlog.Reasoner:
    src = 'p(X) :- q(X), not r(X).\nq("' + NASTY.replace("\\", "\\\\").replace('"', '\\"') \
        .replace("\n", "\\n") + '").\nr("' + NASTY.replace("\\", "\\\\").replace('"', '\\"') \
        .replace("\n", "\\n") + '").\n'
    return grantlog.Reasoner(grantlog.compile(src))


def _dot_labels(dot: str) -> list[str]:
    labels = []
    for line in dot.splitlines():
        m = re.match(r'\s+n\d+ \[label="((?:[^"\\]|\\.)*)", ', line)
        if m:
            labels.append(re.sub(r"\\(.)", lambda g: "\n" if g[1] == "n" else g[1], m[1]))
    return labels


def test_dot_and_mermaid_escape_labels() -> None:
    r = _nasty()
    ex = r.explain('p(X)')
    assert not ex.holds and ex.why_not is not None
    shown = ir.show_value(NASTY)  # how the value appears in the tree
    dot = ex.to_dot()
    assert dot.startswith("digraph explanation {\n") and dot.endswith("}\n")
    labels = _dot_labels(dot)
    assert len(labels) == len(list(ex.why_not.walk()))
    assert any(shown in lab.replace("\n", " ") for lab in labels), labels
    mermaid = ex.to_mermaid()
    assert mermaid.startswith("flowchart TD\n")
    for line in mermaid.splitlines()[1:]:
        m = re.match(r'  n\d+\["(.*)"\]:::\w+$', line)
        if m:
            assert '"' not in m[1] and "<" not in m[1].replace("<br/>", "")
            assert "\n" not in m[1]
    decoded = re.sub(r"#(\d+);", lambda g: chr(int(g[1])), mermaid.replace("<br/>", " "))
    assert shown in decoded


@pytest.mark.filterwarnings("ignore::DeprecationWarning")  # pydot's use of pyparsing
def test_graphviz_accepts_the_dot_output() -> None:
    """Graphviz's `dot` renders the output where it is installed; everywhere, pydot's parser
    (the DOT grammar, in Python) reads it back with every node and edge."""
    import pydot

    for ex in (_nasty().explain("p(X)"), _model("gravitino").explain(
            'allowed(alice, load_table, "m1.lakehouse.sales.orders")')):
        dot = ex.to_dot()
        graphs = pydot.graph_from_dot_data(dot)
        assert graphs is not None and len(graphs) == 1, dot
        g = graphs[0]
        assert len(g.get_nodes()) >= len(_dot_labels(dot))
        assert len(g.get_edges()) == dot.count(" -> ")
        if shutil.which("dot") is not None:
            res = subprocess.run(["dot", "-Tsvg"], input=dot, capture_output=True,
                                 text=True, check=False)
            assert res.returncode == 0, res.stderr


def test_shared_subproofs_are_drawn_once() -> None:
    ex = _model("gravitino").explain('allowed(alice, load_table, "m1.lakehouse.sales.orders")')
    assert ex.proof is not None
    dot = ex.to_dot()
    nodes = len(_dot_labels(dot))
    assert nodes == len(list(ex.proof.walk())) < len(ex.render().splitlines())
    assert dot.count(" -> ") > nodes - 1  # a DAG: some nodes have several parents


# ---------------------------------------------------------------------------------------------
# CLI


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


DEMO = ["examples/demo/policy.gl", "examples/demo/facts.gl"]


def test_cli_explain_formats(capsys: pytest.CaptureFixture[str],
                             monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)
    goal = 'allowed(bob, load_table, "m1.c1.s1.t2")'
    code, text, _ = run(capsys, "explain", *DEMO, goal)
    assert code == 1 and text.startswith(f"{goal}  <- does not hold\n")
    code, out, _ = run(capsys, "explain", *DEMO, goal, "--json")
    assert code == 1
    data = json.loads(out)
    assert data["holds"] is False and data["why_not"]["kind"] == "fails"
    assert run(capsys, "explain", *DEMO, goal, "--format", "json")[1] == out
    code, out, _ = run(capsys, "explain", *DEMO, goal, "--format", "dot")
    assert code == 1 and out.startswith("digraph explanation {")
    code, out, _ = run(capsys, "explain", *DEMO, goal, "--format", "mermaid")
    assert code == 1 and out.startswith("flowchart TD")
    code, out, _ = run(capsys, "explain", *DEMO, 'allowed(alice, load_table, "m1.c1.s1.t1")',
                       "--format", "mermaid")
    assert code == 0 and ":::fact" in out


def test_cli_check_explain_prints_the_why_not_tree_on_deny(
        capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)
    code, out, _ = run(capsys, "check", *DEMO, "bob", "load_table", "m1.c1.s1.t2", "--explain")
    lines = out.splitlines()
    assert code == 1 and lines[0] == 'DENY allowed(bob, load_table, "m1.c1.s1.t2")'
    assert lines[1] == 'allowed(bob, load_table, "m1.c1.s1.t2")  <- does not hold'
    assert any("via rule" in x for x in lines[2:])
    code, out, _ = run(capsys, "check", *DEMO, "bob", "load_table", "m1.c1.s1.t2", "--explain",
                       "--json")
    data = json.loads(out)
    assert data["allowed"] is False and data["reasons"] == []
    assert data["explanation"]["why_not"]["fact"] == 'allowed(bob, load_table, "m1.c1.s1.t2")'


def test_decision_reasons_are_the_deciding_rule_and_its_premises() -> None:
    r = _model("gravitino")
    d = r.check("alice", "load_table", "m1.lakehouse.sales.orders")
    assert d.reasons == ("load_table", "in_usable_schema", "reads_table_select")
    assert not r.check("carol", "load_table", "m1.lakehouse.sales.customers").reasons


# ---------------------------------------------------------------------------------------------
# goldens


def _golden_reasoner(model: str) -> grantlog.Reasoner:
    return grantlog.Reasoner(grantlog.compile(
        paths=[f"rules/{model}.gl", f"examples/{model}/facts.gl"]))


CUSTOMERS = 'allowed(carol, load_table, "m1.lakehouse.sales.customers")'


def test_golden_gravitino_deny_that_won(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)
    r = _golden_reasoner("gravitino")
    why_not = r.explain(CUSTOMERS)
    check_golden("explain/gravitino_deny_wins.txt", why_not.render() + "\n")
    deny = 'not denied(carol, select_table, "m1.lakehouse.sales.customers")'
    assert f"{deny}  <- blocked: the negated fact holds" in why_not.render()
    why = r.explain('deny_wins(carol, select_table, "m1.lakehouse.sales.customers")')
    check_golden("explain/gravitino_deny_wins_why.txt", why.render() + "\n")
    check_golden("explain/gravitino_deny_wins.dot", why_not.to_dot())
    check_golden("explain/gravitino_deny_wins.mmd", why_not.to_mermaid())


def test_golden_gravitino_missing_use_schema(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)
    r = _golden_reasoner("gravitino")
    r.insert("role_of", [("dave", "m1/role/reader")])
    r.insert("privilege", [("m1/role/reader", "use_catalog", "m1.lakehouse", "allow"),
                           ("m1/role/reader", "select_table", "m1.lakehouse", "allow")])
    ex = r.explain('allowed(dave, load_table, "m1.lakehouse.sales.orders")')
    text = ex.render()
    check_golden("explain/gravitino_missing_use_schema.txt", text + "\n")
    assert 'authorized(dave, use_schema, "m1.lakehouse.sales")  <- does not hold' in text


def test_golden_three_tier_strict_override(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)
    r = _golden_reasoner("three_tier")
    why_not = r.explain('allowed(bob, read, "INV-2024-0002")')
    text = why_not.render()
    check_golden("explain/three_tier_strict_override.txt", text + "\n")
    assert 'not instance_defines("INV-2024-0002", read)  <- blocked' in text
    why = r.explain('blocked_by_instance(bob, read, "INV-2024-0002")')
    check_golden("explain/three_tier_blocked_by_instance_why.txt", why.render() + "\n")
    schema = r.explain('allowed(dave, read, "INV-2024-0001")').render()
    check_golden("explain/three_tier_schema_override.txt", schema + "\n")
    assert "not schema_defines(invoice, read)  <- blocked" in schema


def test_golden_cdap_denials(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)
    r = _golden_reasoner("cdap_parent")
    text = r.explain('allowed(maria, deploy, "marketing.churn_model")').render()
    check_golden("explain/cdap_parent_deploy_from_artifact.txt", text + "\n")
    assert 'has(maria, read, "marketing.data_pipeline")  <- does not hold' in text
    r = _golden_reasoner("cdap_entity")
    text = r.explain('allowed(li, create, "marketing.li_scratch")').render()
    check_golden("explain/cdap_entity_create_owner_principal.txt", text + "\n")
