"""The materialization policy (engine/compile/materialize.py, issue 26): what a model written
from scratch keeps in memory, read off its structure. The hierarchy's closure is walked, a
subject's holdings are kept, subject × object and cross products are not; annotations
override; ``grantlog plan`` says why; incremental maintenance equals evaluation from scratch.
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from grantlog.engine.answer.plan import describe
from grantlog.engine.compile.materialize import (
    ANNOTATED,
    NEEDED,
    RECURSIVE,
    SMALL,
    WALKED,
    reasons,
)
from grantlog.engine.plan.stats import Statistics

import grantlog
from grantlog.cli.main import main

ROOT = Path(__file__).resolve().parent.parent

#: types as unary relations, a child-first edge, the closure in one relation, roles through
#: groups, allow/deny grants (benchmarks/models/unary.gl, cut down)
UNARY = """
rel catalog(x: string).
rel schema(x: string).
rel table(x: string).
rel parent(child: string, parent: string).
rel member_of(user: string, group: string).
rel assigned(principal: string, role: string).
rel permit(role: string, right: string, object: string).
rel forbid(role: string, right: string, object: string).
rel owner(object: string, user: string).
rel anc(a: string, x: string).
rel has_role(user: string, role: string).
rel allows(user: string, right: string, object: string).
rel forbids(user: string, right: string, object: string).
@decision rel can(user: string, action: string, object: string).

anc(X, X) :- catalog(X).
anc(X, X) :- schema(X).
anc(X, X) :- table(X).
anc(A, X) :- parent(X, A).
anc(A, X) :- anc(A, P), parent(X, P).
has_role(P, R) :- assigned(P, R).
has_role(U, R) :- member_of(U, G), assigned(G, R).
allows(U, P, X) :- has_role(U, R), permit(R, P, A), anc(A, X).
forbids(U, P, X) :- has_role(U, R), forbid(R, P, A), anc(A, X).
can(U, read, T) :- table(T), allows(U, select, T), not forbids(U, select, T).
can(U, write, T) :- table(T), allows(U, modify, T), not forbids(U, modify, T).
can(U, drop, T) :- table(T), owner(A, U), anc(A, T).
"""


def compile_text(text: str, tmp_path: Path, name: str = "m.gl") -> grantlog.Program:
    f = tmp_path / name
    f.write_text(text)
    return grantlog.compile(paths=[str(f)])


def materialized(program: grantlog.Program) -> set[str]:
    return program.derived - program.virtual


def test_the_hierarchy_closure_is_walked_and_role_holding_kept(tmp_path: Path) -> None:
    p = compile_text(UNARY, tmp_path)
    assert materialized(p) == {"has_role"}
    why = reasons(p)
    assert why == {"has_role": SMALL, "anc": WALKED}
    # the rights on objects and the decision are evaluated on demand
    assert {"anc", "allows", "forbids", "can"} <= p.virtual


def test_two_hierarchies_the_groups_are_kept_the_resources_walked(tmp_path: Path) -> None:
    p = grantlog.compile(paths=[str(ROOT / "benchmarks" / "models" / "twotrees.gl")])
    assert materialized(p) == {"group_above", "belongs"}
    why = reasons(p)
    assert why["group_above"] == RECURSIVE and why["belongs"] == SMALL
    assert why["within"] == WALKED
    assert {"within", "at_or_within", "allow_reaches", "access"} <= p.virtual


def test_subject_by_object_and_cross_products_are_not_materialized(tmp_path: Path) -> None:
    text = UNARY + """
rel group_owns(object: string, group: string).
rel account(user: string).
rel right_name(right: string).
rel group_owned(user: string, object: string).
rel every_right(user: string, right: string).
rel granted_roles(role: string, right: string).
/// a user × an object: as many rows as members × the objects their groups own
group_owned(U, O) :- member_of(U, G), group_owns(O, G).
/// a cross product of accounts and right names
every_right(U, P) :- account(U), right_name(P).
/// not a subject's: no column flows into the subject
granted_roles(R, P) :- permit(R, P, _).
can(U, own, O) :- table(O), group_owned(U, O).
can(U, admin, O) :- table(O), every_right(U, admin).
can(U, audit, O) :- table(O), has_role(U, R), granted_roles(R, audit).
"""
    p = compile_text(text, tmp_path)
    assert {"group_owned", "every_right", "granted_roles"} <= p.virtual
    assert materialized(p) == {"has_role"}


def test_a_relation_over_the_hierarchy_or_the_decision_is_not_kept(tmp_path: Path) -> None:
    text = UNARY + """
rel table_reader(user: string, schema: string).
rel delegate(user: string, other: string).
/// reads the types (grows with the objects): on demand
table_reader(U, S) :- schema(S), has_role(U, S).
/// built on the decision relation: on demand
delegate(U, V) :- can(U, read, V).
can(U, read2, T) :- table(T), table_reader(U, T).
"""
    p = compile_text(text, tmp_path)
    assert {"table_reader", "delegate"} <= p.virtual


def test_annotations_override_the_policy(tmp_path: Path) -> None:
    text = (UNARY.replace("rel anc(", "@materialize rel anc(")
            .replace("rel has_role(", "@demand rel has_role("))
    p = compile_text(text, tmp_path)
    assert materialized(p) == {"anc"}
    assert reasons(p) == {"anc": ANNOTATED}
    assert "has_role" in p.virtual


def test_what_a_kept_relation_reads_is_kept_too(tmp_path: Path) -> None:
    text = UNARY.replace("rel allows(", "@materialize rel allows(")
    p = compile_text(text, tmp_path)
    why = reasons(p)
    assert why["allows"] == ANNOTATED
    assert why["anc"] == NEEDED  # the walk cannot serve a materialized relation
    assert why["has_role"] == SMALL


def test_the_shipped_models_keep_their_annotated_choice() -> None:
    # onehouse's grants checked against the types they may be set on, and its group
    # memberships (a listing or a Member role on a group): filters of stored facts (rule 3)
    for model, extra in [("gravitino", {"grant"}), ("cdap_parent", set()),
                         ("cdap_entity", set()),
                         ("onehouse", {"grant_in_scope", "group_member"}),
                         ("three_tier", {"user_permission", "global_grants"})]:
        p = grantlog.compile(paths=[str(ROOT / "rules" / f"{model}.gl")])
        assert materialized(p) == {"holds"} | extra, model
        why = reasons(p)
        assert why["holds"] == ANNOTATED
        assert "ancestor" not in why  # `@demand` in the prelude: not the policy's choice
        assert "ancestor" in p.virtual


def test_plan_says_why(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    p = compile_text(UNARY + 'table("c.s.t"). assigned(alice, reader).\n', tmp_path)
    report = describe(p, 'can(alice, read, "c.s.t")')
    relations = dict(report.relations)
    assert relations["has_role"] == f"materialized: {SMALL}"
    assert relations["anc"] == f"on demand: closure walk ({WALKED})"
    code = main(["plan", str(tmp_path / "m.gl"), 'can(alice, read, "c.s.t")'])
    out = capsys.readouterr().out
    assert code == 0
    assert f"has_role  materialized: {SMALL}" in out
    # every lookup of the decision keeps the operation (engine/plan/demand.py ``coarse``):
    # only the `read` rule runs, not every operation's
    cans = [lk for lk in report.lookups if lk.rel == "can"]
    assert cans and all(1 in lk.cols for lk in cans)
    assert [r.rule.split("(")[0] for lk in cans for r in lk.rules] == ["can"]


def _world(rng: random.Random) -> dict[str, set[tuple[str, ...]]]:
    facts: dict[str, set[tuple[str, ...]]] = {r: set() for r in (
        "catalog", "schema", "table", "parent", "member_of", "assigned", "permit", "forbid",
        "owner")}
    for c in range(2):
        facts["catalog"].add((f"c{c}",))
        for s in range(2):
            facts["schema"].add((f"c{c}.s{s}",))
            facts["parent"].add((f"c{c}.s{s}", f"c{c}"))
            for t in range(3):
                facts["table"].add((f"c{c}.s{s}.t{t}",))
                facts["parent"].add((f"c{c}.s{s}.t{t}", f"c{c}.s{s}"))
    return facts


def _random_fact(rng: random.Random, objects: list[str]) -> tuple[str, tuple[str, ...]]:
    users, groups, roles = ["u0", "u1", "u2"], ["g0", "g1"], ["r0", "r1", "r2"]
    rel = rng.choice(["member_of", "assigned", "assigned", "permit", "forbid", "owner",
                      "parent"])
    if rel == "member_of":
        return rel, (rng.choice(users), rng.choice(groups))
    if rel == "assigned":
        return rel, (rng.choice(users + groups), rng.choice(roles))
    if rel in ("permit", "forbid"):
        return rel, (rng.choice(roles), rng.choice(["select", "modify"]), rng.choice(objects))
    if rel == "owner":
        return rel, (rng.choice(objects), rng.choice(users))
    return rel, (rng.choice(objects), rng.choice(objects))  # a new edge (maybe a cycle)


@pytest.mark.parametrize("seed", range(4))
def test_incremental_equals_from_scratch_under_the_policy(tmp_path: Path, seed: int) -> None:
    """Inserts and retracts of memberships, assignments, grants and edges on a model whose
    role holding the policy keeps and whose closure it walks: every relation's rows and a
    sample of checks equal those of a reasoner given the final facts at once."""
    p = compile_text(UNARY, tmp_path)
    assert materialized(p) == {"has_role"}
    rng = random.Random(seed)
    facts = _world(rng)
    objects = sorted(v for rel in ("catalog", "schema", "table") for (v,) in facts[rel])
    live = grantlog.Reasoner(p)
    for rel, rows in facts.items():
        live.insert(rel, sorted(rows))
    for _ in range(40):
        rel, row = _random_fact(rng, objects)
        if row in facts[rel] and rng.random() < 0.5:
            facts[rel].discard(row)
            live.retract(rel, [row])
        else:
            facts[rel].add(row)
            live.insert(rel, [row])
        if rng.random() < 0.3:  # a check now and then: answers kept, then maintained
            live.check(rng.choice(["u0", "u1", "u2"]), "read", rng.choice(objects))
    scratch = grantlog.Reasoner(p)
    for rel, rows in facts.items():
        scratch.insert(rel, sorted(rows))
    for rel in sorted(p.derived):
        assert live.rows(rel) == scratch.rows(rel), rel
    for u in ("u0", "u1", "u2"):
        for o in objects:
            for op in ("read", "write", "drop"):
                assert live.check(u, op, o).allowed == scratch.check(u, op, o).allowed


def test_a_unary_type_filters_in_the_estimates(tmp_path: Path) -> None:
    """A membership test of a type given as a unary relation keeps one row in as many as
    there are types (engine/plan/stats.py), as ``entity(S, schema)`` does, not every row (n /
    distinct of a unary relation): the plan tests `schema` right after walking up, before
    asking for the rights there."""
    p = compile_text(UNARY, tmp_path)
    full = {"catalog": {(f"c{i}",): 0 for i in range(2)},
            "schema": {(f"s{i}",): 0 for i in range(8)},
            "table": {(f"t{i}",): 0 for i in range(90)}}
    st = Statistics(p, full)
    assert st.stored("schema", (0,), 1) == pytest.approx(1 / 3)
    assert st.stored("table", (0,), 1) == pytest.approx(1 / 3)
    assert st.stored("parent", (0, 1), 2) == 0.0  # no rows


def test_reasons_of_a_program_whose_split_was_set_otherwise(tmp_path: Path) -> None:
    """``reasons`` never changes a program's split: one made all virtual (as the oracle
    tests do) has no materialized relation to explain, and keeps its split."""
    p = compile_text(UNARY, tmp_path)
    p.virtual = frozenset(p.derived)
    p.compiled.pop("materialize:reasons")
    assert reasons(p) == {"anc": WALKED}
    assert p.virtual == p.derived

