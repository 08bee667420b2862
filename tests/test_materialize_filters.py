"""The materialization policy's third rule (engine/compile/materialize.py, issue 26): a filter of
stored facts — grants checked against the types they are set on, a deprecated right replaced —
is kept in memory and maintained, as the shipped model's ``@materialize grant`` is, in a model
written from scratch without annotations; and the policy reads the model's structure, so the
same split comes out whatever the relations are called.
"""

from __future__ import annotations

import random
import re
import sys
from pathlib import Path

import pytest
from grantlog.engine.compile.materialize import FILTER, SMALL, WALKED, reasons

import grantlog

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))
sys.path.insert(0, str(ROOT / "benchmarks" / "models"))

import worlds  # noqa: E402

#: roles through teams, grants with an effect checked against the types of the objects they
#: are set on (a deprecated right counts as its replacement), a walked closure
GRANTS = """
rel under(child: string, parent: string).
rel kind_of(x: string, t: string).
rel in_team(user: string, team: string).
rel team_role(team: string, role: string).
rel acl(role: string, right: string, object: string, effect: string).
rel allowed_on(right: string, t: string).
rel renamed_right(old: string, new: string).
rel effect(e: string).
rel above(a: string, x: string).
rel plays(user: string, role: string).
rel entry(role: string, right: string, object: string, effect: string).
rel granted(user: string, right: string, object: string).
rel refused(user: string, right: string, object: string).
@decision rel may(user: string, op: string, object: string).

effect(allow).
effect(deny).
allowed_on(select, table).
allowed_on(select, schema).
allowed_on(modify, table).
allowed_on(read_data, schema).
renamed_right(read_data, select).

above(X, X) :- kind_of(X, _).
above(A, X) :- under(X, A).
above(A, X) :- above(A, P), under(X, P).
plays(U, R) :- in_team(U, T), team_role(T, R).
entry(R, P, O, E) :- acl(R, P, O, E), kind_of(O, T), allowed_on(P, T), effect(E).
entry(R, P, O, E) :-
    acl(R, Old, O, E),
    renamed_right(Old, P),
    kind_of(O, T),
    allowed_on(Old, T),
    effect(E).
granted(U, P, X) :- plays(U, R), entry(R, P, A, allow), above(A, X).
refused(U, P, X) :- plays(U, R), entry(R, P, A, deny), above(A, X).
may(U, read, X) :- kind_of(X, table), granted(U, select, X), not refused(U, select, X).
may(U, write, X) :- kind_of(X, table), granted(U, modify, X), not refused(U, modify, X).
"""


def compile_text(text: str, tmp_path: Path, name: str = "m.gl") -> grantlog.Program:
    f = tmp_path / name
    f.write_text(text)
    return grantlog.compile(paths=[str(f)])


def kept(program: grantlog.Program) -> dict[str, str]:
    """The materialized derived relations and why."""
    return {r: w for r, w in reasons(program).items() if r not in program.virtual}


def test_grants_checked_against_types_are_kept(tmp_path: Path) -> None:
    p = compile_text(GRANTS, tmp_path)
    assert kept(p) == {"plays": SMALL, "entry": FILTER}
    assert reasons(p)["above"] == WALKED
    assert {"granted", "refused", "may"} <= p.virtual


def test_the_bare_gravitino_model_keeps_its_grants() -> None:
    """renamed.gl without `@materialize`: the policy keeps what the annotation kept for the
    grants (`acl_entry`, the shipped model's `grant`); the closure is walked."""
    bare = worlds.World("bare", None, {}, {}).program()  # type: ignore[arg-type]
    why = kept(bare)
    assert why.get("acl_entry") == FILTER
    assert reasons(bare)["above"] == WALKED
    assert "may" in bare.virtual


def _renamed(text: str, rng: random.Random, names: list[str]) -> tuple[str, dict[str, str]]:
    """``text`` with every relation in ``names`` given a fresh name (and rules labelled with
    a relation's name relabelled)."""
    fresh = {n: f"q{i}_{rng.randrange(10**6)}" for i, n in enumerate(
        rng.sample(names, len(names)))}
    for old, new in sorted(fresh.items(), key=lambda kv: -len(kv[0])):
        text = re.sub(rf"\b{old}(?=\s*\()", new, text)
        text = re.sub(rf"^{old}:", f"{new}:", text, flags=re.M)
    return text, fresh


@pytest.mark.parametrize("model", ["grants", "unary", "twotrees", "bare"])
def test_the_split_does_not_depend_on_the_names(model: str, tmp_path: Path) -> None:
    """Every relation renamed at random: the policy keeps the same relations (renamed) for
    the same reasons, and walks the same closures. Fails if a kept relation falls back to
    on-demand under other names."""
    if model == "grants":
        text = GRANTS
    elif model == "bare":
        text = worlds.bare_text()
    else:
        text = worlds.RULES[model].read_text(encoding="utf-8")
    text = re.sub(r'^test ".*?^\}\n', "", text, flags=re.M | re.S)  # the test blocks
    before = compile_text(text, tmp_path, "before.gl")
    assert kept(before), "the policy keeps something here"
    names = [n for n, r in before.relations.items() if r.arity > 0]
    for seed in range(2):
        text2, fresh = _renamed(text, random.Random(seed), names)
        after = compile_text(text2, tmp_path, f"after{seed}.gl")
        assert after.decision == fresh.get(before.decision, before.decision)
        assert {fresh.get(r, r): w for r, w in reasons(before).items()} == reasons(after)
        assert {fresh.get(r, r) for r in before.virtual} == set(after.virtual)


#: each an addition to GRANTS that the third rule must not keep
NOT_KEPT = {
    # a subject's attributes joined with data rows (rules/gravitino_data.gl's shape): the
    # row is not of a kind the attributes hold (its rows are not bounded by theirs)
    "data rows": """
rel attr(user: string, key: string, value: string).
rel cell(row: string, key: string, value: string).
rel row_of(row: string, table: string).
rel meets(user: string, row: string, column: string, key: string).
meets(U, Row, C, K) :- attr(U, K, V), cell(Row, C, V).
may(U, see, X) :- kind_of(X, table), meets(U, Row, C, K), row_of(Row, X), C = K.
""",
    # a copy of one stored relation: a lookup there is as cheap as one of the copy
    "copy": """
rel acl_copy(role: string, right: string, object: string, effect: string).
acl_copy(R, P, O, E) :- acl(R, P, O, E).
may(U, audit, X) :- plays(U, R), acl_copy(R, audit, X, allow).
""",
    # the objects below a grant: one row per object
    "objects below": """
rel entry_below(role: string, right: string, x: string).
entry_below(R, P, X) :- acl(R, P, O, allow), under(X, O).
may(U, peek, X) :- plays(U, R), entry_below(R, peek, X).
""",
    # reads the walked closure (on demand)
    "over the closure": """
rel entry_near(role: string, right: string, x: string).
entry_near(R, P, X) :- entry(R, P, A, allow), above(A, X).
may(U, near, X) :- plays(U, R), entry_near(R, near, X).
""",
}


@pytest.mark.parametrize("case", sorted(NOT_KEPT))
def test_what_is_not_a_filter_of_stored_facts_stays_on_demand(case: str,
                                                             tmp_path: Path) -> None:
    p = compile_text(GRANTS + NOT_KEPT[case], tmp_path)
    assert kept(p) == {"plays": SMALL, "entry": FILTER}, case


def test_demand_overrides_the_filter_rule(tmp_path: Path) -> None:
    p = compile_text(GRANTS.replace("rel entry(", "@demand rel entry("), tmp_path)
    assert kept(p) == {"plays": SMALL}
    assert "entry" in p.virtual


def _objects() -> dict[str, set[tuple[str, ...]]]:
    facts: dict[str, set[tuple[str, ...]]] = {r: set() for r in (
        "under", "kind_of", "in_team", "team_role", "acl")}
    for s in range(2):
        facts["kind_of"].add((f"s{s}", "schema"))
        for t in range(3):
            facts["kind_of"].add((f"s{s}.t{t}", "table"))
            facts["under"].add((f"s{s}.t{t}", f"s{s}"))
    return facts


def _random_fact(rng: random.Random, objects: list[str]) -> tuple[str, tuple[str, ...]]:
    rel = rng.choice(["in_team", "team_role", "acl", "acl", "acl", "kind_of", "allowed_on",
                      "renamed_right", "effect"])
    if rel == "in_team":
        return rel, (rng.choice(["u0", "u1", "u2"]), rng.choice(["t0", "t1"]))
    if rel == "team_role":
        return rel, (rng.choice(["u0", "t0", "t1"]), rng.choice(["r0", "r1"]))
    if rel == "acl":
        return rel, (rng.choice(["r0", "r1"]), rng.choice(["select", "modify", "read_data"]),
                     rng.choice(objects), rng.choice(["allow", "deny", "maybe"]))
    if rel == "kind_of":
        return rel, (rng.choice(objects), rng.choice(["table", "schema", "view"]))
    if rel == "allowed_on":
        return rel, (rng.choice(["select", "modify", "read_data"]),
                     rng.choice(["table", "schema"]))
    if rel == "renamed_right":
        return rel, (rng.choice(["read_data", "modify"]), rng.choice(["select", "modify"]))
    return rel, (rng.choice(["allow", "deny", "maybe"]),)


@pytest.mark.parametrize("seed", range(4))
def test_the_kept_filter_is_maintained_as_evaluated_from_scratch(tmp_path: Path,
                                                                  seed: int) -> None:
    """Grants, types, supported rights, replacements and effects come and go (also the rule
    file's own facts): every relation's rows and every check equal those of a reasoner given
    the final facts at once."""
    p = compile_text(GRANTS, tmp_path)
    assert kept(p)["entry"] == FILTER
    rng = random.Random(seed)
    facts = _objects()
    objects = sorted({x for x, _ in facts["kind_of"]})
    given = {"effect": {("allow",), ("deny",)},
             "allowed_on": {("select", "table"), ("select", "schema"), ("modify", "table"),
                            ("read_data", "schema")},
             "renamed_right": {("read_data", "select")}}
    live = grantlog.Reasoner(p)
    for rel, rows in facts.items():
        live.insert(rel, sorted(rows))
    for rel, rows in given.items():
        facts[rel] = set(rows)
    for _ in range(50):
        rel, row = _random_fact(rng, objects)
        if row in facts[rel] and rng.random() < 0.6:
            facts[rel].discard(row)
            live.retract(rel, [row])
        else:
            facts[rel].add(row)
            live.insert(rel, [row])
        if rng.random() < 0.3:
            live.check(rng.choice(["u0", "u1", "u2"]), "read", rng.choice(objects))
    scratch = grantlog.Reasoner(compile_text(
        "\n".join(line for line in GRANTS.splitlines()
                  if not re.match(r"(effect|allowed_on|renamed_right)\(", line)),
        tmp_path, "scratch.gl"))
    for rel, rows in facts.items():
        scratch.insert(rel, sorted(rows))
    for rel in sorted(p.derived):
        assert live.rows(rel) == scratch.rows(rel), rel
    for u in ("u0", "u1", "u2"):
        for o in objects:
            for op in ("read", "write"):
                assert live.check(u, op, o).allowed == scratch.check(u, op, o).allowed
